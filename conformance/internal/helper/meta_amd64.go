package helper

import "golang.org/x/sys/unix"

// The legacy metadata calls amd64 has (arch/x86/entry/syscalls/syscall_64.tbl).
const (
	sysChmod     = unix.SYS_CHMOD
	sysChown     = unix.SYS_CHOWN
	sysLchown    = unix.SYS_LCHOWN
	sysUtime     = unix.SYS_UTIME
	sysUtimes    = unix.SYS_UTIMES
	sysFutimesat = unix.SYS_FUTIMESAT
)
