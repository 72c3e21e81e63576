//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// These tests run a real git under the real launcher, in a linked worktree (git worktree add) and in a main
// checkout. The repository lives under /var/tmp, not /tmp, which is writable under confine.

// gitRepo is a main checkout "main" with a commit on main that the worktree's branch lacks (for rebase), a
// linked worktree "wt" on branch wt, and a bare "remote.git" with an unrelated branch "side" (for fetch).
type gitRepo struct {
	base, main, wt, common string
	env                    []string
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: " + err.Error())
	}
}

// emptyGitRepo is the layout of a gitRepo in a fresh directory under /var/tmp, with nothing made in it yet but home.
func emptyGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "confine-git")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(base+"/home", 0o755))
	return &gitRepo{base: base, main: base + "/main", wt: base + "/wt", common: base + "/main/.git",
		env: []string{"HOME=" + base + "/home", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_TERMINAL_PROMPT=0"}}
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	requireGit(t)
	g := emptyGitRepo(t)
	base := g.base
	g.git(t, base, "init", "-q", "-b", "main", "main")
	require.NoError(t, os.WriteFile(g.main+"/a", []byte("a\n"), 0o644))
	g.git(t, g.main, "add", "a")
	g.git(t, g.main, "commit", "-q", "-m", "a")
	g.git(t, g.main, "worktree", "add", "-q", "-b", "wt", "../wt")
	require.NoError(t, os.WriteFile(g.main+"/m", []byte("m\n"), 0o644))
	g.git(t, g.main, "add", "m")
	g.git(t, g.main, "commit", "-q", "-m", "m")
	g.git(t, base, "init", "-q", "--bare", "remote.git")
	g.git(t, base, "init", "-q", "-b", "side", "src")
	require.NoError(t, os.WriteFile(base+"/src/s", []byte("s\n"), 0o644))
	g.git(t, base+"/src", "add", "s")
	g.git(t, base+"/src", "commit", "-q", "-m", "s")
	g.git(t, base+"/src", "push", "-q", "../remote.git", "side")
	return g
}

func (g *gitRepo) git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), g.env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// confined runs script with sh in dir under confine --worktree dir (plus flags).
func (g *gitRepo) confined(t *testing.T, dir, script string, flags ...string) run {
	t.Helper()
	args := append(append([]string{"--worktree", dir}, flags...), "--", "/bin/sh", "-c", `cd "$D" && `+script)
	return confine(t, "", append(append([]string{}, g.env...), "D="+dir), args...)
}

// snapshot records every file's content, mode and mtime under root, except below the names in skip
// (relative paths), so that "nothing changed" is checked on the files themselves.
func snapshot(t *testing.T, root string, skip ...string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	require.NoError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, s := range skip {
			if rel == s {
				if fi.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		st := fi.Sys().(*syscall.Stat_t)
		v := fi.Mode().String() + " " + fi.ModTime().String() + " " + strconv.Itoa(int(st.Nlink))
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		snap[rel] = v
		return nil
	}))
	return snap
}

// mainCheckoutState is what no command in the linked worktree may change: the main checkout's files, and
// in its .git everything but what the worktree is granted (objects, refs, logs, worktrees/wt).
func (g *gitRepo) mainCheckoutState(t *testing.T) map[string]string {
	return snapshot(t, g.main, ".git/objects", ".git/refs", ".git/logs", ".git/worktrees/wt")
}

func rootNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// gitStep is one git command of the table: want says whether it must succeed under confine, and
// wantErr, for one that must fail, what git must say.
type gitStep struct {
	name, script string
	linked       bool   // expected to pass in a linked worktree
	linkedErr    string // what git says when it fails there
}

// gitSteps is the list, in an order where each step has something to do. The two that fail in a
// linked worktree do so because the common directory's root stays read-only (package gitdir).
var gitSteps = []gitStep{
	{"add", `echo b > b && git add b`, true, ""},
	{"commit", `git commit -q -m b`, true, ""},
	{"checkout -b", `git checkout -q -b feat && echo f > f && git add f && git commit -q -m f`, true, ""},
	{"switch", `git switch -q "$BR"`, true, ""},
	{"stash", `echo c >> b && git stash -q && test -z "$(git status --porcelain)"`, true, ""},
	{"stash apply", `git stash apply -q && grep -q c b && git checkout -q -- b`, true, ""},
	{"merge", `git merge -q --no-edit feat && test -f f`, true, ""},
	// git before the fix "refs/files: avoid packed-refs lock for root ref deletion" (git@vger, Sep 2026)
	// deletes CHERRY_PICK_HEAD through a ref transaction that locks packed-refs: rebase succeeds, but
	// leaves it behind unless that lock can be taken (git 2.39 leaves AUTO_MERGE after a rebase anyway).
	// The step checks that this is the only trouble, and clears it inside confine, where the worktree's
	// git directory is writable.
	{"rebase", `e=$(mktemp /tmp/confine-git.XXXXXX) && git rebase -q main 2>$e; s=$?; cat $e >&2; test $s = 0 && test -f m &&
		git merge-base --is-ancestor main HEAD && p=$(git rev-parse --git-path CHERRY_PICK_HEAD) &&
		if test -e "$p"; then grep -q packed-refs.lock $e && rm "$p" || exit 9; fi &&
		test -z "$(git status --porcelain)" && ! git status | grep -q cherry-picking`, true, ""},
	{"fetch (local remote)", `git fetch -q ../remote.git side:refs/remotes/r/side && git cat-file -e r/side:s`, true, ""},
	{"gc --auto", `git gc --auto`, true, ""},
	{"gc --auto (work due)", `git -c gc.auto=1 -c gc.autoDetach=false gc --auto`, false, "gc.pid.lock"},
	{"branch -d", `git branch -q -D feat`, false, "packed-refs.lock"},
	// git drops the entry from the reflog, then fails to delete refs/stash, says so, and exits 0.
	{"stash drop (last entry)", `git stash drop -q && test -z "$(git stash list)"`, true, "packed-refs.lock"},
}

// looseObjects makes loose objects until objects/17 holds two, so that gc --auto with gc.auto=1 has work
// to do (too_many_loose_objects samples that one directory: builtin/gc.c).
func (g *gitRepo) looseObjects(t *testing.T, dir string) {
	t.Helper()
	for i := 0; ; i++ {
		es, _ := os.ReadDir(g.common + "/objects/17")
		if len(es) >= 2 {
			return
		}
		cmd := exec.Command("git", "hash-object", "-w", "--stdin")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), g.env...)
		cmd.Stdin = strings.NewReader(strings.Repeat("x", i%97) + string(rune('a'+i%26)) + strconv.Itoa(i) + strings.Repeat("y", i/97))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
}

// TestGitInALinkedWorktree runs the git commands, each in its own confine, in a linked worktree,
// and checks the main checkout (files, config, hooks, HEAD, index, the common root) is unchanged. It logs
// the pass/fail table.
func TestGitInALinkedWorktree(t *testing.T) {
	requireLandlock(t)
	g := newGitRepo(t)
	before := g.mainCheckoutState(t)
	rootBefore := rootNames(t, g.common)
	for _, s := range gitSteps {
		if strings.HasPrefix(s.name, "gc --auto (work due)") {
			g.looseObjects(t, g.wt)
		}
		r := g.confined(t, g.wt, `BR=wt; `+s.script)
		t.Logf("TABLE linked %-24s %s", s.name, verdict(r))
		if s.linked {
			require.Equal(t, 0, r.status, "%s: %s", s.name, r.stderr)
			if s.linkedErr != "" {
				require.Contains(t, r.stderr, g.common+"/"+s.linkedErr, s.name)
			}
		} else {
			require.NotEqual(t, 0, r.status, "%s", s.name)
			require.Contains(t, r.stderr, g.common+"/"+s.linkedErr, s.name)
			requireKernelDenial(t, r.stderr)
		}
	}
	require.Equal(t, before, g.mainCheckoutState(t), "the main checkout changed")
	require.Equal(t, rootBefore, rootNames(t, g.common), "a file appeared in (or left) the common directory's root")
	require.FileExists(t, g.common+"/refs/stash", "the dropped stash's ref stays, with an empty reflog")
	// The commits are the worktree's, and git outside confine sees them.
	log := g.git(t, g.wt, "log", "--format=%s", "wt")
	require.Equal(t, "f\nb\nm\na\n", log)
	g.git(t, g.main, "fsck", "--no-progress")
}

// TestGitInAMainCheckout: the same commands where .git is a directory inside the worktree, all of which
// pass (the common directory is the worktree's own).
func TestGitInAMainCheckout(t *testing.T) {
	requireLandlock(t)
	g := newGitRepo(t)
	g.git(t, g.main, "checkout", "-q", "-b", "work")
	g.git(t, g.main, "reset", "-q", "--hard", "main~1") // so that rebase onto main has a commit to replay onto
	for _, s := range gitSteps {
		if strings.HasPrefix(s.name, "gc --auto (work due)") {
			g.looseObjects(t, g.main)
		}
		r := g.confined(t, g.main, `BR=work; `+s.script)
		t.Logf("TABLE main   %-24s %s", s.name, verdict(r))
		require.Equal(t, 0, r.status, "%s: %s", s.name, r.stderr)
	}
}

func verdict(r run) string {
	if r.status == 0 {
		if strings.Contains(r.stderr, "error: ") {
			return "pass, but git said: " + strings.TrimSpace(r.stderr)
		}
		return "pass"
	}
	return "fail (exit " + strconv.Itoa(r.status) + ")"
}

// TestGitConfigAndHooksStayReadOnly: from a linked worktree, nothing reaches the shared config, the hooks,
// or the common root, where a new commondir would redirect the main checkout's git.
func TestGitConfigAndHooksStayReadOnly(t *testing.T) {
	requireLandlock(t)
	g := newGitRepo(t)
	before := g.mainCheckoutState(t)
	for _, script := range []string{
		`git config user.name evil`,
		`git config --local core.hooksPath /var/tmp`,
		`echo '[core] hooksPath = /var/tmp' >> "$C/config"`,
		`printf '#!/bin/sh\necho pwned\n' > "$C/hooks/pre-commit"`,
		`mv "$C/hooks" "$C/hooks.old"`,
		`echo ../evil > "$C/commondir"`,
		`echo 0000000000000000000000000000000000000000 > "$C/MERGE_HEAD"`,
		`echo x > "$C/index"`,
		`mkdir "$C/worktrees/other"`,
		`rm -rf "$C/worktrees/wt/../../hooks"`,
	} {
		r := confine(t, "", append(append([]string{}, g.env...), "D="+g.wt, "C="+g.common),
			"--worktree", g.wt, "--", "/bin/sh", "-c", `cd "$D" && `+script)
		require.NotEqual(t, 0, r.status, script)
	}
	require.Equal(t, before, g.mainCheckoutState(t))
	require.NoFileExists(t, g.common+"/commondir")
}

// TestNoGitGrantsNothing: with --no-git, the linked worktree's commit fails on its index lock, as before.
func TestNoGitGrantsNothing(t *testing.T) {
	requireLandlock(t)
	g := newGitRepo(t)
	r := g.confined(t, g.wt, `echo b > b && git add b`, "--no-git")
	require.NotEqual(t, 0, r.status)
	require.Contains(t, r.stderr, g.common+"/worktrees/wt/index.lock")
	requireKernelDenial(t, r.stderr)
}

// TestGitReportListsEveryGrantAndWhy: the report has one rule per git directory, with its reason.
func TestGitReportListsEveryGrantAndWhy(t *testing.T) {
	requireLandlock(t)
	g := newGitRepo(t)
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(bin, "--worktree", g.wt, "--report-fd", "3", "--", "true")
	cmd.ExtraFiles = []*os.File{rf}
	require.NoError(t, cmd.Run())
	var rep struct {
		Rules    []struct{ Path, Type, Reason string }
		Warnings []string
	}
	b, _ := os.ReadFile(rf.Name())
	require.NoError(t, json.Unmarshal(b, &rep), "%s", b)
	// every launch in a linked worktree says what git cannot do there (issue 28), before the command runs
	require.Contains(t, strings.Join(rep.Warnings, "\n"), "git: linked worktree: "+g.common+" itself is not writable")
	require.Contains(t, strings.Join(rep.Warnings, "\n"), "cannot delete a ref")
	got := map[string]string{}
	for _, r := range rep.Rules {
		if r.Reason != "" {
			got[r.Path] = r.Reason
			require.Equal(t, "dir", r.Type)
		}
	}
	require.Len(t, got, 4, "%s", b)
	for _, p := range []string{"/worktrees/wt", "/objects", "/refs", "/logs"} {
		require.Contains(t, got, g.common+p)
		require.True(t, strings.HasPrefix(got[g.common+p], "git: "), got[g.common+p])
	}
}

// TestBadGitPointersAreRefused: a .git or commondir pointing somewhere it must not is refused, exit 125,
// one line naming the file, reason bad-root (a git directory is a root found from the worktree), and
// nothing runs.
func TestBadGitPointersAreRefused(t *testing.T) {
	requireLandlock(t)
	for name, c := range map[string]struct{ file, text, want, named string }{
		"gitdir /":     {"wt/.git", "gitdir: /\n", "points at /", ""},
		"gitdir $HOME": {"wt/.git", "gitdir: $BASE/home\n", "is $HOME or contains it", ""},
		"gitdir above": {"wt/.git", "gitdir: $BASE\n", "contains it (a loop)", ""},
		"sibling": {"wt/.git", "gitdir: $BASE/main/.git/worktrees/wt2\n", "belongs to another worktree",
			"main/.git/worktrees/wt2/gitdir"},
		"missing":           {"wt/.git", "gitdir: $BASE/main/.git/worktrees/nope\n", "does not exist", ""},
		"malformed":         {"wt/.git", "gitdir $BASE\n", "does not start with", ""},
		"huge":              {"wt/.git", "gitdir: /" + strings.Repeat("a", 5000) + "\n", "more than 4096", ""},
		"symlink":           {"wt/.git", "gitdir: $BASE/link/.git/worktrees/wt\n", "symlink", ""},
		"commondir loops":   {"main/.git/worktrees/wt/commondir", "../wt\n", "a loop", ""},
		"commondir is /":    {"main/.git/worktrees/wt/commondir", "/\n", "points at /", ""},
		"commondir is HOME": {"main/.git/worktrees/wt/commondir", "$BASE/home\n", "is $HOME or contains it", ""},
	} {
		t.Run(name, func(t *testing.T) {
			g := newGitRepo(t)
			g.git(t, g.main, "worktree", "add", "-q", "-b", "wt2", "../wt2")
			require.NoError(t, os.Symlink(g.main, g.base+"/link"))
			file := g.base + "/" + c.file
			require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(c.text, "$BASE", g.base)), 0o644))
			rf, err := os.CreateTemp(t.TempDir(), "report")
			require.NoError(t, err)
			cmd := exec.Command(bin, "--worktree", g.wt, "--report-fd", "3", "--", "/bin/sh", "-c", "echo ran > "+g.wt+"/ran")
			cmd.Env = append(os.Environ(), g.env...)
			cmd.ExtraFiles = []*os.File{rf}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, 125, ee.ExitCode())
			require.Equal(t, 1, strings.Count(string(out), "\n"), "%s", out)
			named := file
			if c.named != "" {
				named = g.base + "/" + c.named
			}
			require.True(t, strings.HasPrefix(string(out), "confine: git: "+named+": "), "%s", out)
			require.Contains(t, string(out), c.want)
			require.Contains(t, string(out), "(--no-git skips git discovery)")
			require.NoFileExists(t, g.wt+"/ran")
			var rep struct{ Outcome, Reason string }
			b, _ := os.ReadFile(rf.Name())
			require.NoError(t, json.Unmarshal(b, &rep), "%s", b)
			require.Equal(t, "refused", rep.Outcome)
			require.Equal(t, "bad-root", rep.Reason)
		})
	}
}

// TestPlantedRegistrationIsRefused (issue 25, route 4): a writable root that is itself named …/worktrees, in a
// directory laid out like a git directory, lets one run plant a registration there, with its back-pointer, and
// point the worktree's .git at it. The next run must not take it for a linked worktree's and grant the
// directory's objects, refs and logs: it refuses (bad-root), and nothing runs.
func TestPlantedRegistrationIsRefused(t *testing.T) {
	requireLandlock(t)
	g := newGitRepo(t)
	x := g.base + "/x"
	for _, d := range []string{"objects", "refs", "logs", "worktrees"} {
		require.NoError(t, os.MkdirAll(x+"/"+d, 0o755))
	}
	flags := []string{"--allow", x + "/worktrees"}
	plant := `mkdir "$X/worktrees/evil" && printf '../..\n' > "$X/worktrees/evil/commondir" &&
		printf '%s\n' "$D/.git" > "$X/worktrees/evil/gitdir" && printf 'ref: refs/heads/wt\n' > "$X/worktrees/evil/HEAD"`
	r := g.confined(t, g.wt, strings.ReplaceAll(plant, "$X", x), flags...)
	require.Equal(t, 0, r.status, "the first run plants the registration: %s", r.stderr)
	// A mount layer holds the worktree's .git file read-only (gitdir.Guards); a run without one (the supervisor)
	// can rewrite it, as here.
	require.NoError(t, os.WriteFile(g.wt+"/.git", []byte("gitdir: "+x+"/worktrees/evil\n"), 0o644))
	r = g.confined(t, g.wt, strings.ReplaceAll(`touch "$X/objects/planted" "$X/refs/planted"; echo ran > ran`, "$X", x), flags...)
	require.Equal(t, 125, r.status, "%s", r.stderr)
	require.Equal(t, "confine: git: "+x+"/worktrees/evil lies beneath "+x+"/worktrees, which the command can write, but "+
		"its common directory "+x+" does not: an earlier confined run could have made this registration (--no-git skips "+
		"git discovery)\n", r.stderr)
	require.NoFileExists(t, x+"/objects/planted")
	require.NoFileExists(t, g.wt+"/ran")
	// Where the common directory is writable too, the registration grants nothing new, and the run goes on.
	r = g.confined(t, g.wt, `echo ran > ran`, "--allow", x)
	require.Equal(t, 0, r.status, "%s", r.stderr)
}

// requireGitVersion skips unless the git on PATH is at least major.minor, saying which it found.
func requireGitVersion(t *testing.T, major, minor int, why string) {
	t.Helper()
	requireGit(t)
	out, err := exec.Command("git", "version").Output()
	require.NoError(t, err)
	var maj, min int
	f := strings.Fields(string(out)) // "git version 2.47.3"
	if len(f) >= 3 {
		v := strings.Split(f[2], ".")
		if len(v) >= 2 {
			maj, _ = strconv.Atoi(v[0])
			min, _ = strconv.Atoi(v[1])
		}
	}
	if maj < major || (maj == major && min < minor) {
		t.Skipf("requires git >= %d.%d (%s), found %q", major, minor, why, strings.TrimSpace(string(out)))
	}
}

// TestGitReftableInALinkedWorktree: in the reftable ref format every shared ref lives in <common>/reftable, which
// confine grants whole, so deleting refs works in a linked worktree (branch -d, tag -d, stash pop, the end of a
// cherry-pick), where the files format cannot lock <common>/packed-refs; before the grant even `git commit` failed
// there ("reftable: transaction prepare: I/O error", git 2.47.3). Nothing appears in the common directory's root.
func TestGitReftableInALinkedWorktree(t *testing.T) {
	requireLandlock(t)
	requireGitVersion(t, 2, 45, "git init --ref-format=reftable")
	g := emptyGitRepo(t)
	g.git(t, g.base, "init", "-q", "--ref-format=reftable", "-b", "main", "main")
	require.NoError(t, os.WriteFile(g.main+"/a", []byte("a\n"), 0o644))
	g.git(t, g.main, "add", "a")
	g.git(t, g.main, "commit", "-q", "-m", "a")
	g.git(t, g.main, "tag", "v1")
	g.git(t, g.main, "branch", "gone")
	g.git(t, g.main, "checkout", "-q", "-b", "side")
	require.NoError(t, os.WriteFile(g.main+"/s", []byte("s\n"), 0o644))
	g.git(t, g.main, "add", "s")
	g.git(t, g.main, "-c", "user.name=other", "commit", "-q", "-m", "s", "--author", "other <o@o>")
	g.git(t, g.main, "checkout", "-q", "main")
	g.git(t, g.main, "worktree", "add", "-q", "-b", "wt", "../wt")
	rootBefore := rootNames(t, g.common)
	r := g.confined(t, g.wt, `set -e; git commit -q --allow-empty -m c; git tag -d v1; git branch -D gone; `+
		`git cherry-pick side; test ! -e "$(git rev-parse --git-path CHERRY_PICK_HEAD)"; `+
		`echo x >> a; git stash -q; git stash pop -q; ! git rev-parse -q --verify refs/stash`)
	require.Equal(t, 0, r.status, "stderr: %s", r.stderr)
	require.NotContains(t, r.stderr, "reftable: transaction")
	require.Equal(t, "refs/heads/main\nrefs/heads/side\nrefs/heads/wt\n", g.git(t, g.main, "for-each-ref", "--format=%(refname)"))
	require.Equal(t, "s\nc\na\n", g.git(t, g.main, "log", "--format=%s", "wt"))
	require.Equal(t, rootBefore, rootNames(t, g.common), "a file appeared in (or left) the common directory's root")
}

// TestGitLeftoverIsNamedAtTheNextLaunch: a clean cherry-pick in a linked worktree (files ref format) exits 0 under
// confine but leaves CHERRY_PICK_HEAD, which makes every later commit take the picked commit's author (issue 28);
// the next launch's report names the file and how to remove it.
func TestGitLeftoverIsNamedAtTheNextLaunch(t *testing.T) {
	requireLandlock(t)
	g := newGitRepo(t)
	g.git(t, g.main, "checkout", "-q", "-b", "picked")
	require.NoError(t, os.WriteFile(g.main+"/p", []byte("p\n"), 0o644))
	g.git(t, g.main, "add", "p")
	g.git(t, g.main, "commit", "-q", "-m", "p", "--author", "other <o@o>")
	g.git(t, g.main, "checkout", "-q", "main")
	r := g.confined(t, g.wt, `git cherry-pick picked`)
	require.Equal(t, 0, r.status, r.stderr)
	left := g.common + "/worktrees/wt/CHERRY_PICK_HEAD"
	if _, err := os.Stat(left); err != nil {
		t.Skipf("this git (%s) deleted CHERRY_PICK_HEAD under confine: nothing is left over to name", strings.TrimSpace(g.git(t, g.wt, "version")))
	}
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(bin, "--worktree", g.wt, "--report-fd", "3", "--", "true")
	cmd.ExtraFiles = []*os.File{rf}
	require.NoError(t, cmd.Run())
	var rep struct{ Warnings []string }
	b, _ := os.ReadFile(rf.Name())
	require.NoError(t, json.Unmarshal(b, &rep), "%s", b)
	require.Contains(t, strings.Join(rep.Warnings, "\n"), left+" is left over")
	require.Contains(t, strings.Join(rep.Warnings, "\n"), "rm "+left)
}
