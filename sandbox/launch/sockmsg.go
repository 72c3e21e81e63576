package launch

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvmsg and sendmsg move bytes and control messages on a connected socket, without a socket address: x/sys's
// Recvmsg and Sendmsg take and return a unix.Sockaddr, which links every address family's conversion into the
// launcher (about 15 KB of its 2 MiB). Errors are the syscall's errno; EINTR is retried.
func recvmsg(fd int, p, oob []byte, flags int) (n, oobn int, err error) {
	var iov unix.Iovec
	var m unix.Msghdr
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
		m.Iov = &iov
		m.SetIovlen(1)
	}
	if len(oob) > 0 {
		m.Control = &oob[0]
		m.SetControllen(len(oob))
	}
	for {
		r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m)), uintptr(flags))
		switch e {
		case 0:
			return int(r), int(m.Controllen), nil
		case unix.EINTR:
			continue
		}
		return 0, 0, e
	}
}

func sendmsg(fd int, p, oob []byte) error {
	var iov unix.Iovec
	var m unix.Msghdr
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
		m.Iov = &iov
		m.SetIovlen(1)
	}
	if len(oob) > 0 {
		m.Control = &oob[0]
		m.SetControllen(len(oob))
	}
	for {
		_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&m)), 0)
		if e != unix.EINTR {
			if e != 0 {
				return e
			}
			return nil
		}
	}
}
