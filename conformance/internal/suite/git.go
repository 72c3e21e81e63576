package suite

import (
	"os"
	"os/exec"
	"strings"
)

var gitCases = []Case{linkedOps("git-worktree/linked-ops", false), linkedOps("git-worktree/linked-ops-no-layer", true), {
	ID:    "git-worktree/outside-denied",
	Title: "from a linked worktree, the main checkout, a sibling worktree, hooks/ and config stay unwritable",
	Rationale: "Whatever git support grants, it must not grant the main checkout's files, a sibling worktree, or " +
		"the git directory's hooks/ and config: a writable hook or a config with core.fsmonitor is code that runs " +
		"outside the sandbox the next time the user runs git. Both direct writes and `git config` must fail.",
	Expect: []Expect{{"ABI ≥ 1, git installed", "each write fails with EACCES; git config fails; nothing changes"},
		{"git absent", "SKIP"}, noLandlockRow},
	Needs: Needs{Confined: true, Tools: []string{"git"}},
	Setup: func(t *T) {
		g := gitFixture(t)
		// The registration is granted (linked-ops writes there). With a mount layer confine makes an empty
		// config.worktree in it where it is missing (a placeholder it binds read-only: sandbox/README.md, Git
		// metadata); Run checks that it stays empty.
		t.Unwatch(g.main + "/.git/worktrees/linked")
	},
	Run: func(t *T) {
		g := gitPaths(t)
		m := g.main
		defer func() {
			if b, err := os.ReadFile(m + "/.git/worktrees/linked/config.worktree"); err == nil && len(b) > 0 {
				t.Errorf("the registration's config.worktree holds %q after the run, want it missing or empty", b)
			}
		}()
		res := t.Helper([]string{"--worktree", g.linked}, opArg("write", m+"/tracked.txt", "x"),
			opArg("create", m+"/new.txt", "x"), opArg("write", g.sibling+"/tracked.txt", "x"),
			opArg("create", g.sibling+"/new.txt", "x"), opArg("create", m+"/.git/hooks/pre-commit", "#!/bin/sh\n"),
			opArg("append", m+"/.git/config", "[core]\n\tfsmonitor = /tmp/x\n"), op("unlink", m+"/.git/config"))
		t.WantDenied("outside the linked worktree", denied, res...)
		r := t.Confine([]string{"--worktree", g.linked}, []string{"git", "config", "core.fsmonitor", "/tmp/x"}, Opts{Env: g.env, Dir: g.linked})
		if r.Exit == 0 {
			t.Errorf("git config core.fsmonitor succeeded under confine")
		}
	},
}}

// linkedSteps are the git commands an agent runs in its linked worktree, in an order where each has work to
// do: each runs in its own confine. rebase replays the worktree's commits onto a main that moved on; fetch
// takes a branch with new objects from a local bare repository. git before the fix "refs/files: avoid
// packed-refs lock for root ref deletion" (git@vger, Sep 2026) deletes CHERRY_PICK_HEAD after a rebase
// through a transaction that locks <common>/packed-refs, which confine keeps read-only (a new file there
// could be commondir, redirecting the main checkout's git): rebase exits 0 but leaves it behind, saying so;
// the step then clears it from the worktree's own git directory, which is writable.
var linkedSteps = [][2]string{
	{"add", `echo new > new.txt && git add new.txt`},
	{"commit", `git commit -q -m "confined commit"`},
	{"checkout -b", `git checkout -q -b topic && echo t > topic.txt && git add topic.txt && git commit -q -m topic`},
	{"switch", `git switch -q feat`},
	{"stash", `echo changed > tracked.txt && git stash -q && test "$(cat tracked.txt)" = tracked && ` +
		`git stash apply -q && test "$(cat tracked.txt)" = changed && git checkout -q -- tracked.txt`},
	{"merge", `git merge -q --no-edit topic && test -f topic.txt`},
	{"rebase", `e=$(mktemp /tmp/conformance-git.XXXXXX) && git rebase -q main 2>$e; s=$?; cat $e >&2; ` +
		`test $s = 0 && git merge-base --is-ancestor main HEAD && ` +
		`p=$(git rev-parse --git-path CHERRY_PICK_HEAD) && ` +
		`if test -e "$p"; then grep -q packed-refs.lock $e && rm "$p" || exit 9; fi && ` +
		`test -z "$(git status --porcelain)"`},
	{"fetch", `git fetch -q ../remote.git side:refs/remotes/r/side && git cat-file -e "r/side^{commit}"`},
	{"gc --auto", `GIT_CONFIG_COUNT=0 git gc --auto`},
}

// linkedOps is the linked-worktree case, with the mount layer (the default) or, noLayer, where no namespace
// can be made and seccomp denies metadata changes everywhere instead.
func linkedOps(id string, noLayer bool) Case {
	title := "git add, commit, checkout -b, switch, stash, merge, rebase, fetch and gc --auto work in a linked worktree"
	rationale := "Agents work in linked worktrees (`git worktree add`). There .git is a file, and git writes to the " +
		"main checkout's git directory: worktrees/<name>/ (index, HEAD, logs), objects/, refs/ and logs/, which " +
		"confine grants (and nothing else of it). A sandbox that grants only the worktree makes every commit fail, " +
		"and users then turn it off. Those four are excluded from the invariant; everything else in the main " +
		"checkout (its files, HEAD, index, hooks/, config, the common directory's root) and the sibling worktree " +
		"is watched."
	expect := "each git command exits 0; the main checkout, its hooks and config are unchanged"
	if noLayer {
		title += ", without the mount layer"
		rationale = "The same commands where no user or mount namespace can be had (a container's seccomp " +
			"profile): confine falls back to its supervisor (issue 15), which performs metadata changes inside " +
			"the worktree and its git directories for the command, or, on launchers before it, to seccomp-deny, " +
			"which denies chmod and utime even inside the worktree. The git grants are Landlock rules and do not " +
			"depend on the layer; git's everyday commands in a linked worktree must work under either fallback " +
			"(git init, which chmods its config, is the workflow family's)."
		expect = "report.metadata is supervisor or seccomp-deny, with a warning; " + expect
	}
	return Case{
		ID: id, Title: title, Rationale: rationale,
		Expect: []Expect{{"ABI ≥ 1, git installed", expect}, {"git absent", "SKIP"}, noLandlockRowFor(noLayer)},
		Needs:  Needs{Confined: !noLayer, Landlock: noLayer, Tools: []string{"git"}},
		Setup: func(t *T) {
			g := gitFixture(t)
			t.Unwatch(g.linked, g.main+"/.git/worktrees/linked", g.main+"/.git/objects", g.main+"/.git/refs", g.main+"/.git/logs")
		},
		Run: func(t *T) {
			g := gitPaths(t)
			for _, step := range linkedSteps {
				r := t.Confine([]string{"--worktree", g.linked}, []string{"/bin/sh", "-c", step[1]},
					Opts{Env: g.env, Dir: g.linked, NoNamespaces: noLayer})
				if noLayer {
					t.WantFallback(r)
				}
				if r.Exit != 0 {
					t.Logf("step %s: FAIL (exit %d)", step[0], r.Exit)
					t.Fatalf("%s: exit %d: %s", step[0], r.Exit, firstLine(r.Stderr))
				}
				backend := "?"
				if r.Report != nil {
					backend = r.Report.Backend
				}
				t.Logf("step %s: ok (backend %s)", step[0], backend) // the closing note's git table is made from these
			}
		},
	}
}

type gitTree struct {
	main, linked, sibling string
	env                   []string
}

func gitPaths(t *T) gitTree {
	home := t.Base + "/home"
	env := append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=conformance",
		"GIT_AUTHOR_EMAIL=c@example.invalid", "GIT_COMMITTER_NAME=conformance", "GIT_COMMITTER_EMAIL=c@example.invalid",
		// No automatic gc or maintenance: they would write packed-refs and packs, which are not what is tested.
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=maintenance.auto", "GIT_CONFIG_VALUE_1=false")
	return gitTree{main: t.Base + "/main", linked: t.Base + "/linked", sibling: t.Base + "/sibling", env: env}
}

// gitFixture makes a main checkout with one commit and two linked worktrees, linked (the confined one) and
// sibling, without confine.
func gitFixture(t *T) gitTree {
	g := gitPaths(t)
	t.Mkdir(g.main, t.Base+"/home")
	t.WriteFile(g.main+"/tracked.txt", "tracked\n", 0o644)
	for _, argv := range [][]string{
		{"init", "-q", "-b", "main", g.main}, {"-C", g.main, "add", "tracked.txt"}, {"-C", g.main, "commit", "-q", "-m", "initial"},
		{"-C", g.main, "worktree", "add", "-q", "-b", "feat", g.linked},
		{"-C", g.main, "worktree", "add", "-q", "-b", "sib", g.sibling},
		// main moves on, so that a rebase in linked has something to replay onto
		{"-C", g.main, "commit", "-q", "--allow-empty", "-m", "main2"},
		// a local bare remote with a branch of new objects, for fetch
		{"init", "-q", "--bare", t.Base + "/remote.git"}, {"init", "-q", t.Base + "/src"},
		{"-C", t.Base + "/src", "commit", "-q", "--allow-empty", "-m", "side"},
		{"-C", t.Base + "/src", "push", "-q", t.Base + "/remote.git", "HEAD:side"},
	} {
		cmd := exec.Command("git", argv...)
		cmd.Env = g.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("fixture: git %s: %v: %s", strings.Join(argv, " "), err, out)
		}
	}
	return g
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
