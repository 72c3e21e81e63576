package suite

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/conformance/internal/events"
)

// TestMain lets the test binary stand in for a command that never ends (a hung confine), so the test needs no
// sleep(1) on the host.
func TestMain(m *testing.M) {
	if os.Getenv("CONFORMANCE_TEST_HANG") == "1" {
		for { // not select{}: with no other goroutine the runtime would call that a deadlock and exit
			time.Sleep(time.Hour)
		}
	}
	os.Exit(m.Run())
}

// TestCaseBound plants two cases that hang, one in a process it started and one in its own code, between
// ordinary cases: each hung case ends as FAIL with the bound as its reason, and the cases after it still run.
func TestCaseBound(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	old := boundGrace
	boundGrace = 500 * time.Millisecond
	defer func() { boundGrace = old }()
	cfg := &Config{Scratch: t.TempDir(), Timeout: time.Hour, CaseTimeout: 2 * time.Second, Heartbeat: 300 * time.Millisecond}
	pass := func(t *T) { t.Logf("ran") }
	cases := []Case{
		{ID: "planted/before", Run: pass},
		// Slow but making progress: commands keep finishing, so the idle bound never fires, though the case
		// runs longer than the bound. Each is /bin/true, which even a loaded machine starts well within it.
		{ID: "planted/slow", Run: func(t *T) {
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
				t.Unconfined([]string{"/bin/true"}, Opts{})
			}
		}},
		{ID: "planted/hung-process", Run: func(t *T) {
			t.Unconfined([]string{self}, Opts{Env: []string{"CONFORMANCE_TEST_HANG=1"}})
			t.Logf("unreachable: the process returned")
		}},
		{ID: "planted/hung-code", Run: func(t *T) { select {} }},
		{ID: "planted/after", Run: pass},
	}
	var out bytes.Buffer
	r := &Runner{Cfg: cfg, JSON: events.NewWriter(&out)}
	sum := r.RunAll(cases, events.Env{})
	assert.Equal(t, events.Summary{Pass: 3, Fail: 2}, sum)
	require.Len(t, r.Outcomes, 5)
	assert.Equal(t, events.Pass, r.Outcomes[0].Action)
	assert.Equal(t, events.Pass, r.Outcomes[1].Action, "%s: %s", r.Outcomes[1].ID, r.Outcomes[1].Reason)
	r.Outcomes = r.Outcomes[1:]
	for _, o := range r.Outcomes[1:3] {
		assert.Equal(t, events.Fail, o.Action, o.ID)
		assert.Contains(t, o.Reason, "case bound: no progress for 2s", o.ID)
	}
	assert.Contains(t, strings.Join(r.Outcomes[1].Logs, "\n"), "killed at the case's bound")
	assert.NotContains(t, strings.Join(r.Outcomes[1].Logs, "\n"), "unreachable")
	assert.Contains(t, strings.Join(r.Outcomes[2].Logs, "\n"), "abandoned")
	assert.Equal(t, events.Pass, r.Outcomes[3].Action)
	// The hung cases said they were still running while they hung.
	assert.Contains(t, out.String(), "heartbeat: planted/hung-process running for")
	assert.Contains(t, out.String(), "heartbeat: planted/hung-code running for")
}
