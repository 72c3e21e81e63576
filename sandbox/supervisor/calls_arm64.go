package supervisor

import "golang.org/x/sys/unix"

// legacy is ENOSYS on arm64: its table (include/uapi/asm-generic/unistd.h) has only the *at and f* forms, all
// decoded by decode.
func legacy(pid int, n *notif) (call, unix.Errno) { return call{}, unix.ENOSYS }
