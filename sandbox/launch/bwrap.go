package launch

import (
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
)

// The bwrap backend, for kernels where Landlock is absent (before 5.13, or built without it) or disabled (left
// out of lsm=), or when --backend bwrap asks for it. bubblewrap (https://github.com/containers/bubblewrap, 0.4
// or later) builds the read-only layer: the host's root bound read-only, a read-write bind of each writable root,
// a synthetic /dev (never the host's), a new /proc, and new PID and IPC namespaces. It then starts this binary
// inside as the init of the PID namespace, a bwrap child: a layered child (child.go) that does not build the
// layer but checks that bwrap did, and runs the same tail (seccomp, root's capabilities, the keyring, the
// report, the command as its child). Nothing but bwrap's mounts stops a write: a denied write is EROFS.
//
// bwrap takes paths. Each bind names its validated descriptor by /proc/self/fd/N, but bwrap realpath()s that and
// binds the path, which a concurrent swap of a component can redirect (the conformance suite's root-swap race
// wins within about 2,000 attempts): so the bwrap child checks, before anything runs, that each bind is the
// validated directory or file by device and inode (sealBwrapLayer), and refuses otherwise.
//
// bwrap's descriptors, as it passes them on to the bwrap child, are a layered child's (3 handoff, 4 sync, 5 the
// report or a placeholder), then:
const (
	bwrapStderrFD = 6 // the caller's stderr: bwrap's own fd 2 is a pipe to confine, which names its errors
	bwrapExeFD    = 7 // this binary (O_PATH), which bwrap executes as /proc/self/fd/7
	bwrapRootFD   = 8 // the first root bound read-write; the others follow in order
)

// bwrapMark is the prefix of layerEnv's value for a bwrap child.
const bwrapMark = "bwrap "

// bwrapProbeEnv marks the trivial command probeBwrap runs under bwrap.
const bwrapProbeEnv = "CONFINE_INTERNAL_BWRAP_PROBE"

// BwrapEnv names the variable by which a caller names the bwrap executable, by an absolute path, instead of the
// lookup in bwrapDirs (a bwrap outside them: NixOS's, or a build of one's own).
const BwrapEnv = "CONFINE_BWRAP"

// bwrapDirs are where bwrap is looked up without CONFINE_BWRAP, in order: where packages install it (/usr/bin:
// Debian, Ubuntu, Fedora, Arch and Alpine; /bin too where /usr is not merged), then where a build from source
// does (meson's default prefix, /usr/local). No package puts it in an sbin. $PATH is never consulted: an
// agent's $PATH names directories that a confined command could write (node_modules/.bin, a virtualenv's
// bin, ~/.cargo/bin), and checkBwrap cannot tell a root-owned bwrap that an earlier run of root planted there
// from one the system installed.
var bwrapDirs = []string{"/usr/bin", "/bin", "/usr/local/bin"}

// findBwrap is the bwrap executable: the file CONFINE_BWRAP names (f.Bwrap, when f.BwrapSet), else the first
// regular file named bwrap in f.BwrapDirs. A CONFINE_BWRAP that is empty or relative is a *report.Refusal
// (backend-unavailable), whatever the backend: a mistake, not an absent bwrap. One that names no regular file
// is a plain error, as is none in the directories: bwrap is not there, and Decide gives the refusal the
// reason the backend asked for calls for (landlock-absent or -disabled under auto). Either way confine looks
// for no other bwrap than the one named. The file is not trusted yet: checkBwrap decides.
func findBwrap(f Facts) (string, error) {
	if f.BwrapSet {
		switch {
		case f.Bwrap == "":
			return "", report.Refuse(report.BackendUnavailable, BwrapEnv, " is empty: set it to bwrap's absolute path, or unset it")
		case !filepath.IsAbs(f.Bwrap):
			return "", report.Refuse(report.BackendUnavailable, BwrapEnv, "=", f.Bwrap, " is not an absolute path: ",
				"confine never looks bwrap up in $PATH; name it by its absolute path")
		}
		var st unix.Stat_t
		if err := unix.Stat(f.Bwrap, &st); err != nil {
			return "", msg.Err(BwrapEnv+"=", f.Bwrap, ": ", err, ": install bubblewrap, or point "+BwrapEnv+" at its bwrap")
		} else if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return "", msg.Err(BwrapEnv+"=", f.Bwrap, " is not a regular file: point it at bubblewrap's bwrap")
		}
		return f.Bwrap, nil
	}
	for _, dir := range f.BwrapDirs {
		var st unix.Stat_t
		if p := dir + "/bwrap"; unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			return p, nil
		}
	}
	return "", msg.Err("bwrap is not installed (confine looked in ", strings.Join(f.BwrapDirs, ", "),
		"; never in $PATH): install bubblewrap (Debian, Ubuntu and Fedora call its package bubblewrap), or set ",
		BwrapEnv, " to its absolute path")
}

// openBwrap opens the bwrap at path for execution, an O_PATH descriptor that the caller executes as
// /proc/self/fd/N, so that what runs is what was checked (the attack review swapped a symlink between a check
// of the path and its execution). It refuses a bwrap that a confined command of this launch could write, or
// one of any launch as a user: it resolves path one name at a time, and the file and every directory a name is
// looked up in (each symlink's too) must be owned by root, writable by no one else (a directory may be sticky,
// as /tmp is: only root can then replace what root put there), and not beneath a writable root of rules, by
// path or by identity. What it cannot tell: as root, a bwrap that another root launch's command wrote in that
// launch's worktree is root's file in root's directories, as the system's is (sandbox/README.md says so). findBwrap never looks in $PATH, where a "bwrap" planted in node_modules/.bin
// would be found; this check is for CONFINE_BWRAP, and for a system directory gone wrong.
//
// A user's setuid bwrap is refused too: it would run confine as the host's root, or without the user namespace
// whose capability the bwrap child needs to seal the layer.
func openBwrap(path string, rules []landlock.Rule, user bool) (int, error) {
	// Resolve path as the kernel would, one name at a time, noting every directory a name is looked up in. Once
	// each of those is checked to be root's alone (below), real names what was walked: no one else could have
	// changed it since.
	var st unix.Stat_t
	names, real, dirs := strings.Split(path, "/"), "/", []string(nil)
	for hops := 0; len(names) > 0; {
		name := names[0]
		names = names[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			real = filepath.Dir(real)
			continue
		}
		dirs = append(dirs, real)
		next := filepath.Join(real, name)
		if err := unix.Lstat(next, &st); err != nil {
			return -1, msg.Err(path, ": ", next, ": ", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			real = next
			continue
		}
		target, err := os.Readlink(next)
		if hops++; err != nil || hops > 40 {
			return -1, msg.Err(path, ": ", next, ": ", unix.ELOOP)
		}
		if strings.HasPrefix(target, "/") {
			real = "/"
		}
		names = append(strings.Split(target, "/"), names...)
	}
	// The refusals say what path resolved to only where a symlink was resolved, and what to do.
	via := ""
	if real != path {
		via = " is " + real + ", which"
	}
	fd, err := unix.Open(real, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, msg.Err(path, via, " cannot be opened: ", err)
	}
	// The file, then each directory: beneath no writable root, owned by root, and writable by no one else (a
	// directory may be sticky). A writable root is known by its path and by its identity (device and inode of
	// its descriptor), so that another path to it (a bind mount) is beneath it too.
	ids := make([][2]uint64, len(rules))
	for i, r := range rules {
		if r.FD >= 0 && unix.Fstat(r.FD, &st) == nil {
			ids[i] = [2]uint64{st.Dev, st.Ino}
		}
	}
	in, err := via, unix.Fstat(fd, &st)
	if err == nil && user && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		err = msg.Err(path, via, " is set-user-ID or set-group-ID: confine runs only an unprivileged bwrap for a user (one that makes user namespaces); "+bwrapElse)
	}
	for i, p := 0, real; err == nil; i++ {
		for j, r := range rules {
			if err == nil && (p == r.Path || (r.Dir && strings.HasPrefix(p, r.Path+"/")) || ids[j] == [2]uint64{st.Dev, st.Ino}) {
				err = msg.Err(path, in, " is beneath the writable ", r.Path, ": a confined command could have put it there; "+bwrapElse)
			}
		}
		why := msg.Str(" is not owned by root (uid ", int(st.Uid), ")")
		if st.Uid == 0 {
			why = msg.Str(" is writable by group or others (mode ", msg.Oct(st.Mode&0o7777), ")")
		}
		if err == nil && (st.Uid != 0 || (st.Mode&0o022 != 0 && !(st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0))) {
			err = msg.Err(path, in, why, ": a confined command could have put it there; chown root and chmod go-w ", p, ", or "+bwrapElse)
		}
		if err != nil || i == len(dirs) {
			break
		}
		p, in = dirs[i], via+" is in "+dirs[i]+", which"
		if err = unix.Lstat(p, &st); err != nil {
			err = msg.Err(path, ": ", p, ": ", err)
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// bwrapElse is the way out of every refusal of a bwrap found: another one.
const bwrapElse = "name another with " + BwrapEnv

// bwrapEnv is env without what the dynamic loader and glibc take code or data from (LD_PRELOAD, LD_LIBRARY_PATH,
// LD_AUDIT, GCONV_PATH, ...: the variables glibc drops for set-user-ID programs, ld.so(8)): bwrap is a
// dynamically linked program that runs before any sandbox, and such a variable may name the worktree. The
// command gets its environment from the Handoff, unchanged.
func bwrapEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "MALLOC_"), name == "GCONV_PATH",
			name == "GETCONF_DIR", name == "GLIBC_TUNABLES", name == "HOSTALIASES", name == "LOCALDOMAIN",
			name == "LOCPATH", name == "NIS_PATH", name == "NLSPATH", name == "RESOLV_HOST_CONF", name == "RES_OPTIONS",
			name == "TMPDIR", name == "TZDIR":
		default:
			out = append(out, kv)
		}
	}
	return out
}

// bwrapBase are the arguments of every bwrap run: the layer without its writable roots. /proc is a new one, of
// the new PID namespace: the host's would show the command bwrap's own outer process, root in the host's mount
// namespace, whose /proc/PID/root a root command could write through (the second attack review's route), and
// every host process of any user it could setuid to. For root, the bwrap child remounts it read-only, sysctls
// and all (bwrap's own cover of /proc/sys is skipped where access(2) says EACCES, which it always does for root);
// a user's is its user namespace's, whose uid 0 is not the kernel's global root that sysctls ask for.
// --new-session (setsid) leaves the command no controlling terminal to open as /dev/tty, unless --tty asks for
// it. A user's bwrap child keeps CAP_SYS_ADMIN in bwrap's user namespace to seal the layer (sealBwrapLayer).
func bwrapBase(tty, user bool) []string {
	args := []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
		"--unshare-ipc", "--as-pid-1", "--die-with-parent"}
	if !tty {
		args = append(args, "--new-session")
	}
	if user {
		// uid 0 in bwrap's one user namespace (no second one, as bwrap makes to give the caller's uid back), with
		// CAP_SYS_ADMIN, which the mount namespace answers to; the command gets the caller's IDs back from the
		// bwrap child (bwrapOwner), which writes the maps through its /proc.
		args = append(args, "--uid", "0", "--gid", "0", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETFCAP")
	}
	return args
}

// bwrapBinds are the roots bwrap binds read-write, in the order their descriptors follow bwrapRootFD: every
// writable root outside /dev, and a character device given with --allow (say /dev/kvm), bound with device
// access. /dev/null, /dev/tty, /dev/ptmx, /dev/pts and /dev/shm are bwrap's own in its synthetic /dev (a
// private devpts instance and a private /dev/shm on its tmpfs).
func (p *plan) bwrapBinds() (binds []*pathfd.Root) {
	for _, r := range p.roots {
		granted := false
		for _, rule := range p.rules {
			granted = granted || rule.FD == r.FD
		}
		switch {
		case !granted:
		case r.Kind == pathfd.CharDev && !isBwrapDev(r.Path):
			binds = append(binds, r)
		case r.Path != "/dev" && !strings.HasPrefix(r.Path, "/dev/"):
			binds = append(binds, r)
		}
	}
	return binds
}

func isBwrapDev(path string) bool {
	switch path {
	case "/dev/null", "/dev/tty", "/dev/ptmx", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom":
		return true
	}
	return false
}

// peer is the part of a layered child's parent that only a bwrap child has: the child is bwrap's, not ours, so
// signals go to the PID it says first (message 1 of the protocol, handoff.go).
type peer struct {
	started bool // the child said its PID
	pid     int  // the child's PID, where signals are forwarded
	pidfd   int  // a pidfd of it (pidfd_open, 5.3), or -1
}

// learn reads the bwrap child's PID from sock (peerPID), once the Handoff is sent.
func (p *peer) learn(sock int) {
	if pid, err := peerPID(sock); err == nil {
		p.started, p.pid = true, pid
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			p.pidfd = fd
		}
	}
}

// bwrapped is the parent's side of a bwrap child: a layered child whose process is bwrap.
type bwrapped struct {
	*layered
	stderr *relay
}

// startBwrap starts bwrap at path with p's layer, and this binary inside it as a bwrap child that waits for its
// Handoff. The signals that are forwarded are ignored by bwrap (a disposition it inherits): its outer process
// would die of them and take the sandbox with it, while this process forwards them to the bwrap child, which
// forwards them to the command. Errors wrap ErrLayerUnavailable (bwrapStrategy refuses with backend-unavailable).
func startBwrap(path string, fd int, p *plan, binds []*pathfd.Root, reportFD int) (*bwrapped, error) {
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return nil, report.Refuse(report.Internal, "reading our mount namespace: ", err.Error())
	}
	exe, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, report.Refuse(report.Internal, "opening this binary for bwrap: ", err.Error())
	}
	defer unix.Close(exe)
	sock, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, report.Refuse(report.Internal, "socketpair: ", err.Error())
	}
	// The bwrap child's first byte on the socket carries its credentials (SCM_CREDENTIALS, with its PID in our
	// PID namespace: the kernel translates it), which is how signals reach it past bwrap.
	unix.SetsockoptInt(sock[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	var sync, errPipe [2]int
	if err := unix.Pipe2(sync[:], unix.O_CLOEXEC); err != nil {
		closeAll(sock[:]...)
		return nil, report.Refuse(report.Internal, "pipe2: ", err.Error())
	}
	if err := unix.Pipe2(errPipe[:], unix.O_CLOEXEC); err != nil {
		closeAll(sock[0], sock[1], sync[0], sync[1])
		return nil, report.Refuse(report.Internal, "pipe2: ", err.Error())
	}
	placeholder := exe
	if reportFD >= 0 {
		placeholder = reportFD
	}
	files := []uintptr{0, 1, uintptr(errPipe[1]), uintptr(sock[1]), uintptr(sync[1]), uintptr(placeholder), 2, uintptr(exe)}
	args := bwrapBase(p.tty, p.euid != 0)
	p.binds = p.binds[:0]
	for i, r := range binds {
		var st unix.Stat_t
		if err := unix.Fstat(r.FD, &st); err != nil {
			closeAll(sock[0], sock[1], sync[0], sync[1], errPipe[0], errPipe[1])
			return nil, msg.Err(ErrLayerUnavailable, ": fstat ", r.Path, ": ", err)
		}
		p.binds = append(p.binds, Bind{Path: r.Path, Dev: st.Dev, Ino: st.Ino})
		files = append(files, uintptr(r.FD))
		bind := "--bind"
		if r.Kind == pathfd.CharDev {
			bind = "--dev-bind"
		}
		args = append(args, bind, "/proc/self/fd/"+msg.Itoa(bwrapRootFD+i), r.Path)
	}
	args = append(args, "--", "/proc/self/fd/"+msg.Itoa(bwrapExeFD))
	self := "/proc/self/fd/" + msg.Itoa(len(files)) // bwrap itself, as openBwrap checked it
	files = append(files, uintptr(fd))
	unix.SetNonblock(sync[0], true)
	unix.SetNonblock(errPipe[0], true)
	c := &layered{sock: sock[0], sync: os.NewFile(uintptr(sync[0]), "sync"), root: -1, pidfdNum: -1,
		reportFD: reportFD, peer: &peer{pidfd: -1}}
	b := &bwrapped{layered: c, stderr: newRelay(os.NewFile(uintptr(errPipe[0]), "bwrap stderr"))}
	pidfd := -1
	// bwrap's outer process must not die of a signal meant for the command (its child would die with it,
	// --die-with-parent), while this process forwards it. Without --tty, bwrap gets a process group of its own,
	// where no signal for ours reaches it, and the signals are caught before it starts: none is lost (the second
	// attack review lost 4 to 13 in 50 signalled starts when they were ignored while bwrap started). With --tty
	// it must stay in the terminal's foreground group: it inherits the signals ignored, and one that comes
	// before they are caught again is lost.
	sys := &syscall.SysProcAttr{Pdeathsig: unix.SIGKILL, PidFD: &pidfd, Setpgid: !p.tty}
	if p.tty {
		signal.Ignore(forwarded...)
	} else {
		c.signals = catchSignals()
		c.signals.wait()
	}
	c.pid, err = syscall.ForkExec(self, args, &syscall.ProcAttr{Env: append(bwrapEnv(p.env), layerEnv+"="+bwrapMark+ns),
		Files: files, Sys: sys})
	if p.tty {
		c.signals = catchSignals()
		c.signals.wait()
	}
	closeAll(sock[1], sync[1], errPipe[1])
	if pidfd >= 0 {
		unix.SetNonblock(pidfd, true)
		c.pidfd, c.pidfdNum = os.NewFile(uintptr(pidfd), "pidfd"), pidfd
	}
	if err != nil {
		c.pid = 0
		c.Abort()
		return nil, msg.Err(ErrLayerUnavailable, ": starting ", path, ": ", err)
	}
	return b, nil
}

func (b *bwrapped) Root() int { return pathfd.Here }

// Run runs the layered child's protocol with the bwrap child. If the bwrap child never started, bwrap failed
// to build the sandbox: the error wraps ErrLayerUnavailable, and says what bwrap said and why that usually
// happens.
func (b *bwrapped) Run(h *Handoff) (syscall.WaitStatus, error) {
	ws, err := b.layered.Run(h)
	if err == nil || b.peer.started {
		b.stderr.pass()
		return ws, err
	}
	said := b.stderr.all()
	return 0, msg.Err(ErrLayerUnavailable, ": bwrap could not build the sandbox: ", bwrapWhy(said), " (nothing ran)")
}

// bwrapWhy names the classic reasons bwrap fails from what it printed (its messages, bubblewrap.c).
func bwrapWhy(said string) string {
	said = strings.TrimSpace(said)
	line := said
	if i := strings.LastIndexByte(said, '\n'); i >= 0 {
		line = said[i+1:]
	}
	line = strings.TrimPrefix(strings.TrimSuffix(line, "."), "confine: ") // a bwrap child's own refusal
	if line == "" {
		line = "it printed nothing"
	}
	var why string
	switch {
	case strings.Contains(said, "No permissions to create"), strings.Contains(said, "Creating new namespace failed"):
		why = "user namespaces cannot be created here (a sysctl, or a container's seccomp profile)"
	case strings.Contains(said, "uid map"), strings.Contains(said, "setgroups"):
		why = "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04 and later): give bwrap a profile"
	case strings.Contains(said, "slave"), strings.Contains(said, "pivot_root"),
		strings.Contains(said, "mount") && (strings.Contains(said, "Permission denied") || strings.Contains(said, "Operation not permitted")):
		why = "mounts are denied in the new namespaces (a container's profile)"
	}
	if why == "" {
		return line
	}
	return line + ": " + why
}

// relay collects what bwrap prints until the command runs (to name a failure), then passes it on to stderr.
type relay struct {
	mu      sync.Mutex
	buf     []byte
	through bool
	done    chan struct{}
}

func newRelay(f *os.File) *relay {
	r := &relay{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer f.Close()
		b := make([]byte, 1024)
		for {
			n, err := f.Read(b)
			r.mu.Lock()
			if r.through {
				writeAll(2, b[:n])
			} else if len(r.buf) < 4096 {
				r.buf = append(r.buf, b[:n]...)
			}
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return r
}

// pass writes what was collected to stderr, and the rest as it comes.
func (r *relay) pass() {
	r.mu.Lock()
	defer r.mu.Unlock()
	writeAll(2, r.buf)
	r.buf, r.through = nil, true
}

// all is everything bwrap printed, once it has exited.
func (r *relay) all() string {
	<-r.done
	return string(r.buf)
}

// bwrapChildStart is a bwrap child's first step: its first byte on the handoff socket, whose credentials tell
// the parent its PID, and the caller's stderr back on 2.
func bwrapChildStart() error {
	if err := unix.Dup3(bwrapStderrFD, 2, 0); err != nil {
		return msg.Err("dup3: ", err)
	}
	if err := writeAll(handoffFD, []byte{'p'}); err != nil {
		return msg.Err("telling the parent our PID: ", err)
	}
	return nil
}

// sealBwrapLayer finishes bwrap's layer from inside and checks all of it, rather than trusting bwrap, before
// anything runs in it (binds: what bwrap was asked to bind read-write). It needs CAP_SYS_ADMIN (root's, or
// a user's in bwrap's user namespace by --cap-add, dropped here once done):
//   - every mount is made private (MS_REC|MS_PRIVATE): bwrap leaves them slaves of the host's, and a mount the
//     host makes later (autofs, logind, udisks) would appear inside, read-write (the attack review's route);
//   - the host's device nodes that --dev binds (/dev/null, /dev/tty, ...) are remounted read-only, keeping their
//     other flags: writing to a device needs no write access to its mount, but chmod, chown and utimes do, and
//     bwrap leaves those binds read-write (its --remount-ro adds nodev, which would make them unusable); so is
//     root's /proc (see bwrapBase);
//   - then no mount may be writable but a bind asked for, bwrap's tmpfs on /dev and its devpts on /dev/pts, and
//     none may still receive mounts from the host; this process must be PID 1 of its namespace;
//   - and each bind must be the very directory or file that was validated (device and inode, by lstat of its
//     path in here): bwrap realpath()s the /proc/self/fd/N it is given and binds that path, so a swap of the
//     path's components during startup could have bound another one (the conformance suite's root-swap race).
//
// A bwrap that ignored its arguments, bound more, or a program that only calls itself bwrap fails here, and
// nothing runs. The errors are refusals.
func sealBwrapLayer(binds []Bind, user bool) error {
	if os.Getpid() != 1 {
		return report.Refuse(report.BackendUnavailable, "bwrap did not start confine as the init of a new PID namespace (nothing ran)")
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return report.Refuse(report.BackendUnavailable, "making bwrap's mounts private (mount / MS_REC|MS_PRIVATE): ", err.Error(),
			" (nothing ran)")
	}
	mounts, err := readMounts()
	for _, m := range mounts {
		if err == nil && !m.hidden && m.rw && !bwrapMayWrite(m, binds, user) &&
			(strings.HasPrefix(m.point, "/dev/") || m.point == "/proc") {
			err = remountReadOnly(m.point)
		}
	}
	if err == nil {
		mounts, err = readMounts()
	}
	if err != nil {
		return report.Refuse(report.BackendUnavailable, "checking bwrap's mounts: ", err.Error())
	}
	seen := false
	for _, m := range mounts {
		switch {
		case m.hidden:
			continue
		case m.point == "/":
			seen = !m.rw
		case m.shared:
			return report.Refuse(report.BackendUnavailable, "bwrap's mount on ", m.point, " still receives the host's mounts (nothing ran)")
		}
		if m.rw && !bwrapMayWrite(m, binds, user) {
			return report.Refuse(report.BackendUnavailable, "bwrap left ", m.point, " (", m.fstype, ") writable, which confine did not ask for (nothing ran)")
		}
	}
	if !seen {
		return report.Refuse(report.BackendUnavailable, "bwrap did not make / read-only: the sandbox is not in place (nothing ran)")
	}
	for _, b := range binds {
		var st unix.Stat_t
		if err := unix.Lstat(b.Path, &st); err != nil || st.Dev != b.Dev || st.Ino != b.Ino {
			return report.Refuse(report.BackendUnavailable, "bwrap bound something else than the validated ", b.Path,
				" there (its path changed while confine started; nothing ran)")
		}
	}
	return nil
}

// bwrapMayWrite says whether m may be writable: a bind asked for, bwrap's own /dev tmpfs and devpts, and a
// user's /proc (see bwrapBase).
func bwrapMayWrite(m mount, binds []Bind, user bool) bool {
	switch {
	case m.point == "/proc":
		return user && m.fstype == "proc"
	case m.point == "/dev":
		return m.fstype == "tmpfs"
	case m.point == "/dev/pts":
		return m.fstype == "devpts"
	}
	for _, b := range binds {
		if m.point == b.Path {
			return true
		}
	}
	return false
}

// remountReadOnly makes the bind mount at path read-only, keeping the flags it has (mount(2) would otherwise
// clear them, and a mount a user namespace inherited refuses to lose nosuid, nodev, noexec or its atime flags).
func remountReadOnly(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return msg.Err("statfs ", path, ": ", err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for _, f := range [][2]uintptr{{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME}} {
		if uintptr(st.Flags)&f[0] != 0 {
			flags |= f[1]
		}
	}
	if err := unix.Mount("", path, "", flags, ""); err != nil {
		return msg.Err("remounting ", path, " read-only: ", err)
	}
	return nil
}

// peerPID reads the layered child's first byte on the handoff socket and returns the PID its credentials
// carry, in our PID namespace.
func peerPID(sock int) (int, error) {
	b := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	for {
		n, oobn, err := recvmsg(sock, b, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, msg.Err("the child ended first")
		}
		cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(cmsgs) != 1 {
			return 0, msg.Err("no credentials")
		}
		cred, err := unix.ParseUnixCredentials(&cmsgs[0])
		if err != nil {
			return 0, err
		}
		return int(cred.Pid), nil
	}
}

// probeBwrap runs a trivial command under bwrap at path, with the layer every launch gets (no writable root),
// and says whether a write outside failed as it must: the command (this binary, bwrapProbe) checks that / is
// read-only and that creating a file in /tmp fails with EROFS. It does not trust bwrap --version.
func probeBwrap(path string, fd int) error {
	exe, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(exe)
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(null)
	var errPipe [2]int
	if err := unix.Pipe2(errPipe[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	unix.SetNonblock(errPipe[0], true)
	out := newRelay(os.NewFile(uintptr(errPipe[0]), "bwrap stderr"))
	args := append(bwrapBase(false, false), "--", "/proc/self/fd/3")
	pid, err := syscall.ForkExec("/proc/self/fd/4", args, &syscall.ProcAttr{Env: append(bwrapEnv(os.Environ()), bwrapProbeEnv+"=1"),
		Files: []uintptr{uintptr(null), uintptr(null), uintptr(errPipe[1]), uintptr(exe), uintptr(fd)},
		Sys:   &syscall.SysProcAttr{Pdeathsig: unix.SIGKILL}})
	unix.Close(errPipe[1])
	if err != nil {
		return msg.Err("starting ", path, ": ", err)
	}
	var ws syscall.WaitStatus
	wait(pid, &ws)
	said := out.all()
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return nil
	case ws.Exited() && ws.ExitStatus() == probeNotReadOnly:
		return msg.Err(path, " ran the test command, but / was not read-only in it")
	case ws.Exited() && ws.ExitStatus() == probeWrote:
		return msg.Err(path, " ran the test command, and its write outside succeeded")
	case ws.Exited() && ws.ExitStatus() == probeNotEROFS:
		return msg.Err(path, " ran the test command, and its write outside failed, but not with EROFS")
	}
	return msg.Err(path, " failed (", waitText(ws), "): ", bwrapWhy(said))
}

// The bwrap probe's exit statuses, above any of bwrap's own (1).
const (
	probeNotReadOnly = 90
	probeWrote       = 91
	probeNotEROFS    = 92
)

// IsBwrapProbe says whether this process is probeBwrap's test command.
func IsBwrapProbe() bool { return os.Getenv(bwrapProbeEnv) != "" && os.Getpid() == 1 }

// BwrapProbe is the test command's whole life: / must be read-only, and creating a file in /tmp (writable on
// the host, not bound here) must fail with EROFS. It returns the exit status.
func BwrapProbe() int {
	var st unix.Statfs_t
	if unix.Statfs("/", &st) != nil || st.Flags&unix.ST_RDONLY == 0 {
		return probeNotReadOnly
	}
	var tv unix.Timeval
	unix.Gettimeofday(&tv)
	name := "/tmp/.confine-bwrap-probe-" + strconv.FormatInt(tv.Nano(), 36)
	fd, err := unix.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	switch {
	case err == nil:
		unix.Close(fd)
		unix.Unlink(name)
		return probeWrote
	case err != unix.EROFS:
		return probeNotEROFS
	}
	return 0
}

// closeAll closes fds.
func closeAll(fds ...int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
