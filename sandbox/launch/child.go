package launch

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
	"github.com/confine-dev/confine/sandbox/seccomp"
)

// A layered child is this binary started again in new user and mount namespaces, the way runc starts its init
// process. It is entered only through layerEnv, and it parses no argv and opens no path. The parent starts it
// first and opens every root through the child's root directory (/proc/PID/root), so that each validated
// descriptor already lies on the child's own mounts, where open_tree and move_mount accept it (a mount of
// another namespace is EINVAL: may_copy_tree, fs/namespace.c). It then hands the child the plan, a Handoff,
// with those descriptors. The child builds the mount layer on them and runs the same tail as the launcher
// (confineAndExec), with the Landlock rules on the same descriptors. Its descriptors:
//
//	3  the handoff socket (AF_UNIX stream): an 8-byte little-endian length with the rules' descriptors
//	   (SCM_RIGHTS, in Handoff.Rules order), then that many bytes of the Handoff (wire.go)
//	4  the sync pipe: close-on-exec, so EOF tells the parent the command was executed; a failure before that
//	   is one syncMsg and exit 125
//	5  the report descriptor, when there is one (Handoff.ReportFD)
const (
	handoffFD = 3
	syncFD    = 4
	reportFD  = 5
)

// maxRules is how many descriptors one SCM_RIGHTS message carries (SCM_MAX_FD, include/net/scm.h).
const maxRules = 253

// layerEnv carries the parent's mount namespace ("mnt:[4026531832]") to the child. The child acts on it only
// when its own mount namespace differs from that one and that one is its parent's, so setting it by hand does
// nothing but refuse.
const layerEnv = "CONFINE_INTERNAL_MOUNT_LAYER"

// LayeredChild is a layered child that waits for its plan.
type LayeredChild interface {
	// Root is an O_PATH descriptor of the child's root directory, in its mount namespace.
	Root() int
	// Run hands h to the child, forwards signals to it and waits. It returns ErrLayerUnavailable (wrapped)
	// when the child could not build the layer, a *report.Refusal or *ExecError when it stopped before the
	// command ran (nothing ran then), else the child's wait status.
	Run(h *Handoff) (syscall.WaitStatus, error)
	// Abort ends a child that will not be handed a plan.
	Abort()
}

// layered is the parent's side of a LayeredChild. Its waits (for the sync pipe's EOF, for the child's exit on
// its pidfd) park in the runtime's poller: a thread blocked in read(2) or wait4(2) instead makes the scheduler
// start and spin other threads around it, which measurably costs each launch.
type layered struct {
	pid, root, sock int
	sync, pidfd     *os.File // non-blocking, in the poller
	pidfdNum        int      // pidfd's descriptor, for pidfd_send_signal (Fd would make pidfd blocking); or -1
	reportFD        int      // ours, or -1
	signals         *signalCatcher
	peer            *peer // a bwrap child's part (bwrap.go): the child is bwrap's, not ours; nil for our own child
}

// supervisorAvailable installs a filter that allows everything, with a listener, on a thread of its own that
// then ends (a goroutine that exits locked takes its thread with it), to learn whether the supervisor could
// have one. No new privileges is per thread too, so this process keeps its own.
func supervisorAvailable() error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
		if err == nil {
			var fd int
			if fd, err = seccomp.InstallListener([]unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}); err == nil {
				unix.Close(fd)
			}
		}
		done <- err
	}()
	if err := <-done; err != nil {
		return msg.Err(ErrSupervisorUnavailable, ": seccomp(SET_MODE_FILTER, NEW_LISTENER): ", err.Error())
	}
	return nil
}

// startLayered starts the layered child, which waits for its Handoff. Signals are caught from here on: they
// are forwarded once the command runs, and delivered again to this process if it never does. Any error wraps
// ErrLayerUnavailable: the caller goes on without the layer.
func startLayered(reportFD int, pidNS bool) (LayeredChild, error) {
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return nil, msg.Err(ErrLayerUnavailable, ": ", err.Error())
	}
	sock, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, msg.Err(ErrLayerUnavailable, ": socketpair: ", err.Error())
	}
	var sync [2]int
	if err := unix.Pipe2(sync[:], unix.O_CLOEXEC); err != nil {
		unix.Close(sock[0])
		unix.Close(sock[1])
		return nil, msg.Err(ErrLayerUnavailable, ": pipe2: ", err.Error())
	}
	files := []uintptr{0, 1, 2, uintptr(sock[1]), uintptr(sync[1])}
	if reportFD >= 0 {
		files = append(files, uintptr(reportFD))
	}
	unix.SetNonblock(sync[0], true)
	c := &layered{sock: sock[0], sync: os.NewFile(uintptr(sync[0]), "sync"), root: -1, pidfdNum: -1,
		reportFD: reportFD, signals: catchSignals()} // caught while the child starts, before it is handed its plan (Run)
	attr, pidfd := layerAttr(pidNS), -1
	attr.PidFD = &pidfd
	c.signals.spawnIgnoring(func() { // a caller-ignored signal must not end the child before it catches it
		c.pid, err = syscall.ForkExec("/proc/self/exe", []string{os.Args[0]}, &syscall.ProcAttr{
			Env: childEnv(layerEnv + "=" + ns), Files: files, Sys: attr})
	})
	unix.Close(sock[1])
	unix.Close(sync[1])
	if pidfd >= 0 {
		unix.SetNonblock(pidfd, true)
		c.pidfd, c.pidfdNum = os.NewFile(uintptr(pidfd), "pidfd"), pidfd
	}
	if err != nil {
		c.pid = 0
		c.Abort()
		why := ""
		if errors.Is(err, unix.EROFS) { // Go writes the child's uid_map and gid_map through /proc
			why = " (/proc/PID/uid_map is read-only: /proc is on a read-only mount, as inside another confine's mount layer)"
		}
		return nil, msg.Err(ErrLayerUnavailable, ": starting the layered child: ", err.Error(), why)
	}
	c.root, err = unix.Open("/proc/"+msg.Itoa(c.pid)+"/root", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		c.Abort()
		return nil, msg.Err(ErrLayerUnavailable, ": opening the layered child's root: ", err.Error())
	}
	return c, nil
}

// childEnv is a layered child's environment: ours, with mark and GOMAXPROCS=1, which the runtime reads as it
// starts, so that main makes no runtime.GOMAXPROCS call (a stop-the-world). The command's own environment
// travels in the Handoff.
func childEnv(mark string) []string {
	return append(os.Environ(), mark, "GOMAXPROCS=1")
}

func (c *layered) Root() int { return c.root }

func (c *layered) Abort() {
	if c.pid > 0 {
		unix.Kill(c.pid, unix.SIGKILL)
		var ws syscall.WaitStatus
		c.wait(&ws)
	}
	c.close()
	c.signals.wait()
	signal.Stop(c.signals.sigs)
	redeliver(c.signals.sigs)
}

// close closes the parent's ends: once the child runs the command, or is gone.
func (c *layered) close() {
	fds := []int{c.sock, c.root}
	if c.peer != nil {
		fds = append(fds, c.peer.pidfd)
		c.peer.pidfd = -1
	}
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	c.sock, c.root = -1, -1
	for _, f := range []*os.File{c.sync, c.pidfd} {
		if f != nil {
			f.Close()
		}
	}
	c.sync, c.pidfd, c.pidfdNum = nil, nil, -1
}

// wait reaps the child: parked on its pidfd until it exits, or in wait4 where there is no pidfd.
func (c *layered) wait(ws *syscall.WaitStatus) error {
	defer func() { c.pid = 0 }()
	return c.waitOnly(ws)
}

// waitOnly is wait without forgetting the pid, for a caller that must stop forwarding signals first.
func (c *layered) waitOnly(ws *syscall.WaitStatus) error {
	if c.pidfd == nil {
		return wait(c.pid, ws)
	}
	rc, err := c.pidfd.SyscallConn()
	if err != nil {
		return wait(c.pid, ws)
	}
	var werr error
	err = rc.Read(func(uintptr) bool {
		var got int
		got, werr = syscall.Wait4(c.pid, ws, syscall.WNOHANG, nil)
		return werr != syscall.EINTR && (werr != nil || got == c.pid)
	})
	if err != nil {
		return wait(c.pid, ws)
	}
	return werr
}

func (c *layered) Run(h *Handoff) (syscall.WaitStatus, error) {
	c.signals.wait() // before the command can run: a signal from then on must reach it
	if err := c.send(h); err != nil {
		c.Abort()
		return 0, msg.Err(ErrLayerUnavailable, ": handing the plan to the layered child: ", err.Error())
	}
	if c.peer != nil {
		c.peer.learn(c.sock)
	}
	// The child says execMark just before its execve, then EOF follows (close-on-exec); anything else means it
	// stopped before the command ran: a message, or nothing at all if it died. An init says execMark once the
	// command runs, and its wait status when the command has ended (initStatus).
	var said []byte
	if h.Init {
		said = c.readMark()
	} else {
		said, _ = io.ReadAll(c.sync)
	}
	if len(said) != 1 || said[0] != execMark {
		var ws syscall.WaitStatus
		c.wait(&ws)
		c.Abort()
		if len(said) > 0 && said[0] == execMark { // its execve failed: the message follows the mark
			said = said[1:]
		}
		return 0, childError(said, ws)
	}
	if c.reportFD >= 0 {
		unix.Close(c.reportFD) // the child wrote the report; a reader sees EOF when the command closes it
	}
	pid, pidfd := c.pid, c.pidfdNum
	if c.peer != nil {
		pid, pidfd = c.peer.pid, c.peer.pidfd
	}
	done, forwarded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(forwarded)
		for {
			select {
			case s := <-c.signals.sigs:
				// The pidfd names this child even once it is reaped, so a recycled PID is never signalled.
				if pidfd >= 0 {
					unix.PidfdSendSignal(pidfd, s.(syscall.Signal), nil, 0)
				} else if pid > 0 { // a peer that never said its PID gets none
					unix.Kill(pid, s.(syscall.Signal))
				}
			case <-done:
				return
			}
		}
	}()
	var ws syscall.WaitStatus
	err := c.waitOnly(&ws)
	close(done)
	<-forwarded
	c.pid = 0
	// No signal.Stop: this process only mirrors the child's end from here, and Stop costs a round trip to the
	// runtime's signal-mask thread per signal (0.35 ms a launch, measured in issue 8). A signal that comes now
	// waits in c.signals, unread, and the exit status stays the child's.
	if h.Init {
		rest, _ := io.ReadAll(c.sync)
		if len(rest) == 4 {
			ws = syscall.WaitStatus(binary.LittleEndian.Uint32(rest))
		}
	}
	c.close()
	return ws, err
}

// readMark reads the first byte an init says, or everything up to EOF if that is not execMark.
func (c *layered) readMark() []byte {
	b := make([]byte, 1)
	if n, _ := io.ReadFull(c.sync, b); n == 0 {
		return nil
	}
	if b[0] == execMark {
		return b
	}
	rest, _ := io.ReadAll(c.sync)
	return append(b, rest...)
}

// send writes h to the handoff socket: its length and the rules' descriptors, then its encoding (h.marshal).
func (c *layered) send(h *Handoff) error {
	if len(h.fds) > maxRules {
		return msg.Err(len(h.fds), " roots: at most ", maxRules)
	}
	body := h.marshal()
	head := binary.LittleEndian.AppendUint64(nil, uint64(len(body)))
	if err := sendmsg(c.sock, head, unix.UnixRights(h.fds...)); err != nil {
		return msg.Err("sendmsg: ", err)
	}
	if err := writeAll(c.sock, body); err != nil {
		return err
	}
	return unix.Shutdown(c.sock, unix.SHUT_WR)
}

// receive reads the Handoff from the handoff socket, with the rules' descriptors.
func receive() (*Handoff, []int, error) {
	// Parked in the poller while the parent opens the roots, as the parent's waits are (see layered).
	unix.SetNonblock(handoffFD, true)
	sock := os.NewFile(handoffFD, "handoff")
	defer sock.Close()
	rc, err := sock.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	head := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(maxRules*4))
	var n, oobn int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, oobn, rerr = recvmsg(int(fd), head, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN && rerr != unix.EINTR
	}); err != nil {
		return nil, nil, err
	}
	if rerr != nil {
		return nil, nil, msg.Err("recvmsg: ", rerr)
	}
	var fds []int
	cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, nil, err
	}
	for _, m := range cmsgs {
		more, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, nil, err
		}
		fds = append(fds, more...)
	}
	if _, err := io.ReadFull(sock, head[n:]); err != nil {
		return nil, nil, msg.Err("reading the handoff's length: ", err)
	}
	body := make([]byte, binary.LittleEndian.Uint64(head))
	if _, err := io.ReadFull(sock, body); err != nil {
		return nil, nil, msg.Err("reading the handoff: ", err)
	}
	h, err := unmarshalHandoff(body)
	if err != nil {
		return nil, nil, err
	}
	if len(fds) != len(h.rules()) || len(h.Argv) == 0 {
		return nil, nil, msg.Err("malformed: ", len(fds), " descriptors for ", len(h.rules()), " rules")
	}
	return h, fds, nil
}

// forwarded are the signals the parent passes on to the child. Job-control stops are left to the terminal,
// which sends them to the whole foreground process group: the child's too, except under bwrap without --tty,
// whose command runs in a session of its own (--new-session), so that Ctrl-Z stops confine and not the command.
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGWINCH, unix.SIGALRM, unix.SIGCONT}

// signalCatcher catches the forwarded signals (signal.Notify) beside the caller's other work: Notify costs a
// round trip to the runtime's signal-mask thread per signal, half a millisecond a launch (measured in issue 8).
type signalCatcher struct {
	sigs chan os.Signal
	done chan struct{} // closed once Notify returned
}

// catchSignals starts catching the forwarded signals. A signal that comes before they are caught has its
// default action (which ends this process, and a child that has run nothing yet with it: Pdeathsig); wait before
// anything it must reach can run.
//
// A signal the caller ignores (ignored) is caught and forwarded too: unconfined, a command that sets a
// handler of its own (a dev server's SIGINT) gets it, and one that keeps it ignored ignores it. The command
// still inherits it ignored (spawnIgnoring).
func catchSignals() *signalCatcher {
	c := &signalCatcher{sigs: make(chan os.Signal, 8), done: make(chan struct{})}
	go func() {
		signal.Notify(c.sigs, forwarded...)
		close(c.done)
	}()
	return c
}

// spawnIgnoring runs fork (a ForkExec) with the signals the caller ignored (ignored) set to SIG_IGN, so that
// the process it starts inherits them ignored, as it would from the caller (execve keeps SIG_IGN and resets a
// caught signal to its default action), and then catches them again, to forward them. One that comes meanwhile
// is dropped, as the caller's disposition asks.
func (c *signalCatcher) spawnIgnoring(fork func()) {
	if len(ignored) == 0 {
		fork()
		return
	}
	c.wait() // a Notify still to come would undo the Ignore
	signal.Ignore(ignored...)
	fork()
	signal.Notify(c.sigs, ignored...)
}

// ignored are the forwarded signals the caller ignored (SIG_IGN, which execve keeps): nohup's SIGHUP, and
// SIGINT and SIGQUIT for a background job of a non-interactive shell. The command inherits them ignored, as it
// would unconfined (spawnIgnoring), and confine still forwards them. confine's first process reads them once,
// before anything here ignores one itself (bwrap's start with --tty); a child of confine, which cannot tell the
// caller's from confine's, starts with none and takes them from its Handoff (ignoreCallers).
var ignored = func() (ign []os.Signal) {
	for _, s := range forwarded {
		if signal.Ignored(s) {
			ign = append(ign, s)
		}
	}
	return ign
}()

// ignoreCallers takes, in a child of confine, the signals its Handoff says the caller ignored (a bit each, by
// number) as ignored, before the command runs, which then inherits them ignored (spawnIgnoring).
func ignoreCallers(mask uint64) {
	for _, s := range forwarded {
		if mask&(1<<uint(s.(syscall.Signal))) != 0 {
			ignored = append(ignored, s)
		}
	}
}

// ignoredMask is ignored as a Handoff carries it: bit N for signal N.
func ignoredMask() (mask uint64) {
	for _, s := range ignored {
		mask |= 1 << uint(s.(syscall.Signal))
	}
	return mask
}

// wait returns once the signals are caught.
func (c *signalCatcher) wait() { <-c.done }

// redeliver sends each signal caught before anything ran (on the way to a fallback) to this process again,
// with its default action back in place.
func redeliver(sigs chan os.Signal) {
	for {
		select {
		case s := <-sigs:
			unix.Kill(unix.Getpid(), s.(syscall.Signal))
		default:
			return
		}
	}
}

// wait reaps pid (wait4), retrying EINTR.
func wait(pid int, ws *syscall.WaitStatus) error {
	for {
		_, err := syscall.Wait4(pid, ws, 0, nil)
		if err != syscall.EINTR {
			return err
		}
	}
}

// childError is what a child that stopped before execve said: a refusal, an exec failure, or a layer that could
// not be built (ErrLayerUnavailable, so the caller falls back).
func childError(said []byte, ws syscall.WaitStatus) error {
	m, err := unmarshalSync(said)
	switch {
	case len(said) == 0:
		return report.Refuse(report.Internal, "the layered child ended before running the command (", waitText(ws), ")")
	case err != nil:
		return report.Refuse(report.Internal, "the layered child said ", msg.Quoted(said), " (", waitText(ws), ")")
	case m.Layer:
		return msg.Err(ErrLayerUnavailable, ": ", strings.TrimPrefix(m.Error, ErrLayerUnavailable.Error()+": "))
	case m.Exec != 0:
		return &ExecError{Status: m.Exec, Reason: m.Reason, Err: errors.New(m.Error)}
	}
	return &report.Refusal{Reason: m.Reason, Err: errors.New(m.Error)}
}

// IsLayerChild says whether this process was started as a layered child.
func IsLayerChild() bool {
	_, ok := os.LookupEnv(layerEnv)
	return ok
}

// RunChild is a layered child's whole life: check that it is one, read the Handoff, build the mount layer on
// the descriptors it was given, and run the shared tail. It returns only on failure, after telling the parent
// on the sync pipe; the caller exits 125. Nothing ran.
func RunChild(s System) error {
	runtime.LockOSThread()
	bwrap, err := checkLayerChild()
	if err != nil {
		return report.Refuse(report.Internal, err.Error()) // not our child: descriptors 3 and 4 are not ours
	}
	err = runChild(s, bwrap) // returns only on failure
	var m syncMsg
	var ee *ExecError
	switch {
	case errors.Is(err, ErrLayerUnavailable):
		m.Layer = true
	case errors.As(err, &ee):
		m.Exec, m.Reason = ee.Status, ee.reason()
	default:
		m.Reason = report.ReasonOf(err)
	}
	m.Error = err.Error()
	writeAll(syncFD, m.marshal())
	return ErrToldParent
}

// ErrToldParent is what RunChild returns once it has told the parent why it stopped: the parent reports it, so
// the child prints nothing. The caller exits 125.
var ErrToldParent = errors.New("the layered child stopped and told its parent why")

// waitText says how a child ended, for messages.
func waitText(ws syscall.WaitStatus) string {
	switch {
	case ws.Signaled():
		return "killed by " + signalName(ws.Signal())
	case ws.Exited():
		return "exit status " + msg.Itoa(ws.ExitStatus())
	}
	return "status " + msg.Itoa(int(ws))
}

// signalName is a signal's uapi name for the ones a process usually dies of, else "signal N": a table of these
// alone, not x/sys's of every signal (SignalName).
func signalName(sig syscall.Signal) string {
	names := [...]string{unix.SIGHUP: "SIGHUP", unix.SIGINT: "SIGINT", unix.SIGQUIT: "SIGQUIT", unix.SIGILL: "SIGILL",
		unix.SIGTRAP: "SIGTRAP", unix.SIGABRT: "SIGABRT", unix.SIGBUS: "SIGBUS", unix.SIGFPE: "SIGFPE",
		unix.SIGKILL: "SIGKILL", unix.SIGUSR1: "SIGUSR1", unix.SIGSEGV: "SIGSEGV", unix.SIGUSR2: "SIGUSR2",
		unix.SIGPIPE: "SIGPIPE", unix.SIGALRM: "SIGALRM", unix.SIGTERM: "SIGTERM", unix.SIGXCPU: "SIGXCPU",
		unix.SIGXFSZ: "SIGXFSZ", unix.SIGSYS: "SIGSYS"}
	if int(sig) < len(names) && names[sig] != "" {
		return names[sig]
	}
	return "signal " + msg.Itoa(int(sig))
}

// runChild is RunChild's work; bwrap says the child was started by bwrap (bwrap.go), which built the layer. It
// switches once on the Handoff's kind, which must be the one this child was started as: a layered child builds
// the mount layer, a bwrap child seals bwrap's; both then run the shared tail, as an init where Handoff.Init says.
func runChild(s System, bwrap bool) error {
	ignored = nil // inherited from confine, which may have ignored them for bwrap: the Handoff says the caller's
	var signals *signalCatcher
	if bwrap || os.Getpid() == 1 { // an init (runInit): it catches them while it waits for the plan
		signals = catchSignals()
	}
	if bwrap {
		if err := bwrapChildStart(); err != nil {
			return report.Refuse(report.Internal, err.Error())
		}
	}
	h, fds, err := receive()
	if err != nil {
		return report.Refuse(report.Internal, "the handoff: ", err.Error())
	}
	ignoreCallers(h.Ignored)
	t := &tail{domain: true, handled: h.Handled, scoped: h.Scoped, prog: h.Filter, path: h.Path, argv: h.Argv,
		env: h.Env, report: h.Report, reportFD: h.ReportFD, reportName: h.ReportName, warn: h.Warn}
	var owner *syscall.SysProcAttr
	switch {
	case h.Kind == HandoffLayered && !bwrap:
		if t.rules, err = buildChildLayer(s, h.Layered, fds); err != nil {
			return err
		}
		// A root layered child (below ABI 6, in a PID namespace but no user namespace) is real root: its command's
		// capabilities are cut as in place. A user's child is root only in its own user namespace, which it keeps
		// the caller's uid in, so euid is not 0 there.
		t.root = os.Geteuid() == 0
	case h.Kind == HandoffBwrap && bwrap:
		if err := sealBwrapLayer(h.Bwrap.Binds, h.Bwrap.UID >= 0); err != nil {
			return err
		}
		if err := bindBwrapGuards(h.Bwrap.Binds, h.Bwrap.Guards); err != nil {
			return err
		}
		if err := reenterWD(); err != nil { // bwrap's --chdir is on the mounts the pins and guards cover
			return report.Refuse(report.BadRoot, "bwrap: ", err.Error())
		}
		if err := checkWD(h.Bwrap.WD); err != nil {
			return report.Refuse(report.BadRoot, "bwrap: ", err.Error())
		}
		t.domain, t.root, owner = false, os.Geteuid() == 0 && h.Bwrap.UID < 0, bwrapOwner(h.Bwrap.UID, h.Bwrap.GID)
	default:
		return report.Refuse(report.Internal, "the handoff: kind ", int(h.Kind), " is not this child's (a bwrap child: ", bwrapText(bwrap), ")")
	}
	finish := execIt(func() error { return writeAll(syncFD, []byte{execMark}) })
	if h.Init {
		finish = asInit(owner, signals)
	}
	_, err = t.confineAndExec(s, finish)
	return err
}

func bwrapText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// buildChildLayer builds the mount layer a layered child's part of its Handoff asks for, on the rules'
// descriptors fds, and returns the Landlock rules, the /dev/pts and /dev/shm ones moved to the layer's private
// mounts. An error wraps ErrLayerUnavailable: the parent falls back in place (nothing here is its namespace).
func buildChildLayer(s System, part *LayeredPart, fds []int) ([]landlock.Rule, error) {
	rules := make([]landlock.Rule, len(part.Rules))
	var writable []*pathfd.Root
	devpts, shm, terminal := -1, -1, -1
	for i, r := range part.Rules {
		rules[i] = landlock.Rule{Path: r.Path, FD: fds[i], Dir: r.Dir, Connect: r.Connect, NoSpecial: r.NoSpecial}
		if r.Writable {
			writable = append(writable, &pathfd.Root{Path: r.Path, FD: fds[i]})
		}
		if r.Devpts {
			devpts = i
		}
		if r.Shm {
			shm = i
		}
		if r.Terminal {
			terminal = fds[i]
		}
	}
	priv := Private{Devpts: devpts >= 0, Shm: -1, Terminal: terminal, Interop: part.Interop, Guards: part.Guards}
	if shm >= 0 {
		priv.Shm = fds[shm]
	}
	m, _, err := s.BuildMountLayer(writable, priv)
	if refuses(err) {
		return nil, report.Refuse(report.BadRoot, err.Error())
	}
	if err != nil {
		return nil, msg.Err(ErrLayerUnavailable, ": ", err.Error())
	}
	if devpts >= 0 {
		rules[devpts].FD = m.Devpts
	}
	if shm >= 0 {
		rules[shm].FD = m.Shm
	}
	return rules, nil
}

// checkLayerChild verifies that this process is a layered child of confine: its mount namespace is new, and
// the one named in layerEnv is its parent's; or, for a bwrap child (whose value starts with bwrapMark), the init
// of a new PID namespace.
func checkLayerChild() (bwrap bool, err error) {
	parentNS := os.Getenv(layerEnv)
	os.Unsetenv(layerEnv) // the command never sees it
	parentNS, bwrap = strings.CutPrefix(parentNS, bwrapMark)
	own, _ := os.Readlink("/proc/self/ns/mnt")
	ppidNS, _ := os.Readlink("/proc/" + msg.Itoa(os.Getppid()) + "/ns/mnt")
	// As root the parent's namespace is readable and must be the one named: a forged variable in the host's
	// namespace must never lead to remounting it read-only. A non-root child sits in a new user namespace and
	// cannot read its parent's; a non-root process that forged the variable could not mount anything anyway.
	// The init of a new PID namespace cannot see its parent (getppid is 0); only a process that made new PID
	// and mount namespaces, and so cannot touch the host's mounts, is one.
	parentOK := ppidNS == parentNS || (os.Geteuid() != 0 && ppidNS == "") || (os.Getpid() == 1 && os.Getppid() == 0)
	if own == "" || own == parentNS || !parentOK || !isFileType(handoffFD, unix.S_IFSOCK) ||
		!isFileType(syncFD, unix.S_IFIFO) || (bwrap && !bwrapChildShape()) {
		return bwrap, msg.Err(layerEnv, " is set, but this is not a layered child of confine")
	}
	return bwrap, nil
}

// bwrapChildShape says whether this process looks like a bwrap child: the init of a new PID namespace, whose
// handoff socket was made by a process outside it (SO_PEERCRED names the socketpair's maker, confine, whose PID
// in here is 0). A process that set layerEnv by hand in its own namespaces is not one (the attack review made one
// as root, in the caller's mount namespace, and got as far as making its mounts private).
func bwrapChildShape() bool {
	cred, err := unix.GetsockoptUcred(handoffFD, unix.SOL_SOCKET, unix.SO_PEERCRED)
	return os.Getpid() == 1 && err == nil && cred.Pid == 0
}

// isFileType says whether fd is open on a file of type typ (unix.S_IFSOCK, ...).
func isFileType(fd int, typ uint32) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == typ
}

// runInit runs the command as the only child of this process, the init of a new PID namespace (runCommand),
// and stays as its init: once the command has ended it says its wait status on the sync pipe and exits, which
// ends every process left in the namespace (a PID namespace dies with its init). The command sees no process
// outside, so it can signal none, below Landlock ABI 6's scope. It returns only if the command could not be
// executed, after recording why on reportFD (if >= 0).
func runInit(path string, argv, env []string, reportFD int, owner *syscall.SysProcAttr, signals *signalCatcher) error {
	ws, err := runCommand(path, argv, env, reportFD, func() { writeAll(syncFD, []byte{execMark}) }, owner, signals)
	if err != nil {
		return err
	}
	writeAll(syncFD, binary.LittleEndian.AppendUint32(nil, uint32(ws)))
	os.Exit(0)
	return nil
}

// runCommand runs the command as a child of this process from the confined thread (so that it inherits the
// thread's Landlock domain and seccomp filter: a child is cloned from the calling thread), calls ran once it
// runs, forwards the signals the parent would, and reaps every child (orphans of the command included) until
// the command has ended, whose wait status it returns. If the command cannot be executed it returns the
// *ExecError, after recording why on reportFD (if >= 0).
//
// This process stays beside the command, with the confined thread and others that are not: it makes itself
// non-dumpable first (PR_SET_DUMPABLE 0), so that the command, whose domain and credentials the confined thread
// shares, cannot ptrace it or read or write its memory (process_vm_writev, /proc/PID/mem) and so drive an
// unconfined thread (the attack review's escape): that now takes CAP_SYS_PTRACE, which no command keeps. The
// command's own execve makes it dumpable again, so the supervisor can still read its memory.
func runCommand(path string, argv, env []string, reportFD int, ran func(), owner *syscall.SysProcAttr, signals *signalCatcher) (syscall.WaitStatus, error) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return 0, report.Refuse(report.Internal, "prctl(PR_SET_DUMPABLE, 0): ", err.Error())
	}
	if signals == nil { // the caller did not start catching them earlier, beside its own work
		signals = catchSignals()
	}
	signals.wait() // before the command runs: a signal from then on must reach it
	// The command dies with this process (PR_SET_PDEATHSIG, on the confined thread that forks it and stays until
	// exit), as a layered child dies with its parent: a killed supervisor leaves no command running unsupervised.
	attr := owner
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Pdeathsig = syscall.SIGKILL
	var pid int
	var err error
	signals.spawnIgnoring(func() {
		pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}, Sys: attr})
	})
	if err != nil {
		return 0, execFailed(path, argv, err, reportFD)
	}
	if reportFD >= 0 {
		unix.Close(reportFD) // the command runs and has no copy (close-on-exec): once a layered parent closes its own, a reader sees EOF
	}
	if ran != nil {
		ran()
	}
	go func() {
		for s := range signals.sigs {
			unix.Kill(pid, s.(syscall.Signal))
		}
	}()
	var ws syscall.WaitStatus
	for {
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if got == pid || (err != nil && err != syscall.EINTR) {
			return ws, nil
		}
	}
}
