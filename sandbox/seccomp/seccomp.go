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

// Policy says what the filter denies beyond the fixed metadata set.
type Policy struct {
	// DenyTruncate denies truncate(2) by path: Landlock handles TRUNCATE only from ABI 3 (6.2).
	DenyTruncate bool
}

// ioctl commands denied with EPERM, from include/uapi/linux/fs.h, fsverity.h and asm-generic/ioctls.h. The
// kernel passes the command as a 32-bit unsigned int, so only the low word of the argument is compared.
var deniedIoctls = []struct {
	name string
	cmd  uint32
}{
	{"FS_IOC_SETFLAGS", 0x40086602},              // chattr: inode flags
	{"FS_IOC32_SETFLAGS", 0x40046602},            // the same, 32-bit ABI
	{"FS_IOC_SETVERSION", 0x40087602},            // inode generation
	{"FS_IOC32_SETVERSION", 0x40047602},          // the same, 32-bit ABI
	{"FS_IOC_FSSETXATTR", 0x401c5820},            // project id, extent size, inode flags
	{"FS_IOC_SET_ENCRYPTION_POLICY", 0x800c6613}, // fscrypt policy on an empty directory
	{"FS_IOC_ENABLE_VERITY", 0x40806685},         // makes a file immutable, from a read-only fd
	{"FS_IOC_SETFSLABEL", 0x41009432},            // filesystem label
	{"TIOCSTI", 0x5412},                          // pushes input into the caller's terminal
}

// Denied names what the filter denies, system calls first, then ioctls, then the compat rule.
func (p Policy) Denied() []string {
	var out []string
	for _, s := range deniedSyscalls {
		out = append(out, s.name)
	}
	if p.DenyTruncate {
		out = append(out, "truncate")
	}
	for _, c := range deniedIoctls {
		out = append(out, "ioctl:"+c.name)
	}
	return append(out, "compat-syscalls")
}

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
	nrs := []uint32{}
	for _, s := range deniedSyscalls {
		nrs = append(nrs, s.nr)
	}
	if p.DenyTruncate {
		nrs = append(nrs, sysTruncate)
	}
	n, m := len(nrs), len(deniedIoctls)
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
	for k, c := range deniedIoctls {
		prog = append(prog, jeq(c.cmd, uint8(m-1-k+1), 0)) // skip the other m-1-k commands and ret ALLOW
	}
	return append(prog, stmt(bpfRetK, retAllow), stmt(bpfRetK, retEPERM))
}
