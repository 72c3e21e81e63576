package launch

import (
	"errors"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/report"
	"github.com/confine-dev/confine/sandbox/supervisor"
)

// Exit statuses, after env(1) and timeout(1).
const (
	ExitRefused    = 125 // confine failed or refused; nothing ran
	ExitCannotExec = 126 // the command was found but could not be executed
	ExitNotFound   = 127 // the command was not found
)

// ExecError is a failure to find or execute the command.
type ExecError struct {
	Status int           // ExitCannotExec or ExitNotFound
	Reason report.Reason // if set, else from Status
	Err    error
}

func (e *ExecError) Error() string { return e.Err.Error() }

// reason is the report's reason code for a command that was not run.
func (e *ExecError) reason() report.Reason {
	switch {
	case e.Reason != "":
		return e.Reason
	case e.Status == ExitNotFound:
		return report.CommandNotFound
	}
	return report.CommandNotExec
}

// ChildExit is the wait status of the layered child: the caller exits the same way.
type ChildExit struct{ Status syscall.WaitStatus }

func (c *ChildExit) Error() string { return msg.Str("child ", int(c.Status)) }

// Run confines the process as cfg asks and executes cfg.Argv. The decision (Decide) orders the strategies; Run
// runs the first one the host allows, learning by trying: where a strategy turns out not to be allowed here
// (ErrLayerUnavailable, ErrSupervisorUnavailable) and nothing ran, it records that in its HostShape and decides
// again (strategy.go). Every strategy ends in one shared tail, confineAndExec.
//
// It returns only on failure, or when the command ran as a child (layered or supervised): a *report.Refusal
// (nothing ran, exit 125), an *ExecError (126 or 127), or a *ChildExit (exit as the child did). It locks the
// calling goroutine to its OS thread where it confines itself (mount namespace, Landlock domain and seccomp
// filter bind to a thread until execve), and not while it only waits for a layered child: a locked goroutine
// that parks makes the scheduler hand work between threads (futex wake-ups, measured at a third of a non-root
// launch).
func Run(cfg Config, f Facts, s System) error {
	rep := report.New(string(cfg.Mode))
	if cfg.ReportFD >= 0 {
		if _, err := unix.FcntlInt(uintptr(cfg.ReportFD), unix.F_GETFD, 0); err != nil {
			fd := msg.Itoa(cfg.ReportFD)
			return report.Refuse(report.BadReportFD, "--report-fd ", fd, ": ", err.Error(), " (open it in the caller, e.g. ", fd, ">FILE)")
		}
	}
	refuse := func(err error) error {
		rep.Refused(err)
		var ee *ExecError
		if errors.As(err, &ee) {
			rep.Reason = ee.reason()
		}
		writeReport(cfg.ReportFD, rep.Marshal()) // best effort: the refusal stands either way
		return err
	}
	if f.WSL != WSL1 { // WSL1's refusal comes first (Decide)
		if err := stdioRefusal(); err != nil {
			return refuse(err)
		}
	}
	st, err := landlock.Query(s)
	if err != nil && f.WSL != WSL1 {
		return refuse(&report.Refusal{Reason: report.Internal, Err: err})
	}
	r := &runner{cfg: cfg, s: s, rep: rep, host: hostShape(f, st)}
	if f.WSL != WSL1 && wantsBwrap(cfg.Backend, st) {
		r.host.Bwrap, r.host.BwrapErr = findBwrap(f)
	}
	err = r.run(f)
	if r.p != nil {
		r.p.close()
	}
	if r.reported {
		return err
	}
	return refuse(err)
}

// hostShape is the HostShape of these facts and Landlock's answer, with nothing known yet of what the host
// allows.
func hostShape(f Facts, st landlock.Status) HostShape {
	return HostShape{EUID: f.EUID, WSL: f.WSL, Interop: f.Interop, Release: f.Release, Landlock: st}
}

// final is what the last step needs: the plan with its guard chosen. A layered child rebuilds it from its
// Handoff.
type final struct {
	init       bool // run the command as the child of this process, the init of its PID namespace
	bwrap      bool // bwrap built the layer (bwrap.go), and no Landlock domain is asked for
	uid, gid   int  // a user's bwrap child: the caller's IDs, which the command gets back in a user namespace of its own; else -1
	handled    landlock.Access
	scoped     landlock.Scope
	rules      []landlock.Rule
	prog       []unix.SockFilter
	path       string
	argv       []string
	env        []string
	root       bool           // the command runs as root: cut its capabilities
	rep        *report.Report // the report, made final here; or, in a layered child, nil and
	reportJSON []byte         // the report as the parent made it final
	reportFD   int
	reportName int                    // the caller's number for reportFD, for messages
	beforeExec func() error           // the last step before execve, if any
	supervisor *supervisor.Supervisor // if set, the filter (with its listener) is in place: run the command as a child and supervise it
	warn       string                 // a warning for stderr, printed just before execve (confine: warning: ...), or ""
	reported   bool                   // the report was written: a later failure is not reported again, but an exec failure is recorded after it
	signals    *signalCatcher         // where the command runs as a child (init, supervisor): the signals it gets, caught early; or nil
}

func (p *plan) final(prog []unix.SockFilter, reportFD int) *final {
	return &final{handled: p.handled, scoped: p.scoped, rules: p.rules, prog: prog, path: p.path, argv: p.argv, env: p.env,
		root: p.euid == 0, rep: p.rep, reportFD: reportFD, reportName: reportFD, warn: p.tempWarn}
}

// confineAndExec is the shared tail: restrict the thread with the Landlock ruleset, cut root's capabilities,
// install the seccomp filter, write the report and execve. It returns only on failure, a *report.Refusal or
// an *ExecError, and nothing has run then. The report's descriptor stays open (close-on-exec) until execve,
// so that a failed execve can be explained on it by a second record (execFailed).
func (c *final) confineAndExec(s System) error {
	if c.bwrap { // the bwrap backend: no Landlock domain
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil { // Landlock sets it otherwise
			return report.Refuse(report.Internal, "prctl(PR_SET_NO_NEW_PRIVS): ", err.Error())
		}
	} else if err := landlock.Restrict(s, c.handled, c.scoped, c.rules); err != nil {
		return &report.Refusal{Reason: report.Ruleset, Err: err}
	}
	if c.root {
		if err := s.LimitRootCaps(); err != nil {
			return report.Refuse(report.Ruleset, "limiting root's capabilities: ", err.Error())
		}
		if c.rep != nil { // a layered child has the parent's report, made final there
			c.rep.Warnings = append(c.rep.Warnings, "root: the command keeps only the capabilities "+rootCapNames())
		}
	}
	if err := isolate(); err != nil {
		return report.Refuse(report.Internal, err.Error())
	}
	if c.prog != nil {
		if err := s.SetSeccomp(c.prog); err != nil {
			return report.Refuse(report.Seccomp, "seccomp(SET_MODE_FILTER): ", err.Error())
		}
	}
	// From here on the thread is confined; a failure still runs nothing.
	if c.rep != nil && c.reportFD >= 0 {
		c.rep.Outcome, c.rep.Command = "exec", append([]string{c.path}, c.argv[1:]...)
		c.reportJSON = c.rep.Marshal()
	}
	c.reported = true
	if c.reportFD >= 0 {
		if err := writeAll(c.reportFD, c.reportJSON); err != nil {
			unix.Close(c.reportFD)
			return report.Refuse(report.BadReportFD, "writing the report to --report-fd ", c.reportName, ": ", err.Error())
		}
	}
	if err := cloexecFrom(3); err != nil { // the report's descriptor among them: execve closes it
		return report.Refuse(report.Internal, "marking inherited descriptors close-on-exec: ", err.Error())
	}
	if c.warn != "" { // only now, when nothing can refuse any more: a refusal is one line
		writeAll(2, []byte("confine: warning: "+report.OneLine(c.warn)+"\n"))
	}
	if c.init {
		return runInit(c.path, c.argv, c.env, c.reportFD, c.owner(), c.signals)
	}
	if c.supervisor != nil {
		return c.supervise()
	}
	if c.beforeExec != nil {
		if err := c.beforeExec(); err != nil {
			return report.Refuse(report.Internal, "telling the parent: ", err.Error())
		}
	}
	return execFailed(c.path, c.argv, s.Exec(c.path, c.argv, c.env), c.reportFD)
}

// owner is how a user's bwrap child, uid 0 in bwrap's user namespace (so that it could seal the layer), starts
// the command: in a user namespace of its own where the caller's uid and gid map to that 0, as bwrap itself does
// it. The command then has its caller's IDs and, at execve, no capability; the mounts are locked to it.
func (c *final) owner() *syscall.SysProcAttr {
	if !c.bwrap || c.uid < 0 {
		return nil
	}
	return &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: c.uid, HostID: 0, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: c.gid, HostID: 0, Size: 1}}}
}

// supervise runs the command as a child of this process and answers its filter's notifications from another
// thread (package supervisor), until the command ends: a *ChildExit, or the *ExecError if it could not be
// executed. This process becomes a child subreaper (PR_SET_CHILD_SUBREAPER, 3.4), so that the command's orphans
// stay its descendants, whose memory it may read where Yama's ptrace_scope is 1.
func (c *final) supervise() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return report.Refuse(report.Internal, "prctl(PR_SET_CHILD_SUBREAPER): ", err.Error())
	}
	go c.supervisor.Serve()
	status, err := runCommand(c.path, c.argv, c.env, c.reportFD, nil, nil, c.signals)
	if err != nil {
		return err
	}
	return &ChildExit{Status: status}
}

// writeReport writes a marshalled report to fd (if >= 0) and closes fd, so the command does not inherit it.
func writeReport(fd int, b []byte) error {
	if fd < 0 {
		return nil
	}
	defer unix.Close(fd)
	return writeAll(fd, b)
}

// writeAll writes b to fd, retrying short writes and EINTR.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// cloexecFrom marks every descriptor >= first close-on-exec, so that the command inherits only 0, 1 and 2
// (close_range(CLOSE_RANGE_CLOEXEC), 5.11; /proc/self/fd where that is missing).
func cloexecFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil || !(errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL)) {
		return err
	}
	names, err := dirNames("/proc/self/fd")
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return err
}

// dirNames lists a directory's entries (without . and ..), unsorted, with getdents64 itself: os.ReadDir would
// bring sorting and DirEntry code into the binary for two small lists.
func dirNames(path string) ([]string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var names []string
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return names, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// readFile reads a whole (small, /proc or /sys) file with read(2) itself: os.ReadFile stats the file first,
// which links os.FileInfo and with it time's formatting and zone code into the binary.
func readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// Read straight into out: a buffer on the stack would be 4 KiB of frame, which makes the launcher's
	// goroutine stack grow (and be copied) once more.
	out := make([]byte, 0, 4096)
	for {
		if len(out) == cap(out) {
			out = append(out, 0)[:len(out)]
		}
		n, err := unix.Read(fd, out[len(out):cap(out)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		out = out[:len(out)+n]
	}
}
