package launch

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvmsg and sendmsg move bytes and control messages on a connected socket, without a socket address: x/sys's
// Recvmsg and Sendmsg take and return a unix.Sockaddr, which links every address family's conversion into the
// launcher (about 15 KB). Errors are the syscall's errno; EINTR is retried.
func recvmsg(fd int, p, oob []byte, flags int) (n, oobn int, err error) {
	var iov unix.Iovec
	m := msghdr(&iov, p, oob)
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
	m := msghdr(&iov, p, oob)
	for {
		_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&m)), 0)
		switch e {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return e
	}
}

// msghdr is a message header for p (through iov) and oob.
func msghdr(iov *unix.Iovec, p, oob []byte) unix.Msghdr {
	var m unix.Msghdr
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
		m.Iov = iov
		m.SetIovlen(1)
	}
	if len(oob) > 0 {
		m.Control = &oob[0]
		m.SetControllen(len(oob))
	}
	return m
}
