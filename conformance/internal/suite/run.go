package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/events"
	"github.com/confine-dev/confine/conformance/internal/helper"
	"github.com/confine-dev/confine/conformance/internal/kabi"
	"github.com/confine-dev/confine/conformance/internal/power"
	"github.com/confine-dev/confine/conformance/internal/snapshot"
)

// Outcome is one case's verdict.
type Outcome struct {
	ID       string
	Action   string // events.Pass, events.Fail or events.Skip
	Reason   string
	Logs     []string
	Elapsed  time.Duration
	Attempts int
	Wins     int  // with Config.MeasureRaces
	Measured bool // the case counted Wins
	// Elsewhere is set when the plan runs the case in another column (Config.Elsewhere): it did not run here.
	Elsewhere string
	Plan      *power.Plan // the race case's plan, when it had one
}

// Runner runs cases and reports each one as events (JSON) or as text.
type Runner struct {
	Cfg  *Config
	JSON *events.Writer // when set, events go here
	Text io.Writer      // when set, a go test -v style log goes here
	Keep bool           // keep each case's directory

	Outcomes []Outcome // filled by RunAll, in order

	gate *passGate // Cfg.RaceGate, opened by RunAll
}

// raceFamily is the family whose cases race a swapper against confine's start (race, metadataSwap).
const raceFamily = "toctou-symlink-swap"

// passGate keeps a race case from running alongside the other pass of an --also-as run, and the other pass's
// cases from running alongside it. In the VM guest both passes share one vCPU, and a race attempt that shares it
// with the other pass (its launches, and its own swapper when both passes race at once, as they do, since both run
// the cases in one order) took 2 to 10 times as long as alone: 7.3-amd64 under TCG, 2026-12-04, a root-swap
// attempt 320-715 ms as root and 395-580 ms as nobody beside the other pass, against 70 and 154-184 ms with the
// passes one after the other (vm/README.md, issue 27 item 4). Each swapper burns its CPU for as long as its case
// runs, so the slowdown fed itself. Non-race cases still run alongside each other. The gate is two flock(2)
// locks, taken in one order: a race case takes turn and main exclusively; any other case takes turn shared, main
// shared, then lets turn go, so a waiting race case (which holds turn) stops the other pass at its next case
// instead of waiting for a gap between two of them that never comes.
type passGate struct{ turn, main *os.File }

// RaceGateCreate makes the gate's two lock files under dir (mode 0644: flock needs no write access, and the
// unprivileged pass only opens them) and returns their path prefix and a function that removes them.
func RaceGateCreate(dir string) (prefix string, remove func(), err error) {
	f, err := os.CreateTemp(dir, "confine-conformance-gate-*")
	if err != nil {
		return "", nil, fmt.Errorf("race gate: %w", err)
	}
	prefix = f.Name()
	f.Close()
	os.Remove(prefix)
	for _, s := range []string{".turn", ".main"} {
		if err := os.WriteFile(prefix+s, nil, 0o644); err != nil {
			os.Remove(prefix + ".turn")
			return "", nil, fmt.Errorf("race gate: %w", err)
		}
		os.Chmod(prefix+s, 0o644) // past the umask
	}
	return prefix, func() { os.Remove(prefix + ".turn"); os.Remove(prefix + ".main") }, nil
}

func openGate(prefix string) (*passGate, error) {
	turn, err := os.Open(prefix + ".turn")
	if err != nil {
		return nil, err
	}
	main, err := os.Open(prefix + ".main")
	if err != nil {
		turn.Close()
		return nil, err
	}
	return &passGate{turn, main}, nil
}

func (g *passGate) close() {
	if g != nil {
		g.turn.Close()
		g.main.Close()
	}
}

// enter takes the gate for one case, exclusively for a race case, and returns the function that leaves it. A nil
// gate (no other pass) takes nothing.
func (g *passGate) enter(race bool) (leave func(), err error) {
	nothing := func() {}
	if g == nil {
		return nothing, nil
	}
	if race {
		if err := flock(g.turn, unix.LOCK_EX); err != nil {
			return nothing, err
		}
		if err := flock(g.main, unix.LOCK_EX); err != nil {
			flock(g.turn, unix.LOCK_UN)
			return nothing, err
		}
		return func() { flock(g.main, unix.LOCK_UN); flock(g.turn, unix.LOCK_UN) }, nil
	}
	if err := flock(g.turn, unix.LOCK_SH); err != nil {
		return nothing, err
	}
	err = flock(g.main, unix.LOCK_SH)
	flock(g.turn, unix.LOCK_UN)
	if err != nil {
		return nothing, err
	}
	return func() { flock(g.main, unix.LOCK_UN) }, nil
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			if err != nil {
				return fmt.Errorf("flock %s: %w", f.Name(), err)
			}
			return nil
		}
	}
}

// RunAll runs cases in order and returns the summary.
func (r *Runner) RunAll(cases []Case, env events.Env) events.Summary {
	start := time.Now()
	r.emit(events.Event{Action: events.Start, Env: &env})
	r.textf("confine-conformance: kernel %s %s, Landlock %s ABI %d, root=%v; under test: %s; the cases' helper: %s\n",
		env.Kernel, env.Arch, env.Landlock, env.ABI, env.Root, env.Confine, env.Helper)
	var sum events.Summary
	if r.Cfg.RaceGate != "" {
		g, err := openGate(r.Cfg.RaceGate)
		if err != nil {
			r.emit(events.Event{Action: events.Output, Output: fmt.Sprintf("confine-conformance: race gate: %v (the passes race alongside each other)\n", err)})
		}
		r.gate = g
		defer g.close()
	}
	for _, c := range cases {
		if why, ok := r.Cfg.Elsewhere[c.ID]; ok {
			o := Outcome{ID: c.ID, Action: events.Skip, Reason: "planned elsewhere: " + why, Elsewhere: why}
			r.emit(events.Event{Action: events.Skip, Test: c.ID, Family: c.Family(), Reason: o.Reason, Elsewhere: why})
			r.textf("--- SKIP: %s %s\n", c.ID, o.Reason)
			r.Outcomes = append(r.Outcomes, o)
			sum.Skip++
			continue
		}
		leave, err := r.gate.enter(c.Family() == raceFamily)
		if err != nil {
			r.emit(events.Event{Action: events.Output, Output: fmt.Sprintf("confine-conformance: race gate: %v (the case runs ungated)\n", err)})
		}
		o := r.RunOne(c)
		leave()
		r.Outcomes = append(r.Outcomes, o)
		switch o.Action {
		case events.Pass:
			sum.Pass++
		case events.Fail:
			sum.Fail++
		case events.Skip:
			sum.Skip++
		}
	}
	action := events.Pass
	if sum.Fail > 0 {
		action = events.Fail
	}
	line := fmt.Sprintf("%d passed, %d failed, %d skipped\n", sum.Pass, sum.Fail, sum.Skip)
	r.emit(events.Event{Action: events.Output, Output: line})
	r.emit(events.Event{Action: action, Elapsed: time.Since(start).Seconds(), Summary: &sum})
	r.textf("%s", line)
	return sum
}

// RunOne runs one case: preconditions, fixtures, the invariant snapshot, the case, the invariant check. With
// Cfg.CaseTimeout the case has its own bound: when it goes that long without progress (no command it ran has
// finished), every process it started is killed; a case that still does not return within boundGrace is
// abandoned. Either way it ends as FAIL with the bound as the reason, and the runner goes on. The bound counts
// idle time, not the case's whole time, so a race case that a loaded host slows down (200 confine starts take 30
// s to 3 min under TCG) is never cut short while it makes progress. With Cfg.Heartbeat a running case emits an
// output line that often.
func (r *Runner) RunOne(c Case) Outcome {
	start := time.Now()
	r.emit(events.Event{Action: events.Run, Test: c.ID, Family: c.Family()})
	r.textf("=== RUN   %s\n", c.ID)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := r.Cfg
	var plan *power.Plan
	if p, ok := r.Cfg.RacePlans[c.ID]; ok { // this race case's attempts come from its measured win rate
		cc := *r.Cfg
		cc.Attempts, cfg, plan = p.Attempts, &cc, &p
	}
	t := &T{cfg: cfg, c: &c, ctx: ctx}
	t.progress.Store(start.UnixNano())
	var check <-chan time.Time
	if r.Cfg.CaseTimeout > 0 {
		tk := time.NewTicker(min(r.Cfg.CaseTimeout/4, time.Second))
		defer tk.Stop()
		check = tk.C
	}
	done := make(chan struct{})
	go func() { defer close(done); r.run(t, c) }()
	var beat <-chan time.Time
	if r.Cfg.Heartbeat > 0 {
		tk := time.NewTicker(r.Cfg.Heartbeat)
		defer tk.Stop()
		beat = tk.C
	}
	var abandon <-chan time.Time
	finished := false
	for !finished {
		select {
		case <-done:
			finished = true
		case <-beat:
			r.emit(events.Event{Action: events.Output, Test: c.ID,
				Output: fmt.Sprintf("    heartbeat: %s running for %.0fs, %d commands finished\n", c.ID, time.Since(start).Seconds(), t.done.Load())})
		case <-check:
			if idle := time.Since(time.Unix(0, t.progress.Load())); idle > r.Cfg.CaseTimeout {
				// The bound: exec's context is this one, so every command the case started is killed now.
				t.Errorf("case bound: no progress for %s (no command it ran finished; %d had, in %.0fs); its processes were killed",
					r.Cfg.CaseTimeout, t.done.Load(), time.Since(start).Seconds())
				cancel()
				abandon, check = time.After(boundGrace), nil
			}
		case <-abandon:
			t.Errorf("case bound: did not return %s after its processes were killed; abandoned (its goroutine may still run)", boundGrace)
			finished = true
		}
	}
	t.mu.Lock()
	o := Outcome{ID: c.ID, Logs: append([]string(nil), t.logs...), Elapsed: time.Since(start), Attempts: t.Attempts, Reason: t.reason,
		Wins: t.Wins, Measured: t.Measured, Plan: plan}
	failed, skipped := t.failed, t.skipped
	t.mu.Unlock()
	switch {
	case failed:
		o.Action = events.Fail
	case skipped:
		o.Action = events.Skip
	default:
		o.Action = events.Pass
		o.Reason = ""
	}
	if o.Attempts > 0 {
		o.Logs = append(o.Logs, fmt.Sprintf("attempts: %d", o.Attempts))
		if plan != nil {
			o.Logs = append(o.Logs, "race plan: "+plan.String())
		}
		if o.Measured {
			o.Logs = append(o.Logs, fmt.Sprintf("race-rate: %d wins of %d attempts", o.Wins, o.Attempts))
		}
	}
	for _, l := range o.Logs {
		r.emit(events.Event{Action: events.Output, Test: c.ID, Output: "    " + l + "\n"})
		r.textf("    %s\n", l)
	}
	verdict := fmt.Sprintf("--- %s: %s (%.2fs)", strings.ToUpper(o.Action), c.ID, o.Elapsed.Seconds())
	if o.Action == events.Skip {
		verdict += " " + o.Reason
	}
	r.emit(events.Event{Action: events.Output, Test: c.ID, Output: verdict + "\n"})
	ev := events.Event{Action: o.Action, Test: c.ID, Family: c.Family(), Elapsed: o.Elapsed.Seconds(),
		Reason: o.Reason, Attempts: o.Attempts, Wins: o.Wins, Measured: o.Measured}
	if plan != nil && o.Attempts > 0 {
		// The power of the attempts that ran (fewer than planned when the case stopped early).
		ev.Rate, ev.Power, ev.Mutant, ev.RateFrom = plan.Rate, power.Power(plan.Rate, o.Attempts), plan.Mutant, plan.Source
	}
	r.emit(ev)
	r.textf("%s\n", verdict)
	return o
}

// boundGrace is how long a case may take to return once its bound killed its processes.
var boundGrace = 10 * time.Second

func (r *Runner) run(t *T, c Case) {
	if reason := r.unmet(c.Needs); reason != "" {
		t.skipped, t.reason = true, reason
		return
	}
	t.Base = filepath.Join(r.Cfg.Scratch, strings.ReplaceAll(c.ID, "/", "_"))
	t.WT = filepath.Join(t.Base, "wt")
	t.Out = filepath.Join(t.Base, "outside")
	if !r.Keep {
		defer os.RemoveAll(t.Base)
	}
	devNull := devNullOK()
	var before snapshot.Snapshot
	guard(t, func() {
		fixtures(t)
		if c.Setup != nil {
			c.Setup(t)
		}
		var err error
		if before, err = snapshot.Take(append([]string{t.Base}, t.watch...), t.skipList()); err != nil {
			t.Fatalf("invariant snapshot before: %v", err)
		}
	})
	t.mu.Lock()
	stop := t.failed || t.skipped
	t.mu.Unlock()
	if stop {
		return
	}
	guard(t, func() { c.Run(t) })
	after, err := snapshot.Take(append([]string{t.Base}, t.watch...), t.skipList())
	if err != nil {
		t.Errorf("invariant snapshot after: %v", err)
		return
	}
	for _, d := range snapshot.Diff(before, after) {
		t.Errorf("invariant: outside the writable set, %s", d)
	}
	if devNull == "" && devNullOK() != "" {
		t.Errorf("invariant: /dev/null %s", devNullOK())
	}
}

// guard runs f on its own goroutine so that Fatalf and Skipf (runtime.Goexit) end only f; a panic fails the case.
func guard(t *T, f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("panic: %v", p)
			}
		}()
		f()
	}()
	<-done
}

// devNullOK returns "" when /dev/null is the null character device (1:3) with mode 0666, else what is wrong.
func devNullOK() string {
	var st unix.Stat_t
	if err := unix.Lstat("/dev/null", &st); err != nil {
		return "is missing: " + err.Error()
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
		return fmt.Sprintf("is no longer the null device (mode %o, rdev %d:%d)", st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	return ""
}

// fixtures creates the standard worktree and outside tree of every case.
func fixtures(t *T) { makeTree(t, t.Out, t.WT) }

// makeTree creates a worktree wt (existing.txt, sub/, sub2/) and an outside tree out (file.txt with an xattr where
// the file system has user xattrs, link -> file.txt, dir/inner.txt, emptydir/, fifo).
func makeTree(t *T, out, wt string) {
	t.Mkdir(wt+"/sub", wt+"/sub2", out+"/dir", out+"/emptydir")
	t.WriteFile(wt+"/existing.txt", "inside\n", 0o644)
	t.WriteFile(out+"/file.txt", "outside\n", 0o640)
	t.WriteFile(out+"/dir/inner.txt", "inner\n", 0o644)
	if err := os.Symlink("file.txt", out+"/link"); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	_ = unix.Setxattr(out+"/file.txt", "user.conformance", []byte("original"), 0)
	if err := unix.Mkfifo(out+"/fifo", 0o644); err != nil {
		t.Fatalf("fixture: mkfifo: %v", err)
	}
}

// ControlEach proves that each op in ops(out, wt) succeeds without confine, each in a fresh copy of the standard
// trees under Base/control/N, so that a later denial under confine is confine's doing. It returns, per op index,
// whether the control succeeded; a failed control is logged, and the caller decides.
func (t *T) ControlEach(ops func(out, wt string) []helper.Op) []bool {
	n := len(ops("", ""))
	ok := make([]bool, n)
	for i := 0; i < n; i++ {
		dir := fmt.Sprintf("%s/control/%d", t.Base, i)
		makeTree(t, dir+"/outside", dir+"/wt")
		o := ops(dir+"/outside", dir+"/wt")[i]
		res := t.Control(o)[0]
		ok[i] = res.OK
		if !res.OK {
			t.Logf("control: %s %s fails with %s even without confine", o.Op, o.Path, res.Errno)
		}
	}
	return ok
}

// unmet returns why the needs do not hold here, or "".
func (r *Runner) unmet(n Needs) string {
	k := r.Cfg.Landlock
	have := fmt.Sprintf("kernel reports Landlock %s", k.State)
	if k.State == kabi.Available {
		have = fmt.Sprintf("kernel reports ABI %d", k.ABI)
	} else {
		have += " (" + k.Errno + ")"
	}
	switch {
	case n.Confined && r.Cfg.Backend == BackendNone:
		return "requires a backend that confines a command: " + have + " and bwrap is not installed (the fail-closed family covers this host)"
	case n.Landlock && k.State != kabi.Available && r.Cfg.Backend == BackendBwrap:
		return "requires Landlock, " + have + " (the other cases run under bwrap here, which has no Landlock domain)"
	case n.Landlock && k.State != kabi.Available:
		return "requires Landlock, " + have + " (the fail-closed family covers this kernel)"
	case n.Landlock && r.Cfg.Backend != BackendLandlock:
		return "requires Landlock, and the runner's --backend " + r.Cfg.ForceBackend + " runs every case under bwrap (the run without it covers Landlock)"
	case n.MinABI > 0 && k.ABI < n.MinABI:
		return fmt.Sprintf("requires Landlock ABI >= %d (kernel %s), %s", n.MinABI, kabi.KernelFor(n.MinABI), have)
	case n.HostOnly != "" && r.Cfg.InVM:
		return "runs in the host suite only: " + n.HostOnly
	case n.NoLandlk && k.State == kabi.Available:
		return fmt.Sprintf("requires a kernel without Landlock or with it disabled (VM matrix: 5.10, lsm= entry), %s", have)
	}
	for _, tool := range n.Tools {
		if tool == "bwrap" { // found as confine finds it, never on PATH
			if _, err := FindBwrap(); err != nil {
				return "requires bwrap: " + err.Error()
			}
		} else if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("requires %s on PATH, not found", tool)
		}
	}
	if n.Shell && !Exists("/bin/sh") {
		return "requires /bin/sh, not found"
	}
	return ""
}

func (r *Runner) emit(e events.Event) {
	if r.JSON != nil {
		r.JSON.Emit(e)
	}
}

func (r *Runner) textf(format string, args ...any) {
	if r.Text != nil {
		fmt.Fprintf(r.Text, format, args...)
	}
}
