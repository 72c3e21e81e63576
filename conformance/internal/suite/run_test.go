package suite

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

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
	assert.Contains(t, strings.Join(r.Outcomes[1].Logs, "\n"), "processes when it was killed", "the hung command's threads, as evidence")
	assert.NotContains(t, strings.Join(r.Outcomes[1].Logs, "\n"), "unreachable")
	assert.Contains(t, strings.Join(r.Outcomes[2].Logs, "\n"), "abandoned")
	assert.Equal(t, events.Pass, r.Outcomes[3].Action)
	// The hung cases said they were still running while they hung.
	assert.Contains(t, out.String(), "heartbeat: planted/hung-process running for")
	assert.Contains(t, out.String(), "heartbeat: planted/hung-code running for")
}

// A descendant that outlives the command and holds its stdout is named, with its pid and argv, once the grace
// has passed and the pipe still has a writer.
func TestOutputHeldBySurvivor(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("skipped: /bin/sh is needed to leave a background process behind")
	}
	oldGrace, oldChecks := outputGrace, heldChecks
	outputGrace, heldChecks = 300*time.Millisecond, 3
	defer func() { outputGrace, heldChecks = oldGrace, oldChecks }()
	cfg := &Config{Scratch: t.TempDir(), Timeout: time.Minute}
	var r *Runner
	cases := []Case{
		{ID: "planted/survivor", Run: func(t *T) { t.Unconfined([]string{"/bin/sh", "-c", "sleep 5 & echo started"}, Opts{}) }},
		{ID: "planted/clean", Run: func(t *T) { t.Unconfined([]string{"/bin/sh", "-c", "echo done"}, Opts{}) }},
	}
	r = &Runner{Cfg: cfg, JSON: events.NewWriter(&bytes.Buffer{})}
	r.RunAll(cases, events.Env{})
	require.Len(t, r.Outcomes, 2)
	assert.Equal(t, events.Fail, r.Outcomes[0].Action)
	assert.Regexp(t, `a process outlived it, holding its stdout and stderr open 300ms after it exited: pid \d+ \(sleep\): sleep 5`, r.Outcomes[0].Reason)
	assert.Equal(t, events.Pass, r.Outcomes[1].Action, r.Outcomes[1].Reason)
}

// A reader that has not reached EOF when the grace is over is no survivor when the pipe has no writer left: the
// verdict waits for it. A guest whose vCPU stalled past the grace looked exactly like this to exec.Cmd's
// WaitDelay, which then reported "a process outlived it" (issue 27, 7.3-arm64).
func TestOutputSlowReaderIsNoSurvivor(t *testing.T) {
	oldGrace := outputGrace
	outputGrace = 10 * time.Millisecond
	defer func() { outputGrace = oldGrace }()
	var pipes [2]*os.File
	var drained [2]chan struct{}
	var writers [2]*os.File
	for i := range pipes {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		pipes[i], writers[i], drained[i] = r, w, make(chan struct{})
	}
	_, err := writers[0].WriteString("output the reader has not read yet\n")
	require.NoError(t, err)
	writers[0].Close()
	writers[1].Close()
	close(drained[1])
	go func() { // the reader gets to run only well after the grace
		time.Sleep(500 * time.Millisecond)
		var b bytes.Buffer
		b.ReadFrom(pipes[0])
		close(drained[0])
	}()
	start := time.Now()
	assert.Equal(t, "", awaitOutput(pipes, drained))
	assert.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond, "it waited for the reader")

	// With the writer still open (here, by this process, which pipeHolders leaves out), the pipe is held.
	heldChecks = 2
	defer func() { heldChecks = 10 }()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	done := make(chan struct{})
	go func() { defer close(done); var b bytes.Buffer; b.ReadFrom(r) }()
	closed := make(chan struct{})
	close(closed)
	msg := awaitOutput([2]*os.File{r, r}, [2]chan struct{}{done, closed})
	assert.Contains(t, msg, "stdout open 10ms after it exited: no process this uid")
}

// A case the plan runs elsewhere is not run: its outcome is a skip that says where, and its code never starts.
func TestPlannedElsewhere(t *testing.T) {
	ran := false
	cfg := &Config{Scratch: t.TempDir(), Timeout: time.Minute, Elsewhere: map[string]string{"planned/away": "ran in 6.1-amd64: the same arch"}}
	var out bytes.Buffer
	r := &Runner{Cfg: cfg, JSON: events.NewWriter(&out)}
	sum := r.RunAll([]Case{{ID: "planned/away", Run: func(t *T) { ran = true }}, {ID: "planned/here", Run: func(t *T) {}}}, events.Env{})
	assert.False(t, ran)
	assert.Equal(t, events.Summary{Pass: 1, Skip: 1}, sum)
	assert.Equal(t, "ran in 6.1-amd64: the same arch", r.Outcomes[0].Elsewhere)
	assert.Contains(t, out.String(), `"Elsewhere":"ran in 6.1-amd64: the same arch"`)
}

// TestPassGate: a race case waits for the other pass's running case, and a case of the other pass then waits for the
// race, even when that pass asks between two of its cases (turn held by the waiting race).
func TestPassGate(t *testing.T) {
	prefix, remove, err := RaceGateCreate(t.TempDir())
	require.NoError(t, err)
	defer remove()
	a, err := openGate(prefix) // this pass
	require.NoError(t, err)
	defer a.close()
	b, err := openGate(prefix) // the other pass
	require.NoError(t, err)
	defer b.close()

	leaveB, err := b.enter(false) // the other pass runs a plain case
	require.NoError(t, err)
	raced := make(chan func())
	go func() {
		leave, err := a.enter(true)
		assert.NoError(t, err)
		raced <- leave
	}()
	select {
	case <-raced:
		t.Fatal("the race case started beside the other pass's case")
	case <-time.After(100 * time.Millisecond):
	}
	leaveB()
	leaveA := <-raced
	next := make(chan func())
	go func() {
		leave, err := b.enter(false)
		assert.NoError(t, err)
		next <- leave
	}()
	select {
	case <-next:
		t.Fatal("the other pass's next case started beside the race case")
	case <-time.After(100 * time.Millisecond):
	}
	leaveA()
	(<-next)()

	var none *passGate // no other pass: nothing to take
	leave, err := none.enter(true)
	require.NoError(t, err)
	leave()
}

// processTree names every thread of a hung command and of its children, each under its own pid, so a timed-out
// case leaves evidence of what waited; a pid that is gone gives nothing.
func TestProcessTree(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command("/bin/sh", "-c", `"$0" & wait`, self)
	cmd.Env = append(os.Environ(), "CONFORMANCE_TEST_HANG=1")
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true} // a group of its own, so that the child is killed too
	require.NoError(t, cmd.Start())
	defer func() { _ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL); _ = cmd.Wait() }()
	var tree string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if tree = processTree(cmd.Process.Pid); strings.Count(tree, "\n") >= 2 { // sh and the child's threads
			break
		}
	}
	line := regexp.MustCompile(`^(\d+)/(\d+) (.+) ([A-Za-z]) wchan=\S+ syscall=\S+$`)
	pids := map[string]int{}
	for _, l := range strings.Split(tree, "\n") {
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "line %q of\n%s", l, tree)
		pids[m[1]]++
	}
	sh := strconv.Itoa(cmd.Process.Pid)
	assert.Equal(t, 1, pids[sh], "sh has one thread:\n%s", tree)
	assert.Len(t, pids, 2, "sh and its child:\n%s", tree)
	for pid, threads := range pids {
		if pid != sh {
			assert.Greater(t, threads, 1, "the Go child's threads:\n%s", tree)
		}
	}
	assert.True(t, strings.HasPrefix(tree, sh+"/"+sh+" sh "), "the root first:\n%s", tree)
	assert.Empty(t, processTree(1<<22+1), "a pid above pid_max") // /proc/sys/kernel/pid_max is at most 2^22
}
