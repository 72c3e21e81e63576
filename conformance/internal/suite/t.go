package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/helper"
	"github.com/confine-dev/confine/conformance/internal/kabi"
	"github.com/confine-dev/confine/conformance/internal/power"
)

// Config is what every case sees of the run.
type Config struct {
	Confine string // absolute path of the confine binary under test
	Self    string // absolute path of this binary (confine-conformance)
	// Helper is the absolute path of the binary run under confine as a case's helper (`HELPER helper OPS`):
	// confine-conformance-helper, or Self where that is missing.
	Helper      string
	Scratch     string      // a directory outside /tmp (which confine always allows), symlink-free
	Landlock    kabi.Status // the kernel's own Landlock answer
	ExpectedABI *int        // VM_EXPECTED_ABI, when set
	InVM        bool        // VM_KERNEL_ID is set: running as the vm runner's guest payload
	Destructive bool        // allowed to attempt changes that, on failure, would damage the machine (/dev/null)
	Attempts    int         // toctou attempts per race case without a plan in RacePlans (metadata-swap: calls, ⌈Attempts/50⌉ launches)
	// RacePlans gives race cases their attempt count from a measured win rate (internal/power), in place of
	// Attempts; the plan's rate and power go in the case's event.
	RacePlans map[string]power.Plan
	// MeasureRaces makes a race case count the attempts in which a write landed outside (a planted bug's wins,
	// for `make conformance-mutants`) over all its attempts, instead of stopping at the first.
	MeasureRaces bool
	// Elsewhere lists the cases the matrix's plan runs in another column than this one, each with where and why
	// (internal/plan): they are not run here.
	Elsewhere map[string]string
	Timeout   time.Duration // bound of each confine invocation
	// CaseTimeout bounds how long a case may go without progress, i.e. without any command it ran finishing (0:
	// no bound): then every command it started is killed and the case ends as FAIL with the reason; the runner
	// goes on with the next case.
	CaseTimeout time.Duration
	// Heartbeat is how often a running case says it is still running (0: never): the VM runner's watchdog
	// counts silence, and a race case under TCG runs for tens of seconds.
	Heartbeat time.Duration
	// Env is added to every command's environment, also where a case replaces the environment (Opts.Env): e.g.
	// CONFINE_TEST_ABI_CAP for a confine_abicap build.
	Env []string
	// RaceGate, when set, is the path prefix of the two lock files (PREFIX.turn, PREFIX.main) that the two passes
	// of an --also-as run share, so that a race case runs while the other pass runs nothing (RaceGateCreate).
	RaceGate string
	// WSL2Confine is the WSL2 artifact (confine built with -tags wsl2), for the wsl-interop family; "" skips it.
	WSL2Confine string
	// Backend is the backend the suite's confined commands run under here (BackendLandlock, BackendBwrap or
	// BackendNone), which the runner decides before the first case: Landlock where the kernel has it, else bwrap
	// where confine finds it (FindBwrap: what --backend auto picks), else none; bwrap everywhere with ForceBackend.
	Backend string
	// ForceBackend, when set ("bwrap"), is passed as --backend to every confine launch of a case that runs the
	// suite's own sandbox (not one that picks its backend, takes namespaces away, or checks a refusal's argv):
	// the runner's --backend flag.
	ForceBackend string
}

// The backends the suite's confined commands can run under (Config.Backend; the run's start event says which).
const (
	BackendLandlock = "landlock"
	BackendBwrap    = "bwrap"
	BackendNone     = "none" // no Landlock, and no bwrap that confine finds: confine refuses every command
)

// T is a running case: its directories, its verdict and its log.
type T struct {
	cfg *Config
	c   *Case
	ctx context.Context // ends at the case's bound
	mu  sync.Mutex      // guards the verdict and the log: the bound and the heartbeat read them
	// progress is when a command the case ran last finished (unix ns; the case's start before that), done how
	// many have: the case bound counts idle time from progress.
	progress, done atomic.Int64
	Base           string // the case's private directory; everything in it except WT (and Unwatch-ed paths) is watched
	WT             string // the worktree: Base/wt
	Out            string // a populated directory outside the writable set: Base/outside

	watch, unwatch []string
	wtWatched      bool
	failed         bool
	skipped        bool
	reason         string
	logs           []string
	Attempts       int  // set by race cases, reported in the event
	Wins           int  // with Config.MeasureRaces: attempts in which a write landed outside
	Measured       bool // the case counted Wins (race does; a case that cannot leaves it false)
}

// Cfg returns the run's configuration.
func (t *T) Cfg() *Config { return t.cfg }

// Logf records a line of the case's log.
func (t *T) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.logs = append(t.logs, fmt.Sprintf(format, args...))
}

// Errorf marks the case failed and logs why; the case goes on.
func (t *T) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.failed {
		t.reason = msg
	}
	t.failed = true
	t.logs = append(t.logs, "FAIL: "+msg)
}

// Fatalf marks the case failed and stops it.
func (t *T) Fatalf(format string, args ...any) { t.Errorf(format, args...); runtime.Goexit() }

// Skipf stops the case and reports it skipped, with the reason (which must say what was needed and what was
// found). A skip after a failure stays a failure.
func (t *T) Skipf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.skipped = true
	t.reason = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Watch adds paths outside Base to the invariant snapshot (a path that does not exist must stay absent).
func (t *T) Watch(paths ...string) { t.watch = append(t.watch, paths...) }

// Unwatch removes paths under Base from the invariant snapshot (e.g. a race arena the case itself mutates). Only
// paths inside the writable set, or that the case checks another way, may be unwatched.
func (t *T) Unwatch(paths ...string) { t.unwatch = append(t.unwatch, paths...) }

// WatchWorktree adds the worktree itself to the invariant snapshot (for read-only mode).
func (t *T) WatchWorktree() { t.wtWatched = true }

func (t *T) skipList() []string {
	if t.wtWatched {
		return t.unwatch
	}
	return append([]string{t.WT}, t.unwatch...)
}

// Run is the outcome of one confine invocation.
type Run struct {
	Exit      int            // the exit status; -1 when killed by a signal
	Signal    syscall.Signal // the signal that ended it, or 0
	Stdout    string
	Stderr    string
	Report    *Report // nil when no report was written
	ReportRaw string
	Pid       int
}

// Report is confine's --report-fd JSON (schema confine.report/v1, sandbox/README.md).
type Report struct {
	Schema    string                   `json:"schema"`
	Outcome   string                   `json:"outcome"`
	Reason    string                   `json:"reason"`
	Error     string                   `json:"error"`
	Mode      string                   `json:"mode"`
	Backend   string                   `json:"backend"`
	Metadata  string                   `json:"metadata"`  // mount-layer, supervisor or seccomp-deny (absent from older launchers: seccomp-deny)
	Protected []string                 `json:"protected"` // the --protect paths held read-only
	ABI       int                      `json:"abi"`
	Errata    uint64                   `json:"errata"`
	Landlock  string                   `json:"landlock"`
	Handled   []string                 `json:"handled"`
	Rules     []Rule                   `json:"rules"`
	Seccomp   []string                 `json:"seccomp"`
	Command   []string                 `json:"command"`
	Warnings  []string                 `json:"warnings"`
	Channels  map[string]ChannelStatus `json:"channels"`
}

// MountLayer reports whether confine closed metadata changes with read-only mounts (then allowed inside the
// writable set) rather than with a seccomp denial everywhere.
func (r *Report) MountLayer() bool { return r != nil && r.Metadata == "mount-layer" }

// MetadataInside reports whether metadata changes inside the writable set work in this launch: under the mount
// layer, and under the supervisor (issue 15: the launcher performs each change beneath a writable root for the
// command), but not under seccomp-deny (denied everywhere with EPERM).
func (r *Report) MetadataInside() bool {
	return r != nil && (r.Metadata == "mount-layer" || r.Metadata == "supervisor")
}

// fallbackMetadata are the report.metadata values of a launch where no mount namespace can be had: supervisor
// (issue 15, the default there once the launcher has it) or seccomp-deny (the launchers before it, and any
// launcher that cannot get a seccomp listener, e.g. a confine inside a supervised confine).
var fallbackMetadata = []string{"supervisor", "seccomp-deny"}

// supervisedNames are the system-call families the report's seccomp list must name in supervisor and
// seccomp-deny modes, by family: arm64 has no chmod(2) or chown(2), only fchmodat(2) and fchownat(2). The match
// is by substring, so either form of the supervisor's list passes: the plain names ("fchmodat"), or the names
// prefixed with how they are handled ("supervised:fchmodat").
var supervisedNames = []string{"chmod", "chown", "setxattr"}

// Rule is one path-beneath rule in a Report.
type Rule struct {
	Path   string   `json:"path"`
	Type   string   `json:"type"`
	Rights []string `json:"rights"`
}

// Opts tune one invocation.
type Opts struct {
	Stdin    string
	Env      []string      // replaces the environment when non-nil
	Dir      string        // working directory; Base when empty
	NoReport bool          // do not pass --report-fd
	Argv     []string      // run `confine ARGV` as is (e.g. probe --json), instead of FLAGS -- CMD
	ReportFD bool          // with Argv: open descriptor 3 for a report
	Started  func(pid int) // called after start (e.g. to send a signal)
	// NoNamespaces runs confine where no user or mount namespace can be made (internal/nsdeny, as a container's
	// seccomp profile would), which takes its mount layer away: report.metadata must then be supervisor or
	// seccomp-deny (WantFallback).
	NoNamespaces bool
}

// Confine runs `confine FLAGS --report-fd 3 -- ARGV` and waits for it (bounded by the run's timeout). With
// Opts.Argv it runs `confine ARGV` as is, with descriptor 3 open for a report only when Opts.ReportFD is set.
func (t *T) Confine(flags, argv []string, o Opts) Run {
	var args []string
	report := !o.NoReport
	if o.Argv != nil {
		args, report = o.Argv, o.ReportFD
	} else {
		if report { // first, so that a refusal of any later flag is reported (see fail-closed/report-any-order)
			args = append(args, "--report-fd", "3")
		}
		args = append(args, flags...)
		args = append(append(args, "--"), argv...)
	}
	var rp, wp *os.File
	if report {
		var err error
		if rp, wp, err = os.Pipe(); err != nil {
			t.Fatalf("pipe: %v", err)
		}
	}
	if o.NoNamespaces {
		return t.exec(t.cfg.Self, append([]string{"no-namespaces", "--", t.cfg.Confine}, args...), o, rp, wp)
	}
	if o.Argv == nil && t.cfg.ForceBackend != "" && !contains(flags, "--backend") {
		args = append(append([]string{}, args[:len(args)-len(argv)-1]...), "--backend", t.cfg.ForceBackend)
		args = append(append(args, "--"), argv...)
	}
	return t.exec(t.cfg.Confine, args, o, rp, wp)
}

// Unconfined runs argv directly, for controls that prove a case's operation works without confine.
func (t *T) Unconfined(argv []string, o Opts) Run { return t.exec(argv[0], argv[1:], o, nil, nil) }

func (t *T) exec(path string, args []string, o Opts, rp, wp *os.File) Run {
	parent := t.ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, t.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stuck string // the command's processes when its time ran out, before the kill
	cmd.Cancel = func() error {
		stuck = processTree(cmd.Process.Pid)
		return cmd.Process.Kill()
	}
	cmd.Dir = o.Dir
	if cmd.Dir == "" {
		cmd.Dir = t.Base
	}
	cmd.Env = o.Env
	if cmd.Env != nil {
		cmd.Env = append(append([]string(nil), cmd.Env...), t.cfg.Env...)
	}
	// stdin is copied in by exec's goroutine, which ends once o.Stdin is written (at once: it is small) or the
	// reading end is gone; WaitDelay bounds it where a survivor holds stdin unread.
	cmd.Stdin = strings.NewReader(o.Stdin)
	cmd.WaitDelay = outputGrace
	// stdout and stderr are our own pipes, read by our own goroutines, so that once the process has exited the
	// case can judge by the pipes themselves whether a descendant still holds them (awaitOutput), rather than by
	// a timer alone (exec.Cmd's WaitDelay), which a guest that stalls for seconds under TCG trips with no process
	// left (issue 27).
	var stdout, stderr bytes.Buffer
	var pipes [2]*os.File
	var drained [2]chan struct{}
	for i, buf := range []*bytes.Buffer{&stdout, &stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatalf("pipe: %v", err)
		}
		defer r.Close()
		defer w.Close()
		pipes[i], drained[i] = r, make(chan struct{})
		go func(done chan struct{}) { defer close(done); buf.ReadFrom(r) }(drained[i])
		if i == 0 {
			cmd.Stdout = w
		} else {
			cmd.Stderr = w
		}
	}
	if wp != nil {
		cmd.ExtraFiles = []*os.File{wp}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	cmd.Stdout.(*os.File).Close() // the child has its copies: EOF comes when the last holder closes them
	cmd.Stderr.(*os.File).Close()
	var report []byte
	done := make(chan struct{})
	if rp != nil {
		wp.Close()
		go func() {
			defer close(done)
			var b bytes.Buffer
			b.ReadFrom(rp)
			report = b.Bytes()
			rp.Close()
		}()
	} else {
		close(done)
	}
	if o.Started != nil {
		o.Started(cmd.Process.Pid)
	}
	err := cmd.Wait()
	held := awaitOutput(pipes, drained)
	<-done
	t.progress.Store(time.Now().UnixNano())
	t.done.Add(1)
	if stuck != "" {
		t.Logf("%s's processes when it was killed (pid/tid comm state wchan syscall):\n%s", filepath.Base(path), stuck)
	}
	if parent.Err() != nil {
		t.Fatalf("%s: killed at the case's bound (%s)", filepath.Base(path), t.cfg.CaseTimeout)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %s: timed out after %s", filepath.Base(path), strings.Join(args, " "), t.cfg.Timeout)
	}
	r := Run{Stdout: stdout.String(), Stderr: stderr.String(), ReportRaw: string(report), Pid: cmd.Process.Pid}
	var ee *exec.ExitError
	if held != "" {
		t.Errorf("%s %s: a process outlived it, holding its %s", filepath.Base(path), strings.Join(args, " "), held)
	}
	switch {
	case errors.Is(err, exec.ErrWaitDelay):
		t.Errorf("%s %s: a process outlived it, holding its stdin open unread %s after it exited", filepath.Base(path), strings.Join(args, " "), outputGrace)
	case err != nil && !errors.As(err, &ee):
		t.Fatalf("wait %s: %v", path, err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	r.Exit = ws.ExitStatus()
	if ws.Signaled() {
		r.Signal = ws.Signal()
	}
	if s := strings.TrimSpace(r.ReportRaw); s != "" {
		var rep Report
		if err := json.Unmarshal([]byte(s), &rep); err != nil {
			t.Errorf("report is not one JSON object: %v: %q", err, s)
		} else {
			r.Report = &rep
		}
	}
	return r
}

// outputGrace is how long the stdout and stderr of a process that has exited may stay open before awaitOutput looks
// for a process holding them; heldChecks is how many looks in a row, outputGrace/50 apart, must find one held.
var (
	outputGrace = 5 * time.Second
	heldChecks  = 10
)

// awaitOutput waits until the readers of a process's stdout and stderr (pipes, read into drained) have reached
// EOF, once the process has exited. It returns "" then, or, when a descendant still holds a pipe's write end,
// which of them it holds and who holds it (pids and names from /proc, where this uid can see them), after
// closing the read ends (a holder's next write gets EPIPE).
//
// The clock alone does not decide: past outputGrace a pipe counts as held only while poll(2) gives its read end no
// POLLHUP (the kernel's word that no writer is left) at heldChecks looks in a row. A guest whose vCPU stalled for
// seconds (TCG on a loaded host) lets a timer expire before a reader could run, which is no survivor; a
// reader that is merely slow is waited for.
func awaitOutput(pipes [2]*os.File, drained [2]chan struct{}) string {
	names := [2]string{"stdout", "stderr"}
	deadline := time.Now().Add(outputGrace)
	tick := time.NewTicker(max(outputGrace/50, time.Millisecond))
	defer tick.Stop()
	held := 0
	for {
		open := []int{}
		for i, d := range drained {
			select {
			case <-d:
			default:
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return ""
		}
		select {
		case <-drained[open[0]]:
			continue
		case <-tick.C:
		}
		if time.Now().Before(deadline) {
			continue
		}
		var still []int
		for _, i := range open {
			if !hungUp(pipes[i]) {
				still = append(still, i)
			}
		}
		if len(still) == 0 { // no writer is left: the readers will reach EOF, however slow they are
			for _, i := range open {
				<-drained[i]
			}
			return ""
		}
		if held++; held < heldChecks {
			continue
		}
		var what []string
		for _, i := range still {
			what = append(what, names[i])
		}
		who := pipeHolders(pipes[still[0]])
		for _, p := range pipes {
			p.Close()
		}
		for _, d := range drained {
			<-d
		}
		return fmt.Sprintf("%s open %s after it exited: %s", strings.Join(what, " and "), outputGrace, who)
	}
}

// hungUp reports whether the read end r of a pipe has no writer left (POLLHUP).
func hungUp(r *os.File) bool {
	rc, err := r.SyscallConn()
	if err != nil {
		return false
	}
	hup := false
	rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 1 {
			hup = fds[0].Revents&unix.POLLHUP != 0
		}
	})
	return hup
}

// pipeHolders names the processes other than this one with a descriptor on r's pipe, as "pid N (comm): argv",
// from /proc/*/fd (those this uid may read), or says that none could be seen.
func pipeHolders(r *os.File) string {
	var st unix.Stat_t
	rc, err := r.SyscallConn()
	if err == nil {
		rc.Control(func(fd uintptr) { err = unix.Fstat(int(fd), &st) })
	}
	if err != nil {
		return "fstat: " + err.Error()
	}
	want := fmt.Sprintf("pipe:[%d]", st.Ino)
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	self := os.Getpid()
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		if pid == self {
			continue
		}
		fds, _ := os.ReadDir(p + "/fd")
		for _, fd := range fds {
			if l, _ := os.Readlink(p + "/fd/" + fd.Name()); l == want {
				comm, _ := os.ReadFile(p + "/comm")
				argv, _ := os.ReadFile(p + "/cmdline")
				out = append(out, fmt.Sprintf("pid %d (%s): %s", pid, strings.TrimSpace(string(comm)),
					strings.Join(strings.Split(strings.TrimRight(string(argv), "\x00"), "\x00"), " ")))
				break
			}
		}
	}
	if len(out) == 0 {
		return fmt.Sprintf("no process this uid (%d) can see in /proc holds %s", os.Getuid(), want)
	}
	return strings.Join(out, "; ")
}

// HelperArgv is the argv that re-executes this binary as the helper performing ops.
func (t *T) HelperArgv(ops ...helper.Op) []string {
	b, _ := json.Marshal(ops)
	return []string{t.cfg.Helper, "helper", string(b)}
}

// Flags returns the default confine flags of a case: --worktree WT.
func (t *T) Flags(extra ...string) []string { return append([]string{"--worktree", t.WT}, extra...) }

// Helper runs the helper under confine with flags and returns one result per op. It fails the case unless confine
// exec'd the helper (report outcome exec) and the helper exited 0 with parseable output.
func (t *T) Helper(flags []string, ops ...helper.Op) []helper.Result {
	_, res := t.HelperRun(flags, Opts{}, ops...)
	return res
}

// HelperRun is Helper with options; it also returns the run (for its report).
func (t *T) HelperRun(flags []string, o Opts, ops ...helper.Op) (Run, []helper.Result) {
	r := t.Confine(flags, t.HelperArgv(ops...), o)
	return r, t.helperResults("confine "+strings.Join(flags, " "), r, len(ops))
}

// WantMetadata fails the case unless r has a report whose metadata field is want (mount-layer, supervisor or
// seccomp-deny).
func (t *T) WantMetadata(r Run, want string) {
	if r.Report == nil {
		t.Fatalf("no report on --report-fd (exit %d, stderr %q)", r.Exit, r.Stderr)
	}
	if r.Report.Metadata != want {
		t.Errorf("report.metadata %q, want %s (warnings %q)", r.Report.Metadata, want, r.Report.Warnings)
	}
}

// WantFallback fails the case unless r has a report whose metadata is one of the fallbacks (supervisor or
// seccomp-deny), with a warning that says why the mount layer was not used, and returns the metadata.
func (t *T) WantFallback(r Run) string {
	if r.Report == nil {
		t.Fatalf("no report on --report-fd (exit %d, stderr %q)", r.Exit, r.Stderr)
	}
	m := r.Report.Metadata
	if !contains(fallbackMetadata, m) {
		t.Errorf("report.metadata %q, want supervisor or seccomp-deny (the case could not take the namespaces away?) (warnings %q)", m, r.Report.Warnings)
	}
	if len(r.Report.Warnings) == 0 {
		t.Errorf("the fallback to %s is not warned about: %s", m, r.ReportRaw)
	}
	return m
}

// Control runs the helper without confine: the proof that a denied op is denied by confine, not by the file
// system or by permissions.
func (t *T) Control(ops ...helper.Op) []helper.Result {
	return t.helperResults("unconfined", t.Unconfined(t.HelperArgv(ops...), Opts{}), len(ops))
}

func (t *T) helperResults(what string, r Run, n int) []helper.Result {
	if r.Exit != 0 {
		t.Fatalf("%s: helper exit %d (signal %d), stderr %q", what, r.Exit, r.Signal, r.Stderr)
	}
	var res []helper.Result
	if err := json.Unmarshal([]byte(lastLine(r.Stdout)), &res); err != nil || len(res) != n {
		t.Fatalf("%s: helper output %q: %v", what, r.Stdout, err)
	}
	return res
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// WantOK fails the case for every result that did not succeed.
func (t *T) WantOK(what string, res ...helper.Result) {
	for _, r := range res {
		if !r.OK {
			t.Errorf("%s: %s %s failed with %s, want success", what, r.Op, r.Path, r.Errno)
		}
	}
}

// WantDenied fails the case unless every result failed with one of errnos.
func (t *T) WantDenied(what string, errnos []string, res ...helper.Result) {
	for _, r := range res {
		switch {
		case r.OK:
			t.Errorf("%s: %s %s succeeded, want %s", what, r.Op, r.Path, strings.Join(errnos, " or "))
		case !contains(errnos, r.Errno):
			t.Errorf("%s: %s %s failed with %s, want %s", what, r.Op, r.Path, r.Errno, strings.Join(errnos, " or "))
		}
	}
}

// Landlock reports whether the kernel has Landlock.
func (t *T) Landlock() bool { return t.cfg.Landlock.State == kabi.Available }

// Backend is the backend the suite's confined commands run under here: BackendLandlock, BackendBwrap or
// BackendNone (Config.Backend).
func (t *T) Backend() string { return t.cfg.Backend }

// Bwrap reports whether the suite's confined commands run under bwrap: no Landlock domain, bubblewrap's
// read-only mounts (a denied write is EROFS), new PID and IPC namespaces.
func (t *T) Bwrap() bool { return t.cfg.Backend == BackendBwrap }

// WantBackend fails the case unless r has a report whose backend is the one the suite runs under here.
func (t *T) WantBackend(r Run) {
	if r.Report != nil && r.Report.Backend != t.cfg.Backend {
		t.Errorf("report.backend %q, want %s (the backend the suite runs under here)", r.Report.Backend, t.cfg.Backend)
	}
}

// ABI is the kernel's Landlock ABI (0 without Landlock).
func (t *T) ABI() int { return t.cfg.Landlock.ABI }

// WriteFile creates a fixture file (unconfined), failing the case on error.
func (t *T) WriteFile(path, content string, mode os.FileMode) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask
		t.Fatalf("fixture: %v", err)
	}
}

// Mkdir creates fixture directories (unconfined).
func (t *T) Mkdir(paths ...string) {
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatalf("fixture: %v", err)
		}
	}
}

// Exists reports whether path exists (without following a final symlink).
func Exists(path string) bool { _, err := os.Lstat(path); return err == nil }

// sortedKeys is a small helper for deterministic messages.
func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
