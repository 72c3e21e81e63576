package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/report"
)

// bwrap's messages for the classic failures (bubblewrap.c), as users report them.
func TestBwrapWhyNamesTheClassicFailures(t *testing.T) {
	for said, want := range map[string]string{
		"bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.\n": "user namespaces cannot be created here",
		"bwrap: Creating new namespace failed: Operation not permitted\n":                                                           "user namespaces cannot be created here",
		"bwrap: setting up uid map: Permission denied\n":                                                                            "AppArmor",
		"bwrap: Failed to make / slave: Permission denied\n":                                                                        "mounts are denied",
		"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n":                                                       "mounts are denied",
		"bwrap: Can't bind mount /oldroot/x on /newroot/x: No such file or directory\n":                                             "No such file or directory",
		"":                       "it printed nothing",
		"bwrap: something new\n": "bwrap: something new",
	} {
		got := bwrapWhy(said)
		require.Contains(t, got, want, "%q", said)
	}
}

// bwrap runs before any sandbox: nothing in its environment may make the dynamic loader take code from
// elsewhere. The command's environment travels in the Handoff, unchanged.
func TestBwrapEnvDropsLoaderVariables(t *testing.T) {
	env := []string{"PATH=/usr/bin", "LD_PRELOAD=/w/evil.so", "LD_LIBRARY_PATH=/w", "LD_AUDIT=/w/a.so",
		"GCONV_PATH=/w", "GLIBC_TUNABLES=x", "HOME=/home/u", "MALLOC_CHECK_=3"}
	require.Equal(t, []string{"PATH=/usr/bin", "HOME=/home/u"}, bwrapEnv(env))
}

// bwrap is looked up in fixed directories, in their order, never in $PATH; CONFINE_BWRAP names another by an
// absolute path, and a bad one is refused (backend-unavailable) rather than replaced by a lookup.
func TestFindBwrapLooksOnlyWhereItIsTold(t *testing.T) {
	require.Equal(t, []string{"/usr/bin", "/bin", "/usr/local/bin"}, bwrapDirs)
	base := t.TempDir()
	empty, first, second, onPath := filepath.Join(base, "empty"), filepath.Join(base, "first"), filepath.Join(base, "second"), filepath.Join(base, "path")
	for _, d := range []string{empty, first, second, onPath, filepath.Join(first, "bwrap")} {
		require.NoError(t, os.Mkdir(d, 0o755)) // first/bwrap is a directory: not taken
	}
	for _, d := range []string{second, onPath} {
		require.NoError(t, os.WriteFile(filepath.Join(d, "bwrap"), []byte("#!/bin/sh\n"), 0o755))
	}
	t.Setenv("PATH", onPath)

	path, err := findBwrap(Facts{BwrapDirs: []string{empty, first, second}})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(second, "bwrap"), path)

	_, err = findBwrap(Facts{BwrapDirs: []string{empty, first}})
	require.Error(t, err, "$PATH names a bwrap, and it must not be found")
	require.NotEqual(t, report.BackendUnavailable, report.ReasonOf(err), "not a refusal yet: Decide picks the reason")
	require.Contains(t, err.Error(), "bwrap is not installed (confine looked in "+empty+", "+first+"; never in $PATH)")
	require.Contains(t, err.Error(), "install bubblewrap")
	require.Contains(t, err.Error(), "set CONFINE_BWRAP")

	named := filepath.Join(onPath, "bwrap")
	path, err = findBwrap(Facts{Bwrap: named, BwrapSet: true, BwrapDirs: []string{second}})
	require.NoError(t, err)
	require.Equal(t, named, path, "CONFINE_BWRAP comes before the directories")

	for value, want := range map[string]string{
		"":                         "CONFINE_BWRAP is empty",
		"bwrap":                    "CONFINE_BWRAP=bwrap is not an absolute path",
		"./bwrap":                  "CONFINE_BWRAP=./bwrap is not an absolute path",
		filepath.Join(empty, "bw"): "CONFINE_BWRAP=" + filepath.Join(empty, "bw") + ": no such file or directory: install bubblewrap, or point CONFINE_BWRAP at its bwrap",
		first + "/bwrap":           "CONFINE_BWRAP=" + first + "/bwrap is not a regular file: point it at bubblewrap's bwrap",
	} {
		_, err := findBwrap(Facts{Bwrap: value, BwrapSet: true, BwrapDirs: []string{second}})
		require.Error(t, err, "%q: the directories are not tried instead", value)
		var refusal *report.Refusal
		require.Equal(t, !filepath.IsAbs(value), errors.As(err, &refusal), "%q: only a malformed value is refused outright", value)
		if refusal != nil {
			require.Equal(t, report.BackendUnavailable, refusal.Reason, "%q", value)
		}
		require.Contains(t, err.Error(), want)
	}
}

// checkBwrap is openBwrap's verdict.
func checkBwrap(path string, rules []landlock.Rule, user bool) error {
	fd, err := openBwrap(path, rules, user)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// openBwrap's refusals name what is wrong (owner or mode, and where), say "X is Y" only where a symlink was
// resolved, and say the way out.
func TestCheckBwrapRefusalsSayWhy(t *testing.T) {
	dir := t.TempDir() // under /tmp: sticky, so not itself the refusal
	bwrap := filepath.Join(dir, "bwrap")
	require.NoError(t, os.WriteFile(bwrap, []byte("#!/bin/sh\n"), 0o755))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(bwrap, link))
	user := os.Geteuid() != 0
	owner := " is not owned by root (uid " + strconv.Itoa(os.Geteuid()) + ")"
	way := ": a confined command could have put it there; chown root and chmod go-w " + bwrap + ", or name another with CONFINE_BWRAP"
	if !user {
		require.NoError(t, os.Chmod(bwrap, 0o775))
		owner = " is writable by group or others (mode 0775)"
	}
	require.EqualError(t, checkBwrap(bwrap, nil, user), bwrap+owner+way)
	require.EqualError(t, checkBwrap(link, nil, user), link+" is "+bwrap+", which"+owner+way)

	rules := []landlock.Rule{{Path: dir, Dir: true}}
	require.EqualError(t, checkBwrap(bwrap, rules, user), bwrap+" is beneath the writable "+dir+
		": a confined command could have put it there; name another with CONFINE_BWRAP")

	if !user {
		require.NoError(t, os.Chmod(bwrap, 0o755))
		require.NoError(t, os.Chmod(dir, 0o777))
		require.EqualError(t, checkBwrap(link, nil, false), link+" is "+bwrap+", which is in "+dir+
			", which is writable by group or others (mode 0777): a confined command could have put it there; "+
			"chown root and chmod go-w "+dir+", or name another with CONFINE_BWRAP")
		require.NoError(t, os.Chmod(dir, 0o755))
		require.NoError(t, checkBwrap(bwrap, nil, false), "root's own bwrap in root's own directories")
	}
}

// The attack review ran its own program through a CONFINE_BWRAP symlink that a confined command swapped between
// the check and the execution, and through a symlink in a group-writable directory: openBwrap checks the
// directory of every symlink it follows, and the descriptor it returns is the file it checked.
func TestOpenBwrapChecksEverySymlinksDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a trusted bwrap is root's, in root's directories")
	}
	target, err := filepath.EvalSymlinks("/bin/true") // root's, in root's directories: what openBwrap trusts
	require.NoError(t, err)
	dir := t.TempDir()
	link := filepath.Join(dir, "bwrap")
	require.NoError(t, os.Symlink(target, link))

	fd, err := openBwrap(link, nil, false)
	require.NoError(t, err, "a symlink in root's own directory to root's file")
	var got, want unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &got))
	require.NoError(t, unix.Stat(target, &want))
	require.Equal(t, [2]uint64{want.Dev, want.Ino}, [2]uint64{got.Dev, got.Ino}, "the descriptor is the file checked")
	unix.Close(fd)

	rules := []landlock.Rule{{Path: dir, Dir: true}}
	require.EqualError(t, checkBwrap(link, rules, false), link+" is "+target+", which is in "+dir+
		", which is beneath the writable "+dir+": a confined command could have put it there; name another with CONFINE_BWRAP",
		"the symlink is in a writable root, where a confined command can point it elsewhere at any time")

	require.NoError(t, os.Chmod(dir, 0o775))
	require.ErrorContains(t, checkBwrap(link, nil, false), "which is in "+dir+", which is writable by group or others (mode 0775)")
}

// A writable root is known by its identity too: the second attack review ran, as root, a bwrap inside the
// launch's own worktree through a bind mount of it, which no path comparison sees. A hard link is another
// path to a writable file root, made without mounting anything.
func TestOpenBwrapKnowsAWritableRootByItsIdentity(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a trusted bwrap is root's, in root's directories")
	}
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	file, link := filepath.Join(dir, "a", "bwrap"), filepath.Join(dir, "b", "bwrap")
	require.NoError(t, os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.Link(file, link))
	fd, err := unix.Open(file, unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, checkBwrap(link, nil, false), "root's file in root's directories")
	require.EqualError(t, checkBwrap(link, []landlock.Rule{{Path: file, FD: fd}}, false), link+" is beneath the writable "+file+
		": a confined command could have put it there; name another with CONFINE_BWRAP", "the same file, writable, by another path")

	// probe has no worktree: it holds bwrap to the roots every launch can write, /tmp among them.
	_, _, err = trustedBwrap(Facts{Bwrap: link, BwrapSet: true})
	require.ErrorContains(t, err, " is beneath the writable /tmp: ")
}
