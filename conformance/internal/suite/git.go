package suite

import (
	"os"
	"os/exec"
	"strings"
)

var gitCases = []Case{{
	ID:    "git-worktree/linked-ops",
	Title: "git add, commit, checkout -b and stash work in a linked worktree under confine",
	Rationale: "Agents work in linked worktrees (`git worktree add`). There .git is a file, and git writes to the " +
		"main checkout's git directory: worktrees/<name>/ (index, HEAD, logs), objects/, refs/ and logs/. A " +
		"sandbox that grants only the worktree makes every commit fail, and users then turn it off. The writes " +
		"the worktree design allows (those four) are excluded from the invariant here; everything else in the " +
		"main checkout, hooks/ and config included, is watched.",
	Expect: []Expect{{"ABI ≥ 1, git installed", "each git command exits 0 (EXPECTED-FAIL until git-worktree support lands)"},
		{"git absent (VM guest)", "SKIP"}, landlockOnly},
	Needs: Needs{Landlock: true, Tools: []string{"git"}},
	Setup: func(t *T) {
		g := gitFixture(t)
		t.Unwatch(g.linked, g.main+"/.git/worktrees/linked", g.main+"/.git/objects", g.main+"/.git/refs", g.main+"/.git/logs")
	},
	Run: func(t *T) {
		g := gitPaths(t)
		t.WriteFile(g.linked+"/new.txt", "new\n", 0o644)
		steps := [][]string{
			{"git", "add", "new.txt"},
			{"git", "commit", "-q", "-m", "confined commit"},
			{"git", "checkout", "-q", "-b", "topic"},
			{"/bin/sh", "-c", "echo changed > tracked.txt && git stash -q && test \"$(cat tracked.txt)\" = tracked"},
		}
		for _, argv := range steps {
			r := t.Confine([]string{"--worktree", g.linked}, argv, Opts{Env: g.env, Dir: g.linked})
			if r.Exit != 0 {
				t.Fatalf("%s: exit %d: %s", strings.Join(argv, " "), r.Exit, firstLine(r.Stderr))
			}
		}
	},
}, {
	ID:    "git-worktree/outside-denied",
	Title: "from a linked worktree, the main checkout, a sibling worktree, hooks/ and config stay unwritable",
	Rationale: "Whatever git support grants, it must not grant the main checkout's files, a sibling worktree, or " +
		"the git directory's hooks/ and config: a writable hook or a config with core.fsmonitor is code that runs " +
		"outside the sandbox the next time the user runs git. Both direct writes and `git config` must fail.",
	Expect: []Expect{{"ABI ≥ 1, git installed", "each write fails with EACCES; git config fails; nothing changes"},
		{"git absent (VM guest)", "SKIP"}, landlockOnly},
	Needs: Needs{Landlock: true, Tools: []string{"git"}},
	Setup: func(t *T) { gitFixture(t) },
	Run: func(t *T) {
		g := gitPaths(t)
		m := g.main
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
		{"init", "-q", g.main}, {"-C", g.main, "add", "tracked.txt"}, {"-C", g.main, "commit", "-q", "-m", "initial"},
		{"-C", g.main, "worktree", "add", "-q", "-b", "feat", g.linked},
		{"-C", g.main, "worktree", "add", "-q", "-b", "sib", g.sibling},
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
