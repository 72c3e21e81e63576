package power

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/conformance/internal/events"
)

func TestAttempts(t *testing.T) {
	// The example: a bug that wins 22 % of attempts is caught by 28 with ≥ 99.9 %: 0.78^28 = 0.00096.
	assert.Equal(t, 28, Attempts(0.22, 0.999))
	assert.Less(t, math.Pow(0.78, 28), 0.001)
	assert.Greater(t, math.Pow(0.78, 27), 0.001, "27 is not enough")
	// An exact boundary is not rounded up by float noise: 1 − 0.5^10 = 0.9990234375.
	assert.Equal(t, 10, Attempts(0.5, 1-math.Pow(0.5, 10)))
	assert.Equal(t, 6905, Attempts(0.001, 0.999))
	assert.Equal(t, 1, Attempts(1, 0.999))
	assert.Equal(t, 0, Attempts(0, 0.999), "a bug that never wins is caught by no count")
	for _, p := range []float64{0.003, 0.05, 0.22, 0.6} {
		n := Attempts(p, Target)
		assert.GreaterOrEqual(t, Power(p, n), Target, "p %v", p)
		assert.Less(t, Power(p, n-1), Target, "p %v: n is the least", p)
	}
}

func TestWilsonLower(t *testing.T) {
	assert.Equal(t, 0.0, WilsonLower(0, 100))
	// 22 of 100: point estimate 0.22, Wilson lower bound about 0.150.
	assert.InDelta(t, 0.1499, WilsonLower(22, 100), 0.001)
	// More attempts, the same fraction: the bound tightens towards it.
	assert.InDelta(t, 0.2022, WilsonLower(440, 2000), 0.001)
	assert.Less(t, WilsonLower(22, 100), WilsonLower(440, 2000))
}

func TestFor(t *testing.T) {
	r := &Rates{Schema: Schema, Rates: []Rate{
		{Case: "x/race", Mutant: "m", Where: "host", Arch: "amd64", Backend: "landlock", User: "root", Attempts: 2000, Wins: 440},
		{Case: "x/race", Mutant: "m", Where: "host", Arch: "amd64", Backend: "landlock", User: "nobody", Attempts: 2000, Wins: 100},
		{Case: "x/race", Mutant: "m", Where: "host", Arch: "amd64", Backend: "bwrap", User: "root", Attempts: 500, Wins: 0},
		{Case: "y/race", Mutant: "n", Where: "host", Arch: "amd64", Backend: "landlock", User: "root", Attempts: 100, Wins: 0},
	}}
	p, ok := r.For("x/race", Column{"host", "amd64", "landlock", "root"}, Target, 0, 0)
	require.True(t, ok)
	assert.Equal(t, Attempts(WilsonLower(440, 2000), Target), p.Attempts)
	assert.GreaterOrEqual(t, p.Power, Target)
	assert.Equal(t, "host amd64 landlock root: 440 wins of 2000", p.Source)
	// No exact match: the lowest rate of the same arch and backend (nobody's), conservatively.
	p, ok = r.For("x/race", Column{"tcg", "amd64", "landlock", "root"}, Target, 0, 0)
	require.True(t, ok)
	assert.InDelta(t, WilsonLower(100, 2000), p.Rate, 1e-12)
	assert.Contains(t, p.Source, "nobody: 100 wins of 2000 (the lowest of the same arch and backend)")
	// bwrap's measurement had no win: it plans nothing; the landlock ones stand in, marked as such.
	p, ok = r.For("x/race", Column{"host", "amd64", "bwrap", "root"}, Target, 0, 0)
	require.True(t, ok)
	assert.Contains(t, p.Source, "(the lowest measured anywhere)")
	// Floor and cap.
	p, _ = r.For("x/race", Column{"host", "amd64", "landlock", "root"}, Target, 2000, 0)
	assert.Equal(t, 2000, p.Attempts)
	assert.Greater(t, p.Power, 0.999999)
	p, _ = r.For("x/race", Column{"host", "amd64", "landlock", "root"}, Target, 0, 5)
	assert.Equal(t, 5, p.Attempts)
	assert.Less(t, p.Power, Target, "a cap below the need gives less power, and says so")
	_, ok = r.For("y/race", Column{"host", "amd64", "landlock", "root"}, Target, 0, 0)
	assert.False(t, ok, "no win measured: no plan")
	_, ok = (*Rates)(nil).For("x/race", Column{}, Target, 0, 0)
	assert.False(t, ok)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "r.json")
	require.NoError(t, os.WriteFile(f, []byte(`{"schema":"confine.race-rates/v1","rates":[{"case":"a/b","mutant":"m","attempts":10,"wins":11}]}`), 0o644))
	_, err := Load(f)
	assert.ErrorContains(t, err, "0 <= wins <= attempts")
	require.NoError(t, os.WriteFile(f, []byte(`{"schema":"other","rates":[]}`), 0o644))
	_, err = Load(f)
	assert.ErrorContains(t, err, "schema")
	// The committed file loads.
	r, err := Load("../../race-rates.json")
	require.NoError(t, err)
	assert.NotEmpty(t, r.Rates)
}

func TestPercent(t *testing.T) {
	assert.Equal(t, "99.9 %", Percent(0.999))
	assert.Equal(t, "99.95 %", Percent(0.9995))
	assert.Equal(t, "99.999999 %", Percent(0.99999999999))
	assert.Equal(t, "87.6 %", Percent(0.876173))
	assert.Equal(t, "99.91 %", Percent(0.99915))
	assert.Equal(t, "100 %", Percent(1))
}

// A measuring run's events become rates keyed on each pass's start event; a case that does not count its wins
// (Measured false) gives none; Merge replaces a rate of the same key and keeps the rest.
func TestFromEventsAndMerge(t *testing.T) {
	evs := []events.Event{
		{Action: events.Start, Env: &events.Env{Arch: "x86_64", Backend: "landlock", RaceWhere: "tcg", User: "root"}, Pass: "root"},
		{Action: events.Start, Env: &events.Env{Arch: "x86_64", Backend: "landlock", RaceWhere: "tcg", User: "nobody"}, Pass: "nobody"},
		{Action: events.Fail, Test: "x/race", Attempts: 300, Wins: 60, Measured: true, Pass: "root"},
		{Action: events.Fail, Test: "x/race", Attempts: 300, Wins: 30, Measured: true, Pass: "nobody"},
		{Action: events.Fail, Test: "x/loop", Attempts: 200, Pass: "root"},
		{Action: events.Pass, Test: "x/plain", Pass: "root"},
	}
	got := FromEvents(evs, "m")
	require.Len(t, got, 2)
	assert.Equal(t, Rate{Case: "x/race", Mutant: "m", Where: "tcg", Arch: "amd64", Backend: "landlock", User: "root", Attempts: 300, Wins: 60,
		Measured: got[0].Measured}, got[0])
	assert.Equal(t, "nobody", got[1].User)
	base := &Rates{Schema: Schema, Comment: "c", Rates: []Rate{
		{Case: "x/race", Mutant: "m", Where: "tcg", Arch: "amd64", Backend: "landlock", User: "root", Attempts: 10, Wins: 1},
		{Case: "a/race", Mutant: "m", Where: "host", Arch: "amd64", Backend: "landlock", User: "root", Attempts: 10, Wins: 1},
	}}
	m := Merge(base, got)
	require.Len(t, m.Rates, 3)
	assert.Equal(t, "c", m.Comment)
	assert.Equal(t, "a/race", m.Rates[0].Case, "sorted")
	assert.Equal(t, 60, m.Rates[2].Wins, "the new measurement replaced the old one of the same key")
}
