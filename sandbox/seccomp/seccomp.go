// Package seccomp builds the classic BPF filter that closes the write-class effects Landlock has no right for:
// changing a file's mode, owner, timestamps, extended attributes or inode flags, truncate(2) by path on ABIs
// before 3, and typing into the terminal with TIOCSTI. Landlock cannot tell inside from outside for these, so
// they are denied everywhere with EPERM. Compat (32-bit) and x32 system calls are denied with ENOSYS, so no
// second syscall table can bypass the filter.
//
// The layout of struct seccomp_data and the return values come from include/uapi/linux/seccomp.h.
package seccomp

import (
	"github.com/confine-dev/confine/sandbox/internal/msg"

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
	// Filesystem-specific ones that change an inode's attributes (fs/ext4/ext4.h, fs/btrfs, fs/fat).
	{"EXT4_IOC_SETVERSION", 0x40086604},       // inode generation, as FS_IOC_SETVERSION
	{"EXT4_IOC32_SETVERSION", 0x40046604},     // the same, 32-bit ABI
	{"BTRFS_IOC_SUBVOL_SETFLAGS", 0x4008941a}, // read-only flag of a subvolume
	{"FAT_IOCTL_SET_ATTRIBUTES", 0x40047211},  // FAT attribute bits
}

// sysNr is one system call the filter may deny, by its name in the kernel's syscall table.
type sysNr struct {
	name string
	nr   uint32
}

// mountSyscalls change mounts: denied in every policy, for root and for commands in nested namespaces alike
// (the filter is inherited). The new mount API (5.2; mount_setattr 5.12; open_tree_attr 6.15) has the same
// numbers on every architecture (include/uapi/asm-generic/unistd.h); x/sys resolves all of them per GOARCH.
var mountSyscalls = []sysNr{
	{"mount", unix.SYS_MOUNT}, {"umount2", unix.SYS_UMOUNT2}, {"pivot_root", unix.SYS_PIVOT_ROOT},
	{"open_tree", unix.SYS_OPEN_TREE}, {"move_mount", unix.SYS_MOVE_MOUNT}, {"fsopen", unix.SYS_FSOPEN},
	{"fsconfig", unix.SYS_FSCONFIG}, {"fsmount", unix.SYS_FSMOUNT}, {"fspick", unix.SYS_FSPICK},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR}, {"open_tree_attr", unix.SYS_OPEN_TREE_ATTR},
}

var alwaysIoctls = []ioctlCmd{
	{"TIOCSTI", 0x5412}, // pushes input into the caller's terminal
}

// ioUringSyscalls are denied with ENOSYS (so that libraries fall back to plain system calls) wherever metadata
// is: an io_uring operation (IORING_OP_SETXATTR, 5.19) is not a system call, so seccomp cannot see it.
var ioUringSyscalls = []sysNr{
	{"io_uring_setup", unix.SYS_IO_URING_SETUP}, {"io_uring_enter", unix.SYS_IO_URING_ENTER},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER},
}

func (p Policy) syscalls() []sysNr {
	out := append([]sysNr{}, mountSyscalls...)
	if p.Metadata {
		out = append(out, deniedSyscalls...)
	}
	if p.DenyTruncate {
		out = append(out, sysNr{"truncate", unix.SYS_TRUNCATE})
	}
	return out
}

func (p Policy) ioctls() []ioctlCmd {
	if p.Metadata {
		return append(append([]ioctlCmd{}, metadataIoctls...), alwaysIoctls...)
	}
	return alwaysIoctls
}

// Denied names what the filter denies, system calls first, then ioctls, then the compat rule.
func (p Policy) Denied() []string {
	var out []string
	for _, s := range p.syscalls() {
		out = append(out, s.name)
	}
	if p.Metadata {
		for _, s := range ioUringSyscalls {
			out = append(out, s.name)
		}
	}
	for _, c := range p.ioctls() {
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

// Program compiles p for this machine's native architecture:
//
//	    ld arch; jeq native ? next : enosys
//	    ld nr; [amd64: jge x32 bit ? enosys : next]
//	    for each denied number: jeq nr ? eperm : next
//	    [Metadata: for each io_uring number: jeq nr ? enosys : next]
//	    jeq ioctl ? next : allow
//	    ld args[1] low word
//	    for each denied command: jeq cmd ? eperm : next
//	allow:  ret ALLOW
//	eperm:  ret ERRNO(EPERM)
//	enosys: ret ERRNO(ENOSYS)
//
// Jumps name labels; the assembler resolves them and fails if one is out of BPF's 8-bit range.
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
	if p.Metadata {
		for _, s := range ioUringSyscalls {
			a.jeq(s.nr, "enosys", next)
		}
	}
	a.jeq(unix.SYS_IOCTL, next, "allow")
	a.ld(offArg1Low)
	for _, c := range p.ioctls() {
		a.jeq(c.cmd, "eperm", next)
	}
	a.label("allow")
	a.ret(retAllow)
	a.label("eperm")
	a.ret(retEPERM)
	a.label("enosys")
	a.ret(retENOSYS)
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
func (a *assembler) ld(off uint32)               { a.emit(unix.SockFilter{Code: bpfLdWAbs, K: off}, next, next) }
func (a *assembler) ret(k uint32)                { a.emit(unix.SockFilter{Code: bpfRetK, K: k}, next, next) }
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
