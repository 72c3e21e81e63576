package seccomp

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	hasX32    = true // x32 numbers share AUDIT_ARCH_X86_64, with bit 30 set
)

// deniedSyscalls are the metadata-changing system calls of arch/x86/entry/syscalls/syscall_64.tbl.
var deniedSyscalls = []sysNr{
	{"chmod", unix.SYS_CHMOD}, {"fchmod", unix.SYS_FCHMOD}, {"fchmodat", unix.SYS_FCHMODAT},
	{"fchmodat2", unix.SYS_FCHMODAT2},
	{"chown", unix.SYS_CHOWN}, {"fchown", unix.SYS_FCHOWN}, {"lchown", unix.SYS_LCHOWN},
	{"fchownat", unix.SYS_FCHOWNAT},
	{"utime", unix.SYS_UTIME}, {"utimes", unix.SYS_UTIMES}, {"futimesat", unix.SYS_FUTIMESAT},
	{"utimensat", unix.SYS_UTIMENSAT},
	{"setxattr", unix.SYS_SETXATTR}, {"lsetxattr", unix.SYS_LSETXATTR}, {"fsetxattr", unix.SYS_FSETXATTR},
	{"setxattrat", unix.SYS_SETXATTRAT},
	{"removexattr", unix.SYS_REMOVEXATTR}, {"lremovexattr", unix.SYS_LREMOVEXATTR},
	{"fremovexattr", unix.SYS_FREMOVEXATTR}, {"removexattrat", unix.SYS_REMOVEXATTRAT},
	{"file_setattr", unix.SYS_FILE_SETATTR}, // 6.17: inode flags and project id by path
}

// legacyModes are x86-64's older calls that give a file a mode (arch/x86/entry/syscalls/syscall_64.tbl).
var legacyModes = []modeCheck{
	{sysNr{"chmod", unix.SYS_CHMOD}, 1, -1}, {sysNr{"creat", unix.SYS_CREAT}, 1, -1},
	{sysNr{"mknod", unix.SYS_MKNOD}, 1, -1}, {sysNr{"open", unix.SYS_OPEN}, 2, 1},
}
