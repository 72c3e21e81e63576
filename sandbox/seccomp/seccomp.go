// Package seccomp builds the classic BPF filter that closes the write-class effects Landlock has no right for:
// changing a file's mode, owner, timestamps, extended attributes or inode flags, truncate(2) by path on ABIs
// before 3, and typing into the terminal with TIOCSTI. Landlock cannot tell inside from outside for these, so
// they are denied everywhere with EPERM. Compat (32-bit) and x32 system calls are denied with ENOSYS, so no
// second syscall table can bypass the filter.
//
// The layout of struct seccomp_data and the return values come from include/uapi/linux/seccomp.h.
package seccomp

import (
	"golang.org/x/sys/unix"
)

// Policy says what the filter denies. The zero Policy denies what neither a mount nor a Landlock right can
// stop: the mount API (Landlock does not mediate mount_setattr, and a root command could otherwise clear the
// read-only mounts around the worktree), TIOCSTI, and compat system calls.
type Policy struct {
	// Metadata denies the metadata system calls and the inode-flag ioctls everywhere: Landlock has no right
	// for them. Not needed where read-only mounts already stop them outside the writable roots.
	Metadata bool
	// DenyTruncate denies truncate(2) by path: Landlock handles TRUNCATE only from ABI 3 (6.2).
	DenyTruncate bool
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
}

// mountSyscalls change mounts: denied in every policy, for root and for commands in nested namespaces alike
// (the filter is inherited). Numbers from 428 on are shared by every architecture
// (include/uapi/asm-generic/unistd.h); open_tree_attr is 7.0+ (6.15).
var mountSyscalls = []struct {
	name string
	nr   uint32
}{
	{"mount", sysMount}, {"umount2", sysUmount2}, {"pivot_root", sysPivotRoot},
	{"open_tree", 428}, {"move_mount", 429}, {"fsopen", 430}, {"fsconfig", 431}, {"fsmount", 432},
	{"fspick", 433}, {"mount_setattr", 442}, {"open_tree_attr", 467},
}

var alwaysIoctls = []ioctlCmd{
	{"TIOCSTI", 0x5412}, // pushes input into the caller's terminal
}

func (p Policy) syscalls() (names []string, nrs []uint32) {
	for _, s := range mountSyscalls {
		names, nrs = append(names, s.name), append(nrs, s.nr)
	}
	if p.Metadata {
		for _, s := range deniedSyscalls {
			names, nrs = append(names, s.name), append(nrs, s.nr)
		}
	}
	if p.DenyTruncate {
		names, nrs = append(names, "truncate"), append(nrs, sysTruncate)
	}
	return names, nrs
}

func (p Policy) ioctls() []ioctlCmd {
	if p.Metadata {
		return append(append([]ioctlCmd{}, metadataIoctls...), alwaysIoctls...)
	}
	return alwaysIoctls
}

// Denied names what the filter denies, system calls first, then ioctls, then the compat rule.
func (p Policy) Denied() []string {
	out, _ := p.syscalls()
	for _, c := range p.ioctls() {
		out = append(out, "ioctl:"+c.name)
	}
	return append(out, "compat-syscalls")
}

// System call numbers whose names are the same on every architecture (x/sys resolves them per GOARCH).
const (
	sysIoctl     = unix.SYS_IOCTL
	sysTruncate  = unix.SYS_TRUNCATE
	sysMount     = unix.SYS_MOUNT
	sysUmount2   = unix.SYS_UMOUNT2
	sysPivotRoot = unix.SYS_PIVOT_ROOT
)

// Offsets in struct seccomp_data (include/uapi/linux/seccomp.h): int nr; __u32 arch; __u64 ip; __u64 args[6].
const (
	offNr         = 0
	offArch       = 4
	offArg1Low    = 16 + 8 // args[1], low 32 bits on a little-endian machine (amd64, arm64)
	retAllow      = unix.SECCOMP_RET_ALLOW
	retEPERM      = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS     = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	bpfLdWAbs     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeqK       = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJgeK       = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfRetK       = unix.BPF_RET | unix.BPF_K
	x32SyscallBit = 0x40000000 // __X32_SYSCALL_BIT, arch/x86/include/uapi/asm/unistd.h
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
func jeq(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: bpfJeqK, Jt: jt, Jf: jf, K: k}
}

// Program compiles p for this machine's native architecture. Layout, with n denied numbers and m ioctls:
//
//	ld arch; jeq native ? next : ret ENOSYS
//	ld nr; [amd64: nr >= x32 bit ? ret ENOSYS]
//	n × (jeq nr_i ? →EPERM)
//	jeq ioctl ? next-but-one : ret ALLOW
//	ld args[1] low word; m × (jeq cmd_k ? →EPERM)
//	ret ALLOW
//	EPERM: ret ERRNO(EPERM)
func (p Policy) Program() []unix.SockFilter {
	_, nrs := p.syscalls()
	ioctls := p.ioctls()
	n, m := len(nrs), len(ioctls)
	prog := []unix.SockFilter{
		stmt(bpfLdWAbs, offArch),
		jeq(auditArch, 1, 0),
		stmt(bpfRetK, retENOSYS),
		stmt(bpfLdWAbs, offNr),
	}
	if hasX32 {
		prog = append(prog, unix.SockFilter{Code: bpfJgeK, Jt: 0, Jf: 1, K: x32SyscallBit}, stmt(bpfRetK, retENOSYS))
	}
	for i, nr := range nrs {
		// Skip the other n-1-i numbers, jeq ioctl, ret ALLOW, ld, the m commands and the final ret ALLOW.
		prog = append(prog, jeq(nr, uint8(n-1-i+3+m+1), 0))
	}
	prog = append(prog, jeq(sysIoctl, 1, 0), stmt(bpfRetK, retAllow), stmt(bpfLdWAbs, offArg1Low))
	for k, c := range ioctls {
		prog = append(prog, jeq(c.cmd, uint8(m-1-k+1), 0)) // skip the other m-1-k commands and ret ALLOW
	}
	return append(prog, stmt(bpfRetK, retAllow), stmt(bpfRetK, retEPERM))
}
