package suite

import (
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// The git parity cases (issue 28, item 1) run one script of git operations twice, step by step, on two identical
// repositories: unconfined in copy a, and confined (`confine --worktree <linked>`) in copy b, each in a linked
// worktree (or, in git-worktree/parity-plain, in the main checkout: issue 38). After each step they compare what a later git command reads (paritySnap) and classify the step
// (parityClass). A difference that is not the same is then written back over: b becomes a copy of a again, so
// every step is judged from the same state.

// parityStep is one git operation, a /bin/sh -c script run in the linked worktree.
type parityStep struct{ Name, Script string }

// paritySteps is the script. Each step has work to do in the state the steps before it leave unconfined. The
// fixture (parityFixture) gives: origin.git with main (c1..c3, tag v1), feat (c3 + feat.txt), side (c1 + a commit
// by another author), gone (deleted from origin after the clone); main, a clone of it with local feat and side;
// linked, a worktree of main on branch work at main~1 (plain: main itself is on work, and there is no linked);
// sub.git, a repository to add as a submodule.
var paritySteps = []parityStep{
	{"add", `echo a > a.txt && git add a.txt`},
	{"commit", `git commit -q -m "add a"`},
	{"commit --amend", `echo a2 >> a.txt && git commit -q -a --amend --no-edit`},
	{"cherry-pick", `git cherry-pick side`},
	{"commit after cherry-pick", `echo b > b.txt && git add b.txt && git commit -q -m "add b"`},
	{"revert", `git revert --no-edit HEAD`},
	{"merge", `git merge -q --no-edit feat`},
	{"rebase", `git rebase -q main`},
	{"rebase -i squash", `echo c > c.txt && git add c.txt && git commit -q -m c && echo c2 >> c.txt && ` +
		`git commit -q -a -m c2 && GIT_SEQUENCE_EDITOR="sed -i 2s/^pick/squash/" git rebase -q -i HEAD~2`},
	{"rebase -i --autosquash", `echo f >> c.txt && git commit -q -a --fixup HEAD && ` +
		`GIT_SEQUENCE_EDITOR=true git rebase -q -i --autosquash HEAD~2`},
	{"stash push", `echo s >> a.txt && git stash push -q`},
	{"stash pop", `git stash pop -q`},
	{"stash drop", `git stash push -q && git stash drop -q`},
	{"bisect run", `git bisect start HEAD main >/dev/null && git bisect run true >/dev/null`},
	{"bisect reset", `git bisect reset >/dev/null`},
	{"tag -d", `git tag -d v1`},
	{"branch -d", `git branch -d feat`},
	{"fetch --prune", `git fetch -q --prune origin`},
	{"checkout -b NEW origin/X", `git checkout -q -b fromside origin/side`},
	{"switch back", `git switch -q work`},
	{"submodule add", `git submodule add -q ../sub.git sub && git commit -q -m "add sub"`},
	{"submodule update", `git submodule update -q --init --force`},
	{"sparse-checkout set", `git sparse-checkout set dir`},
	{"sparse-checkout disable", `git sparse-checkout disable`},
	{"worktree add", `git worktree add -q ../wt2 -b wt2`},
	{"gc", `git gc -q`},
}

// parityFixture is the shell script that builds one copy in $1 (the same in each copy, and with a fixed
// identity and clock, so that every object id matches).
const parityFixture = `set -e
X=$1
git init -q --bare -b main $X/origin.git
git init -q -b main $X/seed && cd $X/seed
mkdir dir && echo d > dir/d.txt && echo 1 > base.txt && git add . && git commit -q -m c1
git branch side && git branch gone
echo 2 >> base.txt && git commit -q -a -m c2
echo 3 >> base.txt && git commit -q -a -m c3 && git tag v1
git checkout -q -b feat && echo f > feat.txt && git add feat.txt && git commit -q -m feat
git checkout -q side && echo s > side.txt && git add side.txt
GIT_AUTHOR_NAME=other GIT_AUTHOR_EMAIL=other@example.invalid git commit -q -m "side by other"
git checkout -q gone && git commit -q --allow-empty -m gone
git push -q $X/origin.git main feat side gone v1
git clone -q $X/origin.git $X/main && cd $X/main
git branch -q feat origin/feat && git branch -q side origin/side
if [ "$2" = plain ]; then
  # The placeholders confine makes in a main checkout (sandbox/README.md, Git metadata), made in both copies so
  # that the copies start alike: git reads each as if it were missing.
  git checkout -q -b work main~1 && printf '.\n' > .git/commondir && : > .git/config.worktree
else
  git worktree add -q -b work $X/linked main~1
fi
git -C $X/seed push -q $X/origin.git --delete gone
git init -q -b main $X/subseed && git -C $X/subseed commit -q --allow-empty -m sub
git clone -q --bare $X/subseed $X/sub.git
rm -rf $X/seed $X/subseed
`

// Step classes (parityClass).
const (
	paritySame   = "same"   // the same exit (zero or not) and the same state
	parityLoud   = "loud"   // confined exits non-zero where unconfined exits 0, and changed nothing
	paritySilent = "silent" // anything else: exit 0 with another state, or a failure that left state behind
)

// gitGap is a step that is not the same under confine: its class (parityLoud or paritySilent) in the modes
// (parityModes) it lists, what a loud failure leaves behind, why, and what the user does instead. The README's git
// table is generated from gitGaps (GitTable). The parity cases fail on every silent step, listed or not (issue 28
// tracks them), on a loud step no row lists, and on a row its step does not match.
type gitGap struct {
	Format     string // the ref format: "" files (git's default), or "reftable"
	Plain      bool   // measured in a main checkout (git-worktree/parity-plain), else in a linked worktree
	Step       string
	Class      string
	Modes      []string
	Leaves     string // loud: what the failure leaves (new refs only; see parityClass)
	Cause      string
	Workaround string
}

// everyMode is every mode a parity case reports (paritySnapMode): backend bwrap, else report.metadata. The mount
// layer allows git nothing that Landlock alone does not: the git directories are Landlock rules in every mode,
// and the common directory's root is read-only in each (EROFS from the layer, EACCES from Landlock alone).
var everyMode = []string{"mount-layer", "supervisor", "seccomp-deny", "bwrap"}

// The modes that make metadata changes inside the writable set (all but seccomp-deny, which denies chmod
// everywhere: git's chmod of a new config.lock then fails first, loudly), and seccomp-deny alone.
var (
	metadataModes = []string{"mount-layer", "supervisor", "bwrap"}
	layerModes    = []string{"mount-layer", "bwrap"} // the modes with a mount layer, which git-worktree/parity-plain runs in
	seccompDeny   = []string{"seccomp-deny"}
	chmodDenied   = "git chmods the new config.lock beside the worktree's or submodule's config, and seccomp-deny " +
		"denies chmod everywhere (no mount layer and no seccomp listener: a confine inside a supervised one)"
)

const (
	packedLock        = "deleting a ref locks `<common>/packed-refs`, in the read-only root"
	configLock        = "`<common>/config` is read-only"
	outsideOrReftable = "run it outside confine, or use the reftable ref format (git 2.45+)"
)

// gitGaps are the steps of paritySteps that differ under confine, measured with git 2.39.5 in the files ref format.
var gitGaps = []gitGap{
	{Step: "cherry-pick", Class: paritySilent, Modes: everyMode,
		Cause: "exits 0 but leaves CHERRY_PICK_HEAD: " + packedLock + "; the next `git commit` then takes the " +
			"picked commit's author", Workaround: "`rm \"$(git rev-parse --git-path CHERRY_PICK_HEAD)\"` after it; or " + outsideOrReftable},
	{Step: "rebase", Class: paritySilent, Modes: everyMode,
		Cause: "exits 0 but leaves CHERRY_PICK_HEAD (as cherry-pick)", Workaround: "as cherry-pick"},
	{Step: "rebase -i --autosquash", Class: paritySilent, Modes: everyMode,
		Cause:      "exits 0 but leaves REBASE_HEAD: " + packedLock,
		Workaround: "`rm \"$(git rev-parse --git-path REBASE_HEAD)\"`; or " + outsideOrReftable},
	{Step: "stash pop", Class: paritySilent, Modes: everyMode,
		Cause: "dropping the last entry deletes refs/stash: " + packedLock + "; exits 0, and refs/stash stays " +
			"with an empty reflog", Workaround: outsideOrReftable},
	{Step: "stash drop", Class: paritySilent, Modes: everyMode, Cause: "as stash pop", Workaround: "as stash pop"},
	{Step: "bisect run", Class: parityLoud, Modes: everyMode,
		Cause: "`bisect start` first deletes BISECT_HEAD: " + packedLock, Workaround: outsideOrReftable},
	{Step: "bisect reset", Class: paritySilent, Modes: everyMode,
		Cause:      "switches back to the branch, then fails (exit 1) to delete refs/bisect/*: " + packedLock,
		Workaround: outsideOrReftable},
	{Step: "tag -d", Class: parityLoud, Modes: everyMode, Cause: packedLock, Workaround: outsideOrReftable},
	{Step: "branch -d", Class: parityLoud, Modes: everyMode, Cause: packedLock, Workaround: outsideOrReftable},
	{Step: "fetch --prune", Class: paritySilent, Modes: everyMode,
		Cause: "fetches, then fails (exit 1) to delete the pruned refs: " + packedLock + "; the fetched refs and " +
			"FETCH_HEAD stay, and so do the stale remote-tracking refs", Workaround: "`git fetch` without --prune; " + outsideOrReftable},
	{Step: "checkout -b NEW origin/X", Class: paritySilent, Modes: everyMode,
		Cause: "creates the branch and switches the index and files, then fails (exit 1) to record the upstream: " +
			configLock + "; HEAD stays on the old branch, so the next commit commits the new branch's tree there",
		Workaround: "`git switch -c NEW --no-track origin/X`, and set the upstream outside confine"},
	{Step: "submodule add", Class: paritySilent, Modes: metadataModes,
		Cause:      "exits 0 with the submodule staged but not registered (no submodule.NAME in config): " + configLock,
		Workaround: "run it outside confine"},
	{Step: "submodule add", Class: parityLoud, Modes: seccompDeny, Cause: chmodDenied, Workaround: "run it outside confine"},
	{Step: "submodule update", Class: parityLoud, Modes: seccompDeny, Cause: chmodDenied, Workaround: "run it outside confine"},
	{Step: "sparse-checkout set", Class: parityLoud, Modes: everyMode,
		Cause: "sets extensions.worktreeConfig: " + configLock, Workaround: "run it outside confine"},
	{Step: "sparse-checkout disable", Class: parityLoud, Modes: layerModes,
		Cause:      "writes the registration's `config.worktree`, which the mount layer holds read-only (git metadata)",
		Workaround: "run it outside confine"},
	{Step: "sparse-checkout disable", Class: parityLoud, Modes: seccompDeny, Cause: chmodDenied,
		Workaround: "run it outside confine"},
	{Step: "worktree add", Class: parityLoud, Modes: everyMode, Leaves: "the new branch (-b)",
		Cause:      "creates <common>/worktrees/NEW, which is not granted (a sibling's registration is not the command's)",
		Workaround: "run it outside confine"},
	{Step: "gc", Class: parityLoud, Modes: everyMode,
		Cause: "takes <common>/gc.pid.lock, in the read-only root", Workaround: "run it outside confine"},

	// A main checkout (git 2.39.5, files format), with the mount layer: the ref deletions and gc work (.git is
	// writable but for its config, config.worktree, commondir and hooks/); what writes config, and worktree add
	// beside the worktree, do not.
	{Plain: true, Step: "branch -d", Class: paritySilent, Modes: layerModes,
		Cause:      "deletes the branch and exits 0, but its `branch.NAME` section stays: `.git/config` is read-only",
		Workaround: "`git config --remove-section branch.NAME` outside confine"},
	{Plain: true, Step: "checkout -b NEW origin/X", Class: paritySilent, Modes: layerModes,
		Cause: "creates the branch, switches to it and exits 0, but records no upstream (git prints \"set up to track\" " +
			"even so): `.git/config` is read-only; a later `git branch -d NEW` then finds it not merged",
		Workaround: "`git switch -c NEW --no-track origin/X`, and set the upstream outside confine"},
	{Plain: true, Step: "submodule add", Class: paritySilent, Modes: layerModes,
		Cause:      "exits 0 with the submodule staged but not registered (no submodule.NAME in `.git/config`, which is read-only)",
		Workaround: "run it outside confine"},
	{Plain: true, Step: "submodule update", Class: parityLoud, Modes: layerModes,
		Cause:      "sets `core.worktree` in `.git/modules/NAME/config`, which is read-only",
		Workaround: "run it outside confine"},
	{Plain: true, Step: "sparse-checkout set", Class: parityLoud, Modes: layerModes,
		Cause: "sets extensions.worktreeConfig: `.git/config` is read-only", Workaround: "run it outside confine"},
	{Plain: true, Step: "sparse-checkout disable", Class: parityLoud, Modes: layerModes,
		Cause: "writes `.git/config.worktree`, which is read-only", Workaround: "run it outside confine"},
	{Plain: true, Step: "worktree add", Class: parityLoud, Modes: layerModes, Leaves: "the new branch (-b)",
		Cause: "the new worktree's directory (`../wt2`) is outside the worktree", Workaround: "run it outside confine"},

	// reftable (git 2.47.3): the ref deletions work; what writes config, worktree add and gc do not.
	{Format: "reftable", Step: "branch -d", Class: paritySilent, Modes: metadataModes,
		Cause:      "deletes the branch and exits 0, but its `branch.NAME` section stays: " + configLock,
		Workaround: "`git config --remove-section branch.NAME` outside confine"},
	{Format: "reftable", Step: "checkout -b NEW origin/X", Class: paritySilent, Modes: metadataModes,
		Cause: "as in the files format", Workaround: "as in the files format"},
	{Format: "reftable", Step: "submodule add", Class: paritySilent, Modes: metadataModes,
		Cause: "as in the files format", Workaround: "run it outside confine"},
	{Format: "reftable", Step: "sparse-checkout set", Class: parityLoud, Modes: metadataModes,
		Cause: "as in the files format", Workaround: "run it outside confine"},
	{Format: "reftable", Step: "worktree add", Class: parityLoud, Modes: metadataModes, Leaves: "the new branch (-b)",
		Cause: "as in the files format", Workaround: "run it outside confine"},
	{Format: "reftable", Step: "gc", Class: parityLoud, Modes: metadataModes,
		Cause: "as in the files format", Workaround: "run it outside confine"},
}

// parityModes are the modes a parity case can report.
var parityModes = everyMode

func gapFor(v parityVariant, step, mode string) *gitGap {
	for i, g := range gitGaps {
		if g.Format == v.format && g.Plain == v.plain && g.Step == step && contains(g.Modes, mode) {
			return &gitGaps[i]
		}
	}
	return nil
}

var gitParityCases = []Case{parityCase("git-worktree/parity", parityVariant{}),
	parityCase("git-worktree/parity-no-layer", parityVariant{noLayer: true}),
	parityCase("git-worktree/parity-reftable", parityVariant{format: "reftable"}),
	parityCase("git-worktree/parity-plain", parityVariant{plain: true})}

// A parityVariant says where a parity case runs: without the mount layer (noLayer), in a ref format other than
// files ("reftable"), in the main checkout rather than a linked worktree (plain).
type parityVariant struct {
	noLayer bool
	format  string
	plain   bool
}

// worktree is the checkout the steps run in, beneath copy x; gitDir is its git directory, and common the common
// directory.
func (v parityVariant) worktree(x string) string {
	if v.plain {
		return x + "/main"
	}
	return x + "/linked"
}
func (v parityVariant) gitDir(x string) string {
	if v.plain {
		return x + "/main/.git"
	}
	return x + "/main/.git/worktrees/linked"
}

// parityCase is the parity case of variant v.
func parityCase(id string, v parityVariant) Case {
	noLayer, format := v.noLayer, v.format
	title := "a script of git operations in a linked worktree leaves the same state confined as unconfined, or fails loudly"
	rationale := "An agent's git commands in a linked worktree must do what they do unconfined, or fail and say so: " +
		"a command that exits 0 but leaves state behind (CHERRY_PICK_HEAD, a half-switched index, a ref it " +
		"could not delete) silently changes what a later git command does, e.g. the next commit takes another " +
		"author. The case builds two identical repositories (fixed identities and dates, so object ids match), " +
		"runs each step unconfined in one and under confine in the other, and compares exit status, refs, " +
		"packed-refs, HEAD, the index, the pseudo-refs and sequencer state, the recent commits' authors and " +
		"committers, the stash, the worktree list and the shared config. A loud difference must be listed, with " +
		"its cause and workaround, in the table the README's git table is generated from."
	expect := "no step silent; every loud step listed in gitGaps for this mode, every listed one loud"
	rows := []Expect{{"ABI ≥ 1, git installed", expect}, {"git absent", "SKIP"}, noLandlockRowFor(noLayer)}
	if noLayer {
		title += ", without the mount layer"
		rationale += " This variant runs where no namespace can be made (supervisor or seccomp-deny)."
	}
	if v.plain {
		title = strings.Replace(title, "in a linked worktree", "in a main checkout", 1)
		rationale += " This variant runs in the main checkout (the worktree holds .git), where the mount layer " +
			"holds config, hooks/ and commondir read-only and pins .git (issue 38), and the rest of .git is writable."
	}
	if format == "reftable" {
		title += ", in the reftable ref format"
		rationale += " This variant's repositories use the reftable ref format (git 2.45 and later), whose ref " +
			"directory confine grants whole: ref deletions, which lock packed-refs in the files format, work there."
		rows = append(rows, Expect{"git older than 2.45", "SKIP"})
	}
	return Case{
		ID: id, Title: title, Rationale: rationale,
		Expect: rows,
		Needs: Needs{Confined: !noLayer, Landlock: noLayer, Tools: []string{"git"}, Shell: true,
			HostOnly: "its outcome follows git's version and confine's grants and metadata mechanism, which the " +
				"host suite covers as root and as a user in every mode; its 26 steps, each launched twice, take " +
				"minutes a pass under TCG"},
		Setup: func(t *T) {
			if format == "reftable" {
				requireGit(t, 2, 45, "the reftable ref format")
			}
			env := parityEnv(t, format)
			a, b := parityCopies(t)
			t.Mkdir(t.Base+"/home", a, b)
			for _, x := range []string{a, b} {
				layout := "linked"
				if v.plain {
					layout = "plain"
				}
				cmd := exec.Command("/bin/sh", "-c", parityFixture, "fixture", x, layout)
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("fixture in %s: %v: %s", x, err, out)
				}
			}
			// a is git's own and b is re-copied from a after each difference: the boundary is the
			// git-worktree/outside-denied case's, so the copies are not watched.
			t.Unwatch(t.Base+"/p", t.Base+"/home")
		},
		Run: func(t *T) { runParity(t, v) },
	}
}

// parityCopies are the two copies' directories: a, unconfined, and b, confined (of the same length: copyOver).
func parityCopies(t *T) (a, b string) { return t.Base + "/p/a", t.Base + "/p/b" }

// parityEnv is the environment of every git run: a fixed identity and clock, no system or global config, no
// automatic gc, and file:// submodules allowed.
func parityEnv(t *T, format string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+t.Base+"/home", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=conformance",
		"GIT_AUTHOR_EMAIL=c@example.invalid", "GIT_COMMITTER_NAME=conformance", "GIT_COMMITTER_EMAIL=c@example.invalid",
		"GIT_AUTHOR_DATE=1767225600 +0000", "GIT_COMMITTER_DATE=1767225600 +0000", "GIT_PAGER=cat", "GIT_EDITOR=true",
		"GIT_CONFIG_COUNT=3", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=maintenance.auto", "GIT_CONFIG_VALUE_1=false",
		"GIT_CONFIG_KEY_2=protocol.file.allow", "GIT_CONFIG_VALUE_2=always", "GIT_DEFAULT_REF_FORMAT="+cmp.Or(format, "files"))
}

// requireGit skips the case unless git on PATH is at least major.minor (needed for what).
func requireGit(t *T, major, minor int, what string) {
	out, err := exec.Command("git", "version").Output()
	if err != nil {
		t.Skipf("requires git >= %d.%d (%s): git version: %v", major, minor, what, err)
	}
	var maj, min int
	fmt.Sscanf(strings.TrimPrefix(strings.TrimSpace(string(out)), "git version "), "%d.%d", &maj, &min)
	if maj < major || (maj == major && min < minor) {
		t.Skipf("requires git >= %d.%d (%s), found %q", major, minor, what, strings.TrimSpace(string(out)))
	}
}

// parityResult is one step's outcome.
type parityResult struct {
	Step, Class, Mode string
	ExitA, ExitB      int
	Diff              string // the first differences, one line each
	Stderr            string // the confined run's stderr, first line
}

func runParity(t *T, v parityVariant) {
	noLayer := v.noLayer
	env := parityEnv(t, v.format)
	a, b := parityCopies(t)
	mode := ""
	counts := map[string]int{}
	// b's state before each step is a's after the one before: b was the same after it, or was copied from a.
	pre := paritySnap(t, v, b, env)
	for _, s := range paritySteps {
		ra := t.Unconfined([]string{"/bin/sh", "-c", s.Script}, Opts{Env: env, Dir: v.worktree(a)})
		rb := t.Confine([]string{"--worktree", v.worktree(b)}, []string{"/bin/sh", "-c", s.Script},
			Opts{Env: env, Dir: v.worktree(b), NoNamespaces: noLayer})
		if rb.Exit == 125 && rb.Report != nil && rb.Report.Reason != "" {
			t.Fatalf("step %s: confine refused the launch (%s), so nothing here runs confined: %s", s.Name,
				rb.Report.Reason, firstLine(rb.Stderr))
		}
		if noLayer {
			t.WantFallback(rb)
		}
		if rb.Report != nil {
			mode = rb.Report.Metadata
			if rb.Report.Backend == BackendBwrap {
				mode = "bwrap"
			}
		}
		sa, sb := paritySnap(t, v, a, env), paritySnap(t, v, b, env)
		r := parityResult{Step: s.Name, Mode: mode, ExitA: ra.Exit, ExitB: rb.Exit, Stderr: firstLine(rb.Stderr)}
		r.Class, r.Diff = parityClass(ra.Exit, rb.Exit, pre, sa, sb)
		counts[r.Class]++
		t.Logf("step %s: %s (exit %d unconfined, %d confined, mode %s)%s", s.Name, r.Class, ra.Exit, rb.Exit, mode, indent(r.Diff))
		if r.Class != paritySame && rb.Stderr != "" {
			t.Logf("  confined stderr: %s", strings.ReplaceAll(strings.TrimSpace(rb.Stderr), "\n", "\n    "))
		}
		gap := gapFor(v, s.Name, mode)
		switch {
		case r.Class == paritySilent && (gap == nil || gap.Class != paritySilent):
			t.Errorf("step %s is a silent difference (%s), and no gitGaps row says so: %s", s.Name, mode, firstLine(r.Diff))
		case r.Class == paritySilent:
			t.Errorf("step %s is a silent difference (%s; listed, issue 28): %s", s.Name, mode, firstLine(r.Diff))
		case r.Class == parityLoud && (gap == nil || gap.Class != parityLoud):
			t.Errorf("step %s is loud (%s) but no gitGaps row lists it so, with its cause and workaround: %s", s.Name, mode, r.Stderr)
		case r.Class == parityLoud && (gap.Leaves != "") != strings.HasPrefix(r.Diff, "leaves: "):
			t.Errorf("step %s: loud, but its row's Leaves (%q) does not match what it leaves: %s", s.Name, gap.Leaves, firstLine(r.Diff))
		case r.Class == paritySame && gap != nil:
			t.Errorf("step %s is the same (%s) but a gitGaps row says it is %s: remove the row or its mode", s.Name, mode, gap.Class)
		}
		if ra.Exit != 0 && rb.Exit != 0 && r.Class == paritySame {
			t.Errorf("step %s fails unconfined too (exit %d): %s", s.Name, ra.Exit, firstLine(ra.Stderr))
		}
		if r.Class != paritySame {
			if err := copyOver(a, b); err != nil {
				t.Fatalf("copy a over b after %s: %v", s.Name, err)
			}
		}
		pre = sa
	}
	t.Logf("parity (%s): %d same, %d loud, %d silent", mode, counts[paritySame], counts[parityLoud], counts[paritySilent])
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "\n    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// parityClass classifies a step from its exits (unconfined ea, confined eb) and the states: b's before the step,
// and a's and b's after it. diff lists what differs between a and b after it. A confined failure that only added
// refs (git worktree add -b makes the branch before it fails) is loud: a later command that makes the same ref
// fails loudly; the table's row must name what it leaves (gitGap.Leaves).
func parityClass(ea, eb int, pre, sa, sb map[string]string) (class, diff string) {
	diff = snapDiff(sa, sb)
	left := snapDiff(pre, sb)
	switch {
	case (ea == 0) == (eb == 0) && diff == "":
		return paritySame, ""
	case ea == 0 && eb != 0 && (left == "" || onlyAddedRefs(pre, sb)):
		if left != "" {
			return parityLoud, "leaves: " + left + "\n" + diff
		}
		return parityLoud, diff
	case ea == 0 && eb != 0:
		return paritySilent, "failed and left state behind: " + left + "\n" + diff
	}
	return paritySilent, diff
}

// onlyAddedRefs says whether after differs from before only by refs it adds.
func onlyAddedRefs(before, after map[string]string) bool {
	for k := range after {
		if k != "refs" && before[k] != after[k] {
			return false
		}
	}
	for _, l := range strings.Split(before["refs"], "\n") {
		if !contains(strings.Split(after["refs"], "\n"), l) {
			return false
		}
	}
	return true
}

func snapDiff(x, y map[string]string) string {
	var keys []string
	for k := range x {
		keys = append(keys, k)
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if x[k] != y[k] {
			out = append(out, k+": "+lineDiff(x[k], y[k]))
		}
	}
	return strings.Join(out, "\n")
}

// lineDiff says which lines only the first (-) and only the second (+) text has, at most four each, or "(absent)".
func lineDiff(x, y string) string {
	xs, ys := strings.Split(strings.TrimSpace(x), "\n"), strings.Split(strings.TrimSpace(y), "\n")
	in := func(l string, set []string) bool { return contains(set, l) }
	var out []string
	for _, side := range []struct {
		sign      string
		lines, of []string
	}{{"-", xs, ys}, {"+", ys, xs}} {
		n := 0
		for _, l := range side.lines {
			if !in(l, side.of) {
				if n++; n <= 4 {
					out = append(out, side.sign+clip(l))
				}
			}
		}
		if n > 4 {
			out = append(out, fmt.Sprintf("%s(%d more)", side.sign, n-4))
		}
	}
	if len(out) == 0 {
		return "(same lines, another order)"
	}
	return strings.Join(out, " ")
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "«»"
	}
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return "«" + s + "»"
}

// paritySnap is the state of copy x that a later git command reads, with x's path replaced by $X: keys name what.
func paritySnap(t *T, v parityVariant, x string, env []string) map[string]string {
	wt, common, gitdir := v.worktree(x), x+"/main/.git", v.gitDir(x)
	s := map[string]string{}
	git := func(key string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = wt, append(env, "GIT_OPTIONAL_LOCKS=0")
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				out = append(out, fmt.Sprintf(" [exit %d]", ee.ExitCode())...)
			} else {
				t.Fatalf("snapshot: git %s: %v", strings.Join(args, " "), err)
			}
		}
		s[key] = string(out)
	}
	git("refs", "for-each-ref", "--format=%(refname) %(objectname) %(symref)")
	git("HEAD", "rev-parse", "-q", "--verify", "HEAD")
	git("HEAD symbolic", "symbolic-ref", "-q", "HEAD")
	git("index", "ls-files", "-s")
	git("status", "status", "--porcelain", "--untracked-files=all")
	git("authors", "log", "-n", "6", "--format=%h %an <%ae> / %cn <%ce> %s", "HEAD")
	git("stash", "stash", "list")
	git("worktrees", "worktree", "list", "--porcelain")
	s["packed-refs"] = readOr(common + "/packed-refs")
	s["config"] = readOr(common + "/config")
	s["common root"] = gitNames(common, false)
	s["modules"] = gitNames(common+"/modules", true)
	s["worktree files"] = names(wt, true)
	// every file of the worktree's git directory but the index (above), the reflogs and reftable's tables (whose
	// names are random; the refs in them are above, the pseudo-refs here): pseudo-refs, sequencer, rebase and
	// bisect state, locks, sparse-checkout, config.worktree
	if Exists(gitdir + "/reftable") {
		var refs []string
		for _, r := range []string{"ORIG_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "MERGE_HEAD", "REBASE_HEAD",
			"AUTO_MERGE", "BISECT_HEAD", "BISECT_EXPECTED_REV"} {
			cmd := exec.Command("git", "rev-parse", "-q", "--verify", r)
			cmd.Dir, cmd.Env = wt, env
			out, _ := cmd.Output()
			refs = append(refs, r+" "+strings.TrimSpace(string(out)))
		}
		s["pseudo-refs"] = strings.Join(refs, "\n")
	}
	filepath.WalkDir(gitdir, func(p string, d fs.DirEntry, err error) error {
		rel := strings.TrimPrefix(p, gitdir+"/")
		switch {
		case err != nil || p == gitdir:
			return nil
		case rel == "index" || rel == "logs" || d.Name() == "reftable" ||
			v.plain && (rel == "objects" || rel == "refs" || rel == "packed-refs" || rel == "config" || rel == "hooks" ||
				rel == "worktrees" || rel == "modules"):
			// in a main checkout, what the keys above compare (objects through refs, the index and the
			// commits; the refs; config; the worktree and module lists), and the sample hooks
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir() || isPlaceholder(p):
			return nil
		}
		s["gitdir "+rel] = readOr(p)
		return nil
	})
	for k, v := range s {
		s[k] = strings.ReplaceAll(v, x, "$X")
	}
	return s
}

// gitNames is names(dir, deep) as git reads a git directory: without confine's placeholders (isPlaceholder) and
// without empty directories (a failed git worktree add leaves an empty worktrees/), which git reads as missing.
func gitNames(dir string, deep bool) string {
	var out []string
	for _, rel := range strings.Split(names(dir, deep), "\n") {
		p := dir + "/" + rel
		if entries, err := os.ReadDir(p); rel == "" || isPlaceholder(p) || err == nil && len(entries) == 0 {
			continue
		}
		out = append(out, rel)
	}
	return strings.Join(out, "\n")
}

// isPlaceholder says whether the file at p is one confine makes in a git directory so that the mount layer can
// hold a missing name (sandbox/gitdir: a commondir naming its own directory, an empty config or config.worktree),
// which git reads as if it were missing: copy b gets them at each launch (in a submodule git directory the
// command's git made), and copy a does not.
func isPlaceholder(p string) bool {
	b, err := os.ReadFile(p)
	switch filepath.Base(p) {
	case "commondir":
		return err == nil && string(b) == ".\n"
	case "config", "config.worktree":
		return err == nil && len(b) == 0
	}
	return false
}

func readOr(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "(absent)"
	}
	return string(b)
}

// names lists the entries of dir (recursively, without .git directories' insides, when deep).
func names(dir string, deep bool) string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel := strings.TrimPrefix(p, dir+"/")
		out = append(out, rel)
		if d.IsDir() && (!deep || d.Name() == ".git") {
			return filepath.SkipDir
		}
		return nil
	})
	return strings.Join(out, "\n")
}

// copyOver makes b a copy of a, with a's path replaced by b's in every file (the two paths have the same length,
// so binary files stay valid): b's worktree pointers, remote URLs and FETCH_HEAD name b.
func copyOver(a, b string) error {
	if len(a) != len(b) {
		return fmt.Errorf("%s and %s differ in length", a, b)
	}
	if err := os.RemoveAll(b); err != nil {
		return err
	}
	return filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := b + strings.TrimPrefix(p, a)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(dst, info.Mode().Perm())
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(strings.ReplaceAll(l, a, b), dst)
		case info.Mode().IsRegular():
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(dst, bytes.ReplaceAll(c, []byte(a), []byte(b)), info.Mode().Perm()); err != nil {
				return err
			}
			return os.Chtimes(dst, info.ModTime(), info.ModTime())
		}
		return nil
	})
}

// Markers around the generated git table in sandbox/README.md.
const (
	GitTableBegin = "<!-- git table: generated from conformance/internal/suite/gitparity.go by `confine-conformance git-table`; do not edit -->"
	GitTableEnd   = "<!-- end of git table -->"
)

// GitTable is the README's git table, in markdown: every step of paritySteps, same or as gitGaps lists it, in a
// linked worktree in the files ref format and then in reftable, and in a main checkout, between GitTableBegin and
// GitTableEnd.
func GitTable() string {
	var b strings.Builder
	b.WriteString(GitTableBegin + "\n")
	gitTable(&b, parityVariant{}, "git in a linked worktree", everyMode)
	b.WriteString("\n")
	gitTable(&b, parityVariant{format: "reftable"}, "the same, in the reftable ref format (git 2.45+), except under seccomp-deny", metadataModes)
	b.WriteString("\n")
	gitTable(&b, parityVariant{plain: true}, "git in a main checkout, with the mount layer", layerModes)
	b.WriteString(GitTableEnd + "\n")
	return b.String()
}

// gitTable writes the table of v's rows, for the modes the table covers.
func gitTable(b *strings.Builder, v parityVariant, head string, modes []string) {
	fmt.Fprintf(b, "| %s | under confine | why | instead |\n|---|---|---|---|\n", head)
	var same []string
	for _, s := range paritySteps {
		var rows []gitGap
		for _, g := range gitGaps {
			if g.Step == s.Name && g.Format == v.format && g.Plain == v.plain {
				rows = append(rows, g)
			}
		}
		var covered []string
		for _, g := range rows {
			covered = append(covered, g.Modes...)
		}
		var rest []string
		for _, m := range modes {
			if !contains(covered, m) {
				rest = append(rest, m)
			}
		}
		switch {
		case len(rows) == 0:
			same = append(same, "`"+s.Name+"`")
			continue
		case len(rest) > 0:
			same = append(same, "`"+s.Name+"` (with "+strings.Join(rest, ", ")+")")
		}
		for _, g := range rows {
			class := "**silent**"
			if g.Class == parityLoud {
				class = "fails (loud)"
				if g.Leaves != "" {
					class += ", leaves " + g.Leaves
				}
			}
			if strings.Join(g.Modes, ",") != strings.Join(modes, ",") {
				class += " with " + strings.Join(g.Modes, ", ")
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", s.Name, class, g.Cause, g.Workaround)
		}
	}
	fmt.Fprintf(b, "| %s | the same as unconfined | | |\n", strings.Join(same, ", "))
}
