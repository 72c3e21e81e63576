package supervisor

import (
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The supervisor acts for the command: it makes the command's metadata changes and sends its signals. The
// kernel checks each against the credentials of whoever makes the call, which are the supervisor's. A root
// supervisor's exceed the command's: the launch drops capabilities from the command (a root command has no
// CAP_SYS_ADMIN, CAP_SETFCAP, CAP_KILL…), and a root command can change its own (setpriv, su, a build that
// drops to a build user), after which the kernel refuses it what root may still do: chmod or chown a root file,
// signal a root process. So a supervisor running as root reads the caller's credentials on every call and
// makes the call itself with them (asCaller): its serving thread, which is locked to its goroutine for good,
// takes on the caller's IDs, groups and effective capabilities just before the call and its own back just
// after, so that the kernel decides as it would for the caller, in the same step as the change. What it looks
// up before (the caller's descriptors, memory and /proc) it looks up with its own. Only what differs is
// changed: for a root command that kept its uid, that is one capset(2) before and one after. An unprivileged
// supervisor has nothing to lend: a command of its uid cannot lower its own rights below ours (it holds no
// capability to drop), only raise them by a set-user-ID program, and then the supervisor has less.

// creds are the credentials the kernel weighs in the calls the supervisor makes for the command
// (/proc/TID/status: Uid and Gid are real, effective, saved and filesystem IDs, as our user namespace sees
// them; Groups the supplementary groups; CapEff the effective capabilities, a bit per CAP_*).
type creds struct {
	ruid, euid, fsuid int
	rgid, egid, fsgid int
	groups            []int
	capEff            uint64
}

// equal says whether c and o weigh the same in every permission check.
func (c creds) equal(o creds) bool { return c.capEff == o.capEff && c.sameIDs(o) }

// sameIDs says whether c and o have the same user and group IDs and supplementary groups.
func (c creds) sameIDs(o creds) bool {
	return c.ruid == o.ruid && c.euid == o.euid && c.fsuid == o.fsuid && c.rgid == o.rgid && c.egid == o.egid &&
		c.fsgid == o.fsgid && slices.Equal(c.groups, o.groups)
}

// parseCreds reads creds from the lines of a /proc/TID/status (proc_pid_status(5)); ok is false when a field
// is missing or malformed.
func parseCreds(status string) (c creds, ok bool) {
	seen := 0
	for _, line := range strings.Split(status, "\n") {
		key, val, _ := strings.Cut(line, ":")
		f := strings.Fields(val)
		switch key {
		case "Uid", "Gid":
			if len(f) != 4 {
				return creds{}, false
			}
			var ids [4]int
			for i := range ids {
				n, err := strconv.Atoi(f[i])
				if err != nil {
					return creds{}, false
				}
				ids[i] = n
			}
			if key == "Uid" {
				c.ruid, c.euid, c.fsuid = ids[0], ids[1], ids[3]
			} else {
				c.rgid, c.egid, c.fsgid = ids[0], ids[1], ids[3]
			}
			seen++
		case "Groups":
			for _, g := range f {
				n, err := strconv.Atoi(g)
				if err != nil {
					return creds{}, false
				}
				c.groups = append(c.groups, n)
			}
			seen++
		case "CapEff":
			if len(f) != 1 {
				return creds{}, false
			}
			n, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				return creds{}, false
			}
			c.capEff = n
			seen++
		}
	}
	return c, seen == 4
}

// credsOf reads thread tid's credentials (tid 0: the calling thread's own, /proc/thread-self). Errors: the
// read's, or ESRCH for a status without them (or longer than 16 KiB). It reads into a buffer of its own:
// os.ReadFile costs half as much again, and this runs on every supervised call.
func credsOf(tid int) (creds, error) {
	path := "/proc/thread-self/status"
	if tid != 0 {
		path = procPath(tid, "status")
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return creds{}, err
	}
	defer unix.Close(fd)
	var buf [16 << 10]byte
	n := 0
	for n < len(buf) {
		k, err := unix.Read(fd, buf[n:])
		if err != nil {
			return creds{}, err
		}
		if k == 0 {
			break
		}
		n += k
	}
	c, ok := parseCreds(string(buf[:n]))
	if !ok || n == len(buf) {
		return creds{}, unix.ESRCH
	}
	return c, nil
}

// callerCreds are thread tid's credentials as they count in our user namespace (inNS).
func (s *Supervisor) callerCreds(tid int) (creds, error) {
	c, err := credsOf(tid)
	return s.inNS(tid, c), err
}

// inNS is c, thread tid's credentials, as they count in our user namespace: capabilities held in another (a
// user namespace the command made) count for none here, so they are dropped. Every caller that holds one is
// looked up (a stat of /proc/TID/ns/user): one that dropped capabilities and then made a user namespace holds
// them all again there, and may show no more than the launch left it (the attack review's route).
func (s *Supervisor) inNS(tid int, c creds) creds {
	if c.capEff == 0 {
		return c
	}
	if ns, err := userNSOf(tid); err != nil || ns.Dev != s.userNS.Dev || ns.Ino != s.userNS.Ino {
		c.capEff = 0
	}
	return c
}

// userNSOf is the identity of thread tid's user namespace (/proc/TID/ns/user; tid 0: ours).
func userNSOf(tid int) (unix.Stat_t, error) {
	path := "/proc/thread-self/ns/user"
	if tid != 0 {
		path = procPath(tid, "ns/user")
	}
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	return st, err
}

// asCaller runs act with the credentials c, the caller's, on the calling thread, which must be locked to its
// goroutine for good (Serve's): act runs as it is when c is ours (or we are not root), else between assume and
// restore. A thread that cannot take c on runs nothing (EPERM); one that cannot take ours back is not used
// again: every later call that needs a change is EPERM.
func (s *Supervisor) asCaller(c creds, act func() unix.Errno) unix.Errno {
	if s.euid != 0 || c.equal(s.creds) {
		return act()
	}
	if s.stuck {
		return unix.EPERM
	}
	errno := assume(s.creds, c)
	if errno == 0 {
		errno = act()
	} else {
		errno = unix.EPERM // fail closed: the change is not made
	}
	if assume(c, s.creds) != 0 {
		s.stuck = true
	}
	return errno
}

// assume changes the calling OS thread's credentials from cur to c: the raw system calls change one thread,
// where syscall.Setresuid and the like change every thread of the process. Only what differs is set. Where
// IDs change, the rights to change them are raised first (raise). The supplementary groups and the gids go
// first (they need CAP_SETGID), then the uids (CAP_SETUID: the saved uid is never changed, so a root
// supervisor keeps the right to take its own back, and its permitted set), and last the effective capabilities, within the permitted set (capset(2) cannot raise one not permitted; the
// kernel cleared the effective set where the effective uid left 0, and restores it where it comes back).
// setfsuid and setfsgid report no error: each is called a second time to read the value back.
func assume(cur, c creds) unix.Errno {
	if !c.sameIDs(cur) {
		if errno := raise(cur); errno != 0 {
			return errno
		}
		if cur.euid != 0 {
			cur.euid, cur.fsuid = 0, 0 // what raise made them, so that the uids below are set whatever c holds
		}
	}
	if !slices.Equal(cur.groups, c.groups) {
		groups := make([]uint32, len(c.groups)+1) // one more, so that &groups[0] exists for none
		for i, g := range c.groups {
			groups[i] = uint32(g)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(c.groups)), uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
			return e
		}
	}
	keep := ^uintptr(0) // -1: leave the saved ID as it is
	if cur.rgid != c.rgid || cur.egid != c.egid || cur.fsgid != c.fsgid {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(c.rgid), uintptr(c.egid), keep); e != 0 {
			return e
		}
		if errno := setfs(unix.SYS_SETFSGID, c.fsgid); errno != 0 {
			return errno
		}
	}
	if cur.ruid != c.ruid || cur.euid != c.euid || cur.fsuid != c.fsuid {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(c.ruid), uintptr(c.euid), keep); e != 0 {
			return e
		}
		if errno := setfs(unix.SYS_SETFSUID, c.fsuid); errno != 0 {
			return errno
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3} // Pid 0: this thread
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return errnoOf(err, unix.EPERM)
	}
	data[0].Effective = uint32(c.capEff) & data[0].Permitted
	data[1].Effective = uint32(c.capEff>>32) & data[1].Permitted
	return errnoOf(unix.Capset(&hdr, &data[0]), unix.EPERM)
}

// raise gives the calling thread, whose credentials are cur, the rights to change its IDs back: where its
// effective uid is not 0, that uid again (allowed: its saved uid stayed 0), which gives back the permitted set
// as the effective one; where it is 0, the permitted set as the effective one (capset(2)).
func raise(cur creds) unix.Errno {
	if cur.euid != 0 {
		_, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0))
		return e
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return errnoOf(err, unix.EPERM)
	}
	data[0].Effective, data[1].Effective = data[0].Permitted, data[1].Permitted
	return errnoOf(unix.Capset(&hdr, &data[0]), unix.EPERM)
}

// setfs is setfsuid(2) or setfsgid(2) (nr) of id, read back: the call returns the previous value, never an error.
func setfs(nr uintptr, id int) unix.Errno {
	unix.RawSyscall(nr, uintptr(id), 0, 0)
	if got, _, _ := unix.RawSyscall(nr, uintptr(id), 0, 0); int(int32(got)) != id {
		return unix.EPERM
	}
	return 0
}
