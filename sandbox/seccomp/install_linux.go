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
