package seccomp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install calls seccomp(SECCOMP_SET_MODE_FILTER, 0, prog) (3.17): the program filters the calling thread's
// system calls from now on, across execve. It needs no_new_privs (or CAP_SYS_ADMIN) first. Errors: EINVAL for a
// malformed or empty program, EACCES without no_new_privs, EFAULT.
func Install(prog []unix.SockFilter) error {
	if len(prog) == 0 {
		return unix.EINVAL
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return e
	}
	return nil
}

// InstallListener installs prog as Install does, with SECCOMP_FILTER_FLAG_NEW_LISTENER (5.0), and returns the
// filter's listener: a close-on-exec descriptor on which each SECCOMP_RET_USER_NOTIF is received
// (SECCOMP_IOCTL_NOTIF_RECV) and answered. Errors as Install's, and EBUSY when a filter already installed on
// this thread has a listener (kernel/seccomp.c, has_duplicate_listener): one listener per filter tree.
//
// Where the kernel has it (5.19), the filter also has SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: once the
// supervisor has received a call, only a fatal signal ends the caller's wait. Without it, any signal (a
// SIGCHLD from the child a supervised kill just ended, the Go runtime's SIGURG) interrupts the wait after the
// supervisor may have acted: the call fails with EINTR, which kill(2) and chmod(2) never do, or is restarted
// and acted on twice. Before 5.19 the flag is EINVAL, and the filter is installed without it.
func InstallListener(prog []unix.SockFilter) (int, error) {
	if len(prog) == 0 {
		return -1, unix.EINVAL
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	install := func(flags uintptr) (uintptr, unix.Errno) {
		fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
		return fd, e
	}
	fd, e := install(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	if e == unix.EINVAL {
		fd, e = install(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	}
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}
