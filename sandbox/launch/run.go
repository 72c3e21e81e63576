package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
	"github.com/confine-dev/confine/sandbox/seccomp"
)

// Exit statuses, after env(1) and timeout(1).
const (
	ExitRefused    = 125 // confine failed or refused; nothing ran
	ExitCannotExec = 126 // the command was found but could not be executed
	ExitNotFound   = 127 // the command was not found
)

// ExecError is a failure to find or execute the command.
type ExecError struct {
	Status int // ExitCannotExec or ExitNotFound
	Err    error
}

func (e *ExecError) Error() string { return e.Err.Error() }

// reason is the report's reason code for a command that was not run.
func (e *ExecError) reason() report.Reason {
	if e.Status == ExitNotFound {
		return report.CommandNotFound
	}
	return report.CommandNotExec
}

// Run confines the process as cfg asks and executes cfg.Argv. It returns only on failure, or when the command
// ran in a layered child: a *report.Refusal (nothing ran, exit 125), an *ExecError (126 or 127), or a
// *ChildExit (exit as the child did). It locks the calling goroutine to its OS thread, because Landlock
// domains and seccomp filters bind to a thread until execve.
func Run(cfg Config, s System) error {
	runtime.LockOSThread()
	rep := report.New(string(cfg.Mode))
	if cfg.ReportFD >= 0 {
		if _, err := unix.FcntlInt(uintptr(cfg.ReportFD), unix.F_GETFD, 0); err != nil {
			return report.Refuse(report.BadReportFD, "--report-fd %d: %v", cfg.ReportFD, err)
		}
	}
	refuse := func(err error) error {
		rep.Refused(err)
		writeReport(cfg.ReportFD, rep) // best effort: the refusal stands either way
		return err
	}
	child, syncFD, err := s.LayerChild()
	if err != nil {
		return refuse(report.Refuse(report.Internal, "%v", err))
	}
	metadata := MetadataSeccomp
	var layerErr error // why the layer is missing, for the report
	switch {
	case child:
		if _, err := s.BuildMountLayer(cfg.writableRoots()); err != nil {
			failLayer(syncFD, err)
		}
		metadata = MetadataMountLayer
	case s.Geteuid() == 0:
		// Root needs no user namespace: the layer is built here, on this locked thread, and the command
		// keeps our PID.
		if err := s.UnshareMountNS(); err != nil {
			layerErr = fmt.Errorf("%w: unshare(CLONE_NEWNS): %v", ErrLayerUnavailable, err)
		} else if committed, err := s.BuildMountLayer(cfg.writableRoots()); err != nil {
			if committed {
				return refuse(report.Refuse(report.Internal, "the mount layer failed half-built: %v", err))
			}
			layerErr = fmt.Errorf("%w: %v", ErrLayerUnavailable, err)
		} else {
			metadata = MetadataMountLayer
		}
	}
	p, err := makePlan(cfg, s, rep, metadata)
	if err != nil {
		return refuse(err)
	}
	defer p.close()
	path, err := lookPath(cfg.Argv[0])
	if err != nil {
		rep.Refused(err)
		rep.Reason = err.(*ExecError).reason()
		writeReport(cfg.ReportFD, rep)
		return err
	}
	if metadata == MetadataSeccomp && s.Geteuid() != 0 {
		// Everything is validated; try the layer, and fall back to the seccomp denial where it cannot be had.
		status, err := s.RunLayered(cfg.ReportFD)
		if err == nil {
			return &ChildExit{Status: status}
		}
		if !errors.Is(err, ErrLayerUnavailable) {
			return refuse(report.Refuse(report.Internal, "running the layered child: %v", err))
		}
		layerErr = err
	}
	if layerErr != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%v: metadata is denied everywhere instead", layerErr))
	}
	if err := landlock.Restrict(s, p.handled, p.rules); err != nil {
		return refuse(&report.Refusal{Reason: report.Ruleset, Err: err})
	}
	if s.Geteuid() == 0 {
		if err := s.LimitRootCaps(); err != nil {
			return refuse(report.Refuse(report.Ruleset, "limiting root's capabilities: %v", err))
		}
		rep.Warnings = append(rep.Warnings, "root: the command keeps only the capabilities "+rootCapNames())
	}
	if err := s.SetSeccomp(p.filter.Program()); err != nil {
		return refuse(report.Refuse(report.Seccomp, "seccomp(SET_MODE_FILTER): %v", err))
	}
	// From here on the thread is confined; a failure still runs nothing.
	rep.Outcome = "exec"
	rep.Command = append([]string{path}, cfg.Argv[1:]...)
	if err := writeReport(cfg.ReportFD, rep); err != nil {
		return report.Refuse(report.BadReportFD, "writing the report to --report-fd %d: %v", cfg.ReportFD, err)
	}
	if err := cloexecFrom(3); err != nil {
		return report.Refuse(report.Internal, "marking inherited descriptors close-on-exec: %v", err)
	}
	err = s.Exec(path, cfg.Argv, environ(p.wsl))
	status := ExitCannotExec
	if errors.Is(err, unix.ENOENT) {
		status = ExitNotFound
	}
	return &ExecError{Status: status, Err: fmt.Errorf("%s: %w", cfg.Argv[0], err)}
}

// A plan is everything decided before the thread is restricted. Its rules hold open descriptors.
type plan struct {
	wsl     int // DetectWSL of this kernel
	handled landlock.Access
	rules   []landlock.Rule
	roots   []*pathfd.Root
	filter  seccomp.Policy
}

func (p *plan) close() {
	for _, r := range p.roots {
		r.Close()
	}
}

// makePlan negotiates the backend and the ABI, opens the roots and decides the rules and the seccomp filter,
// filling rep, without restricting anything. On error it has closed what it opened.
func makePlan(cfg Config, s System, rep *report.Report, metadata Metadata) (*plan, error) {
	wsl := DetectWSL(s.OSRelease())
	if wsl == 1 {
		return nil, report.Refuse(report.WSL1, "WSL1 is not a Linux kernel and has no Landlock: use WSL2")
	}
	if wsl == 2 {
		if st := s.WSLInterop(); st != InteropDisabled {
			return nil, report.Refuse(report.WSL2Interop, "WSL2 Windows interop is %s: an .exe would run outside "+
				"the sandbox; set [interop] enabled=false in /etc/wsl.conf and restart WSL", st)
		}
	}
	if cfg.Backend == Bwrap {
		return nil, report.Refuse(report.BackendUnavailable, "the bwrap backend is not in this build")
	}
	st, err := landlock.Query(s)
	if err != nil {
		return nil, &report.Refusal{Reason: report.Internal, Err: err}
	}
	rep.Landlock, rep.ABI, rep.Errata = string(st.State), st.ABI, st.Errata
	switch st.State {
	case landlock.Absent:
		return nil, report.Refuse(report.LandlockAbsent,
			"Landlock is absent (ENOSYS: kernel %s was built without it) and no fallback backend can enforce %s",
			s.OSRelease(), cfg.Mode)
	case landlock.Disabled:
		return nil, report.Refuse(report.LandlockDisabled,
			"Landlock is disabled (EOPNOTSUPP: built in but not in lsm=) and no fallback backend can enforce %s",
			cfg.Mode)
	}
	rep.Backend, rep.Metadata = string(Landlock), string(metadata)
	p := &plan{wsl: wsl, handled: landlock.HandledWrites(st.ABI), filter: policy(st.ABI, metadata)}
	rep.Handled = p.handled.Names()
	rep.Seccomp = p.filter.Denied()
	rep.Warnings = append(rep.Warnings, warnings(st.ABI, wsl, metadata)...)
	if err := p.open(cfg, rep); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// policy is the seccomp filter for an ABI: with the mount layer, read-only mounts already stop metadata
// changes and truncate(2) outside, so only what no mount can stop is denied.
func policy(abi int, metadata Metadata) seccomp.Policy {
	if metadata == MetadataMountLayer {
		return seccomp.Policy{}
	}
	return seccomp.Policy{Metadata: true, DenyTruncate: abi < 3}
}

// A rootSpec is one root a Config asks for.
type rootSpec struct {
	path     string
	required bool // given by the user: it must exist
	grant    bool // writable (the worktree in read-only mode is validated but not writable)
}

func (cfg Config) roots() []rootSpec {
	var roots []rootSpec
	if cfg.Worktree != "" {
		roots = append(roots, rootSpec{cfg.Worktree, true, cfg.Mode == WorkspaceWrite})
	}
	for _, a := range cfg.Allow {
		roots = append(roots, rootSpec{a, true, true})
	}
	defaults := defaultRoots
	if cfg.TTY {
		defaults = append(append([]string{}, defaultRoots...), ttyRoots...)
	}
	for _, d := range defaults {
		roots = append(roots, rootSpec{d, false, true})
	}
	return roots
}

// writableRoots are the paths the mount layer keeps writable.
func (cfg Config) writableRoots() []string {
	var out []string
	for _, r := range cfg.roots() {
		if r.grant {
			out = append(out, r.path)
		}
	}
	return out
}

// open opens every root once and records its rule. User-given roots must exist; a missing default root is a
// warning.
func (p *plan) open(cfg Config, rep *report.Report) error {
	for _, want := range cfg.roots() {
		r, err := pathfd.Open(want.path)
		if err != nil {
			if want.required {
				return &report.Refusal{Reason: report.BadRoot, Err: err}
			}
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("no rule for default root %s: %v", want.path, err))
			continue
		}
		p.roots = append(p.roots, r)
		if want.required {
			if err := userRootAllowed(r, want.path == cfg.Worktree); err != nil {
				return &report.Refusal{Reason: report.BadRoot, Err: err}
			}
		}
		if !want.grant {
			continue
		}
		dir := r.Kind == pathfd.Dir
		p.rules = append(p.rules, landlock.Rule{Path: r.Path, FD: r.FD, Dir: dir})
		typ := "file"
		if dir {
			typ = "dir"
		}
		rep.Rules = append(rep.Rules, report.Rule{Path: r.Path, Type: typ,
			Rights: landlock.RuleRights(p.handled, dir).Names()})
	}
	return nil
}

// kernelTrees hold kernel and device state, not files: no user-given root may be one of them or inside one.
var kernelTrees = []string{"/proc", "/sys", "/dev"}

// userRootAllowed refuses a user-given root in a kernel tree, except a character device given with --allow
// (say /dev/kvm), and a worktree that is not a directory.
func userRootAllowed(r *pathfd.Root, worktree bool) error {
	if worktree && r.Kind != pathfd.Dir {
		return fmt.Errorf("%w: --worktree %s is not a directory", pathfd.ErrBadPath, r.Path)
	}
	for _, t := range kernelTrees {
		if (r.Path == t || strings.HasPrefix(r.Path, t+"/")) && !(r.Kind == pathfd.CharDev && !worktree) {
			return fmt.Errorf("%w: %s is in %s, which holds kernel state, not files", pathfd.ErrBadPath, r.Path, t)
		}
	}
	return nil
}

// warnings says what an ABI and the metadata mechanism leave undone or change.
func warnings(abi, wsl int, metadata Metadata) []string {
	var w []string
	if metadata == MetadataSeccomp {
		w = append(w, "metadata (chmod, chown, utimes, xattrs, inode flags) cannot be changed anywhere, "+
			"including inside the writable roots: Landlock has no right for it, so seccomp denies it (EPERM)")
		if abi < 3 {
			w = append(w, fmt.Sprintf("ABI %d: truncate(2) by path is denied everywhere by seccomp (TRUNCATE "+
				"needs ABI 3, kernel %s)", abi, landlock.FirstKernel(3)))
		}
	}
	if abi < 2 {
		w = append(w, fmt.Sprintf("ABI %d: cross-directory rename and link inside the worktree will fail with "+
			"EXDEV (REFER needs ABI 2, kernel %s)", abi, landlock.FirstKernel(2)))
	}
	if abi < 5 {
		w = append(w, fmt.Sprintf("ABI %d: ioctls on devices opened before confinement are not handled "+
			"(IOCTL_DEV needs ABI 5, kernel %s)", abi, landlock.FirstKernel(5)))
	}
	if wsl == 2 {
		w = append(w, "WSL2: interop is disabled; WSL_INTEROP is also removed from the environment")
	}
	return w
}

// lookPath resolves name as a shell would: a name with a slash is that file; otherwise the first executable
// regular file in $PATH (default /usr/local/bin:/usr/bin:/bin). It returns an *ExecError with 127 when
// nothing is found, and 126 when only non-executable candidates exist.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", &ExecError{Status: ExitCannotExec, Err: err}
		}
		var st unix.Stat_t
		switch {
		case unix.Stat(abs, &st) != nil:
			return "", &ExecError{Status: ExitNotFound, Err: fmt.Errorf("%s: no such file", name)}
		case st.Mode&unix.S_IFMT == unix.S_IFDIR || unix.Access(abs, unix.X_OK) != nil:
			return "", &ExecError{Status: ExitCannotExec, Err: fmt.Errorf("%s: permission denied", name)}
		}
		return abs, nil
	}
	dirs := os.Getenv("PATH")
	if dirs == "" {
		dirs = "/usr/local/bin:/usr/bin:/bin"
	}
	denied := false
	for _, dir := range filepath.SplitList(dirs) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if unix.Access(p, unix.X_OK) != nil {
			denied = true
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return p, nil
	}
	if denied {
		return "", &ExecError{Status: ExitCannotExec, Err: fmt.Errorf("%s: permission denied", name)}
	}
	return "", &ExecError{Status: ExitNotFound, Err: fmt.Errorf("%s: command not found", name)}
}

// writeReport writes rep to fd (if >= 0) and closes fd, so the command does not inherit it.
func writeReport(fd int, rep *report.Report) error {
	if fd < 0 {
		return nil
	}
	defer unix.Close(fd)
	for b := rep.Marshal(); len(b) > 0; {
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
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
