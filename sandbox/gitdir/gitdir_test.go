package gitdir

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/sandbox/pathfd"
)

func TestParseGitFile(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"gitdir: /a/.git/worktrees/wt\n", "/a/.git/worktrees/wt", ""},
		{"gitdir: /a/.git/worktrees/wt", "/a/.git/worktrees/wt", ""},
		{"gitdir: /a/b\r\n\r\n", "/a/b", ""},
		{"gitdir: ../main/.git/worktrees/wt\n", "../main/.git/worktrees/wt", ""},
		{"gitdir: ../..\n", "../..", ""},
		{"gitdir: wt\n", "wt", ""},
		{"", "", `does not start with "gitdir: "`},
		{"gitdir:/a\n", "", `does not start`},
		{"GITDIR: /a\n", "", `does not start`},
		{"gitdir: \n", "", "names no path"},
		{"gitdir: /\n", "", "points at /"},
		{"gitdir: /a\nb\n", "", "control character"},
		{"gitdir: /a\x00b", "", "control character"},
		{"gitdir: /a/../b\n", "", "not clean"},
		{"gitdir: a/../b\n", "", ".. after a name"},
		{"gitdir: /a//b\n", "", "not clean"},
		{"gitdir: /a/./b\n", "", "not clean"},
		{"gitdir: /a/b/\n", "", "not clean"},
		{"gitdir: ./a\n", "", "not clean"},
		{"gitdir: /" + strings.Repeat("a", MaxPointer), "", "more than 4096"},
	} {
		got, err := ParseGitFile([]byte(c.in))
		if c.err != "" {
			require.ErrorContains(t, err, c.err, "%q", c.in)
			continue
		}
		require.NoError(t, err, "%q", c.in)
		require.Equal(t, c.want, got)
	}
}

func TestParseCommonDir(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"../..\n", "../..", ""},
		{"../..", "../..", ""},
		{"/srv/main/.git\n", "/srv/main/.git", ""},
		{"../..\n\n", "", "control character"},
		{"../..\r\n", "", "control character"},
		{"\n", "", "names no path"},
		{"/\n", "", "points at /"},
		{"../../x/..\n", "", ".. after a name"},
		{strings.Repeat("../", 2000) + "\n", "", "more than"},
	} {
		got, err := ParseCommonDir([]byte(c.in))
		if c.err != "" {
			require.ErrorContains(t, err, c.err, "%q", c.in)
			continue
		}
		require.NoError(t, err, "%q", c.in)
		require.Equal(t, c.want, got)
	}
}

func TestJoin(t *testing.T) {
	for _, c := range []struct{ base, p, want, err string }{
		{"/m/.git/worktrees/wt", "../..", "/m/.git", ""},
		{"/wt", "../m/.git/worktrees/wt", "/m/.git/worktrees/wt", ""},
		{"/wt", "/abs", "/abs", ""},
		{"/wt", "x", "/wt/x", ""},
		{"/a", "..", "/", ""},
		{"/a", "../..", "", "climbs above /"},
		{"/a/b", "../../c", "/c", ""},
		{"/a", "..x", "/a/..x", ""},
	} {
		got, err := Join(c.base, c.p)
		if c.err != "" {
			require.ErrorContains(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got, "%s + %s", c.base, c.p)
	}
}

// FuzzParseGitFile: whatever the text, an accepted pointer is one clean line, and joining it to a clean
// base gives an absolute clean path (filepath.Clean agrees) or an error: never a path with "..".
func FuzzParseGitFile(f *testing.F) {
	for _, s := range []string{"gitdir: /a/.git/worktrees/wt\n", "gitdir: ../..\r\n", "gitdir: a/../b",
		"gitdir: /", "gitdir: \x00", "gitdir: ../../../x/y\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseGitFile(b)
		if err != nil {
			return
		}
		checkAccepted(t, p)
	})
}

// FuzzParseCommonDir: as FuzzParseGitFile, for commondir's format.
func FuzzParseCommonDir(f *testing.F) {
	for _, s := range []string{"../..\n", "/srv/m/.git", "../../..\n\n", "x/..", "/"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseCommonDir(b)
		if err != nil {
			return
		}
		checkAccepted(t, p)
	})
}

func checkAccepted(t *testing.T, p string) {
	t.Helper()
	if p == "" || strings.ContainsAny(p, "\x00\n\r") || len(p) > MaxPointer || p == "/" {
		t.Fatalf("accepted %q", p)
	}
	for _, base := range []string{"/", "/w", "/m/.git/worktrees/wt"} {
		j, err := Join(base, p)
		if err != nil {
			continue
		}
		if !filepath.IsAbs(j) || filepath.Clean(j) != j {
			t.Fatalf("Join(%q, %q) = %q: not absolute and clean", base, p, j)
		}
		if want := filepath.Join(base, p); !filepath.IsAbs(p) && want != j {
			t.Fatalf("Join(%q, %q) = %q, filepath.Join says %q", base, p, j, want)
		}
		if pathfd.Check(j) != nil && j != "/" {
			t.Fatalf("Join(%q, %q) = %q fails pathfd.Check: %v", base, p, j, pathfd.Check(j))
		}
	}
}

// repo makes, under a fresh directory, a main checkout "main" with one commit and a linked worktree
// "wt" (git worktree add), with a real git. It returns the directory.
func repo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: " + err.Error())
	}
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	git(t, d, "init", "-q", "-b", "main", "main")
	git(t, d+"/main", "commit", "-q", "--allow-empty", "-m", "init")
	git(t, d+"/main", "worktree", "add", "-q", "-b", "wt", "../wt")
	return d
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

func discover(t *testing.T, wt, home string) (*Result, error) {
	t.Helper()
	r, err := pathfd.Open(wt)
	require.NoError(t, err)
	defer r.Close()
	res, err := Discover(pathfd.Here, r, home)
	if res != nil {
		t.Cleanup(res.Close)
	}
	return res, err
}

func TestDiscoverLinked(t *testing.T) {
	d := repo(t)
	res, err := discover(t, d+"/wt", "/nonexistent-home")
	require.NoError(t, err)
	c := d + "/main/.git"
	require.Equal(t, c+"/worktrees/wt", res.GitDir)
	require.Equal(t, c, res.Common)
	var paths []string
	for _, g := range res.Grants {
		paths = append(paths, g.Path)
		require.NotEmpty(t, g.Reason)
		require.Equal(t, pathfd.Dir, g.Kind)
		got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(g.FD))
		require.NoError(t, err)
		require.Equal(t, g.Path, got, "the descriptor is the path it claims")
	}
	require.Equal(t, []string{c + "/worktrees/wt", c + "/objects", c + "/refs", c + "/logs"}, paths)
	require.Equal(t, []string{LinkedLimits(c, false)}, res.Notes, "a linked worktree says what git cannot do in it")
	require.Contains(t, res.Notes[0], "cannot delete a ref")
}

// In the reftable ref format (git 2.45+) every shared ref lives in <common>/reftable, granted whole: there git
// can delete refs (branch -d, stash drop, the end of cherry-pick), which the files format cannot do under confine
// (the lock of <common>/packed-refs). Without the grant, even git commit fails there ("reftable: transaction
// prepare: I/O error", git 2.47). The layout is made by hand: the git here may predate reftable.
func TestDiscoverReftable(t *testing.T) {
	d := repo(t)
	c := d + "/main/.git"
	require.NoError(t, os.Mkdir(c+"/reftable", 0o755))
	res, err := discover(t, d+"/wt", "")
	require.NoError(t, err)
	var paths []string
	for _, g := range res.Grants {
		paths = append(paths, g.Path)
	}
	require.Equal(t, []string{c + "/worktrees/wt", c + "/objects", c + "/refs", c + "/logs", c + "/reftable"}, paths)
	require.Equal(t, []string{LinkedLimits(c, true)}, res.Notes)
	require.NotContains(t, res.Notes[0], "cannot delete a ref")

	// a symlink in its place is refused, as for objects, refs and logs
	require.NoError(t, os.Remove(c+"/reftable"))
	require.NoError(t, os.Symlink(d, c+"/reftable"))
	_, err = discover(t, d+"/wt", "")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Contains(t, e.Problem, "reftable is not a directory")
}

// git ≥ 2.48 can write relative pointers (worktree.useRelativePaths); whatever this git writes, the
// relative forms must give the same grants.
func TestDiscoverRelativePointers(t *testing.T) {
	d := repo(t)
	c := d + "/main/.git"
	require.NoError(t, os.WriteFile(d+"/wt/.git", []byte("gitdir: ../main/.git/worktrees/wt\n"), 0o644))
	require.NoError(t, os.WriteFile(c+"/worktrees/wt/gitdir", []byte("../../../../wt/.git\n"), 0o644))
	res, err := discover(t, d+"/wt", "")
	require.NoError(t, err)
	require.Equal(t, c, res.Common)
	require.Len(t, res.Grants, 4)
}

func TestDiscoverMainCheckout(t *testing.T) {
	d := repo(t)
	res, err := discover(t, d+"/main", "")
	require.NoError(t, err)
	require.Equal(t, d+"/main/.git", res.GitDir)
	require.Empty(t, res.Grants, "the main checkout's .git is inside the worktree")
	require.Empty(t, res.Notes)
	// The placeholder Guards makes is read as no commondir; any other text still is a pointer, checked.
	require.NoError(t, os.WriteFile(d+"/main/.git/commondir", []byte(commonPlaceholder), 0o644))
	res, err = discover(t, d+"/main", "")
	require.NoError(t, err)
	require.Empty(t, res.Grants)
	require.NoError(t, os.WriteFile(d+"/main/.git/commondir", []byte("./\n"), 0o644))
	_, err = discover(t, d+"/main", "")
	require.Error(t, err)
}

func TestDiscoverNoGit(t *testing.T) {
	d := t.TempDir()
	res, err := discover(t, d, "")
	require.NoError(t, err)
	require.Empty(t, res.Grants)
	require.Empty(t, res.GitDir)
}

func TestDiscoverSeparateGitDir(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: " + err.Error())
	}
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	git(t, d, "init", "-q", "--separate-git-dir", d+"/sep.git", "w")
	res, err := discover(t, d+"/w", "")
	require.NoError(t, err)
	require.Empty(t, res.Grants)
	require.NotNil(t, res.Separate)
	require.Equal(t, d+"/sep.git", res.Separate.Path)
	res.Close()
	require.Nil(t, res.Separate)
	// Where Guards made confine's commondir placeholder there, the next launch finds the same, even where a
	// command planted a gitdir file beside it (in /tmp it could, and every later launch was refused).
	writeFile(t, d+"/sep.git/commondir", commonPlaceholder)
	writeFile(t, d+"/sep.git/gitdir", d+"/w/.git\n")
	res, err = discover(t, d+"/w", "")
	require.NoError(t, err)
	require.NotNil(t, res.Separate)
	// What read-only mode cannot vouch for there: a symlinked hooks/ and a core.hooksPath in config.worktree.
	require.NoError(t, os.RemoveAll(d+"/sep.git/hooks"))
	require.NoError(t, os.Symlink("/tmp", d+"/sep.git/hooks"))
	writeFile(t, d+"/sep.git/config.worktree", "[core]\n\thooksPath = /tmp/h\n")
	gaps := ReadOnlyGaps(res.Separate)
	require.Len(t, gaps, 2, "%q", gaps)
	require.Contains(t, gaps[0], "core.hooksPath")
	require.Contains(t, gaps[1], "hooks is a symlink")
	res.Close()
}

// Each untrusted pointer is refused with the file and the problem, and no descriptor stays open.
func TestDiscoverRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, d string) (home string)
		file  string // relative to d
		want  string
	}{
		{"gitdir is /", func(t *testing.T, d string) string { return writeGit(t, d, "gitdir: /\n") },
			"wt/.git", "points at /"},
		{"gitdir climbs to /", func(t *testing.T, d string) string {
			return writeGit(t, d, "gitdir: "+strings.TrimSuffix(strings.Repeat("../", strings.Count(d, "/")+1), "/")+"\n")
		}, "wt/.git", "points at /"},
		{"gitdir is $HOME", func(t *testing.T, d string) string {
			require.NoError(t, os.Mkdir(d+"/home", 0o755))
			writeGit(t, d, "gitdir: "+d+"/home\n")
			return d + "/home"
		}, "wt/.git", "is $HOME or contains it"},
		{"gitdir contains $HOME", func(t *testing.T, d string) string {
			writeGit(t, d, "gitdir: "+d+"/main\n")
			return d + "/main/home"
		}, "wt/.git", "is $HOME or contains it"},
		{"commondir is $HOME", func(t *testing.T, d string) string {
			return d + "/main/.git"
		}, "main/.git/worktrees/wt/commondir", "is $HOME or contains it"},
		{"gitdir is the worktree", func(t *testing.T, d string) string { return writeGit(t, d, "gitdir: .\n") },
			"wt/.git", "not clean"},
		{"gitdir is above the worktree", func(t *testing.T, d string) string { return writeGit(t, d, "gitdir: ..\n") },
			"wt/.git", "contains it (a loop)"},
		{"gitdir missing", func(t *testing.T, d string) string {
			return writeGit(t, d, "gitdir: "+d+"/main/.git/worktrees/gone\n")
		}, "wt/.git", "does not exist"},
		{"gitdir malformed", func(t *testing.T, d string) string { return writeGit(t, d, "ref: HEAD\n") },
			"wt/.git", `does not start with "gitdir: "`},
		{"gitdir two lines", func(t *testing.T, d string) string {
			return writeGit(t, d, "gitdir: "+d+"/main/.git/worktrees/wt\n/etc\n")
		}, "wt/.git", "control character"},
		{"gitfile huge", func(t *testing.T, d string) string {
			return writeGit(t, d, "gitdir: /"+strings.Repeat("a/", 4000)+"\n")
		}, "wt/.git", "more than 4096"},
		{"gitdir through a symlink", func(t *testing.T, d string) string {
			require.NoError(t, os.Symlink(d+"/main", d+"/link"))
			return writeGit(t, d, "gitdir: "+d+"/link/.git/worktrees/wt\n")
		}, "wt/.git", "symlink"},
		{"gitdir is a symlink", func(t *testing.T, d string) string {
			require.NoError(t, os.Symlink(d+"/main/.git/worktrees/wt", d+"/main/.git/worktrees/ln"))
			return writeGit(t, d, "gitdir: "+d+"/main/.git/worktrees/ln\n")
		}, "wt/.git", "symlink"},
		{".git is a symlink", func(t *testing.T, d string) string {
			require.NoError(t, os.Remove(d+"/wt/.git"))
			require.NoError(t, os.Symlink(d+"/main/.git", d+"/wt/.git"))
			return ""
		}, "wt/.git", "is a symlink"},
		{"gitdir is a file", func(t *testing.T, d string) string {
			return writeGit(t, d, "gitdir: "+d+"/main/.git/HEAD\n")
		}, "wt/.git", "not a directory"},
		{"gitdir in /proc", func(t *testing.T, d string) string { return writeGit(t, d, "gitdir: /proc/self\n") },
			"wt/.git", "kernel state"},
		{"sibling worktree", func(t *testing.T, d string) string {
			git(t, d+"/main", "worktree", "add", "-q", "-b", "wt2", "../wt2")
			return writeGit(t, d, "gitdir: "+d+"/main/.git/worktrees/wt2\n")
		}, "main/.git/worktrees/wt2/gitdir", "belongs to another worktree"},
		{"back-pointer missing", func(t *testing.T, d string) string {
			require.NoError(t, os.Remove(d+"/main/.git/worktrees/wt/gitdir"))
			return ""
		}, "main/.git/worktrees/wt/gitdir", "is missing"},
		{"commondir missing dir", func(t *testing.T, d string) string {
			writeFile(t, d+"/main/.git/worktrees/wt/commondir", d+"/nowhere\n")
			return ""
		}, "main/.git/worktrees/wt/commondir", "does not hold"},
		{"commondir loops", func(t *testing.T, d string) string {
			writeFile(t, d+"/main/.git/worktrees/wt/commondir", ".\n")
			return ""
		}, "main/.git/worktrees/wt/commondir", "not clean"},
		{"commondir loops back", func(t *testing.T, d string) string {
			writeFile(t, d+"/main/.git/worktrees/wt/commondir", "../wt\n")
			return ""
		}, "main/.git/worktrees/wt/commondir", "points back at its own directory (a loop)"},
		{"commondir is the gitdir by absolute path", func(t *testing.T, d string) string {
			writeFile(t, d+"/main/.git/worktrees/wt/commondir", d+"/main/.git/worktrees/wt\n")
			return ""
		}, "main/.git/worktrees/wt/commondir", "a loop"},
		{"commondir is /", func(t *testing.T, d string) string {
			writeFile(t, d+"/main/.git/worktrees/wt/commondir", "/\n")
			return ""
		}, "main/.git/worktrees/wt/commondir", "points at /"},
		{"commondir huge", func(t *testing.T, d string) string {
			writeFile(t, d+"/main/.git/worktrees/wt/commondir", strings.Repeat("x", 5000))
			return ""
		}, "main/.git/worktrees/wt/commondir", "more than 4096"},
		{"commondir is a symlink", func(t *testing.T, d string) string {
			cd := d + "/main/.git/worktrees/wt/commondir"
			require.NoError(t, os.Rename(cd, cd+".real"))
			require.NoError(t, os.Symlink(cd+".real", cd))
			return ""
		}, "main/.git/worktrees/wt/commondir", "symlink"},
		{"objects is a symlink", func(t *testing.T, d string) string {
			o := d + "/main/.git/objects"
			require.NoError(t, os.Rename(o, o+".real"))
			require.NoError(t, os.Symlink(o+".real", o))
			return ""
		}, "main/.git/worktrees/wt/commondir", "objects is not a directory"},
		{"a main checkout's commondir", func(t *testing.T, d string) string {
			writeFile(t, d+"/main/.git/commondir", "/etc\n")
			return ""
		}, "main/.git/commondir", "does not hold"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := repo(t)
			home := c.setup(t, d)
			wt := d + "/wt"
			if strings.HasPrefix(c.file, "main/.git/commondir") {
				wt = d + "/main"
			}
			before := openFDs(t)
			res, err := discover(t, wt, home)
			require.Nil(t, res)
			var e *Error
			require.True(t, errors.As(err, &e), "want an *Error, got %v", err)
			require.Equal(t, d+"/"+c.file, e.File)
			require.Contains(t, e.Problem, c.want)
			require.NotContains(t, err.Error(), "\n")
			require.Equal(t, before, openFDs(t), "no descriptor stays open")
		})
	}
}

func writeGit(t *testing.T, d, text string) string {
	writeFile(t, d+"/wt/.git", text)
	return ""
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(es)
}

// A pseudo-ref that a confined git command could not delete (it exits 0: issue 28) is named at the next launch,
// unless the state of an operation under way is beside it.
func TestDiscoverNamesLeftoverPseudoRefs(t *testing.T) {
	d := repo(t)
	gd := d + "/main/.git/worktrees/wt"
	res, err := discover(t, d+"/wt", "")
	require.NoError(t, err)
	require.Len(t, res.Notes, 1, "only the linked worktree's limits")
	require.NoError(t, os.WriteFile(gd+"/CHERRY_PICK_HEAD", []byte("0123\n"), 0o644))
	require.NoError(t, os.WriteFile(gd+"/REBASE_HEAD", []byte("0123\n"), 0o644))
	res, err = discover(t, d+"/wt", "")
	require.NoError(t, err)
	require.Len(t, res.Notes, 3, "%q", res.Notes)
	require.Contains(t, res.Notes[1], gd+"/CHERRY_PICK_HEAD is left over")
	require.Contains(t, res.Notes[1], "takes that commit's author")
	require.Contains(t, res.Notes[2], gd+"/REBASE_HEAD is left over")
	// a conflicted cherry-pick (MERGE_MSG) and a rebase under way (rebase-merge/) are not leftovers
	require.NoError(t, os.WriteFile(gd+"/MERGE_MSG", []byte("m\n"), 0o644))
	require.NoError(t, os.Mkdir(gd+"/rebase-merge", 0o755))
	res, err = discover(t, d+"/wt", "")
	require.NoError(t, err)
	require.Len(t, res.Notes, 1, "%q", res.Notes)
	// nor is anything while a sequence of picks is under way
	require.NoError(t, os.Remove(gd+"/MERGE_MSG"))
	require.NoError(t, os.Mkdir(gd+"/sequencer", 0o755))
	res, err = discover(t, d+"/wt", "")
	require.NoError(t, err)
	require.Len(t, res.Notes, 1, "%q", res.Notes)
}
