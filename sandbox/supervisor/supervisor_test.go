package supervisor

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestOwnProcRewritesOnlyTheCallersOwnLinks(t *testing.T) {
	for in, want := range map[string]string{
		"/proc/self/fd/3":        "/proc/42/fd/3",
		"/proc/self":             "/proc/42",
		"/proc/thread-self/cwd":  "/proc/42/cwd",
		"/dev/fd/0":              "/proc/42/fd/0",
		"/dev/stdin":             "/proc/42/fd/0",
		"/dev/stderr":            "/proc/42/fd/2",
		"/proc/selfish/x":        "/proc/selfish/x",
		"/dev/fdx":               "/dev/fdx",
		"relative/proc/self/x":   "relative/proc/self/x",
		"/work/tree/proc/self/x": "/work/tree/proc/self/x",
	} {
		require.Equal(t, want, ownProc(42, in), in)
	}
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
		r, err := RootOf(fd)
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
	fd, st := openStat(t, path, flags)
	return s.beneath(fd, &st)
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
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	require.False(t, s.beneath(fd, &st))
}

// A file renamed between the kernel's naming of it and the check fails the check: the name is looked up
// again and compared by identity.
func TestBeneathComparesTheNameFoundAgainByIdentity(t *testing.T) {
	tr, s := newTree(t)
	fd, st := openStat(t, tr.root+"/a/b/f", unix.O_PATH|unix.O_CLOEXEC)
	require.True(t, s.beneath(fd, &st))
	// Another file now has f's name: the descriptor's name is still f (d_path), but the identity differs.
	name, err := readlink("/proc/self/fd/" + strconv.Itoa(fd))
	require.NoError(t, err)
	require.Equal(t, tr.root+"/a/b/f", name)
	require.NoError(t, os.Rename(tr.root+"/a/b/f", tr.root+"/a/f2"))
	require.True(t, s.beneath(fd, &st), "renamed inside: still inside, under its new name")
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
	fd, st := openStat(t, tr.root+"/a/b/f", unix.O_PATH|unix.O_CLOEXEC)
	require.True(t, s.beneath(fd, &st))
	require.Equal(t, tr.root+"/a/b/f", s.names[0])
	require.Equal(t, devIno{st.Dev, st.Ino}, s.keys[0])
	require.True(t, s.beneath(fd, &st), "kept")
	require.Equal(t, 1, s.next, "passed from the cache: nothing added")
	require.False(t, s.beneathPath(t, tr.out+"/hardlink-of-inside", true), "the same inode by its outside name")
	require.False(t, s.beneathPath(t, tr.out+"/c/g", true))
	require.Equal(t, 1, s.next, "nothing outside is kept")
	require.NoError(t, os.Rename(tr.root+"/a/b/f", tr.root+"/a/f2"))
	require.True(t, s.beneath(fd, &st), "renamed inside")
	require.Equal(t, tr.root+"/a/f2", s.names[1])
	require.NoError(t, os.Remove(tr.root+"/a/f2"))
	require.False(t, s.beneath(fd, &st), "deleted: its name ends in (deleted)")
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
