package suite

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/confine-dev/confine/conformance/internal/snapshot"
)

// gitRoute is one way a confined command plants code that a later, unconfined git runs (issue 38): Script runs
// confined (/bin/sh -c, in the worktree, $S the sentinel path, $MAIN the main checkout), and git's everyday
// commands, run unconfined afterwards, would then create $S.
type gitRoute struct{ Name, Script string }

// The fsmonitor line a planted config carries: git runs core.fsmonitor through the shell at every git status.
const plantedFsmonitor = `printf '[core]\n\tfsmonitor = touch %s; false\n' "$S"`

// plainRoutes are the routes of a main checkout, whose .git is a directory inside the worktree.
var plainRoutes = []gitRoute{
	{"git config core.fsmonitor", `git config core.fsmonitor "touch $S; false"`},
	{"a pre-commit hook", `printf '#!/bin/sh\ntouch %s\n' "$S" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`},
	{"config replaced by a rename", `cp .git/config c.new && ` + plantedFsmonitor + ` >> c.new && mv -f c.new .git/config`},
	{"hooks/ renamed away and replaced", `mv .git/hooks h.old; mkdir -p .git/hooks && ` +
		`printf '#!/bin/sh\ntouch %s\n' "$S" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`},
	{".git renamed away and replaced by a copy", `cp -a .git g.new && ` + plantedFsmonitor + ` >> g.new/config && ` +
		`mv .git g.old && mv g.new .git`},
	{"a commondir naming a copy", `cp -a .git common.new && ` + plantedFsmonitor + ` >> common.new/config && ` +
		`printf '../common.new\n' > .git/commondir`},
}

// linkedRoutes are the routes of a linked worktree, whose .git file names its registration in the main
// checkout's git directory (granted), where the common config sets extensions.worktreeConfig. The gitdir
// back-pointer is followed by git worktree repair in the main checkout, which the case does not run (it would
// change the watched main checkout): its content is compared instead.
var linkedRoutes = []gitRoute{
	{"git config --worktree core.fsmonitor", `git config --worktree core.fsmonitor "touch $S; false"`},
	{"config.worktree written", plantedFsmonitor + ` >> "$(git rev-parse --git-dir)/config.worktree"`},
	{"commondir naming a copy", `cp -a "$MAIN/.git" common.new && ` + plantedFsmonitor + ` >> common.new/config && ` +
		`printf '%s/common.new\n' "$PWD" > "$(git rev-parse --git-dir)/commondir"`},
	{".git file naming a copy", `cp -a "$MAIN/.git" g.new && ` + plantedFsmonitor + ` >> g.new/config && ` +
		`printf 'gitdir: g.new\n' > .git`},
	{".git file replaced by a rename", `cp -a "$MAIN/.git" g2.new && ` + plantedFsmonitor + ` >> g2.new/config && ` +
		`printf 'gitdir: g2.new\n' > dotgit.new && mv -f dotgit.new .git`},
	{"the registration's gitdir rewritten", `printf '%s/.git\n' "$MAIN" > "$(git rev-parse --git-dir)/gitdir"`},
}

// outerRoutes are the routes of a main checkout two levels beneath a writable root (--allow of its
// grandparent; /tmp for a worktree in /tmp/d): plainRoutes, and the worktree, or its parent, renamed away
// through that root and replaced by a copy with a planted config.
var outerRoutes = append(append([]gitRoute{}, plainRoutes...),
	gitRoute{"the worktree renamed away and replaced by a copy",
		`cd .. && mv main main.old && cp -a main.old main && ` + plantedFsmonitor + ` >> main/.git/config`},
	gitRoute{"the worktree's parent renamed away and replaced by a copy",
		`cd ../.. && mv d d.old && mkdir d && cp -a d.old/main d/main && ` + plantedFsmonitor + ` >> d/main/.git/config`})

// separateRoutes are the routes of a worktree whose .git file names a git directory $G in /tmp (git init
// --separate-git-dir), with no commondir: it lies in the writable /tmp, which the layer holds as a main
// checkout's .git. Its directory and its parent are renamed away through /tmp too.
var separateRoutes = []gitRoute{
	{"git config core.fsmonitor", `git config core.fsmonitor "touch $S; false"`},
	{"config appended to", plantedFsmonitor + ` >> "$G/config"`},
	{"a pre-commit hook", `printf '#!/bin/sh\ntouch %s\n' "$S" > "$G/hooks/pre-commit" && chmod +x "$G/hooks/pre-commit"`},
	{"config replaced by a rename", `cp "$G/config" "$G/c.new" && ` + plantedFsmonitor + ` >> "$G/c.new" && mv -f "$G/c.new" "$G/config"`},
	{"hooks/ renamed away and replaced", `mv "$G/hooks" "$G/h.old"; mkdir -p "$G/hooks" && ` +
		`printf '#!/bin/sh\ntouch %s\n' "$S" > "$G/hooks/pre-commit" && chmod +x "$G/hooks/pre-commit"`},
	{"a commondir naming a copy", `cp -a "$G" "$G.c" && ` + plantedFsmonitor + ` >> "$G.c/config" && printf '%s\n' "$G.c" > "$G/commondir"`},
	{"the git directory renamed away and replaced by a copy", `mv "$G" "$G.old" && cp -a "$G.old" "$G" && ` + plantedFsmonitor + ` >> "$G/config"`},
	{"the git directory's parent renamed away and replaced by a copy", `d=$(dirname "$G") && mv "$d" "$d.old" && ` +
		`cp -a "$d.old" "$d" && ` + plantedFsmonitor + ` >> "$G/config"`},
}

// separateGitDir is the git directory in /tmp of the separateCheckout layout (named after the run's directory,
// so that Setup and Run agree and runs do not); Setup makes its parent, Run removes it.
func separateGitDir(t *T) string {
	return "/tmp/" + filepath.Base(filepath.Dir(t.Base)) + "-separate/g"
}

// gitLayout is the checkout a routes case plants in.
type gitLayout int

const (
	mainCheckout     gitLayout = iota // the fixture's main checkout
	linkedCheckout                    // the fixture's linked worktree
	outerCheckout                     // a main checkout two levels beneath a directory granted with --allow
	separateCheckout                  // a worktree whose .git file names a git directory in /tmp (separateGitDir)
)

var gitMetadataCases = []Case{
	gitRoutesCase("git-metadata/plain-routes", mainCheckout,
		"in a main checkout, no hook, config, commondir or replaced .git a confined command plants runs when git runs unconfined later",
		"The worktree holds .git, and every editor and agent harness runs unconfined git there all the time (VS Code's "+
			"git status every few seconds): a hook, core.fsmonitor in .git/config, a commondir naming a config of the "+
			"command's, or .git renamed away and replaced, is code that runs outside the sandbox with a delay. The mount "+
			"layer binds .git onto itself and its config, hooks/ and commondir read-only. Each route is planted by one "+
			"confined command; then unconfined git status and git commit run, and must not run it. The channel "+
			"git-metadata stays open (a gitlink added to the writable index is not held), and --strict refuses."),
	gitRoutesCase("git-metadata/linked-routes", linkedCheckout,
		"in a linked worktree, no config.worktree, commondir, .git file or gitdir a confined command plants runs when git runs unconfined later",
		"Agents' embedded worktrees are linked worktrees: .git is a file naming <main>/.git/worktrees/<name>, which "+
			"confine grants. Its commondir rewritten to a copy with core.fsmonitor, the .git file rewritten or replaced, "+
			"config.worktree written where extensions.worktreeConfig is set, or the gitdir back-pointer rewritten (which "+
			"git worktree repair follows) each changes what the next unconfined git in that worktree runs. The mount "+
			"layer holds each read-only; unconfined git status and git commit then must not run any of them."),
	gitRoutesCase("git-metadata/outer-root-routes", outerCheckout,
		"in a main checkout beneath a second writable root, no hook, config or replaced .git or worktree a confined command plants runs when git runs unconfined later",
		"A worktree in /tmp lies beneath the writable /tmp, and an agent may grant the worktree's parent (--allow): "+
			"each writable root gets a writable clone of its mounts, and the outer root's clone, attached over the "+
			"directory, must not show the worktree's .git without its guards (it did: a write to .git/config or "+
			"hooks/ through it succeeded). The plain routes are planted in a worktree two levels beneath the granted "+
			"directory, and two more: the worktree, and its parent (which is no root: the layer binds it onto itself), "+
			"renamed away through the granted directory and replaced by a copy with core.fsmonitor set."),
	gitRoutesCase("git-metadata/separate-routes", separateCheckout,
		"in a worktree whose git directory lies in /tmp, no hook, config, commondir or replaced git directory a confined command plants runs when git runs unconfined later",
		"git init --separate-git-dir, or a tool that keeps its git directories apart, leaves WORKTREE/.git a file "+
			"naming a git directory without a commondir. Outside the writable roots that directory is read-only "+
			"(nothing in it is granted); in /tmp its config and hooks were writable through /tmp's rule and mount, and "+
			"the report said git-metadata closed (an attack review). The layer now grants it as a root of its own, "+
			"which adds no right, and holds it as a main checkout's .git; the routes plant through its path in /tmp, "+
			"including renaming it or its parent away and replacing it."),
}

func gitRoutesCase(id string, layout gitLayout, title, rationale string) Case {
	linked := layout == linkedCheckout
	return Case{
		ID: id, Title: title, Rationale: rationale,
		Expect: []Expect{
			{"ABI ≥ 1 with a mount layer, git installed", "every route fails or has no effect: the sentinel is never made; " +
				"git add and commit work confined; report.channels.git-metadata is open naming the index; --strict exits 125"},
			{"no mount layer (supervisor, seccomp-deny)", "report.channels.git-metadata is open, and --strict exits 125; the routes are not planted"},
			{"git absent", "SKIP"}, noLandlockRow},
		Needs: Needs{Confined: true, Tools: []string{"git"}},
		Setup: func(t *T) {
			g := gitFixture(t)
			if layout == outerCheckout || layout == separateCheckout {
				wt, init := t.Base+"/outer/d/main", []string{"init", "-q", "-b", "main"}
				if layout == separateCheckout {
					wt, init = t.Base+"/separate", append(init, "--separate-git-dir", separateGitDir(t))
					t.Mkdir(filepath.Dir(separateGitDir(t)))
				}
				t.Mkdir(wt)
				git(t, g.env, append(init, wt)...)
				git(t, g.env, "-C", wt, "commit", "-q", "--allow-empty", "-m", "initial")
				t.Unwatch(wt, t.Base+"/outer")
			} else if linked {
				git(t, g.env, "-C", g.main, "config", "extensions.worktreeConfig", "true")
				// The unconfined git the case runs after each route writes in the main checkout's git directory
				// (git 2.47 makes and removes a file at its root); Run snapshots it around each confined run instead.
				t.Unwatch(g.linked, g.main)
			} else {
				t.Unwatch(g.main)
			}
		},
		Run: func(t *T) {
			g := gitPaths(t)
			wt, routes := g.main, plainRoutes
			switch layout {
			case linkedCheckout:
				wt, routes = g.linked, linkedRoutes
			case outerCheckout:
				wt, routes = t.Base+"/outer/d/main", outerRoutes
			case separateCheckout:
				wt, routes = t.Base+"/separate", separateRoutes
				defer os.RemoveAll(filepath.Dir(separateGitDir(t)))
			}
			sentinel := t.Base + "/ran-outside"
			env := append(append([]string{}, g.env...), "S="+sentinel, "MAIN="+g.main, "G="+separateGitDir(t))
			flags := []string{"--worktree", wt}
			if layout == outerCheckout {
				flags = append(flags, "--allow", t.Base+"/outer")
			}
			// confined runs script under confine; in a linked worktree the main checkout (its files and its git
			// directory but what the worktree is granted) must not change in it.
			confined := func(extra []string, script string) Run {
				if !linked {
					return t.Confine(append(flags, extra...), []string{"/bin/sh", "-c", script}, Opts{Env: env, Dir: wt})
				}
				skip := []string{g.main + "/.git/worktrees/linked", g.main + "/.git/objects", g.main + "/.git/refs", g.main + "/.git/logs"}
				before, err := snapshot.Take([]string{g.main}, skip)
				if err != nil {
					t.Fatalf("snapshot: %v", err)
				}
				r := t.Confine(append(flags, extra...), []string{"/bin/sh", "-c", script}, Opts{Env: env, Dir: wt})
				after, err := snapshot.Take([]string{g.main}, skip)
				if err != nil {
					t.Fatalf("snapshot: %v", err)
				}
				if d := snapshot.Diff(before, after); len(d) > 0 {
					t.Errorf("the main checkout changed under confine (%s): %s", firstLine(script), strings.Join(d, "; "))
				}
				return r
			}
			commit := confined(nil, `echo c > c.txt && git add c.txt && git commit -q -m c`)
			rep := commit.Report
			if rep == nil {
				t.Fatalf("no report: exit %d, %s", commit.Exit, firstLine(commit.Stderr))
			}
			ch, ok := rep.Channels["git-metadata"]
			if !ok || ch.Status != "open" {
				t.Errorf("report.channels.git-metadata is %+v in a git checkout, want open (its index is writable)", ch)
			}
			strict := confined([]string{"--strict"}, `touch strict-ran`)
			if strict.Exit != 125 || Exists(wt+"/strict-ran") || !strings.Contains(strict.Stderr, "git-metadata") {
				t.Errorf("--strict in a git checkout: exit %d (strict-ran made: %v), stderr %q; want 125 naming git-metadata",
					strict.Exit, Exists(wt+"/strict-ran"), firstLine(strict.Stderr))
			}
			if !rep.MountLayer() && rep.Backend != BackendBwrap {
				t.Logf("no mount layer (metadata %s): git-metadata reported open (%s); the routes would work here, and are not planted", rep.Metadata, firstLine(ch.How))
				return
			}
			if !strings.Contains(ch.How, "gitlink") {
				t.Errorf("with the mount layer, git-metadata is open for %q, want the gitlink route named", ch.How)
			}
			if commit.Exit != 0 {
				t.Errorf("git add and commit under confine: exit %d: %s", commit.Exit, firstLine(commit.Stderr))
			}
			gitdirFile := g.main + "/.git/worktrees/linked/gitdir"
			backPointer, _ := os.ReadFile(gitdirFile)
			for _, route := range routes {
				r := confined(nil, route.Script)
				t.Logf("route %s: confined exit %d: %s", route.Name, r.Exit, firstLine(r.Stderr))
				for _, trigger := range [][]string{{"git", "status", "--porcelain"}, {"git", "commit", "-q", "--allow-empty", "-m", "trigger"}} {
					t.Unconfined(trigger, Opts{Env: env, Dir: wt})
				}
				if Exists(sentinel) {
					t.Errorf("route %s: unconfined git ran what the confined command planted (%s exists)", route.Name, sentinel)
					os.Remove(sentinel)
				}
			}
			if b, _ := os.ReadFile(gitdirFile); linked && string(b) != string(backPointer) {
				t.Errorf("the registration's gitdir changed under confine: %q, was %q", b, backPointer)
			}
		},
	}
}

// git runs git unconfined for a fixture, failing the case on an error.
func git(t *T, env []string, args ...string) {
	if r := t.Unconfined(append([]string{"git"}, args...), Opts{Env: env}); r.Exit != 0 {
		t.Fatalf("fixture: git %s: exit %d: %s", strings.Join(args, " "), r.Exit, firstLine(r.Stderr))
	}
}
