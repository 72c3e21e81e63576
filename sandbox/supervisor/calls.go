package supervisor

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
)

// decode reads one notification's arguments (the system call's signature is in include/linux/syscalls.h) and
// returns what to resolve and what to change. Memory it cannot read is EFAULT, as for the call itself.
func decode(pid int, n *notif) (call, unix.Errno) {
	a := n.Args
	fd := func(i int) int { return int(int32(a[i])) }
	switch uint32(n.Nr) {
	case unix.SYS_FCHMOD:
		return byFD(fd(0), chmod(a[1]))
	case unix.SYS_FCHMODAT: // the old call has no flags argument: it always follows
		return atPath(pid, fd(0), a[1], 0, chmod(a[2]))
	case unix.SYS_FCHMODAT2:
		return atPath(pid, fd(0), a[1], a[3], chmod(a[2]))
	case unix.SYS_FCHOWN:
		return byFD(fd(0), chown(a[1], a[2]))
	case unix.SYS_FCHOWNAT:
		return atPath(pid, fd(0), a[1], a[4], chown(a[2], a[3]))
	case unix.SYS_UTIMENSAT:
		change, errno := utimens(pid, a[2])
		if errno != 0 {
			return call{}, errno
		}
		if a[1] == 0 { // utimensat(fd, NULL, times, 0) sets the times of fd itself (a Linux extension)
			if fd(0) == unix.AT_FDCWD {
				return call{}, unix.EFAULT
			}
			return byFD(fd(0), change)
		}
		return atPath(pid, fd(0), a[1], a[3], change)
	case unix.SYS_SETXATTR, unix.SYS_LSETXATTR:
		change, errno := setxattr(pid, a[1], a[2], a[3], a[4])
		if errno != 0 {
			return call{}, errno
		}
		return path(pid, unix.AT_FDCWD, a[0], uint32(n.Nr) == unix.SYS_SETXATTR, change)
	case unix.SYS_FSETXATTR:
		change, errno := setxattr(pid, a[1], a[2], a[3], a[4])
		if errno != 0 {
			return call{}, errno
		}
		return byFD(fd(0), change)
	case unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR:
		change, errno := removexattr(pid, a[1])
		if errno != 0 {
			return call{}, errno
		}
		return path(pid, unix.AT_FDCWD, a[0], uint32(n.Nr) == unix.SYS_REMOVEXATTR, change)
	case unix.SYS_FREMOVEXATTR:
		change, errno := removexattr(pid, a[1])
		if errno != 0 {
			return call{}, errno
		}
		return byFD(fd(0), change)
	}
	return legacy(pid, n)
}

// byFD is an f* call on the command's descriptor fd itself, which the kernel answers EBADF for an O_PATH one.
func byFD(fd int, change changeFunc) (call, unix.Errno) {
	return call{dirfd: fd, byFD: true, change: change}, 0
}

// atPath is a call of the *at family: the path at addr relative to dirfd, with AT_SYMLINK_NOFOLLOW and
// AT_EMPTY_PATH from flags (include/uapi/linux/fcntl.h). Other flags are EINVAL, as the kernel answers.
func atPath(pid, dirfd int, addr, flags uint64, change changeFunc) (call, unix.Errno) {
	if flags&^uint64(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return call{}, unix.EINVAL
	}
	c, errno := path(pid, dirfd, addr, flags&unix.AT_SYMLINK_NOFOLLOW == 0, change)
	if errno == unix.ENOENT && flags&unix.AT_EMPTY_PATH != 0 { // on dirfd itself, an O_PATH one too
		return call{dirfd: dirfd, byFD: true, follow: true, change: change}, 0
	}
	return c, errno
}

// path is a call on the path at addr relative to dirfd. An empty path is ENOENT (the caller may allow it).
func path(pid, dirfd int, addr uint64, follow bool, change changeFunc) (call, unix.Errno) {
	p, errno := readString(pid, addr, unix.PathMax)
	if errno != 0 {
		return call{}, errno
	}
	if p == "" {
		return call{}, unix.ENOENT
	}
	return call{dirfd: dirfd, path: p, follow: follow, change: change}, 0
}

// A changeFunc makes the change on the checked O_PATH descriptor fd, whose file is a symbolic link if symlink
// (only when the call does not follow one).
type changeFunc func(fd int, symlink bool) unix.Errno

// self is our own /proc path of fd: it follows to exactly fd's file, for the calls that take no O_PATH
// descriptor.
func self(fd int) string { return "/proc/self/fd/" + msg.Itoa(fd) }

// chmod sets the mode's permission bits. Set-ID bits never get here (the filter denies them); they are denied
// again, in case a filter without that check is ever paired with a supervisor.
func chmod(mode uint64) changeFunc {
	m := uint32(mode) & 07777
	return func(fd int, symlink bool) unix.Errno {
		switch {
		case m&(unix.S_ISUID|unix.S_ISGID) != 0:
			return unix.EPERM
		case symlink: // Linux has no mode on a symbolic link (fchmodat2 AT_SYMLINK_NOFOLLOW answers this too)
			return unix.EOPNOTSUPP
		}
		return errnoOf(unix.Fchmodat(unix.AT_FDCWD, self(fd), m, 0), unix.EPERM)
	}
}

// chown sets owner and group (-1 leaves one as it is): fchownat(fd, "", AT_EMPTY_PATH) acts on fd's file,
// a symbolic link too.
func chown(uid, gid uint64) changeFunc {
	return func(fd int, _ bool) unix.Errno {
		return errnoOf(unix.Fchownat(fd, "", int(int32(uid)), int(int32(gid)), unix.AT_EMPTY_PATH), unix.EPERM)
	}
}

// utimens reads the struct timespec[2] at addr (NULL: both now) and sets them with utimensat(fd, "",
// AT_EMPTY_PATH) (5.8), which acts on fd's file, a symbolic link too.
func utimens(pid int, addr uint64) (changeFunc, unix.Errno) {
	if addr == 0 {
		return setTimes(nil), 0
	}
	var ts [2]unix.Timespec
	if errno := readMem(pid, addr, unsafe.Slice((*byte)(unsafe.Pointer(&ts[0])), unsafe.Sizeof(ts))); errno != 0 {
		return nil, errno
	}
	return setTimes(&ts), 0
}

func setTimes(ts *[2]unix.Timespec) changeFunc {
	return func(fd int, _ bool) unix.Errno {
		var p unsafe.Pointer
		if ts != nil {
			p = unsafe.Pointer(&ts[0])
		}
		empty := []byte{0}
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])), uintptr(p),
			unix.AT_EMPTY_PATH, 0, 0)
		return e
	}
}

// xattrAllowed says whether the supervisor sets or removes an attribute of this name for the command: the
// user namespace, and POSIX ACLs (system.posix_acl_access and _default, which are a chmod's kin: the owner or
// CAP_FOWNER may set them). Nothing in security.* (security.capability is a file capability: a root
// supervisor could set one that the command, without CAP_SETFCAP, cannot; an LSM's label is not the command's
// to choose) or trusted.* (CAP_SYS_ADMIN, which no command keeps): those are EPERM, from the supervisor's
// credentials or not. See xattr(7).
func xattrAllowed(name string) bool {
	return strings.HasPrefix(name, "user.") || name == "system.posix_acl_access" || name == "system.posix_acl_default"
}

// setxattr reads the name (at most XATTR_NAME_MAX, 255) and the value (at most XATTR_SIZE_MAX, 65536:
// include/uapi/linux/limits.h) and sets them through /proc/self/fd. A symbolic link is EPERM, as the kernel
// answers for the user namespace of attributes.
func setxattr(pid int, nameAddr, valueAddr, size, flags uint64) (changeFunc, unix.Errno) {
	name, errno := readString(pid, nameAddr, 256)
	if errno != 0 {
		return nil, errno
	}
	if !xattrAllowed(name) {
		return nil, unix.EPERM
	}
	if size > 65536 {
		return nil, unix.E2BIG
	}
	value := make([]byte, size)
	if size > 0 {
		if errno := readMem(pid, valueAddr, value); errno != 0 {
			return nil, errno
		}
	}
	return func(fd int, symlink bool) unix.Errno {
		if symlink {
			return unix.EPERM
		}
		return errnoOf(unix.Setxattr(self(fd), name, value, int(int32(flags))), unix.EPERM)
	}, 0
}

// removexattr reads the name and removes it through /proc/self/fd; a symbolic link is EPERM.
func removexattr(pid int, nameAddr uint64) (changeFunc, unix.Errno) {
	name, errno := readString(pid, nameAddr, 256)
	if errno != 0 {
		return nil, errno
	}
	if !xattrAllowed(name) {
		return nil, unix.EPERM
	}
	return func(fd int, symlink bool) unix.Errno {
		if symlink {
			return unix.EPERM
		}
		return errnoOf(unix.Removexattr(self(fd), name), unix.EPERM)
	}, 0
}

// timevals reads a struct timeval[2] (utimes, futimesat) at addr as timespecs; NULL is both now.
func timevals(pid int, addr uint64) (changeFunc, unix.Errno) {
	if addr == 0 {
		return setTimes(nil), 0
	}
	var tv [2]unix.Timeval
	if errno := readMem(pid, addr, unsafe.Slice((*byte)(unsafe.Pointer(&tv[0])), unsafe.Sizeof(tv))); errno != 0 {
		return nil, errno
	}
	for _, t := range tv {
		if t.Usec < 0 || t.Usec >= 1000000 {
			return nil, unix.EINVAL
		}
	}
	return setTimes(&[2]unix.Timespec{unix.NsecToTimespec(unix.TimevalToNsec(tv[0])), unix.NsecToTimespec(unix.TimevalToNsec(tv[1]))}), 0
}

// readMem reads len(buf) bytes at addr in pid's memory (process_vm_readv, 3.2). An address the command cannot
// read is EFAULT, as for the call itself; a process whose memory we may not read (it made itself
// non-dumpable; Yama's ptrace_scope) is EPERM: the change is refused.
func readMem(pid int, addr uint64, buf []byte) unix.Errno {
	if len(buf) == 0 {
		return 0
	}
	n, err := unix.ProcessVMReadv(pid, []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}, 0)
	switch {
	case err == nil && n == len(buf):
		return 0
	case err == nil || err == unix.EFAULT:
		return unix.EFAULT
	}
	return unix.EPERM
}

// readString reads a NUL-terminated string of at most max bytes (with its NUL) at addr, a page at a time, so
// that a string that ends just before an unmapped page is read. Too long is ENAMETOOLONG (ERANGE for names
// of attributes, whose max is 256).
func readString(pid int, addr uint64, max int) (string, unix.Errno) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	var out []byte
	page := uint64(unix.Getpagesize())
	for len(out) < max {
		chunk := make([]byte, min(int(page-(addr%page)), max-len(out)))
		if errno := readMem(pid, addr, chunk); errno != 0 {
			return "", errno
		}
		for i, b := range chunk {
			if b == 0 {
				return string(append(out, chunk[:i]...)), 0
			}
		}
		out = append(out, chunk...)
		addr += uint64(len(chunk))
	}
	if max == 256 {
		return "", unix.ERANGE
	}
	return "", unix.ENAMETOOLONG
}
