// Package hostemu reproduces, with a seccomp filter installed before anything else runs, the hosts where confine
// cannot build its mount layer, so that a whole conformance run (`confine-conformance --host-emulation NAME`, or
// VM_HOST_EMULATION in the VM guest) proves the launcher's other metadata modes (report.metadata `supervisor` or
// `seccomp-deny`) on any kernel, as root and as an unprivileged user. The runner re-executes itself under
// `confine-conformance host-emulation NAME -- RUNNER ARGS`: the filter is then inherited by every process of the
// run (each confine launch, in the default variants too; the helpers; the controls), as on the real host, where
// the restriction applies to everything the user runs. Filters survive execve, fork and setuid (the nobody pass).
//
// Emulations (sources checked 2026-11-30; syscall numbers from golang.org/x/sys, include/uapi/asm-generic/unistd.h):
//
//   - ubuntu-userns-restricted: Ubuntu 23.10+ with kernel.apparmor_restrict_unprivileged_userns=1 (the default
//     from 24.04). Creating a user namespace is allowed, but the creator is moved into AppArmor's
//     `unprivileged_userns` profile, which denies every capability inside it and mediates mounts: the audit log
//     shows `apparmor="DENIED" operation="mount" ... error=-13 profile="unprivileged_userns"` (nsjail issues
//     #236 and #243 on Ubuntu 24.04, mount("/", MS_REC|MS_PRIVATE) fails with "Permission denied"), and
//     `operation="capable" ... capname="sys_admin"` / "setgid" (NVIDIA/OpenShell #1895: writing
//     /proc/self/setgroups fails with EACCES; apparmor commit "unprivileged_userns" profile: "deny all
//     capabilities within the profile"). The filter answers EACCES to every mount-API call: mount, umount2,
//     pivot_root, open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr, open_tree_attr.
//     unshare and clone with CLONE_NEWUSER (and the other namespace flags) are allowed. Not reproduced: the
//     capability denials inside the new namespace (seccomp cannot see a capability check), so a launcher that
//     stops at an earlier step there (the setgroups write, unshare(CLONE_NEWNS) after the user namespace) meets
//     EACCES/EPERM on the real host one step sooner; either way the mount layer cannot be had. As root the real
//     restriction does not apply (it is for unprivileged creators); the root pass of this column reproduces a
//     root confined by an LSM that denies mounts.
//
//   - no-namespaces: Docker's default seccomp profile (moby/moby profiles/seccomp/default_linux.go through
//     Docker 28, now moby/profiles seccomp/default_linux.go), with the default capabilities (no CAP_SYS_ADMIN,
//     no CAP_SYS_PTRACE). It is an allow-list with EPERM for everything else. For confine's path it allows the
//     three landlock_* calls (added by moby#43199, 2022), seccomp(2), prctl, pidfd_open, pidfd_send_signal,
//     ptrace and process_vm_readv/writev (kernel >= 4.8), ioctl (so SECCOMP_IOCTL_NOTIF_*), and all the
//     metadata calls (chmod...fchmodat2, chown, utimensat, *xattr, setxattrat). It denies, and so does this
//     filter: unshare (EPERM for any flags: gated on CAP_SYS_ADMIN; the newest moby/profiles allows unshare
//     itself, moby#51130, leaving the mounts to AppArmor's docker-default profile, which is the
//     ubuntu-userns-restricted case), clone with any of CLONE_NEWNS|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWCGROUP
//     (EPERM), clone3 (ENOSYS, so that libc falls back to clone), setns and every mount-API call (EPERM, gated on
//     CAP_SYS_ADMIN; pivot_root and open_tree_attr are not in the list at all), pidfd_getfd, kcmp and
//     process_madvise (EPERM: gated on CAP_SYS_PTRACE, see multikernel/sandlock#199), io_uring_setup/enter/
//     register (EPERM: removed from the list by moby#46762, Docker 25), and keyctl, add_key and request_key
//     (EPERM: not in the list; confine cannot join a session keyring of its own there, and denies every
//     keyring call to the command instead, sandbox/launch/caps.go). Syscalls of another
//     architecture (i386, x32) are allowed, as in nsdeny.
//
//   - nested-supervisor: confine inside a supervised confine (or any sandbox that supervises with a seccomp
//     user-notification listener and denies mounts: LXD/Incus system-call interception, gVisor-like supervisors).
//     The outer filter denies the mount API with EPERM (as confine's own filter does, sandbox/seccomp) and holds
//     a listener. The kernel allows one listener per filter chain: seccomp(SECCOMP_SET_MODE_FILTER,
//     SECCOMP_FILTER_FLAG_NEW_LISTENER) then fails with EBUSY (kernel/seccomp.c has_duplicate_listener, 5.0+),
//     so confine can have neither the mount layer nor a supervisor and must fall back to seccomp-deny. The
//     wrapper's child installs a filter that denies the mount API, asks the listener about mknodat (what LXD
//     intercepts) and allows everything else, passes the listener to the wrapper over a socket and execs the
//     command with the caller's descriptors; the wrapper keeps the listener open for the command's life, answers
//     each notification with SECCOMP_USER_NOTIF_FLAG_CONTINUE (5.5+), and exits with the command's status.
//
// The runner checks that its emulation is in force before any case runs (Check, in a throwaway child), and
// records its name in the run's start event (events.Env.HostEmulation); the report shows it per column.
package hostemu

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The emulations' names.
const (
	UbuntuUsernsRestricted = "ubuntu-userns-restricted"
	NoNamespaces           = "no-namespaces"
	NestedSupervisor       = "nested-supervisor"
)

// Names lists every emulation.
var Names = []string{UbuntuUsernsRestricted, NoNamespaces, NestedSupervisor}

// EnvMarker is set in the environment of a process already running under the emulation it names: the runner
// re-executes itself under the wrapper only when it is absent.
const EnvMarker = "CONFINE_CONFORMANCE_HOST_EMULATION"

// Known reports whether name is an emulation.
func Known(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

// NamespaceFlags are the clone flags Docker's profile refuses without CAP_SYS_ADMIN (include/uapi/linux/sched.h).
const NamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// MountAPI is every system call that changes the mount table (the new mount API is 5.2; mount_setattr 5.12;
// open_tree_attr 6.15): what ubuntu-userns-restricted answers with EACCES.
var MountAPI = []uint32{unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_OPEN_TREE,
	unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_MOUNT_SETATTR, unix.SYS_OPEN_TREE_ATTR}

// DockerDenied are the calls on confine's path that no-namespaces answers with EPERM (besides clone with
// NamespaceFlags), as Docker's default profile does without CAP_SYS_ADMIN and CAP_SYS_PTRACE.
var DockerDenied = append(append([]uint32{unix.SYS_UNSHARE, unix.SYS_SETNS, unix.SYS_PIDFD_GETFD, unix.SYS_KCMP,
	unix.SYS_PROCESS_MADVISE, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER},
	MountAPI...), KeyringDenied...)

// KeyringDenied are the keyring calls Docker's default profile denies (EPERM, not in its allow-list): confine
// then cannot join a session keyring of its own, and denies every keyring call to the command instead.
var KeyringDenied = []uint32{unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY}

// Notified are the calls nested-supervisor's filter sends to its listener (answered "continue").
var Notified = []uint32{unix.SYS_MKNODAT}

// Offsets in struct seccomp_data (include/uapi/linux/seccomp.h); args[0]'s low word on little-endian amd64/arm64.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

func errnoRet(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// Program returns the BPF program of emulation name for the architecture auditArch (AUDIT_ARCH_*): a list of
// "system call number -> return" tests, then allow. System calls of another architecture are allowed.
func Program(name string, auditArch uint32) ([]unix.SockFilter, error) {
	type rule struct {
		nr  uint32
		ret uint32
	}
	var rules []rule
	add := func(nrs []uint32, ret uint32) {
		for _, nr := range nrs {
			rules = append(rules, rule{nr, ret})
		}
	}
	cloneCheck := false
	switch name {
	case UbuntuUsernsRestricted:
		add(MountAPI, errnoRet(unix.EACCES))
	case NoNamespaces:
		add([]uint32{unix.SYS_CLONE3}, errnoRet(unix.ENOSYS))
		add(DockerDenied, errnoRet(unix.EPERM))
		cloneCheck = true
	case NestedSupervisor:
		add(MountAPI, errnoRet(unix.EPERM))
		add(Notified, unix.SECCOMP_RET_USER_NOTIF)
	default:
		return nil, fmt.Errorf("unknown host emulation %q (want one of %v)", name, Names)
	}
	stmt, jump, ld, jeq, ret := Stmt, Jump, LdAbsW, JeqK, RetK
	// Layout: [ld arch][jeq arch ? +1 : ->allow][ld nr] {[jeq nr ? +0 : +1][ret X]}... {clone block} [ret allow]
	n := 3 + 2*len(rules) + 1
	if cloneCheck {
		n += 4 // the block ends in the program's allow
	}
	allowAt := n - 1
	p := []unix.SockFilter{stmt(ld, offArch), jump(jeq, auditArch, 0, uint8(allowAt-2)), stmt(ld, offNr)}
	for _, r := range rules {
		p = append(p, jump(jeq, r.nr, 0, 1), stmt(ret, r.ret))
	}
	if cloneCheck {
		p = append(p,
			jump(jeq, unix.SYS_CLONE, 0, 3), // not clone: allow (the block's last instruction)
			stmt(ld, offArg0),
			jump(JsetK, NamespaceFlags, 0, 1),
			stmt(ret, errnoRet(unix.EPERM)),
			stmt(ret, unix.SECCOMP_RET_ALLOW))
	} else {
		p = append(p, stmt(ret, unix.SECCOMP_RET_ALLOW))
	}
	if len(p) != n || allowAt-2 > 255 {
		return nil, fmt.Errorf("host emulation %s: program layout %d != %d", name, len(p), n)
	}
	return p, nil
}

// Classic BPF opcodes (include/uapi/linux/bpf_common.h) for the filters here and in nsdeny.
const (
	LdAbsW uint16 = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS   // load the 32-bit word at K in struct seccomp_data
	JeqK   uint16 = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K  // jump Jt if A == K, else Jf
	JsetK  uint16 = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K // jump Jt if A & K != 0, else Jf
	RetK   uint16 = unix.BPF_RET | unix.BPF_K                 // return K
)

// Stmt is a classic BPF instruction without jumps; Jump one with its true and false offsets.
func Stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

// Jump is a conditional classic BPF instruction: on true skip jt instructions, else jf.
func Jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// NativeArch is the AUDIT_ARCH_* value of the architecture this binary was built for.
func NativeArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("no seccomp architecture known for %s", runtime.GOARCH)
}

// install loads emulation name's filter with flags. Without CAP_SYS_ADMIN the kernel wants PR_SET_NO_NEW_PRIVS
// first (EACCES); it is set only then, as neither host sets it for root. It returns what seccomp(2) returned (a
// listener descriptor with SECCOMP_FILTER_FLAG_NEW_LISTENER).
func install(name string, flags uintptr) (int, error) {
	arch, err := NativeArch()
	if err != nil {
		return -1, err
	}
	prog, err := Program(name, arch)
	if err != nil {
		return -1, err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	load := func() (uintptr, unix.Errno) {
		r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
		return r, e
	}
	r, e := load()
	if e == unix.EACCES {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return -1, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
		}
		r, e = load()
	}
	if e != 0 {
		return -1, fmt.Errorf("seccomp(SET_MODE_FILTER, %#x): %w", flags, e)
	}
	runtime.KeepAlive(prog)
	return int(r), nil
}

// Install puts emulation name's filter on every thread of this process (SECCOMP_FILTER_FLAG_TSYNC). For
// nested-supervisor it also returns the listener (else -1); the caller must keep it open for as long as the
// emulation is to hold, and answer its notifications (Serve).
func Install(name string) (listener int, err error) {
	if name == NestedSupervisor {
		// NEW_LISTENER with TSYNC needs TSYNC_ESRCH (5.7+).
		return install(name, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_TSYNC|unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH)
	}
	_, err = install(name, unix.SECCOMP_FILTER_FLAG_TSYNC)
	return -1, err
}

// seccompNotif and seccompNotifResp are struct seccomp_notif (80 bytes) and struct seccomp_notif_resp (24 bytes).
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// Serve answers every notification on listener with "continue" (the call proceeds as if unfiltered) until the
// listener fails (e.g. EBADF once closed). It counts the notifications answered into *served when non-nil.
func Serve(listener int, served *int64) error {
	for {
		var req seccompNotif
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req))); e != 0 {
			if e == unix.EINTR || e == unix.ENOENT { // interrupted, or the task died before we read it
				continue
			}
			return fmt.Errorf("SECCOMP_IOCTL_NOTIF_RECV: %w", e)
		}
		resp := seccompNotifResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
		if e != 0 && e != unix.ENOENT {
			return fmt.Errorf("SECCOMP_IOCTL_NOTIF_SEND: %w", e)
		}
		if served != nil && e == 0 {
			*served++
		}
	}
}

// Check observes, in this process, that emulation name is in force: a harmless call that the filter answers
// differently from the kernel (umount2 of a missing path: EACCES instead of ENOENT or EPERM; setns(-1): EPERM
// instead of EBADF; clone3(NULL): ENOSYS instead of EFAULT/EINVAL; a second listener: EBUSY). For
// nested-supervisor the probe installs a filter if the emulation is absent, so run it in a throwaway process
// (`confine-conformance host-emulation check NAME`).
func Check(name string) error {
	const missing = "/nonexistent-confine-host-emulation-probe"
	switch name {
	case UbuntuUsernsRestricted:
		p, _ := unix.BytePtrFromString(missing)
		_, _, e := unix.Syscall(unix.SYS_UMOUNT2, uintptr(unsafe.Pointer(p)), 0, 0)
		if e != unix.EACCES {
			return fmt.Errorf("%s: umount2(%s) = %v, want EACCES from the filter", name, missing, e)
		}
	case NoNamespaces:
		if _, _, e := unix.Syscall(unix.SYS_SETNS, ^uintptr(0), 0, 0); e != unix.EPERM {
			return fmt.Errorf("%s: setns(-1) = %v, want EPERM from the filter", name, e)
		}
		if _, _, e := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0); e != unix.ENOSYS {
			return fmt.Errorf("%s: clone3(NULL) = %v, want ENOSYS from the filter", name, e)
		}
		if _, _, e := unix.Syscall(unix.SYS_PIDFD_GETFD, ^uintptr(0), 0, 0); e != unix.EPERM {
			return fmt.Errorf("%s: pidfd_getfd(-1) = %v, want EPERM from the filter", name, e)
		}
	case NestedSupervisor:
		fd, err := install(UbuntuUsernsRestricted, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_TSYNC|unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH)
		if err == nil {
			unix.Close(fd)
			return fmt.Errorf("%s: a second listener was granted, want EBUSY (no listener is held above this process)", name)
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("%s: a second listener: %w, want EBUSY", name, err)
		}
	default:
		return fmt.Errorf("unknown host emulation %q (want one of %v)", name, Names)
	}
	return nil
}

// childArg is the hidden first argument of nested-supervisor's child (`__listener-child FD NAME -- CMD`):
// install the listener filter, send the listener on descriptor FD, close it, exec the command.
const childArg = "__listener-child"

// Main is `confine-conformance host-emulation NAME [--] CMD [ARGS...]`: run CMD (looked up in PATH) under the
// emulation, with EnvMarker=NAME in its environment; and `confine-conformance host-emulation check NAME`:
// exit 0 when the emulation is in force here (Check). It returns the exit status: 2 on failure to set up;
// for nested-supervisor, the command's own status (128+N when killed by signal N).
func Main(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "host-emulation: "+format+"\n", a...)
		return 2
	}
	if len(args) == 2 && args[0] == "check" {
		if err := Check(args[1]); err != nil {
			return fail("%v", err)
		}
		return 0
	}
	child, sock := len(args) > 1 && args[0] == childArg, -1
	if child {
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 3 {
			return fail("%s: bad descriptor %q", childArg, args[1])
		}
		sock, args = n, args[2:]
	}
	if len(args) < 1 || !Known(args[0]) {
		return fail("usage: host-emulation NAME [--] CMD [ARGS...] | host-emulation check NAME (NAME: %v)", Names)
	}
	name, cmd := args[0], args[1:]
	if len(cmd) > 0 && cmd[0] == "--" {
		cmd = cmd[1:]
	}
	if len(cmd) == 0 {
		return fail("want a command")
	}
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		return fail("%v", err)
	}
	env := append(os.Environ(), EnvMarker+"="+name)
	if name == NestedSupervisor && !child {
		return supervise(name, cmd, fail)
	}
	runtime.LockOSThread()
	if child {
		// Only this thread needs the filter: it execs right after, and no other thread of ours survives execve.
		fd, err := install(name, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
		if err != nil {
			return fail("%v", err)
		}
		if err := unix.Sendmsg(sock, []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
			return fail("sending the listener: %v", err)
		}
		unix.Close(fd)
		unix.Close(sock)
	} else if _, err := Install(name); err != nil {
		return fail("%v", err)
	}
	err = unix.Exec(path, cmd, env)
	return fail("exec %s: %v", path, err)
}

// supervise runs `self host-emulation __listener-child FD NAME -- CMD` with this process's inheritable
// descriptors at their numbers (a caller's --report-fd 3 goes through) and the socket at FD above them, receives
// the listener the child creates, serves it while the command runs, forwards SIGINT, SIGTERM and SIGHUP to it,
// and returns its status.
func supervise(name string, cmd []string, fail func(string, ...any) int) int {
	self, err := os.Executable()
	if err != nil {
		return fail("%v", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail("socketpair: %v", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "listener-recv"), os.NewFile(uintptr(fds[1]), "listener-send")
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range ents {
			n, err := strconv.Atoi(e.Name())
			if err != nil || n < 3 {
				continue
			}
			if fl, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC != 0 {
				continue // ours (Go opens everything close-on-exec), or gone
			}
			for len(files) <= n {
				files = append(files, nil)
			}
			files[n] = os.NewFile(uintptr(n), "inherited")
		}
	}
	sockAt := len(files)
	files = append(files, theirs)
	argv := append([]string{self, "host-emulation", childArg, strconv.Itoa(sockAt), name, "--"}, cmd...)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	p, err := os.StartProcess(self, argv, &os.ProcAttr{Files: files, Env: os.Environ()})
	if err != nil {
		return fail("%v", err)
	}
	theirs.Close()
	go func() {
		for s := range sigs {
			p.Signal(s)
		}
	}()
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(ours.Fd()), buf, oob, 0)
	listener := -1
	if err == nil {
		var msgs []unix.SocketControlMessage
		if msgs, err = unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
			var rights []int
			if rights, err = unix.ParseUnixRights(&msgs[0]); err == nil && len(rights) == 1 {
				listener = rights[0]
			}
		}
	}
	ours.Close()
	st, werr := func() (*os.ProcessState, error) {
		if listener < 0 {
			return nil, nil
		}
		go Serve(listener, nil) // held open (and served) until this process exits
		return p.Wait()
	}()
	if listener < 0 {
		st, _ := p.Wait() // the child said why on stderr
		return fail("no listener from the child (%v; exit %d)", err, st.ExitCode())
	}
	if werr != nil {
		return fail("wait: %v", werr)
	}
	ws := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// Argv returns the argv that runs argv under emulation name: `self host-emulation NAME -- ARGV...`.
func Argv(self, name string, argv []string) []string {
	return append([]string{self, "host-emulation", name, "--"}, argv...)
}

// Active returns the emulation this process runs under, per EnvMarker ("" when none).
func Active() string { return os.Getenv(EnvMarker) }
