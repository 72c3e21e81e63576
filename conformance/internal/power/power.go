// Package power computes how many attempts a race case needs in a column so that it would catch its planted bug
// (a mutant of conformance/mutants/) with a given probability, from the win rates `make conformance-mutants`
// measured (conformance/race-rates.json).
//
// One attempt of a race case is one confine launch racing the swapper; a mutant "wins" an attempt when a write
// lands outside the writable set. If the mutant wins each attempt independently with probability p, n attempts
// catch it with probability 1 − (1 − p)^n, so n = ⌈ln(1 − power) / ln(1 − p)⌉ attempts reach power. The p
// used is not the measured fraction but the lower end of its 95 % Wilson interval: a rate measured from few
// wins is taken as the smallest it plausibly is.
package power

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// Schema of race-rates.json.
const Schema = "confine.race-rates/v1"

// Target is the power the matrix gives each race case in each column unless told otherwise.
const Target = 0.999

// Rates is conformance/race-rates.json: measured win rates of the planted bugs, reviewed like expected.yaml.
type Rates struct {
	Schema  string `json:"schema"`
	Comment string `json:"comment,omitempty"`
	Rates   []Rate `json:"rates"`
}

// Rate is one measurement: the mutant against one race case in one kind of column.
type Rate struct {
	Case     string `json:"case"`    // e.g. toctou-symlink-swap/root-swap
	Mutant   string `json:"mutant"`  // conformance/mutants/<name>.patch
	Where    string `json:"where"`   // host, tcg or kvm: where the launches ran
	Arch     string `json:"arch"`    // amd64 or arm64
	Backend  string `json:"backend"` // landlock or bwrap
	User     string `json:"user"`    // root or nobody
	Attempts int    `json:"attempts"`
	Wins     int    `json:"wins"` // attempts in which a write landed outside
	Measured string `json:"measured,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Column is what a lookup knows of the column a race case is about to run in.
type Column struct{ Where, Arch, Backend, User string }

// Plan is a race case's attempt count in a column, and what it rests on.
type Plan struct {
	Attempts int     // launches to make
	Rate     float64 // the per-attempt win rate used (Wilson lower bound), 0 when none was measured
	Power    float64 // 1 − (1 − Rate)^Attempts: the probability that Attempts catch Mutant; 0 without a rate
	Mutant   string  // the planted bug the power is against
	Source   string  // which measurement, e.g. "host amd64 landlock root: 431 of 2000" (and how it was matched)
}

// Load reads and checks a rates file.
func Load(file string) (*Rates, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r Rates
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, want %s", file, r.Schema, Schema)
	}
	for i, x := range r.Rates {
		if x.Case == "" || x.Mutant == "" || x.Attempts <= 0 || x.Wins < 0 || x.Wins > x.Attempts {
			return nil, fmt.Errorf("%s: rate %d (%s, %s): want a case, a mutant and 0 <= wins <= attempts > 0", file, i+1, x.Case, x.Mutant)
		}
	}
	return &r, nil
}

// Attempts returns ⌈ln(1 − power) / ln(1 − p)⌉, the attempts that catch a bug winning each with probability p
// with at least that power; 0 when p <= 0 (no count does), 1 when p >= 1.
func Attempts(p, power float64) int {
	switch {
	case p <= 0 || power <= 0:
		return 0
	case p >= 1:
		return 1
	}
	n := math.Log(1-power) / math.Log1p(-p)
	// Guard against a float result a hair above an integer (e.g. 30.000000000004 for an exact 30).
	if r := math.Round(n); math.Abs(n-r) < 1e-9 {
		return int(r)
	}
	return int(math.Ceil(n))
}

// Power returns 1 − (1 − p)^n.
func Power(p float64, n int) float64 {
	if p <= 0 || n <= 0 {
		return 0
	}
	return -math.Expm1(float64(n) * math.Log1p(-p))
}

// WilsonLower is the lower end of the 95 % Wilson score interval of wins out of n.
func WilsonLower(wins, n int) float64 {
	if n <= 0 || wins <= 0 {
		return 0
	}
	const z = 1.959963984540054
	ph, nf := float64(wins)/float64(n), float64(n)
	centre := ph + z*z/(2*nf)
	margin := z * math.Sqrt(ph*(1-ph)/nf+z*z/(4*nf*nf))
	return math.Max(0, (centre-margin)/(1+z*z/nf))
}

// For plans race case id in column c: the measurements of id that match c best (the same where, arch, backend
// and user; else the same arch and backend; else the same backend; else any), the lowest rate among them,
// and the attempts that reach power with it, at least min and at most max (0: no bound). ok is false when
// no measurement of id has a win: then nothing can be computed, and the caller keeps its fixed count.
func (r *Rates) For(id string, c Column, power float64, min, max int) (Plan, bool) {
	if r == nil {
		return Plan{}, false
	}
	var of []Rate
	for _, x := range r.Rates {
		if x.Case == id && x.Wins > 0 {
			of = append(of, x)
		}
	}
	tiers := []struct {
		how   string
		match func(Rate) bool
	}{
		{"", func(x Rate) bool {
			return x.Where == c.Where && x.Arch == c.Arch && x.Backend == c.Backend && x.User == c.User
		}},
		{"the lowest of the same arch and backend", func(x Rate) bool { return x.Arch == c.Arch && x.Backend == c.Backend }},
		{"the lowest of the same backend", func(x Rate) bool { return x.Backend == c.Backend }},
		{"the lowest measured anywhere", func(Rate) bool { return true }},
	}
	for _, tier := range tiers {
		var got []Rate
		for _, x := range of {
			if tier.match(x) {
				got = append(got, x)
			}
		}
		if len(got) == 0 {
			continue
		}
		sort.Slice(got, func(i, j int) bool {
			return WilsonLower(got[i].Wins, got[i].Attempts) < WilsonLower(got[j].Wins, got[j].Attempts)
		})
		x := got[0]
		p := WilsonLower(x.Wins, x.Attempts)
		n := Attempts(p, power)
		if n < min {
			n = min
		}
		if max > 0 && n > max {
			n = max
		}
		src := fmt.Sprintf("%s %s %s %s: %d wins of %d", x.Where, x.Arch, x.Backend, x.User, x.Wins, x.Attempts)
		if tier.how != "" {
			src += " (" + tier.how + ")"
		}
		return Plan{Attempts: n, Rate: p, Power: Power(p, n), Mutant: x.Mutant, Source: src}, true
	}
	return Plan{}, false
}

// String is the plan as one line: "30 attempts, rate 0.21 (mutant follow-symlinks; …), power 99.92 %".
func (p Plan) String() string {
	if p.Rate == 0 {
		return fmt.Sprintf("%d attempts, no measured rate: power unknown", p.Attempts)
	}
	return fmt.Sprintf("%d attempts, rate %.3g against %s (%s), power %s", p.Attempts, p.Rate, p.Mutant, p.Source, Percent(p.Power))
}

// Percent renders a power with its nines and one digit after them: 87.6 %, 99.95 %, 99.9999 %.
func Percent(p float64) string {
	if p >= 1 {
		return "100 %"
	}
	// As many decimals as 100·p has nines after the point, plus one; rounded down (never shown as more).
	digits := 1 + max(0, int(math.Floor(-math.Log10(100*(1-p))+1e-9)))
	digits = min(digits, 6)
	scale := math.Pow(10, float64(digits))
	s := fmt.Sprintf("%.*f", digits, math.Floor(100*p*scale+1e-6)/scale)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".") + " %"
}
