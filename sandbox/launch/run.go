package launch

import (
	"errors"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/report"
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
		if err := childrenRefusal(); err != nil {
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
		if !r.reported {
			r.fillRules()
		}
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
	return HostShape{EUID: f.EUID, WSL: f.WSL, Interop: f.Interop, Release: f.Release, Landlock: st,
		Terminal: f.Terminal.Path != ""}
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
