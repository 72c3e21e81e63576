package helper

// arm64 (the generic syscall table, include/uapi/asm-generic/unistd.h) has none of the legacy metadata calls:
// only fchmodat, fchownat, utimensat and the xattr calls. 0 marks a route as absent.
const (
	sysChmod     = 0
	sysChown     = 0
	sysLchown    = 0
	sysUtime     = 0
	sysUtimes    = 0
	sysFutimesat = 0
)
