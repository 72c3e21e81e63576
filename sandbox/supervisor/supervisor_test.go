package supervisor

import (
	"os"
	"path/filepath"
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
	fd, err := unix.Open(path, flags, 0)
	require.NoError(t, err, path)
	defer unix.Close(fd)
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	return s.beneath(fd, &st)
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
	fd, err := unix.Open(tr.root+"/a/b/f", unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
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
