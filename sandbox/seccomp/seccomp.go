// Package seccomp builds the classic BPF filter that closes the write-class effects Landlock has no right for:
// changing a file's mode, owner, timestamps, extended attributes or inode flags, truncate(2) by path on ABIs
// before 3, set-ID modes for root, IPC objects and keyrings shared with the caller, typing into the terminal
// with TIOCSTI and, without --tty, resizing it, taking its foreground or changing how it works for everyone. Landlock cannot tell inside from
// outside for these, so they are denied everywhere with EPERM. Compat (32-bit) and x32 system calls are denied
// with ENOSYS, so no second syscall table can bypass the filter.
//
// The layout of struct seccomp_data and the return values come from include/uapi/linux/seccomp.h.
package seccomp

import (
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
)

// Policy says what the filter denies. The zero Policy denies what neither a mount nor a Landlock right can
// stop, for every command: the mount API (Landlock does not mediate mount_setattr, and a root command could
// otherwise clear the read-only mounts around the worktree), TIOCSTI and TIOCLINUX, terminalIoctls (unless
// TerminalControl), keyring writes outside the command's own thread, process and session keyrings,
// request_key (its upcall runs a program outside the sandbox), and compat system calls.
type Policy struct {
	// Metadata denies the metadata system calls and the inode-flag ioctls everywhere: Landlock has no right
	// for them. Not needed where read-only mounts already stop them outside the writable roots.
	Metadata bool
	// Supervise hands the classic metadata system calls (Supervised) to a supervisor instead of denying them:
	// SECCOMP_RET_USER_NOTIF (5.0), answered on the filter's listener (see package supervisor), which makes
	// the change itself only beneath a writable root. The inode-flag ioctls stay denied, and the *at forms
	// that take a struct (setxattrat, removexattrat 6.13; file_setattr 6.17) answer ENOSYS, so that libc falls
	// back to the calls the supervisor reads. Set-ID modes are still checked first when NoSetID is set.
	// Supervise and Metadata are exclusive.
	Supervise bool
	// SuperviseSignals hands every way of signalling a process to the supervisor (with Supervise only), which
	// sends the signal itself after checking that the target is the command or its descendant: kill, tkill,
	// tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo and pidfd_send_signal (signal 0, which sends nothing, stays
	// the kernel's), fcntl F_SETOWN and F_SETOWN_EX, and ioctl FIOSETOWN and SIOCSPGRP (the owner of a
	// descriptor gets SIGIO and SIGURG). Below Landlock ABI 6 (6.12) only: from it, LANDLOCK_SCOPE_SIGNAL
	// scopes all of these in the kernel.
	SuperviseSignals bool
	// DenyTruncate denies truncate(2) by path: Landlock handles TRUNCATE only from ABI 3 (6.2).
	DenyTruncate bool
	// DenyIPC denies System V IPC and POSIX message queues, for a command that shares the caller's IPC
	// namespace (no private one could be had).
	DenyIPC bool
	// DenyLocks denies advisory locks (flock, and fcntl's F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW): taken
	// through a read-only descriptor on a file outside, they stall the caller's processes that lock it too.
	// Tools lock their own files all the time (cargo, package managers), so only --strict asks for this.
	DenyLocks bool
	// NoSetID denies a set-user-ID or set-group-ID bit in every mode a command can give a file (chmod,
	// fchmod, fchmodat, fchmodat2, open/openat/creat with O_CREAT or O_TMPFILE, mknod, mknodat), and answers
	// openat2 and io_uring with ENOSYS, because seccomp cannot read their modes (openat2's is in a struct,
	// io_uring's in shared memory). A file left set-user-ID would let anyone act as its owner (root, or the
	// caller) once the command is gone.
	NoSetID bool
	// DenyVsock denies socket(AF_VSOCK, ...) with EPERM, on WSL2 only: there the Windows host is the VM's
	// vsock peer (VMADDR_CID_HOST), and WSL's interop client, /init run as the binfmt_misc interpreter of .exe
	// files, listens on an AF_VSOCK port for the Windows side to connect its standard streams and control
	// channel back (CreateNtProcessUtilityVm, src/linux/init/binfmt.cpp in microsoft/WSL); other host
	// services listen on vsock ports too. AF_VSOCK is 40 (include/linux/socket.h; the address family of
	// include/uapi/linux/vm_sockets.h). socketpair has no vsock form (EOPNOTSUPP), and io_uring's
	// IORING_OP_SOCKET is out of reach where NoSetID answers io_uring with ENOSYS.
	DenyVsock bool
	// TerminalControl allows terminalIoctls (--tty): the caller asked for an interactive command, and a shell
	// with job control resizes its terminal and hands the foreground to each job. Without it they are denied on
	// every descriptor, since seccomp cannot tell the caller's terminal from another. Without --tty the
	// command's terminals are the caller's (no /dev/ptmx is writable), except under bwrap, whose /dev has a
	// private devpts: there a program that makes a pseudo-terminal of its own needs --tty for these too.
	TerminalControl bool
}

// ioctl commands denied with EPERM, from include/uapi/linux/fs.h, fsverity.h and asm-generic/ioctls.h. The
// kernel passes the command as a 32-bit unsigned int, so only the low word of the argument is compared.
type ioctlCmd struct {
	name string
	cmd  uint32
}

// metadataIoctls change inode attributes; alwaysIoctls are denied in every policy.
var metadataIoctls = []ioctlCmd{
	{"FS_IOC_SETFLAGS", 0x40086602},              // chattr: inode flags
	{"FS_IOC32_SETFLAGS", 0x40046602},            // the same, 32-bit ABI
	{"FS_IOC_SETVERSION", 0x40087602},            // inode generation
	{"FS_IOC32_SETVERSION", 0x40047602},          // the same, 32-bit ABI
	{"FS_IOC_FSSETXATTR", 0x401c5820},            // project id, extent size, inode flags
	{"FS_IOC_SET_ENCRYPTION_POLICY", 0x800c6613}, // fscrypt policy on an empty directory
	{"FS_IOC_ENABLE_VERITY", 0x40806685},         // makes a file immutable, from a read-only fd
	{"FS_IOC_SETFSLABEL", 0x41009432},            // filesystem label
	// Filesystem-specific ones that change an inode's attributes (fs/ext4/ext4.h, fs/btrfs, fs/fat).
	{"EXT4_IOC_SETVERSION", 0x40086604},       // inode generation, as FS_IOC_SETVERSION
	{"EXT4_IOC32_SETVERSION", 0x40046604},     // the same, 32-bit ABI
	{"BTRFS_IOC_SUBVOL_SETFLAGS", 0x4008941a}, // read-only flag of a subvolume
	{"FAT_IOCTL_SET_ATTRIBUTES", 0x40047211},  // FAT attribute bits
	{"EXT4_IOC_MIGRATE", 0x6609},              // an inode's block mapping, from a read-only descriptor
	// btrfs subvolumes and snapshots (fs/btrfs/ioctl.c), made or removed through a directory descriptor.
	{"BTRFS_IOC_SNAP_CREATE", 0x50009401}, {"BTRFS_IOC_SUBVOL_CREATE", 0x5000940e},
	{"BTRFS_IOC_SNAP_DESTROY", 0x5000940f}, {"BTRFS_IOC_SNAP_CREATE_V2", 0x50009417},
	{"BTRFS_IOC_SUBVOL_CREATE_V2", 0x50009418}, {"BTRFS_IOC_SNAP_DESTROY_V2", 0x5000943f},
	{"FIDEDUPERANGE", unix.FIDEDUPERANGE}, // shares extents into a destination that may be read-only
	// fscrypt keys live in the filesystem's keyring, shared by every user of the filesystem.
	{"FS_IOC_ADD_ENCRYPTION_KEY", unix.FS_IOC_ADD_ENCRYPTION_KEY},
	{"FS_IOC_REMOVE_ENCRYPTION_KEY", unix.FS_IOC_REMOVE_ENCRYPTION_KEY},
	{"FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS", unix.FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS},
}

// sysNr is one system call the filter may deny, by its name in the kernel's syscall table.
type sysNr struct {
	name string
	nr   uint32
}

// Syscall names one system call of this architecture's table.
type Syscall struct {
	Name string
	Nr   uint32
}

// unsupervised are the metadata calls that take their arguments in a struct the supervisor does not read:
// with Supervise they answer ENOSYS (glibc's setxattr and friends use the classic calls; file_setattr has no
// libc wrapper). Their numbers are the same on every architecture (include/uapi/asm-generic/unistd.h).
var unsupervised = []sysNr{
	{"setxattrat", unix.SYS_SETXATTRAT}, {"removexattrat", unix.SYS_REMOVEXATTRAT},
	{"file_setattr", unix.SYS_FILE_SETATTR},
}

// Supervised are the metadata system calls a Supervise policy hands to the supervisor: deniedSyscalls but
// the unsupervised ones, in table order.
var Supervised = supervised()

func supervised() []Syscall {
	var out []Syscall
next:
	for _, s := range deniedSyscalls {
		for _, u := range unsupervised {
			if s.nr == u.nr {
				continue next
			}
		}
		out = append(out, Syscall{s.name, s.nr})
	}
	return out
}

// mountSyscalls change mounts: denied in every policy, for root and for commands in nested namespaces alike
// (the filter is inherited). The new mount API (5.2; mount_setattr 5.12; open_tree_attr 6.15) has the same
// numbers on every architecture (include/uapi/asm-generic/unistd.h); x/sys resolves all of them per GOARCH.
// request_key (2.6.10) is here too: for a key it cannot find, the kernel runs /sbin/request-key as root.
var mountSyscalls = []sysNr{
	{"mount", unix.SYS_MOUNT}, {"umount2", unix.SYS_UMOUNT2}, {"pivot_root", unix.SYS_PIVOT_ROOT},
	{"open_tree", unix.SYS_OPEN_TREE}, {"move_mount", unix.SYS_MOVE_MOUNT}, {"fsopen", unix.SYS_FSOPEN},
	{"fsconfig", unix.SYS_FSCONFIG}, {"fsmount", unix.SYS_FSMOUNT}, {"fspick", unix.SYS_FSPICK},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR}, {"open_tree_attr", unix.SYS_OPEN_TREE_ATTR},
	{"request_key", unix.SYS_REQUEST_KEY},
}

// ipcSyscalls are System V IPC (ipc/msg.c, sem.c, shm.c) and POSIX message queues (ipc/mqueue.c): objects of
// the IPC namespace, shared with the caller unless the command has a namespace of its own.
var ipcSyscalls = []sysNr{
	{"msgget", unix.SYS_MSGGET}, {"msgsnd", unix.SYS_MSGSND}, {"msgrcv", unix.SYS_MSGRCV},
	{"msgctl", unix.SYS_MSGCTL}, {"semget", unix.SYS_SEMGET}, {"semop", unix.SYS_SEMOP},
	{"semtimedop", unix.SYS_SEMTIMEDOP}, {"semctl", unix.SYS_SEMCTL}, {"shmget", unix.SYS_SHMGET},
	{"shmat", unix.SYS_SHMAT}, {"shmctl", unix.SYS_SHMCTL}, {"shmdt", unix.SYS_SHMDT},
	{"mq_open", unix.SYS_MQ_OPEN}, {"mq_unlink", unix.SYS_MQ_UNLINK}, {"mq_timedsend", unix.SYS_MQ_TIMEDSEND},
	{"mq_timedreceive", unix.SYS_MQ_TIMEDRECEIVE}, {"mq_notify", unix.SYS_MQ_NOTIFY},
	{"mq_getsetattr", unix.SYS_MQ_GETSETATTR},
}

var alwaysIoctls = []ioctlCmd{
	{"TIOCSTI", 0x5412},   // pushes input into the caller's terminal
	{"TIOCLINUX", 0x541c}, // on a virtual console, subcode 2/3 pastes the selection: input again
}

// terminalIoctls act on a terminal for every process that uses it, the caller's when descriptors 0 to 2 are its
// terminal (include/uapi/asm-generic/ioctls.h; drivers/tty/tty_io.c, tty_ioctl.c): no Landlock right or scope
// covers them, and a signal they make the kernel send is the kernel's.
var terminalIoctls = []ioctlCmd{
	{"TIOCSWINSZ", unix.TIOCSWINSZ}, // a new window size: SIGWINCH to the foreground process group
	// the command's own group in the foreground: the caller's next read of the terminal stops it with SIGTTIN
	{"TIOCSPGRP", unix.TIOCSPGRP},
	// a line discipline that drops everything (N_NULL, built in: no capability needed) leaves the caller's
	// terminal dead after the run
	{"TIOCSETD", unix.TIOCSETD},
	{"TIOCEXCL", unix.TIOCEXCL}, // exclusive mode: the caller cannot open its own terminal again (EBUSY)
	{"TCXONC", unix.TCXONC},     // tcflow(TCOOFF): the caller's next write to the terminal blocks
}

// ioUringSyscalls are denied with ENOSYS (so that libraries fall back to plain system calls) wherever metadata
// or set-ID modes are: an io_uring operation (IORING_OP_SETXATTR 5.19, IORING_OP_OPENAT's mode) is not a system
// call, so seccomp cannot see it.
var ioUringSyscalls = []sysNr{
	{"io_uring_setup", unix.SYS_IO_URING_SETUP}, {"io_uring_enter", unix.SYS_IO_URING_ENTER},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER},
}

// A modeCheck denies a system call whose mode argument has S_ISUID or S_ISGID; if flagsArg >= 0, only when
// its flags argument creates a file (O_CREAT or O_TMPFILE).
type modeCheck struct {
	sysNr
	modeArg, flagsArg int
}

// setIDModes are the calls that give a file a mode (the *at forms on every architecture; legacyModes adds
// the older ones where the table has them).
var setIDModes = append([]modeCheck{
	{sysNr{"fchmod", unix.SYS_FCHMOD}, 1, -1}, {sysNr{"fchmodat", unix.SYS_FCHMODAT}, 2, -1},
	{sysNr{"fchmodat2", unix.SYS_FCHMODAT2}, 2, -1}, {sysNr{"mknodat", unix.SYS_MKNODAT}, 2, -1},
	{sysNr{"openat", unix.SYS_OPENAT}, 3, 2},
}, legacyModes...)

// The set-ID bits (include/uapi/linux/stat.h) and the flags that create a file (asm-generic/fcntl.h: O_TMPFILE
// is __O_TMPFILE | O_DIRECTORY; only __O_TMPFILE is tested, as the kernel does).
const (
	setIDBits    = unix.S_ISUID | unix.S_ISGID
	createsAFile = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)
)

// keyctl operations (include/uapi/linux/keyctl.h). Those in keyctlAllowed read, compute, or act on the caller's
// own credentials. CLEAR and UNLINK are allowed only on the thread, process or session keyring (special IDs -1,
// -2, -3; the session keyring is a fresh one, joined before execve), and SEARCH only when it links what it finds
// nowhere. Every other operation, and any added later, is denied. LINK above all: a key or keyring of the
// caller's linked into the session keyring would be possessed by the command, and add_key there would then
// rewrite it in place (the attack review's escape). UPDATE, REVOKE, SETPERM, CHOWN, SET_TIMEOUT and INVALIDATE
// name a key by serial, which could be the caller's; SESSION_TO_PARENT replaces the caller's session keyring;
// GET_PERSISTENT, MOVE and the request-key authority operations reach further still. JOIN_SESSION_KEYRING is
// allowed for an anonymous keyring only: a name joins a keyring shared by name.
var keyctlAllowed = []uint32{
	unix.KEYCTL_GET_KEYRING_ID, unix.KEYCTL_DESCRIBE, unix.KEYCTL_READ, unix.KEYCTL_SET_REQKEY_KEYRING,
	unix.KEYCTL_GET_SECURITY, unix.KEYCTL_DH_COMPUTE, unix.KEYCTL_PKEY_QUERY, unix.KEYCTL_PKEY_ENCRYPT,
	unix.KEYCTL_PKEY_DECRYPT, unix.KEYCTL_PKEY_SIGN, unix.KEYCTL_PKEY_VERIFY, unix.KEYCTL_CAPABILITIES,
}

// otherProcesses are the calls that act on another process named by its pid, beyond signals (which Landlock
// ABI 6 scopes) and ptrace access (which Landlock scopes from ABI 1): they are allowed only on the caller
// itself (pid 0; for prlimit64 also any pid when it only reads), so the command cannot lower the limits or
// the priority of the caller's other processes. sched_setaffinity is left alone: thread pools pin their own
// threads by thread ID, which seccomp cannot tell from another process's.
var otherProcesses = []sysNr{
	{"prlimit64", unix.SYS_PRLIMIT64}, {"setpriority", unix.SYS_SETPRIORITY}, {"ioprio_set", unix.SYS_IOPRIO_SET},
	{"sched_setscheduler", unix.SYS_SCHED_SETSCHEDULER}, {"sched_setparam", unix.SYS_SCHED_SETPARAM},
	{"sched_setattr", unix.SYS_SCHED_SETATTR},
}

// A signalCall is a system call that sends a signal, with the index of its signal argument (include/linux/
// syscalls.h): signal 0 sends nothing (kill(2): it checks that the target exists), so the filter allows it.
type signalCall struct {
	sysNr
	sigArg int
}

// signalCalls are the calls SuperviseSignals hands to the supervisor (kernel/signal.c).
var signalCalls = []signalCall{
	{sysNr{"kill", unix.SYS_KILL}, 1}, {sysNr{"tkill", unix.SYS_TKILL}, 1}, {sysNr{"tgkill", unix.SYS_TGKILL}, 2},
	{sysNr{"rt_sigqueueinfo", unix.SYS_RT_SIGQUEUEINFO}, 1},
	{sysNr{"rt_tgsigqueueinfo", unix.SYS_RT_TGSIGQUEUEINFO}, 2},
	{sysNr{"pidfd_send_signal", unix.SYS_PIDFD_SEND_SIGNAL}, 1},
}

// FIOSETOWN is include/uapi/asm-generic/sockios.h's (x/sys has no name for it): a socket's owner, as
// SIOCSPGRP (net/socket.c, sock_ioctl).
const FIOSETOWN = 0x8901

// ownerFcntls and ownerIoctls set the process or group that a descriptor's SIGIO and SIGURG go to
// (include/uapi/asm-generic/fcntl.h, sockios.h): SuperviseSignals hands them to the supervisor.
var (
	ownerFcntls = []uint32{unix.F_SETOWN, unix.F_SETOWN_EX}
	ownerIoctls = []ioctlCmd{{"FIOSETOWN", FIOSETOWN}, {"SIOCSPGRP", unix.SIOCSPGRP}}
)

// ownKeyrings is the lowest of the special keyring IDs -3 (session), -2 (process) and -1 (thread), as the
// unsigned low word the filter compares: every ID at or above it is one of the three.
const ownKeyrings = uint32(0xfffffffd)

func (p Policy) syscalls() []sysNr {
	out := append([]sysNr{}, mountSyscalls...)
	if p.DenyLocks {
		out = append(out, sysNr{"flock", unix.SYS_FLOCK})
	}
	if p.Metadata {
		out = append(out, deniedSyscalls...)
	}
	if p.DenyTruncate {
		out = append(out, sysNr{"truncate", unix.SYS_TRUNCATE})
	}
	if p.DenyIPC {
		out = append(out, ipcSyscalls...)
	}
	return out
}

// enosys are the calls answered with ENOSYS, so that callers fall back to ones the filter can read.
func (p Policy) enosys() []sysNr {
	var out []sysNr
	if p.Metadata || p.Supervise || p.NoSetID {
		out = append(out, ioUringSyscalls...)
	}
	if p.Supervise {
		out = append(out, unsupervised...)
	}
	if p.NoSetID {
		out = append(out, sysNr{"openat2", unix.SYS_OPENAT2})
	}
	return append(out, sysNr{"clone3", unix.SYS_CLONE3}) // its flags are in a struct: libc falls back to clone
}

func (p Policy) ioctls() []ioctlCmd {
	var out []ioctlCmd
	if p.Metadata || p.Supervise {
		out = append(out, metadataIoctls...)
	}
	out = append(out, alwaysIoctls...)
	if !p.TerminalControl {
		out = append(out, terminalIoctls...)
	}
	return out
}

// Denied names what the filter denies: system calls, those answered ENOSYS, those denied by an argument
// ("set-id-modes" for every setIDModes call, "keyctl:own-keyrings"), ioctls, then the compat rule.
func (p Policy) Denied() []string {
	var out []string
	for _, s := range p.syscalls() {
		out = append(out, s.name)
	}
	for _, s := range p.enosys() {
		out = append(out, s.name)
	}
	if p.NoSetID {
		out = append(out, "set-id-modes")
	}
	if p.Supervise {
		for _, s := range Supervised {
			out = append(out, "supervised:"+s.Name)
		}
	}
	if p.signals() {
		for _, s := range signalCalls {
			out = append(out, "supervised:"+s.name)
		}
		out = append(out, "supervised:fcntl:F_SETOWN", "supervised:fcntl:F_SETOWN_EX", "supervised:ioctl:FIOSETOWN",
			"supervised:ioctl:SIOCSPGRP")
	}
	out = append(out, "keyctl:own-keyrings", "add_key:own-keyrings", "other-processes", "clone:CLONE_PARENT",
		"fcntl:F_SETLEASE")
	if p.DenyLocks {
		out = append(out, "fcntl:locks")
	}
	if p.DenyVsock {
		out = append(out, "socket:AF_VSOCK")
	}
	for _, c := range p.ioctls() {
		out = append(out, "ioctl:"+c.name)
	}
	return append(out, "compat-syscalls")
}

// Offsets in struct seccomp_data (include/uapi/linux/seccomp.h): int nr; __u32 arch; __u64 ip; __u64 args[6].
// The machines are little-endian (amd64, arm64): an argument's low word comes first.
const (
	offNr         = 0
	offArch       = 4
	retAllow      = unix.SECCOMP_RET_ALLOW
	retEPERM      = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS     = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retNotify     = unix.SECCOMP_RET_USER_NOTIF
	bpfLdWAbs     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeqK       = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJgeK       = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfJsetK      = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfRetK       = unix.BPF_RET | unix.BPF_K
	x32SyscallBit = 0x40000000 // __X32_SYSCALL_BIT, arch/x86/include/uapi/asm/unistd.h
)

// argLow and argHigh are the offsets of the low and high words of args[i].
func argLow(i int) uint32  { return 16 + 8*uint32(i) }
func argHigh(i int) uint32 { return argLow(i) + 4 }

// Program compiles p for this machine's native architecture:
//
//	    ld arch; jeq native ? next : enosys
//	    ld nr; [amd64: jge x32 bit ? enosys : next]
//	    for each denied number: jeq nr ? eperm : next
//	    for each ENOSYS number: jeq nr ? enosys : next
//	    for each call checked by argument (set-ID modes, keyrings, other processes): jeq nr ? its block : next
//	    [Supervise: for each supervised number: jeq nr ? notify : next]
//	    jeq ioctl ? next : allow
//	    ld args[1] low word
//	    for each denied command: jeq cmd ? eperm : next
//	    ja allow
//	    the argument blocks, each ending in allow or eperm
//	allow:  ret ALLOW
//	eperm:  ret ERRNO(EPERM)
//	enosys: ret ERRNO(ENOSYS)
//	notify: ret USER_NOTIF
//
// A set-ID block passes a supervised call on to notify rather than allow. Jumps name labels; the assembler resolves them and fails if one is out of BPF's 8-bit range.
func (p Policy) Program() ([]unix.SockFilter, error) {
	var a assembler
	a.ld(offArch)
	a.jeq(auditArch, next, "enosys")
	a.ld(offNr)
	if hasX32 {
		a.jump(bpfJgeK, x32SyscallBit, "enosys", next)
	}
	for _, s := range p.syscalls() {
		a.jeq(s.nr, "eperm", next)
	}
	for _, s := range p.enosys() {
		a.jeq(s.nr, "enosys", next)
	}
	if p.NoSetID {
		for _, m := range setIDModes {
			a.jeq(m.nr, m.name, next)
		}
	}
	if p.Supervise {
		for _, s := range Supervised {
			a.jeq(s.Nr, "notify", next)
		}
	}
	a.jeq(unix.SYS_KEYCTL, "keyctl", next)
	a.jeq(unix.SYS_ADD_KEY, "add_key", next)
	for _, s := range otherProcesses {
		a.jeq(s.nr, s.name, next)
	}
	a.jeq(unix.SYS_CLONE, "clone", next)
	a.jeq(unix.SYS_FCNTL, "fcntl", next)
	if p.DenyVsock {
		a.jeq(unix.SYS_SOCKET, "socket", next)
	}
	if p.signals() {
		for _, s := range signalCalls {
			a.jeq(s.nr, s.name, next)
		}
	}
	a.jeq(unix.SYS_IOCTL, next, "allow")
	a.ld(argLow(1))
	for _, c := range p.ioctls() {
		a.jeq(c.cmd, "eperm", next)
	}
	if p.signals() {
		for _, c := range ownerIoctls {
			a.jeq(c.cmd, "notify", next)
		}
	}
	a.jeq(0, "allow", "allow")
	if p.signals() {
		for _, s := range signalCalls { // the signal is an int: its low word
			a.label(s.name)
			a.ld(argLow(s.sigArg))
			a.jeq(0, "allow", "notify")
		}
	}
	if p.NoSetID {
		for _, m := range setIDModes {
			pass := "allow"
			if p.supervises(m.nr) {
				pass = "notify"
			}
			a.label(m.name)
			if m.flagsArg >= 0 {
				a.ld(argLow(m.flagsArg))
				a.jump(bpfJsetK, createsAFile, next, pass)
			}
			a.ld(argLow(m.modeArg))
			a.jump(bpfJsetK, setIDBits, "eperm", pass)
		}
	}
	a.label("keyctl")
	a.ld(argLow(0))
	for _, op := range keyctlAllowed {
		a.jeq(op, "allow", next)
	}
	a.jeq(unix.KEYCTL_JOIN_SESSION_KEYRING, "anonymous", next)
	a.jeq(unix.KEYCTL_CLEAR, "own1", next)
	a.jeq(unix.KEYCTL_UNLINK, "own2", next)
	a.jeq(unix.KEYCTL_SEARCH, "nowhere4", "eperm")
	a.label("anonymous") // args[1], the name, must be NULL
	a.ld(argLow(1))
	a.jeq(0, next, "eperm")
	a.ld(argHigh(1))
	a.jeq(0, "allow", "eperm")
	a.label("own1")
	a.ld(argLow(1))
	a.jump(bpfJgeK, ownKeyrings, "allow", "eperm")
	a.label("own2")
	a.ld(argLow(2))
	a.jump(bpfJgeK, ownKeyrings, "allow", "eperm")
	a.label("nowhere4") // SEARCH may link what it finds nowhere: its destination must be 0
	a.ld(argLow(4))
	a.jeq(0, "allow", "eperm")
	a.label("add_key") // add_key(type, description, payload, plen, keyring)
	a.ld(argLow(4))
	a.jump(bpfJgeK, ownKeyrings, "allow", "eperm")
	a.label("prlimit64") // prlimit64(pid, resource, new_limit, old_limit): pid 0, or new_limit NULL
	a.ld(argLow(0))
	a.jeq(0, "allow", next)
	a.ld(argLow(2))
	a.jeq(0, next, "eperm")
	a.ld(argHigh(2))
	a.jeq(0, "allow", "eperm")
	a.label("setpriority") // setpriority(which, who, prio): PRIO_PROCESS, 0
	a.ld(argLow(0))
	a.jeq(unix.PRIO_PROCESS, next, "eperm")
	a.ld(argLow(1))
	a.jeq(0, "allow", "eperm")
	a.label("ioprio_set") // ioprio_set(which, who, ioprio): IOPRIO_WHO_PROCESS (1), 0
	a.ld(argLow(0))
	a.jeq(1, next, "eperm")
	a.ld(argLow(1))
	a.jeq(0, "allow", "eperm")
	a.label("sched_setscheduler") // these three take the pid first
	a.label("sched_setparam")
	a.label("sched_setattr")
	a.ld(argLow(0))
	a.jeq(0, "allow", "eperm")
	a.label("clone") // clone(flags, ...) on amd64 and arm64: no child whose parent is the caller's
	a.ld(argLow(0))
	a.jump(bpfJsetK, unix.CLONE_PARENT, "eperm", "allow")
	a.label("fcntl") // fcntl(fd, cmd, arg): no lease, which blocks the caller's opens of a file outside
	a.ld(argLow(1))
	a.jeq(unix.F_SETLEASE, "eperm", next)
	if p.signals() {
		for _, cmd := range ownerFcntls {
			a.jeq(cmd, "notify", next)
		}
	}
	if p.DenyLocks {
		for _, cmd := range []uint32{unix.F_SETLK, unix.F_SETLKW, unix.F_OFD_SETLK, unix.F_OFD_SETLKW} {
			a.jeq(cmd, "eperm", next)
		}
	}
	a.jeq(0, "allow", "allow")
	if p.DenyVsock {
		a.label("socket") // socket(domain, type, protocol): no AF_VSOCK
		a.ld(argLow(0))
		a.jeq(unix.AF_VSOCK, "eperm", "allow")
	}
	a.label("allow")
	a.ret(retAllow)
	a.label("eperm")
	a.ret(retEPERM)
	a.label("enosys")
	a.ret(retENOSYS)
	if p.Supervise {
		a.label("notify")
		a.ret(retNotify)
	}
	return a.assemble()
}

// signals says whether p hands signals to the supervisor: SuperviseSignals, with Supervise.
func (p Policy) signals() bool { return p.Supervise && p.SuperviseSignals }

// supervises says whether p hands system call nr to the supervisor.
func (p Policy) supervises(nr uint32) bool {
	if !p.Supervise {
		return false
	}
	for _, s := range Supervised {
		if s.Nr == nr {
			return true
		}
	}
	return false
}

// NoKeyrings is a second filter for a process that could not join a session keyring of its own because the
// host denies keyctl (Docker's default profile denies keyctl, add_key and request_key: EPERM): it denies all
// three, so that no key reaches the caller's session keyring, whatever the host's profile allows. Another
// architecture's calls are left to the main filter, which answers them ENOSYS.
func NoKeyrings() ([]unix.SockFilter, error) {
	var a assembler
	a.ld(offArch)
	a.jeq(auditArch, next, "allow")
	a.ld(offNr)
	for _, nr := range []uint32{unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY} {
		a.jeq(nr, "eperm", next)
	}
	a.label("allow")
	a.ret(retAllow)
	a.label("eperm")
	a.ret(retEPERM)
	return a.assemble()
}

// next, as a jump target, is the following instruction.
const next = ""

// assembler builds a classic BPF program whose jumps name labels.
type assembler struct {
	insns  []unix.SockFilter
	jumps  [][2]string // per instruction: the true and false targets of a jump
	labels map[string]int
}

func (a *assembler) emit(in unix.SockFilter, jt, jf string) {
	a.insns = append(a.insns, in)
	a.jumps = append(a.jumps, [2]string{jt, jf})
}

// ld, ret and jeq emit one instruction each.
func (a *assembler) ld(off uint32) { a.emit(unix.SockFilter{Code: bpfLdWAbs, K: off}, next, next) }

func (a *assembler) ret(k uint32) { a.emit(unix.SockFilter{Code: bpfRetK, K: k}, next, next) }

func (a *assembler) jeq(k uint32, jt, jf string) { a.jump(bpfJeqK, k, jt, jf) }

func (a *assembler) jump(code uint16, k uint32, jt, jf string) {
	a.emit(unix.SockFilter{Code: code, K: k}, jt, jf)
}

func (a *assembler) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.insns)
}

// assemble resolves every jump to a forward offset of at most 255 instructions (BPF_MAXINSNS is 4096, but a
// conditional jump's offsets are 8 bits: include/uapi/linux/filter.h).
func (a *assembler) assemble() ([]unix.SockFilter, error) {
	prog := append([]unix.SockFilter{}, a.insns...)
	for i, targets := range a.jumps {
		for j, name := range targets {
			if name == next {
				continue
			}
			at, ok := a.labels[name]
			if !ok {
				return nil, msg.Err("seccomp: instruction ", i, " jumps to undefined label ", msg.Quoted(name))
			}
			off := at - (i + 1)
			if off < 0 || off > 255 {
				return nil, msg.Err("seccomp: instruction ", i, " jumps ", off, " to ", msg.Quoted(name), ": out of BPF's 0..255 range")
			}
			if j == 0 {
				prog[i].Jt = uint8(off)
			} else {
				prog[i].Jf = uint8(off)
			}
		}
	}
	return prog, nil
}
