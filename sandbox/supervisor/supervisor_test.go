package supervisor

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ownLink finds the caller's own magic links, under every name of its /proc directory, and nothing else.
func TestOwnLinkFindsOnlyTheCallersOwnLinks(t *testing.T) {
	type link struct {
		fd   int
		rest string
	}
	for in, want := range map[string]link{
		"/proc/self/fd/3":       {3, ""},
		"/proc/self/fd/3/sub/x": {3, "/sub/x"},
		"/proc/42/fd/12":        {12, ""},
		"/proc/thread-self/cwd": {cwdLink, ""},
		"/proc/self/cwd/a/b":    {cwdLink, "/a/b"},
		"/proc/self/root":       {rootLink, ""},
		"/proc/self/root/etc/x": {rootLink, "/etc/x"},
		"/dev/fd/0":             {0, ""},
		"/dev/stdin":            {0, ""},
		"/dev/stderr":           {2, ""},
	} {
		fd, rest, ok := ownLink(42, in)
		require.True(t, ok, in)
		require.Equal(t, want, link{fd, rest}, in)
	}
	for _, in := range []string{"/proc/self", "/proc/self/", "/proc/self/fd", "/proc/self/fd/x", "/proc/self/fd/03",
		"/proc/self/status", "/proc/43/root", "/proc/1/fd/3", "/proc/selfish/x", "/dev/fdx", "relative/proc/self/x",
		"/work/tree/proc/self/fd/1"} {
		_, _, ok := ownLink(42, in)
		require.False(t, ok, in)
	}
}

// A call through the caller's own links becomes one on what they name: fd/N on the descriptor itself (as
// AT_EMPTY_PATH), or a path beneath it; cwd relative to the working directory; root from /. The link itself,
// not followed, is refused.
func TestOwnRewritesTheCall(t *testing.T) {
	for in, want := range map[string]call{
		"/proc/self/fd/5":       {dirfd: 5, byFD: true, follow: true},
		"/proc/self/fd/5/a/b":   {dirfd: 5, path: "./a/b", follow: true},
		"/proc/self/cwd":        {dirfd: unix.AT_FDCWD, path: ".", follow: true},
		"/proc/self/cwd/x":      {dirfd: unix.AT_FDCWD, path: "./x", follow: true},
		"/proc/self/root/etc/x": {dirfd: 7, path: "/etc/x", follow: true},
		"/work/x":               {dirfd: 7, path: "/work/x", follow: true},
	} {
		c := call{dirfd: 7, path: in, follow: true}
		require.Zero(t, c.own(42), in)
		require.Equal(t, want, c, in)
	}
	c := call{dirfd: unix.AT_FDCWD, path: "/proc/self/fd/5"}
	require.Equal(t, unix.EPERM, c.own(42), "the link itself")
}

// A string that ends just before an unmapped page is read whole; one that runs into it is EFAULT; one longer
// than the limit is ENAMETOOLONG.
func TestReadStringStopsAtTheNULBeforeAnUnmappedPage(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Munmap(mem) })
	require.NoError(t, unix.Mprotect(mem[page:], unix.PROT_NONE))
	copy(mem[page-6:], "hello\x00")
	at := func(i int) uint64 { return uint64(uintptr(unsafe.Pointer(&mem[i]))) }
	pid := os.Getpid()
	s, errno := readString(pid, at(page-6), unix.PathMax)
	require.Zero(t, errno)
	require.Equal(t, "hello", s)
	copy(mem[page-6:], "hello!")
	_, errno = readString(pid, at(page-6), unix.PathMax)
	require.Equal(t, unix.EFAULT, errno)
	copy(mem, "0123456789abcdefghij")
	_, errno = readString(pid, at(0), 16)
	require.Equal(t, unix.ENAMETOOLONG, errno)
	_, errno = readString(pid, 0, unix.PathMax)
	require.Equal(t, unix.EFAULT, errno)
}

func TestXattrNamesAllowed(t *testing.T) {
	for _, ok := range []string{"user.x", "user.mime_type", "system.posix_acl_access", "system.posix_acl_default"} {
		require.True(t, xattrAllowed(ok), ok)
	}
	for _, no := range []string{"security.capability", "security.selinux", "trusted.overlay.opaque", "system.nfs4_acl", "userx", ""} {
		require.False(t, xattrAllowed(no), no)
	}
}

// tree is a writable root and an outside directory, both outside /tmp.
type tree struct{ root, out string }

func newTree(t testing.TB) (tree, *Supervisor) {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "supervisor")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	tr := tree{filepath.Join(base, "root"), filepath.Join(base, "out")}
	for _, d := range []string{tr.root + "/a/b", tr.out + "/c"} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{tr.root + "/a/b/f", tr.out + "/c/g", base + "/single"} {
		require.NoError(t, os.WriteFile(f, nil, 0o644))
	}
	var roots []Root
	for _, p := range []string{tr.root, base + "/single"} {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		r, err := RootOf(fd, "")
		unix.Close(fd)
		require.NoError(t, err)
		roots = append(roots, r)
	}
	return tr, New(-1, roots)
}

func (s *Supervisor) beneathPath(t *testing.T, path string, follow bool) bool {
	t.Helper()
	flags := unix.O_PATH | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, _ := openStat(t, path, flags)
	return s.beneath(fd, ident(t, fd))
}

// ident is the Ident of the file open at fd.
func ident(t testing.TB, fd int) Ident {
	t.Helper()
	id, err := identify(fd, "")
	require.NoError(t, err)
	return id
}

// openStat opens path with flags (closed when the test ends) and fstats it.
func openStat(t *testing.T, path string, flags int) (int, unix.Stat_t) {
	t.Helper()
	fd, err := unix.Open(path, flags, 0)
	require.NoError(t, err, path)
	t.Cleanup(func() { unix.Close(fd) })
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	return fd, st
}

func TestBeneathFollowsTheFileNotItsName(t *testing.T) {
	tr, s := newTree(t)
	require.NoError(t, os.Symlink(tr.out+"/c/g", tr.root+"/link"))
	require.NoError(t, os.Symlink(tr.out+"/c", tr.root+"/dirlink"))
	require.NoError(t, os.Link(tr.root+"/a/b/f", tr.out+"/hardlink-of-inside"))
	for path, want := range map[string]bool{
		tr.root:                           true,
		tr.root + "/a":                    true,
		tr.root + "/a/b/f":                true,
		tr.root + "/a/b/../b/f":           true,
		tr.out:                            false,
		tr.out + "/c/g":                   false,
		filepath.Dir(tr.root):             false, // the root's parent
		"/":                               false,
		tr.root + "/link":                 false, // followed: the outside file
		tr.root + "/dirlink":              false, // followed: the outside directory
		tr.root + "/dirlink/g":            false,
		tr.out + "/hardlink-of-inside":    false, // by the name it was reached through, as with a mount layer
		filepath.Dir(tr.root) + "/single": true,  // a root file, by identity
		"/proc/self/status":               false,
		"/dev/null":                       false,
	} {
		require.Equal(t, want, s.beneathPath(t, path, true), path)
	}
	require.True(t, s.beneathPath(t, tr.root+"/link", false), "the symlink itself lies inside")
	require.NoError(t, os.Link(tr.out+"/c/g", tr.root+"/hardlink-of-outside"))
	require.True(t, s.beneathPath(t, tr.root+"/hardlink-of-outside", true), "reached through a name inside, as "+
		"with a mount layer (the command cannot make such a link: Landlock denies it)")
}

// A file that has been deleted has no name to check: it is outside, wherever it was.
func TestBeneathRefusesADeletedFile(t *testing.T) {
	tr, s := newTree(t)
	fd, err := unix.Open(tr.root+"/a/b/f", unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, os.Remove(tr.root+"/a/b/f"))
	require.False(t, s.beneath(fd, ident(t, fd)))
}

// A file renamed between the kernel's naming of it and the check fails the check: the name is looked up
// again and compared by identity.
func TestBeneathComparesTheNameFoundAgainByIdentity(t *testing.T) {
	tr, s := newTree(t)
	fd, _ := openStat(t, tr.root+"/a/b/f", unix.O_PATH|unix.O_CLOEXEC)
	id := ident(t, fd)
	require.True(t, s.beneath(fd, id))
	// Another file now has f's name: the descriptor's name is still f (d_path), but the identity differs.
	name, err := readlink("/proc/self/fd/" + strconv.Itoa(fd))
	require.NoError(t, err)
	require.Equal(t, tr.root+"/a/b/f", name)
	require.NoError(t, os.Rename(tr.root+"/a/b/f", tr.root+"/a/f2"))
	require.True(t, s.beneath(fd, id), "renamed inside: still inside, under its new name")
}

// A directory that a process outside moves out of a root while the command runs is outside from then on, and
// so are the files in it (issue 43, finding 1: the supervisor kept directories it had found inside, and the
// command could still chmod and utime in one the caller moved to ~/releases).
func TestBeneathSeesADirectoryMovedOut(t *testing.T) {
	tr, s := newTree(t)
	dir, _ := openStat(t, tr.root+"/a/b", unix.O_PATH|unix.O_CLOEXEC)
	file, _ := openStat(t, tr.root+"/a/b/f", unix.O_PATH|unix.O_CLOEXEC)
	require.True(t, s.beneath(dir, ident(t, dir)))
	require.True(t, s.beneath(file, ident(t, file)))
	require.NoError(t, os.Rename(tr.root+"/a/b", tr.out+"/b"))
	require.False(t, s.beneath(dir, ident(t, dir)), "the directory, moved out by a process outside")
	require.False(t, s.beneath(file, ident(t, file)), "a file in it")
	sub, _ := openStat(t, tr.out+"/b", unix.O_PATH|unix.O_CLOEXEC)
	require.False(t, s.beneath(sub, ident(t, sub)), "the same directory, opened again")
}

// BenchmarkCheckAndChange is the supervisor's own work for one utimensat by path beneath a root (resolve, check,
// change), against BenchmarkPlainChange, the same change made directly: their ratio is what the supervisor adds
// besides the kernel's round trip to it.
func BenchmarkCheckAndChange(b *testing.B) {
	tr, s := newTree(b)
	base, err := unix.Open(tr.root+"/a", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(b, err)
	defer unix.Close(base)
	change := setTimes(nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fd, _, ok, err := s.locate(base, "b/f", true)
		if err != nil || !ok {
			b.Fatal(err, ok)
		}
		if e := change(fd, false); e != 0 {
			b.Fatal(e)
		}
		unix.Close(fd)
	}
}

func BenchmarkPlainChange(b *testing.B) {
	tr, _ := newTree(b)
	for i := 0; i < b.N; i++ {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, tr.root+"/a/b/f", nil, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// A file that passed is kept by its name and identity: the same descriptor passes again from the cache, and
// so does the file renamed inside (checked again, under its new name). A hard link outside, made before the
// launch, reaches the same inode under another name: it fails, as before the file was kept. A file outside
// is never kept, and a kept file that is deleted fails.
func TestBeneathKeepsAFileByNameAndIdentityOnly(t *testing.T) {
	tr, s := newTree(t)
	require.NoError(t, os.Link(tr.root+"/a/b/f", tr.out+"/hardlink-of-inside"))
	fd, _ := openStat(t, tr.root+"/a/b/f", unix.O_PATH|unix.O_CLOEXEC)
	id := ident(t, fd)
	require.True(t, s.beneath(fd, id))
	require.Equal(t, tr.root+"/a/b/f", s.names[0])
	require.Equal(t, id, s.keys[0])
	require.True(t, s.beneath(fd, id), "kept")
	require.Equal(t, 1, s.next, "passed from the cache: nothing added")
	require.False(t, s.beneathPath(t, tr.out+"/hardlink-of-inside", true), "the same inode by its outside name")
	require.False(t, s.beneathPath(t, tr.out+"/c/g", true))
	require.Equal(t, 1, s.next, "nothing outside is kept")
	require.NoError(t, os.Rename(tr.root+"/a/b/f", tr.root+"/a/f2"))
	require.True(t, s.beneath(fd, id), "renamed inside")
	require.Equal(t, tr.root+"/a/f2", s.names[1])
	require.NoError(t, os.Remove(tr.root+"/a/f2"))
	require.False(t, s.beneath(fd, id), "deleted: its name ends in (deleted)")
}

// A process outside renames the root away, makes a new directory at its path and moves a directory of the old
// root into it (the attack review's route): the file keeps its name and identity, but is no longer beneath a
// root, and the kept name must not pass it.
func TestBeneathLetsNamesGoWhenARootMoves(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "supervisor")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	root := filepath.Join(base, "root")
	require.NoError(t, os.MkdirAll(root+"/sub", 0o755))
	require.NoError(t, os.WriteFile(root+"/sub/f", nil, 0o644))
	rootFD, _ := openStat(t, root, unix.O_PATH|unix.O_CLOEXEC)
	r, err := RootOf(rootFD, root)
	require.NoError(t, err)
	s := New(-1, []Root{r})
	fd, _ := openStat(t, root+"/sub/f", unix.O_PATH|unix.O_CLOEXEC)
	id := ident(t, fd)
	require.True(t, s.beneath(fd, id))
	require.True(t, s.beneath(fd, id), "kept by name")
	require.NoError(t, os.Rename(root, base+"/old"))
	require.NoError(t, os.Mkdir(root, 0o755))
	require.NoError(t, os.Rename(base+"/old/sub", root+"/sub"))
	require.False(t, s.beneath(fd, id), "the same name and identity, beneath the root's old path only")
	require.Empty(t, slices.DeleteFunc(slices.Clone(s.names), func(n string) bool { return n == "" }), "the names kept were let go")
}

// The cache of files holds at most maxNames, the oldest let go first.
func TestBeneathKeepsAtMostMaxNamesFiles(t *testing.T) {
	tr, s := newTree(t)
	for i := 0; i < maxNames+3; i++ {
		p := tr.root + "/a/n" + strconv.Itoa(i)
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		require.True(t, s.beneathPath(t, p, true), p)
	}
	require.Len(t, s.names, maxNames)
	require.Equal(t, 3, s.next)
	require.Equal(t, tr.root+"/a/n"+strconv.Itoa(maxNames), s.names[0], "the oldest three were let go")
	require.NotContains(t, s.names, tr.root+"/a/n0")
}

// commandFD takes the caller's descriptor and says whether it is O_PATH, which an f* call is answered EBADF
// for (as the kernel answers) and an AT_EMPTY_PATH call is not; a descriptor that is not open is EBADF. Where
// pidfd_getfd is not used, the descriptor is taken through /proc and O_PATH is not told apart.
func TestCommandFDTellsOPathApart(t *testing.T) {
	tr, s := newTree(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	file, err := unix.Open(tr.root+"/a/b/f", unix.O_RDWR|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(file)
	opath, err := unix.Open(tr.root+"/a/b/f", unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(opath)
	mode := func() uint32 {
		var st unix.Stat_t
		require.NoError(t, unix.Stat(tr.root+"/a/b/f", &st))
		return st.Mode & 07777
	}
	for _, getfd := range []bool{true, false} {
		s.getfd = getfd
		fd, isPath, err := s.commandFD(tid, file, true)
		require.NoError(t, err)
		require.False(t, isPath)
		require.Zero(t, s.onFD(fd, isPath, call{change: chmod(0o600)}))
		require.Equal(t, uint32(0o600), mode())
		unix.Close(fd)
		fd, isPath, err = s.commandFD(tid, opath, true)
		require.NoError(t, err)
		require.Equal(t, getfd, isPath)
		if getfd {
			require.Equal(t, unix.EBADF, s.onFD(fd, isPath, call{change: chmod(0o640)}), "fchmod on O_PATH")
			require.Equal(t, uint32(0o600), mode())
		}
		require.Zero(t, s.onFD(fd, isPath, call{follow: true, change: chmod(0o640)}), "AT_EMPTY_PATH on O_PATH")
		require.Equal(t, uint32(0o640), mode())
		unix.Close(fd)
		_, _, err = s.commandFD(tid, 1<<20, true)
		require.Equal(t, unix.EBADF, err)
		require.True(t, s.getfd == getfd, "pidfd_getfd is there on this kernel (5.6)")
	}
}

// inOtherNamespace starts a process in a mount namespace of its own (as root; otherwise in a user namespace
// too, as a rootless container is) that bind-mounts src onto dst there and waits, and returns its PID. It
// skips, saying why, where unshare(1) or the namespaces cannot be had.
func inOtherNamespace(t *testing.T, src, dst string) int {
	t.Helper()
	args := []string{"-m", "--propagation", "private"}
	if os.Geteuid() != 0 {
		args = append([]string{"-Ur"}, args...)
	}
	args = append(args, "sh", "-c", `mount --bind "$1" "$2" && echo ready && exec sleep 600`, "sh", src, dst)
	cmd := exec.Command("unshare", args...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Skipf("unshare(1) cannot be started: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		t.Skipf("no mount namespace with a bind mount here (unshare %s): %s", strings.Join(args[:len(args)-5], " "), stderr.String())
	}
	return cmd.Process.Pid
}

// Issue 25, route 1: a process in another mount namespace has an outside directory mounted beneath a path
// under a root (a rootless dev container's volume on WORKTREE/node_modules). The supervisor, acting for the
// command, must not take that directory, or a file in it, as beneath the root: the walk compares mounts, and
// lookup follows no magic link into that process's namespace.
func TestAnotherMountNamespaceIsOutside(t *testing.T) {
	tr, s := newTree(t)
	require.NoError(t, os.Mkdir(tr.root+"/a/mnt", 0o755))
	pid := inOtherNamespace(t, tr.out+"/c", tr.root+"/a/mnt")
	via := "/proc/" + strconv.Itoa(pid) + "/root" + tr.root + "/a/mnt"
	dir, _ := openStat(t, via, unix.O_PATH|unix.O_CLOEXEC)
	var st, outside unix.Stat_t
	require.NoError(t, unix.Fstat(dir, &st))
	require.NoError(t, unix.Stat(tr.out+"/c", &outside))
	require.Equal(t, [2]uint64{outside.Dev, outside.Ino}, [2]uint64{st.Dev, st.Ino}, "the test reaches the outside directory")
	require.False(t, s.beneath(dir, ident(t, dir)), "the outside directory, mounted beneath the root in another namespace")
	file, _ := openStat(t, via+"/g", unix.O_PATH|unix.O_CLOEXEC)
	require.False(t, s.beneath(file, ident(t, file)), "a file in it")
	require.True(t, s.beneathPath(t, tr.root+"/a/mnt", true), "the directory the mount hides, in our namespace")
	for _, follow := range []bool{true, false} {
		_, err := resolve(unix.AT_FDCWD, via+"/g", follow)
		require.ErrorIs(t, err, unix.ELOOP, "lookup follows no magic link")
		_, _, ok, err := s.locate(unix.AT_FDCWD, via+"/g", follow)
		require.False(t, ok || err == nil, "locate: the magic link on the way")
	}
}
