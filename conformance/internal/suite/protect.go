package suite

import (
	"os"
	"slices"

	"github.com/confine-dev/confine/conformance/internal/helper"
)

// The --protect cases of the boundary family (issue 38, item 3): a path beneath the worktree that tools later
// run unconfined (.vscode's tasks, direnv's .envrc) held read-only by the mount layer, or the launch refused.
var protectCases = []Case{{
	ID:    "boundary/protect",
	Title: "--protect holds a file and a directory beneath the worktree read-only; where no mount layer can be had, nothing runs",
	Rationale: "The worktree is writable, and so is every file in it that an editor or a shell later runs " +
		"unconfined: .vscode/tasks.json, direnv's .envrc. Landlock cannot take a path out of the worktree's rule " +
		"(rules only add); the mount layer binds each --protect path onto itself read-only. The command tries to " +
		"write, create in, chmod, touch, rename, remove and rename over the protected directory and file, and " +
		"writes a file beside them (which must work), then tries again with the worktree's parent granted too (a " +
		"second writable root, whose mount must not show them unguarded); the runner reads the protected files " +
		"after. A path deeper in the worktree (its parent could be renamed and the path made again) is refused " +
		"(bad-root), nothing run. Where this " +
		"host allows no mount layer (user namespaces off, a host emulation), the launch must be refused " +
		"(protect-unavailable) rather than run with the paths writable: the case checks that a run without " +
		"--protect has no mount layer there either.",
	Expect: []Expect{{"ABI ≥ 1", "each route on the protected paths fails (EROFS, EBUSY), their content and mode are unchanged, " +
		"the write beside them works, report.protected names both; where no mount layer can be had: exit 125, " +
		"reason protect-unavailable, nothing runs"}, noLandlockRow},
	Needs: Needs{Confined: true},
	Setup: protectSetup,
	Run:   func(t *T) { runProtect(t, false) },
}, {
	ID:    "boundary/protect-fallback",
	Title: "--protect where no mount namespace can be made: refused, nothing runs",
	Rationale: "Without a mount namespace (a container's seccomp profile, Ubuntu 24.04 as a user) there is no " +
		"mount layer, and nothing else can hold a path beneath a writable root read-only: Landlock's rules only " +
		"add, and the supervisor makes metadata calls only. Running the command with the paths writable would " +
		"confine less than the caller asked, so confine must refuse: exit 125, reason protect-unavailable, the " +
		"sentinel not made, the protected files unchanged.",
	Expect: []Expect{{"ABI ≥ 1, fallback", "exit 125, reason protect-unavailable, nothing runs"}, fallbackOnly},
	Needs:  Needs{Landlock: true},
	Setup:  protectSetup,
	Run:    func(t *T) { runProtect(t, true) },
}}

// protectedFiles are the files the protect cases hold, with their content: beneath the worktree, so outside the
// invariant's watch (the case reads them itself).
var protectedFiles = map[string]string{"/.vscode/tasks.json": "{\"tasks\": []}\n", "/.envrc": "export PROJECT=1\n"}

func protectSetup(t *T) {
	t.Mkdir(t.WT + "/.vscode")
	for rel, content := range protectedFiles {
		t.WriteFile(t.WT+rel, content, 0o644)
	}
	t.WriteFile(t.WT+"/decoy", "replaced\n", 0o644)
}

// runProtect runs the routes on the protected paths (fallback: where no namespace can be made) and judges them.
func runProtect(t *T, fallback bool) {
	dir, file, sentinel := t.WT+"/.vscode", t.WT+"/.envrc", t.WT+"/beside"
	before := map[string]string{}
	for rel := range protectedFiles {
		before[rel] = contentAndMode(t, t.WT+rel)
	}
	routes := []helper.Op{
		opArg("write", dir+"/tasks.json", "hacked"), opArg("create", dir+"/new.json", "x"), {Op: "chmod", Path: dir},
		{Op: "rename", Path: dir, Path2: t.WT + "/moved"}, {Op: "rmdir", Path: dir},
		opArg("write", file, "hacked"), {Op: "chmod", Path: file}, {Op: "utimes", Path: file},
		{Op: "unlink", Path: file}, {Op: "rename", Path: t.WT + "/decoy", Path2: file},
	}
	flags := t.Flags("--protect", dir, "--protect", file)
	r := t.Confine(flags, t.HelperArgv(append(routes, opArg("create", sentinel, "ok"))...), Opts{NoNamespaces: fallback})
	defer func() {
		for rel := range protectedFiles {
			if after := contentAndMode(t, t.WT+rel); after != before[rel] {
				t.Errorf("%s changed: %s, then %s", rel, before[rel], after)
			}
		}
	}()
	if r.Report != nil && r.Report.Outcome == "refused" {
		if r.Report.Reason != "protect-unavailable" {
			t.Fatalf("refused with %s (%s), want protect-unavailable or a run", r.Report.Reason, r.Report.Error)
		}
		checkRefused(t, "--protect without a mount layer", r, sentinel)
		if !fallback { // refused where a plain run has the layer: --protect broke the launch
			plain := t.Confine(t.Flags(), t.HelperArgv(opArg("create", sentinel, "ok")), Opts{})
			os.Remove(sentinel)
			if plain.Report == nil || plain.Report.Metadata == "mount-layer" {
				t.Errorf("refused with protect-unavailable, but a run without --protect has a mount layer here (report %q)", plain.ReportRaw)
			}
		}
		return
	}
	if fallback {
		t.Fatalf("ran without a mount namespace (report %q): the protected paths were writable", r.ReportRaw)
	}
	// The attack review's route around a bind: a path deeper in the worktree, whose parent the command could
	// rename and make again.
	if rr, _ := refusedRun(t, "--protect, a path not directly in the worktree", t.Flags("--protect", dir+"/tasks.json")); rr.Report != nil && rr.Report.Reason != "bad-root" {
		t.Errorf("--protect, a path not directly in the worktree: reason %q, want bad-root", rr.Report.Reason)
	}
	res := t.helperResults("confine --protect", r, len(routes)+1)
	for _, x := range res[:len(routes)] {
		if x.OK {
			t.Errorf("%s %s succeeded on a protected path", x.Op, x.Path)
		}
	}
	t.WantOK("beside the protected paths", res[len(routes)])
	if r.Report == nil || !slices.Equal(r.Report.Protected, []string{dir, file}) {
		t.Errorf("report.protected %v, want [%s %s]", r.Report.Protected, dir, file)
	}
	// And with a second writable root above the worktree (as /tmp is above a worktree in it): its writable
	// mount, attached over the worktree's directory, must not show the paths unguarded (the attack review's
	// route, which the last stop refused and this layer closes).
	outer := t.Confine(append(flags, "--allow", t.Base), t.HelperArgv(routes...), Opts{})
	for _, x := range t.helperResults("confine --allow (the worktree's parent) --protect", outer, len(routes)) {
		if x.OK {
			t.Errorf("with the worktree's parent granted: %s %s succeeded on a protected path", x.Op, x.Path)
		}
	}
}
