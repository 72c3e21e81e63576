package supervisor

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The supervisor acts for the command: it makes the command's metadata changes and sends its signals. The
// kernel checks each against the credentials of whoever makes the call, which are the supervisor's. As long
// as the command's credentials are the supervisor's (the launch gives it ours), the two agree. A root command
// can change its own, though (setpriv, su, a build that drops to a build user), and the kernel would then
// refuse it what a root supervisor may still do: chmod or chown a root file, signal a root process. So a
// supervisor running as root compares the caller's credentials with its own on every call, and where they
// differ it makes the call from a thread of its own that first takes on the caller's (assume), so that the
// kernel decides as it would for the caller, in the same step as the change. That thread is never given back
// to the Go runtime: it stays locked to its goroutine and ends with it (runtime.LockOSThread without Unlock;
// the runtime starts no thread from a locked one, it asks its template thread). An unprivileged supervisor
// has nothing to lend: a command of its uid cannot lower its own rights below ours (it holds no capability to
// change its uid, gids or groups), only raise them by a set-user-ID program, and then the supervisor has less.

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
func (c creds) equal(o creds) bool {
	return c.ruid == o.ruid && c.euid == o.euid && c.fsuid == o.fsuid && c.rgid == o.rgid && c.egid == o.egid &&
		c.fsgid == o.fsgid && c.capEff == o.capEff && slices.Equal(c.groups, o.groups)
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
// read's, or ESRCH for a status without them.
func credsOf(tid int) (creds, error) {
	path := "/proc/thread-self/status"
	if tid != 0 {
		path = procPath(tid, "status")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return creds{}, err
	}
	c, ok := parseCreds(string(b))
	if !ok {
		return creds{}, unix.ESRCH
	}
	return c, nil
}

// asCaller runs act with the credentials of c, the caller's: on the calling thread when they are ours (or we
// are not root), else on a thread of its own that takes them on first (assume). A thread that cannot take them
// on runs nothing: EPERM.
func (s *Supervisor) asCaller(c creds, act func() unix.Errno) unix.Errno {
	if s.euid != 0 || c.equal(s.creds) {
		return act()
	}
	done := make(chan unix.Errno, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, with the caller's credentials, ends with us
		if errno := assume(c); errno != 0 {
			done <- unix.EPERM
			return
		}
		done <- act()
	}()
	return <-done
}

// assume gives the calling OS thread, alone, the credentials c: the raw system calls change one thread, where
// syscall.Setresuid and the like change every thread of the process. The supplementary groups and the gids go
// first (they need CAP_SETGID), then the uids (CAP_SETUID; the saved uid stays ours, 0), and last the
// effective capabilities, which the kernel cleared where the effective uid left 0 and which are set to the
// caller's within what we permit (capset(2) cannot raise one we do not have). The result is read back and
// compared: setfsuid and setfsgid answer no error.
func assume(c creds) unix.Errno {
	groups := make([]uint32, len(c.groups)+1) // one more, so that &groups[0] exists for none
	for i, g := range c.groups {
		groups[i] = uint32(g)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(c.groups)), uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
		return e
	}
	keep := ^uintptr(0) // -1: leave the saved ID as it is
	steps := [][4]uintptr{
		{unix.SYS_SETRESGID, uintptr(c.rgid), uintptr(c.egid), keep},
		{unix.SYS_SETFSGID, uintptr(c.fsgid), 0, 0},
		{unix.SYS_SETRESUID, uintptr(c.ruid), uintptr(c.euid), keep},
		{unix.SYS_SETFSUID, uintptr(c.fsuid), 0, 0},
	}
	for _, st := range steps {
		if _, _, e := unix.RawSyscall(st[0], st[1], st[2], st[3]); e != 0 {
			return e
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3} // Pid 0: this thread
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return errnoOf(err, unix.EPERM)
	}
	data[0].Effective = uint32(c.capEff) & data[0].Permitted
	data[1].Effective = uint32(c.capEff>>32) & data[1].Permitted
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return errnoOf(err, unix.EPERM)
	}
	got, err := credsOf(0)
	if err != nil {
		return errnoOf(err, unix.EPERM)
	}
	want := c
	want.capEff = uint64(data[1].Effective)<<32 | uint64(data[0].Effective)
	if !got.equal(want) {
		return unix.EPERM
	}
	return 0
}
