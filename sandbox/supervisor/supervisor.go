// Package supervisor makes the metadata changes (mode, owner, timestamps, extended attributes) that Landlock
// has no right for, on behalf of a confined command, where no mount layer can stop them outside the writable
// roots. The command's seccomp filter answers those system calls with SECCOMP_RET_USER_NOTIF (5.0); the
// supervisor, confine's first process, receives each one on the filter's listener and:
//
//   - reads its arguments once, from the notification and the command's memory (process_vm_readv, 3.2), and
//     checks that the notification is still live (SECCOMP_IOCTL_NOTIF_ID_VALID) before trusting what it read;
//   - resolves the target itself, relative to the command's working directory, root or descriptor
//     (/proc/PID/cwd and root; a descriptor by pidfd_getfd, 5.6, or /proc/PID/fd/N), to a descriptor of
//     its own (O_PATH, or a duplicate of the command's open file), following no magic link (lookup): the
//     command's own /proc links are taken as its descriptors, working directory or root (ownLink);
//   - checks that this descriptor lies beneath a writable root (beneath), by device, inode and mount;
//   - makes the change on that descriptor, never by path again, and answers the call with its result, or
//     answers EPERM.
//
// The kernel never resumes the call itself (no SECCOMP_USER_NOTIF_FLAG_CONTINUE), so a path swapped after the
// check changes nothing: the change is made on what was checked.
//
// The supervisor is a deputy: it acts with its own rights, and must reach only what the command could. Two rules
// keep it there. It follows no magic link (/proc/PID/root, cwd, fd/N: RESOLVE_NO_MAGICLINKS), which would take
// it, with rights the command's Landlock domain does not have (Landlock scopes ptrace, and so those links, to
// the domain), into another process's files and mount namespace. And it compares identities with the mount
// (statx STATX_MNT_ID, 5.8): a mount belongs to one mount namespace, so a directory reached through another
// namespace never matches a root, which was found in its own. Where that namespace has an outside directory
// mounted beneath a path under a writable root, the ".." walk there would otherwise climb to the root by
// device and inode.
//
// The check is sound because the command cannot move a file across the boundary: Landlock denies a rename or
// link out of the writable roots (MAKE_* on the destination) and into them (REMOVE_* on an outside source;
// from ABI 2, REFER on both ends; before it, any cross-directory rename or link is EXDEV). So a file beneath a
// writable root stays beneath one, and a file outside stays outside, as far as the command goes. A process
// outside can still move a directory out of a root while the command runs (the caller's own `mv dist
// ~/releases/`), so no directory is taken as beneath a root because it once was: each check walks from the
// descriptor the kernel reports now (issue 43: a kept directory let the command chmod inside the moved one).
package supervisor

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
)

// notif is struct seccomp_notif and resp struct seccomp_notif_resp (include/uapi/linux/seccomp.h, 5.0); their
// sizes are in the ioctl numbers SECCOMP_IOCTL_NOTIF_RECV (0x50) and SECCOMP_IOCTL_NOTIF_SEND (0x18).
type notif struct {
	ID    uint64
	Pid   uint32 // the calling thread, in our PID namespace
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type resp struct {
	ID    uint64
	Val   int64
	Error int32 // a negated errno, or 0 for success with Val
	Flags uint32
}

// A Root is a writable root as the supervisor compares it: the identity of its directory or file, on the
// mount it was opened on.
type Root struct {
	ID   Ident
	Dir  bool
	fd   int    // the descriptor RootOf read, whose name the kernel reports now (held by the caller)
	path string // the root's path when the launch opened it
}

// RootOf reads the identity of the root open at fd, an O_PATH descriptor opened in the supervisor's own mount
// namespace (a root opened in another one would match nothing there), at path. Whoever holds fd keeps the mount
// alive, and so its ID unused by another, while the supervisor runs.
func RootOf(fd int, path string) (Root, error) {
	id, err := identify(fd, "")
	return Root{ID: id, Dir: id.is(unix.S_IFDIR), fd: fd, path: path}, err
}

// rootsInPlace says whether every directory root still has the name it was opened at (the kernel's name for its
// descriptor): a root renamed or removed by a process outside (its path then names another directory, or none)
// makes a name kept in s.names mean another place.
func (s *Supervisor) rootsInPlace() bool {
	for _, r := range s.roots {
		if !r.Dir || r.path == "" {
			continue
		}
		if name, err := readlink("/proc/self/fd/" + msg.Itoa(r.fd)); err != nil || name != r.path {
			return false
		}
	}
	return true
}

// An Ident is a file's identity as the supervisor compares it: device and inode, the mount it was reached on
// (statx STATX_MNT_ID, 5.8), which is one mount of one mount namespace, and its type (the S_IFMT bits).
type Ident struct {
	Dev, Ino, Mnt uint64
	mode          uint32
}

func (i Ident) is(typ uint32) bool { return i.mode&unix.S_IFMT == typ }

// same says whether i and o are the same file on the same mount.
func (i Ident) same(o Ident) bool { return i.Dev == o.Dev && i.Ino == o.Ino && i.Mnt == o.Mnt }

// identify is the Ident of path relative to dirfd ("": dirfd's own file, AT_EMPTY_PATH), a symbolic link at
// the end not followed. A kernel that does not report the mount (before 5.8) gives EPERM: where the mount
// cannot be compared, nothing is changed.
func identify(dirfd int, path string) (Ident, error) {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if path == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	var x unix.Statx_t
	if err := unix.Statx(dirfd, path, flags, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_MNT_ID, &x); err != nil {
		return Ident{}, err
	}
	if x.Mask&unix.STATX_MNT_ID == 0 {
		return Ident{}, unix.EPERM
	}
	return Ident{Dev: unix.Mkdev(x.Dev_major, x.Dev_minor), Ino: x.Ino, Mnt: x.Mnt_id, mode: uint32(x.Mode) & unix.S_IFMT}, nil
}

// Supervisor answers the notifications of one listener.
type Supervisor struct {
	listener int
	roots    []Root
	// names and keys hold the last maxNames files other than directories that beneath passed: the name each
	// passed under (see beneath) and its identity, in a ring; next is where the next one goes. An unused
	// entry has no name.
	names []string
	keys  []Ident
	next  int
	// getfd says whether to take the command's descriptors with pidfd_getfd (it is cleared where the kernel
	// lacks it); pidfdFlags is PIDFD_THREAD (6.9), or 0 once refused: then only a thread-group leader's.
	getfd          bool
	pidfdFlags     int
	pidfd, pidfdOf int         // the last caller's pidfd (or -1), and its thread ID
	self           int         // our own PID: the command and its descendants descend from it
	euid           int         // our effective uid: 0 for root, whose rights can exceed the command's (creds.go)
	creds          creds       // our credentials, which a caller's are compared with (creds.go)
	stuck          bool        // the serving thread could not take its credentials back (asCaller)
	userNS         unix.Stat_t // the identity of our user namespace, in which a caller's capabilities count
}

// maxNames bounds the files kept by name (no descriptor held), the oldest let go first.
const maxNames = 32

// New is a supervisor for listener (from seccomp.InstallListener) that allows changes beneath roots.
func New(listener int, roots []Root) *Supervisor {
	s := &Supervisor{listener: listener, roots: roots, names: make([]string, maxNames), keys: make([]Ident, maxNames),
		getfd: true, pidfdFlags: unix.PIDFD_THREAD, pidfd: -1, self: unix.Getpid(), euid: unix.Geteuid()}
	var err error
	if s.creds, err = credsOf(0); err != nil {
		s.stuck = true // ours unknown, they could not be taken back: a call that needs a change is EPERM
	}
	if s.userNS, err = userNSOf(0); err != nil {
		s.userNS.Ino = 0 // no caller matches it: their capabilities count for none
	}
	return s
}

// Serve answers notifications until the listener fails for good (its filter has no task left, or it is
// closed). It runs on its own locked OS thread, which it blocks in SECCOMP_IOCTL_NOTIF_RECV.
func (s *Supervisor) Serve() {
	runtime.LockOSThread()
	// From 6.7 the kernel can switch from the caller straight to this thread and back
	// (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, added for supervisors that answer every call, as this one does);
	// older kernels answer EINVAL or ENOTTY, and work as before.
	unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	for {
		var n notif
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n)))
		switch e {
		case 0:
		case unix.EINTR, unix.ENOENT: // ENOENT: the caller was killed before we received it
			continue
		default:
			return
		}
		r := resp{ID: n.ID}
		var errno unix.Errno
		if signalNr(n.Nr) {
			var resume bool
			if errno, resume = s.signal(&n); resume {
				r.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
			}
		} else {
			errno = s.handle(&n)
		}
		if errno != 0 {
			r.Error = -int32(errno)
		}
		unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&r)))
	}
}

// live says whether notification id is still pending: its caller has not been killed (so its PID names it,
// and what was read from its memory and its /proc directory was its own).
func (s *Supervisor) live(id uint64) bool {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// A call is one notification, decoded: the target (a path relative to dirfd, or the descriptor dirfd itself)
// and the change to make on it.
type call struct {
	dirfd int    // the command's descriptor, or unix.AT_FDCWD
	path  string // the path as the command gave it
	byFD  bool   // no path: the target is dirfd itself
	// follow: a symbolic link at the end is followed; byFD, an O_PATH dirfd is taken (AT_EMPTY_PATH), which
	// the f* calls (fchmod, fchown, fsetxattr, utimensat(fd, NULL)) answer EBADF for (fdget, not fdget_raw)
	follow bool
	change func(fd int, symlink bool) unix.Errno
}

// handle performs one notification's change if its target lies beneath a root, and returns 0 or the errno
// the call fails with.
func (s *Supervisor) handle(n *notif) unix.Errno {
	pid := int(n.Pid)
	c, errno := decode(pid, n)
	if errno != 0 {
		return errno
	}
	if !c.byFD {
		if errno := c.own(pid); errno != 0 {
			return errno
		}
	}
	if c.byFD && c.dirfd < 0 {
		if !c.follow || c.dirfd != unix.AT_FDCWD { // fchmod(-1) and the like: no descriptor, as the kernel answers
			return unix.EBADF
		}
		c.byFD, c.path = false, "."
	}
	var base int
	var opath bool
	var err error
	switch {
	case c.byFD:
		base, opath, err = s.commandFD(pid, c.dirfd, !c.follow)
	case strings.HasPrefix(c.path, "/"):
		base, err = unix.Open("/", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	case c.dirfd == unix.AT_FDCWD:
		base, err = unix.Open(procPath(pid, "cwd"), unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	default:
		base, _, err = s.commandFD(pid, c.dirfd, false)
	}
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	defer unix.Close(base)
	var cr creds // the caller's credentials, read where ours can exceed them (asCaller)
	if s.euid == 0 {
		if cr, err = s.callerCreds(pid); err != nil {
			return unix.EPERM
		}
	}
	if !s.live(n.ID) { // base, the arguments and the credentials are the caller's only if it is still waiting
		return unix.EPERM
	}
	// The lookup is made with the caller's credentials too: a directory it may not search is EACCES for it, as
	// the kernel answers, not a way in (nor, outside the roots, a way to tell which names exist there).
	return s.asCaller(cr, func() unix.Errno {
		if c.byFD {
			return s.onFD(base, opath, c)
		}
		fd, id, ok, err := s.locate(base, c.path, c.follow)
		if err != nil {
			return errnoOf(err, unix.EPERM)
		}
		defer unix.Close(fd)
		if !ok {
			return unix.EPERM
		}
		return c.change(fd, id.is(unix.S_IFLNK))
	})
}

// own rewrites a call whose path names the caller's own /proc directory (ownLink) into one on what the link
// names: the command's descriptor (by pidfd_getfd, as for an f* call), its working directory or its root. Any
// other magic link is left for lookup to refuse. The link itself, not followed, is EPERM: it is no file of
// the command's.
func (c *call) own(pid int) unix.Errno {
	fd, rest, ok := ownLink(pid, c.path)
	switch {
	case !ok:
		return 0
	case rest == "" && !c.follow:
		return unix.EPERM
	case fd == cwdLink:
		c.dirfd, c.path = unix.AT_FDCWD, "."+rest
	case fd == rootLink:
		c.path = "/" + strings.TrimPrefix(rest, "/")
	case rest == "":
		c.dirfd, c.path, c.byFD = fd, "", true
	default:
		c.dirfd, c.path = fd, "."+rest
	}
	return 0
}

// onFD makes c's change on base, our descriptor of the command's (from commandFD: opath if the command's is
// O_PATH), if it lies beneath a root. The change is made as on an O_PATH descriptor (through /proc/self/fd, or
// AT_EMPTY_PATH), which acts on the file whatever descriptor of it we hold.
func (s *Supervisor) onFD(base int, opath bool, c call) unix.Errno {
	if opath && !c.follow { // the kernel takes no O_PATH descriptor for an f* call
		return unix.EBADF
	}
	id, err := identify(base, "")
	if err != nil {
		return errnoOf(err, unix.EPERM)
	}
	if !s.beneath(base, id) {
		return unix.EPERM
	}
	return c.change(base, id.is(unix.S_IFLNK))
}

// commandFD is our own descriptor of the file the calling thread tid has open at fd, and whether the command's
// is an O_PATH one (asked only if needOPath; otherwise false). It is pidfd_getfd(2) (5.6) on a pidfd of tid,
// a duplicate of the command's open file, no path walked: a PIDFD_THREAD pidfd from 6.9, so that a thread
// that unshared its descriptor table is answered from its own; before, only for a thread-group leader, which
// is tid itself. Elsewhere (another thread before 6.9, before 5.6), or where pidfd_getfd is refused (EPERM:
// Yama's ptrace_scope 2 and 3 refuse the PTRACE_MODE_ATTACH it needs; a seccomp profile), it is an O_PATH
// open of /proc/TID/fd/N (PTRACE_MODE_READ), and opath is false: an O_PATH descriptor is not told apart
// there (reading /proc/TID/fdinfo/N for it costs more per call than all else here), so an f* call on one is
// answered as on the file it names, beneath a root only. A descriptor that is not open is EBADF, as the
// kernel answers.
func (s *Supervisor) commandFD(tid, fd int, needOPath bool) (int, bool, error) {
	// The duplicate is only checked, changed through and closed: while the command holds its own, that
	// close is not the last, but it is a close (f_op->flush: FUSE_FLUSH to a FUSE server, an NFS
	// write-back), as a second descriptor's is.
	if got, err := s.commandFile(tid, fd); err == nil {
		fl := 0
		if needOPath {
			if fl, err = unix.FcntlInt(uintptr(got), unix.F_GETFL, 0); err != nil {
				unix.Close(got)
				return -1, false, err
			}
		}
		return got, fl&unix.O_PATH != 0, nil
	}
	got, err := unix.Open(procPath(tid, "fd/"+msg.Itoa(fd)), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT { // not open (EBADF from pidfd_getfd comes here too)
		return -1, false, unix.EBADF
	}
	return got, false, err
}

// locate opens path relative to base as O_PATH (see lookup) and says whether it lies beneath a root. The
// usual case, a last component that is no symbolic link to follow, is checked through the directory it was
// found in, which is opened first: the file was that directory's child when it was opened, on that
// directory's mount or one mounted on the name, and a directory beneath a root stays beneath one. Otherwise
// the whole path is resolved and the file checked by beneath.
func (s *Supervisor) locate(base int, path string, follow bool) (fd int, id Ident, ok bool, err error) {
	dir, leaf := ".", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		dir, leaf = path[:i+1], path[i+1:] // "a/" for "a/b", "/" for "/b"
	}
	if leaf != "" && leaf != "." && leaf != ".." {
		parent, err := lookup(base, dir, unix.O_DIRECTORY)
		if err != nil {
			return -1, id, false, err
		}
		defer unix.Close(parent)
		if fd, err = unix.Openat(parent, leaf, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0); err != nil {
			return -1, id, false, err
		}
		if id, err = identify(fd, ""); err != nil {
			unix.Close(fd)
			return -1, id, false, err
		}
		switch {
		case id.is(unix.S_IFDIR):
			return fd, id, s.walk(fd, id), nil
		case id.is(unix.S_IFLNK) && follow:
			unix.Close(fd) // resolved whole, below
		default:
			pid, err := identify(parent, "")
			if err != nil {
				unix.Close(fd)
				return -1, id, false, err
			}
			return fd, id, s.isRootFile(id) || s.walk(parent, pid), nil
		}
	}
	if fd, err = resolve(base, path, follow); err != nil {
		return -1, id, false, err
	}
	if id, err = identify(fd, ""); err != nil {
		unix.Close(fd)
		return -1, id, false, err
	}
	return fd, id, s.beneath(fd, id), nil
}

// isRootFile says whether id is a regular file that is itself a root.
func (s *Supervisor) isRootFile(id Ident) bool {
	for _, r := range s.roots {
		if !r.Dir && r.ID.same(id) && id.is(unix.S_IFREG) {
			return true
		}
	}
	return false
}

// procPath is /proc/PID/rest.
func procPath(pid int, rest string) string { return "/proc/" + msg.Itoa(pid) + "/" + rest }

// The links ownLink names besides a descriptor.
const (
	cwdLink  = -1 // /proc/self/cwd
	rootLink = -2 // /proc/self/root
)

// ownLink splits a path that names the caller's own /proc directory (/proc/self, /proc/thread-self, /proc/TID
// with the caller's thread ID, and the /dev/fd, /dev/stdin, /dev/stdout and /dev/stderr links into it) at one
// of its magic links: fd/N (the descriptor N), cwd (cwdLink) or root (rootLink), and returns what follows the
// link ("" or "/…"). ok is false for any other path. Resolved by the supervisor, /proc/self would name its own
// directory, and lookup follows no magic link: glibc's lchmod and fchmodat(AT_SYMLINK_NOFOLLOW) before
// fchmodat2 change a file through /proc/self/fd/N.
func ownLink(pid int, path string) (fd int, rest string, ok bool) {
	for _, d := range []struct{ from, to string }{
		{"/dev/fd/", "fd/"}, {"/dev/stdin", "fd/0"}, {"/dev/stdout", "fd/1"}, {"/dev/stderr", "fd/2"},
	} {
		if strings.HasPrefix(path, d.from) {
			path = "/proc/self/" + d.to + path[len(d.from):]
			break
		}
	}
	for _, dir := range []string{"/proc/self/", "/proc/thread-self/", "/proc/" + msg.Itoa(pid) + "/"} {
		if after, found := strings.CutPrefix(path, dir); found {
			path = after
			break
		}
	}
	if path == "" || path[0] == '/' {
		return 0, "", false
	}
	link, rest, _ := strings.Cut(path, "/")
	if rest != "" || strings.HasSuffix(path, "/") {
		rest = "/" + rest
	}
	switch link {
	case "cwd":
		return cwdLink, rest, true
	case "root":
		return rootLink, rest, true
	case "fd":
		n, after, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
		fd, err := strconv.Atoi(n)
		if err != nil || fd < 0 || n != strconv.Itoa(fd) {
			return 0, "", false
		}
		if after != "" || strings.HasSuffix(rest, "/") {
			after = "/" + after
		}
		return fd, after, true
	}
	return 0, "", false
}

// lookup opens path relative to base as O_PATH|O_CLOEXEC with flags (O_NOFOLLOW, O_DIRECTORY), following
// symbolic links as the kernel would for the command, but no magic link (openat2 RESOLVE_NO_MAGICLINKS, 5.6:
// ELOOP). A magic link of another process (/proc/PID/root, cwd, fd/N) would be followed with the
// supervisor's rights, into files and mount namespaces that the command's domain cannot reach. Where openat2
// is refused (ENOSYS or EPERM: a seccomp filter above confine), it is openat(2): the mount compared by
// beneath and walk still keeps every other namespace out.
func lookup(base int, path string, flags int) (int, error) {
	flags |= unix.O_PATH | unix.O_CLOEXEC
	fd, err := unix.Openat2(base, path, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if err == unix.ENOSYS || err == unix.EPERM {
		return unix.Openat(base, path, flags, 0)
	}
	return fd, err
}

// resolve opens path relative to base as O_PATH (lookup), following a symbolic link at the end only if
// follow. Only this open resolves the path; what it returns is checked and changed, and the name is not
// looked up again. An absolute path is resolved from our root, which is the caller's: the command cannot
// chroot(2) without CAP_SYS_CHROOT, and a root command that does is answered about the files our root names
// (changes beneath a writable root, or EPERM).
func resolve(base int, path string, follow bool) (int, error) {
	if path == "" {
		return -1, unix.ENOENT
	}
	flags := 0
	if !follow {
		flags = unix.O_NOFOLLOW
	}
	return lookup(base, path, flags)
}

// beneath says whether the file open at fd (id its identity) lies beneath a root. A directory is checked by
// walking its ".." chain up to the root of our mount tree, comparing each directory with the roots (as
// Landlock's own check walks the path up); a root file by identity. Any other file has no ".." and may have
// several names: it passes when a directory beneath a root holds it under the name the kernel reports for the
// descriptor (/proc/self/fd), which is looked up again and compared by identity, mount included, so a rename
// in between can only make it fail, and so can a file on another namespace's mount. A deleted file fails.
//
// A file that passed is kept in s.names with that name, and passes again, with no lookup, when the kernel
// reports the same name for the same identity (as for tar's fchown, fchmod and utimensat on one descriptor).
// That is the answer the full check gives: the name is the kernel's, now, for this file (a deleted file's
// ends in " (deleted)", and another hard link's is another name); a name reported has no symbolic link in it;
// and the directory it names was beneath a root: a directory moved out since (by a process outside, see the
// package doc) gives its files another name, and the command cannot change the path above a root, so any
// directory found at that name now is beneath one too, unless a process outside renames or removes a root
// itself and puts a directory of it back at the root's path (the attack review's route), so a name is taken only
// while every root still has its name (rootsInPlace); else the names kept are let go. A name that once failed
// is not kept, so a file is never kept by its outside name, nor by an inside name that a
// hard link outside (made before the launch) reaches it through. The identity need not be pinned: another
// file given the same number under the same name is in the same place.
func (s *Supervisor) beneath(fd int, id Ident) bool {
	if id.is(unix.S_IFDIR) {
		return s.walk(fd, id)
	}
	if s.isRootFile(id) {
		return true
	}
	name, err := readlink("/proc/self/fd/" + msg.Itoa(fd))
	if err != nil || !strings.HasPrefix(name, "/") || strings.HasSuffix(name, " (deleted)") {
		return false
	}
	for i, held := range s.names {
		if held != "" && held == name && s.keys[i] == id {
			if s.rootsInPlace() {
				return true
			}
			clear(s.names) // and check it in full
			break
		}
	}
	i := strings.LastIndexByte(name, '/')
	dir, leaf := name[:i], name[i+1:]
	if dir == "" {
		dir = "/"
	}
	parent, err := lookup(unix.AT_FDCWD, dir, unix.O_DIRECTORY)
	if err != nil {
		return false
	}
	defer unix.Close(parent)
	pid, err := identify(parent, "")
	if err != nil || !s.walk(parent, pid) {
		return false
	}
	if again, err := identify(parent, leaf); err != nil || !again.same(id) {
		return false
	}
	s.names[s.next], s.keys[s.next] = name, id
	s.next = (s.next + 1) % maxNames
	return true
}

// maxDepth bounds the ".." walk: PATH_MAX / 2 components.
const maxDepth = 2048

// walk says whether the directory open at fd (id its identity) is a root or lies beneath one, climbing ".."
// from it every time (nothing is kept: see the package doc). Every comparison includes the mount: ".." climbs
// the tree of the mount namespace fd was opened in, and a mount is one namespace's, so a walk through another
// namespace meets no root, and ends at that namespace's top.
func (s *Supervisor) walk(fd int, id Ident) bool {
	cur, cid := fd, id
	defer func() {
		if cur != fd {
			unix.Close(cur)
		}
	}()
	for i := 0; i < maxDepth; i++ {
		if s.isRootDir(cid) {
			return true
		}
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		if err != nil {
			return false
		}
		uid, err := identify(up, "")
		if err != nil {
			unix.Close(up)
			return false
		}
		if uid.same(cid) { // ".." of our root (or of another namespace's top) is itself
			unix.Close(up)
			return false
		}
		if cur != fd {
			unix.Close(cur)
		}
		cur, cid = up, uid
	}
	return false
}

// isRootDir says whether id is a root directory.
func (s *Supervisor) isRootDir(id Ident) bool {
	for _, r := range s.roots {
		if r.Dir && r.ID.same(id) {
			return true
		}
	}
	return false
}

// readlink reads a symbolic link's target.
func readlink(path string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(path, buf)
	if err != nil {
		return "", err
	}
	if n >= len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// errnoOf is err's errno: 0 for nil, dflt for an error that is no errno.
func errnoOf(err error, dflt unix.Errno) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return dflt
}
