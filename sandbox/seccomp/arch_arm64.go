package seccomp

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	hasX32    = false
)

// deniedSyscalls are the metadata-changing system calls of include/uapi/asm-generic/unistd.h, which arm64 uses:
// it has only the *at forms of chmod, chown and utime.
var deniedSyscalls = []sysNr{
	{"fchmod", unix.SYS_FCHMOD}, {"fchmodat", unix.SYS_FCHMODAT}, {"fchmodat2", unix.SYS_FCHMODAT2},
	{"fchown", unix.SYS_FCHOWN}, {"fchownat", unix.SYS_FCHOWNAT},
	{"utimensat", unix.SYS_UTIMENSAT},
	{"setxattr", unix.SYS_SETXATTR}, {"lsetxattr", unix.SYS_LSETXATTR}, {"fsetxattr", unix.SYS_FSETXATTR},
	{"setxattrat", unix.SYS_SETXATTRAT},
	{"removexattr", unix.SYS_REMOVEXATTR}, {"lremovexattr", unix.SYS_LREMOVEXATTR},
	{"fremovexattr", unix.SYS_FREMOVEXATTR}, {"removexattrat", unix.SYS_REMOVEXATTRAT},
	{"file_setattr", unix.SYS_FILE_SETATTR}, // 6.17: inode flags and project id by path
}

// legacyModes is empty: arm64 has only the *at forms (include/uapi/asm-generic/unistd.h).
var legacyModes []modeCheck
