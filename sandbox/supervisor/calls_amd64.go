package supervisor

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// legacy decodes x86-64's older calls (arch/x86/entry/syscalls/syscall_64.tbl), which take a path from the
// working directory and always follow a symbolic link, but lchown. Anything else is ENOSYS: the filter hands
// over only the calls seccomp.Supervised names.
func legacy(pid int, n *notif) (call, unix.Errno) {
	a := n.Args
	switch uint32(n.Nr) {
	case unix.SYS_CHMOD:
		return path(pid, unix.AT_FDCWD, a[0], true, chmod(a[1]))
	case unix.SYS_CHOWN, unix.SYS_LCHOWN:
		return path(pid, unix.AT_FDCWD, a[0], uint32(n.Nr) == unix.SYS_CHOWN, chown(a[1], a[2]))
	case unix.SYS_UTIME: // utime(path, struct utimbuf *{actime, modtime}): whole seconds
		if a[1] == 0 {
			return path(pid, unix.AT_FDCWD, a[0], true, setTimes(nil))
		}
		var ub unix.Utimbuf
		if errno := readMem(pid, a[1], unsafe.Slice((*byte)(unsafe.Pointer(&ub)), unsafe.Sizeof(ub))); errno != 0 {
			return call{}, errno
		}
		return path(pid, unix.AT_FDCWD, a[0], true, setTimes(&[2]unix.Timespec{{Sec: ub.Actime}, {Sec: ub.Modtime}}))
	case unix.SYS_UTIMES:
		change, errno := timevals(pid, a[1])
		if errno != 0 {
			return call{}, errno
		}
		return path(pid, unix.AT_FDCWD, a[0], true, change)
	case unix.SYS_FUTIMESAT:
		change, errno := timevals(pid, a[2])
		if errno != 0 {
			return call{}, errno
		}
		if a[1] == 0 {
			return byFD(int(int32(a[0])), change)
		}
		return path(pid, int(int32(a[0])), a[1], true, change)
	}
	return call{}, unix.ENOSYS
}
