package suite

import (
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/helper"
	"github.com/confine-dev/confine/conformance/internal/kabi"
)

// noise is what a command prints to stderr to look like confine refusing; the verdict must not change.
const noise = "confine: refused: landlock-absent (ENOSYS)\nconfine: landlock-disabled EOPNOTSUPP bad-root ruleset\n"

var failClosedCases = []Case{{
	ID:    "fail-closed/no-landlock-sentinel",
	Title: "without Landlock (absent or disabled) and without bwrap the command never runs: exit 125, the reason names the errno",
	Rationale: "The failure we exist to prevent: a wrapper that finds no Landlock and runs the command anyway, " +
		"unconfined. On a kernel built without Landlock (ENOSYS, 5.10) or with it disabled by lsm= (EOPNOTSUPP), " +
		"--backend auto uses bwrap when it is installed; the case hides bwrap (CONFINE_BWRAP names a file that " +
		"does not exist, and confine looks for no other), so auto has no backend left and must refuse; --backend " +
		"landlock must refuse even with bwrap installed. Each: exit 125, one stderr line prefixed 'confine: ', a report with " +
		"outcome refused and reason landlock-absent or landlock-disabled that names the errno, and a sentinel file " +
		"the command would have created must not exist.",
	Expect: []Expect{{"no Landlock (ENOSYS)", "auto with bwrap hidden, and landlock: exit 125, reason landlock-absent, ENOSYS named, no sentinel"},
		{"Landlock disabled (EOPNOTSUPP)", "auto with bwrap hidden, and landlock: exit 125, reason landlock-disabled, EOPNOTSUPP named, no sentinel"},
		{"ABI ≥ 1", "SKIP: needs a kernel without Landlock (the VM matrix has two)"}},
	Needs: Needs{NoLandlk: true},
	Setup: func(t *T) { t.Mkdir(t.Base + "/empty-path") },
	Run: func(t *T) {
		want := map[kabi.State]string{kabi.Absent: "landlock-absent", kabi.Disabled: "landlock-disabled"}[t.Cfg().Landlock.State]
		for _, backend := range []string{"auto", "landlock"} {
			env := os.Environ() // --backend landlock: the runner's environment, bwrap installed or not
			if backend == "auto" {
				env = withBwrap(t.Base + "/empty-path/bwrap")
			}
			r, ok := refusedRunEnv(t, "--backend "+backend, t.Flags("--backend", backend), env)
			if ok && (r.Report.Reason != want || r.Report.Landlock != string(t.Cfg().Landlock.State)) {
				t.Errorf("--backend %s: report reason %q landlock %q, want %s / %s", backend, r.Report.Reason, r.Report.Landlock, want, t.Cfg().Landlock.State)
			}
			if ok && !strings.Contains(r.ReportRaw, t.Cfg().Landlock.Errno) {
				t.Errorf("--backend %s: the report does not name %s: %s", backend, t.Cfg().Landlock.Errno, r.ReportRaw)
			}
		}
	},
}, {
	ID:    "fail-closed/stderr-empty",
	Title: "the verdict does not depend on the command's stderr being empty",
	Rationale: "Classification must never read the command's output. A command that writes nothing to stderr " +
		"runs (exit 0, sentinel created, report exec) where Landlock works, and never runs (exit 125, no " +
		"sentinel, report refused) where it does not. A command that itself exits 125 silently keeps its status, " +
		"and the report still says exec: the report, not the status, tells confine's refusal apart. Where " +
		"Landlock is absent or disabled the command runs under bwrap (when it is installed), as --backend auto picks.",
	Expect: []Expect{{"ABI ≥ 1, or bwrap where Landlock is absent or disabled", "exit 0, sentinel exists, report exec (backend as chosen); a command's own 125 passes through with report exec"},
		{"no Landlock, no bwrap", "exit 125, no sentinel, report refused"}},
	Run: func(t *T) { sentinelVerdict(t, "") },
}, {
	ID:    "fail-closed/stderr-noise",
	Title: "the verdict does not change when the command's stderr is full of confine's own words",
	Rationale: "A wrapper that greps stderr for 'landlock' or its own prefix to decide whether it failed can be " +
		"steered by the command. Here the command prints lines that imitate confine's refusals; the exit status " +
		"and the report must be exactly those of a quiet command.",
	Expect: []Expect{{"ABI ≥ 1, or bwrap where Landlock is absent or disabled", "exit 0, sentinel exists, report exec, the noise passes through unchanged"},
		{"no Landlock, no bwrap", "exit 125, no sentinel, report refused, no noise (the command never ran)"}},
	Run: func(t *T) { sentinelVerdict(t, noise) },
}, {
	ID:    "fail-closed/bad-root",
	Title: "a missing, relative, non-clean, symlinked or / worktree is refused: 125, bad-root",
	Rationale: "A root that cannot be opened safely must stop everything, not be dropped from the ruleset (an empty " +
		"or partial ruleset would confine less than asked). Each malformed --worktree must give exit 125, reason " +
		"bad-root, prefixed stderr, and no sentinel. A symlinked root, or a root with a symlink in its path, is " +
		"refused rather than resolved, so that the rule can never land on a path the caller did not name.",
	Expect: []Expect{{"ABI ≥ 1", "each: exit 125, reason bad-root, no sentinel"},
		{"no Landlock, no bwrap", "each: exit 125 (bad-root or the Landlock reason, whichever is checked first), no sentinel"}},
	Setup: func(t *T) {
		mustSymlink(t, t.WT, t.Base+"/wt-link")
		mustSymlink(t, t.Base, t.Out+"/base-link")
	},
	Run: func(t *T) {
		roots := map[string]string{
			"missing": t.Base + "/no-such-dir", "relative": "wt", "non-clean": t.Base + "/outside/../wt",
			"symlink": t.Base + "/wt-link", "symlink component": t.Out + "/base-link/wt", "root": "/", "empty": "",
		}
		for _, what := range sortedKeys(keys(roots)) {
			r, ok := refusedRun(t, "--worktree "+what, []string{"--worktree", roots[what]})
			if ok && t.Backend() != BackendNone && r.Report.Reason != "bad-root" && !(what == "empty" && r.Report.Reason == "usage") {
				t.Errorf("--worktree %s (%q): reason %q, want bad-root", what, roots[what], r.Report.Reason)
			}
		}
	},
}, {
	ID:    "fail-closed/report-any-order",
	Title: "a refusal is reported on --report-fd wherever that flag appears on the command line",
	Rationale: "Callers learn why confine refused from the report, not from stderr. If the report is written only " +
		"when --report-fd was parsed before the failing flag, a caller that puts it last (natural when appending " +
		"to a user's flags) gets exit 125 and no reason, and is left to guess from stderr, which is exactly the " +
		"classification by output that confine promises never to require.",
	Expect: []Expect{{"any", "exit 125 and a report with outcome refused and the reason, for a bad flag before --report-fd"}},
	Run: func(t *T) {
		s := t.WT + "/sentinel"
		cmd := t.HelperArgv(opArg("create", s, "x"))
		for what, c := range map[string]struct {
			args   []string
			reason string
		}{
			"relative worktree": {[]string{"--worktree", "wt"}, "bad-root"},
			"bad mode":          {[]string{"--worktree", t.WT, "--mode", "everything"}, "usage"},
		} {
			argv := append(append(append([]string{}, c.args...), "--report-fd", "3", "--"), cmd...)
			r := t.Confine(nil, nil, Opts{Argv: argv, ReportFD: true})
			checkRefused(t, what, r, s)
			if r.Report == nil || r.Report.Outcome != "refused" || r.Report.Reason != c.reason {
				t.Errorf("%s, then --report-fd 3: report %q, want outcome refused, reason %s", what, r.ReportRaw, c.reason)
			}
		}
	},
}, {
	ID:    "fail-closed/config-aliased",
	Title: "a --config file that a writable root shows under another name (a bind mount, an overlay) is refused: 125, usage",
	Rationale: "A --config file the command can rewrite sets the next launch's policy: one confined run would " +
		"widen every later one. A file beneath a writable root is refused by path; the same file reached under " +
		"another name must be refused too. In a mount namespace of its own, the case shows the worktree, a " +
		"directory of it, and an overlay whose upper layer is in it at paths outside, and binds the config's own " +
		"directory into the worktree; a --config file at each of those paths must be refused (125, reason usage, " +
		"nothing run), and the same file at a path nothing shows elsewhere must run the command (the control). " +
		"The subdirectory's bind and the overlay passed the check before (issue 43, finding 3's gaps in the " +
		"launcher's own check).",
	Expect: []Expect{{"any", "each alias: exit 125, reason usage, no sentinel; the control runs (where a mount " +
		"namespace can be made: root; the overlay where the kernel has overlayfs)"}},
	Needs: Needs{Confined: true}, // the control runs the command
	Setup: func(t *T) {
		t.Mkdir(t.Base+"/etc", t.Base+"/low", t.Base+"/ovwork", t.Base+"/alias-wt", t.Base+"/alias-sub",
			t.Base+"/merged", t.WT+"/sub", t.WT+"/up", t.WT+"/etc-in")
		for _, dir := range []string{t.Base + "/etc", t.WT + "/sub", t.WT + "/up"} {
			t.WriteFile(dir+"/ci.conf", "--no-git\n", 0o644)
		}
		t.Unwatch(t.Base + "/ovwork") // the overlay's work directory, which the kernel writes
	},
	Run: configAliasedRun,
}, {
	ID:    "fail-closed/worktree-aliased",
	Title: "a worktree that a writable root shows under another name (a bind mount) is refused: 125, bad-root",
	Rationale: "The mount layer holds a checkout's .git by the worktree's name, and read-only mode denies the " +
		"worktree by its name: reached through a writable root under another name, the command could write its " +
		"config and hooks, or in read-only mode the worktree itself (an attack review: /tmp a bind of a directory " +
		"that holds the worktree, or the worktree a bind of a checkout in /tmp; core.fsmonitor ran at the next " +
		"unconfined git status). In a mount namespace of its own, the case binds the worktree into a directory " +
		"granted with --allow, a directory of that one onto a second worktree, a third's .git/hooks and a fourth's " +
		"separate git directory into it, and a directory in /tmp onto a fifth for read-only mode: each launch must be refused (125, reason bad-root, nothing run), and the same " +
		"worktree with an --allow that shows nothing of it must run (the control).",
	Expect: []Expect{{"any", "each alias: exit 125, reason bad-root, no sentinel; the control runs (where a mount " +
		"namespace can be made: root)"}},
	Needs: Needs{Confined: true}, // the control runs the command
	Setup: func(t *T) {
		t.Mkdir(t.Base+"/wa/.git", t.Base+"/wb", t.Base+"/wc", t.Base+"/wd/.git/hooks", t.Base+"/other", t.Base+"/allowed/in",
			t.Base+"/allowed/hooks", t.Base+"/allowed/src/.git", t.Base+"/allowed/sep", t.Base+"/sepsrc/g", t.Base+"/we")
		t.Unwatch(t.Base+"/allowed", t.Base+"/other", t.Base+"/wa", t.Base+"/wb", t.Base+"/wc", t.Base+"/wd", t.Base+"/we",
			t.Base+"/sepsrc") // the worktrees and --allow directories, and a git directory
	},
	Run: worktreeAliasedRun,
}, {
	ID:    "fail-closed/usage",
	Title: "malformed invocations are refused before anything runs: 125, usage",
	Rationale: "A lenient parser is a fail-open parser: an unknown flag taken as the command, a missing --, or " +
		"a conflicting repeat could run the command with less confinement than the caller wrote. Each malformed " +
		"invocation must give exit 125 with one 'confine: ' line, no sentinel, and reason usage where the report " +
		"descriptor was valid.",
	Expect: []Expect{{"any", "each: exit 125, no sentinel; reason usage (or bad-report-fd for a bad descriptor)"}},
	Run: func(t *T) {
		s := t.WT + "/sentinel"
		cmd := t.HelperArgv(opArg("create", s, "x"))
		w := t.WT
		bad := map[string][]string{
			"no --":              append([]string{"--worktree", w}, cmd...),
			"empty command":      {"--worktree", w, "--"},
			"unknown flag":       append([]string{"--worktree", w, "--no-such-flag", "--"}, cmd...),
			"repeated worktree":  append([]string{"--worktree", w, "--worktree", w, "--"}, cmd...),
			"bad mode":           append([]string{"--worktree", w, "--mode", "everything", "--"}, cmd...),
			"allow in read-only": append([]string{"--worktree", w, "--mode", "read-only", "--allow", t.Base, "--"}, cmd...),
			"report-fd 1":        append([]string{"--worktree", w, "--report-fd", "1", "--"}, cmd...),
			"report-fd closed":   append([]string{"--worktree", w, "--report-fd", "9", "--"}, cmd...),
		}
		for _, what := range sortedKeys(keys(bad)) {
			r := t.Confine(nil, nil, Opts{Argv: bad[what]})
			checkRefused(t, what, r, s)
			if strings.HasPrefix(what, "report-fd") {
				continue
			}
			rr := t.Confine(nil, nil, Opts{Argv: append([]string{"--report-fd", "3"}, bad[what]...), ReportFD: true})
			if checkRefused(t, what+" (with --report-fd)", rr, s) && rr.Report != nil && rr.Report.Reason != "usage" {
				t.Errorf("%s: reason %q, want usage", what, rr.Report.Reason)
			}
		}
	},
}, {
	ID:    "fail-closed/backend-unavailable",
	Title: "asking for a backend that is not available is refused: 125, backend-unavailable",
	Rationale: "--backend bwrap on a machine without a working bwrap must not fall back to anything (least of all " +
		"to no sandbox): the caller asked for one specific mechanism.",
	Expect: []Expect{{"any (bwrap hidden by the case: CONFINE_BWRAP names a missing file)", "exit 125, reason backend-unavailable, no sentinel"}},
	Setup:  func(t *T) { t.Mkdir(t.Base + "/empty-path") },
	Run: func(t *T) {
		// The case arranges bwrap's absence itself, so the verdict does not depend on the machine: CONFINE_BWRAP
		// names a file that does not exist, and confine tries no other bwrap (never one from $PATH).
		if p, err := FindBwrap(); err == nil {
			t.Logf("this machine has %s: hidden from confine by CONFINE_BWRAP", p)
		}
		s := t.WT + "/sentinel"
		r := t.Confine(t.Flags("--backend", "bwrap"), t.HelperArgv(opArg("create", s, "x")), Opts{Env: withBwrap(t.Base + "/empty-path/bwrap")})
		ok := checkRefused(t, "--backend bwrap", r, s)
		if r.Report == nil {
			t.Fatalf("--backend bwrap: no report on --report-fd")
		}
		if r.Report.Outcome != "refused" {
			t.Errorf("--backend bwrap: report outcome %q, want refused", r.Report.Outcome)
		}
		if ok && r.Report.Reason != "backend-unavailable" {
			t.Errorf("reason %q, want backend-unavailable", r.Report.Reason)
		}
	},
}, {
	ID:    "fail-closed/bwrap-exits-1",
	Title: "a bwrap that cannot create its namespaces (exits 1, saying so) runs nothing: 125, backend-unavailable",
	Rationale: "bwrap's commonest failure: user namespaces blocked by a sysctl or a container's profile, and bwrap " +
		"prints 'No permissions to create new namespace' and exits 1. confine must not take its exit for the " +
		"command's, nor run the command some other way: exit 125, reason backend-unavailable, one stderr line " +
		"prefixed 'confine: ' that quotes bwrap and names the cause (user namespaces), no sentinel. The case names " +
		"a bwrap of its own by CONFINE_BWRAP (a shell script that says exactly that), so it runs on every kernel: " +
		"with --backend bwrap, and also with --backend auto where Landlock is absent or disabled.",
	Expect: []Expect{{"any", "--backend bwrap (and auto without Landlock): exit 125, backend-unavailable, the message names user namespaces, one line, no sentinel"}},
	Needs:  Needs{Shell: true},
	Setup: func(t *T) {
		fakeBwrap(t, "echo 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with sysctl kernel.unprivileged_userns_clone=1.' >&2; exit 1")
	},
	Run: func(t *T) { brokenBwrap(t, Opts{Env: withBwrap(t.Base + "/fake-bin/bwrap")}, "user namespaces") },
}, {
	ID:    "fail-closed/bwrap-no-namespaces",
	Title: "the real bwrap, where no namespace can be created, runs nothing: 125, backend-unavailable",
	Rationale: "The same failure with the real bwrap, as a container's seccomp profile or a sysctl makes it: the " +
		"case runs confine under a seccomp filter that answers EPERM to unshare and clone with CLONE_NEWUSER or " +
		"CLONE_NEWNS (internal/nsdeny), so bwrap's own clone fails ('No permissions to create new namespace' " +
		"for a user, 'Creating new namespace failed' for root). confine must refuse: exit 125, reason " +
		"backend-unavailable, one stderr line quoting bwrap and naming the cause, no sentinel; with --backend " +
		"bwrap on every kernel, and with auto where Landlock is absent or disabled (no namespaces and no " +
		"Landlock: no backend can enforce, and the command-line still gets one clear line).",
	Expect: []Expect{{"bwrap installed", "--backend bwrap (and auto without Landlock): exit 125, backend-unavailable, the message names namespaces, one line, no sentinel"},
		{"bwrap not installed", "SKIP, with the reason (fail-closed/backend-unavailable covers a missing bwrap)"}},
	Needs: Needs{Tools: []string{"bwrap"}},
	Run:   func(t *T) { brokenBwrap(t, Opts{NoNamespaces: true}, "namespace") },
}, {
	ID:    "fail-closed/bwrap-ignores-arguments",
	Title: "a bwrap that ignores its arguments and just runs the command runs nothing: 125, backend-unavailable",
	Rationale: "confine must check what bwrap built rather than trust it: a wrapper called bwrap that drops every " +
		"option and executes what follows '--' would run the command with no read-only layer, no PID namespace " +
		"and no synthetic /dev. The program bwrap starts is confine itself, which refuses unless it is the init " +
		"of a new PID namespace under a read-only /: exit 125, reason backend-unavailable, one stderr line, no " +
		"sentinel. The case names that wrapper by CONFINE_BWRAP, so it runs on every kernel.",
	Expect: []Expect{{"any", "--backend bwrap (and auto without Landlock): exit 125, backend-unavailable, one line, no sentinel"}},
	Needs:  Needs{Shell: true},
	Setup:  func(t *T) { fakeBwrap(t, `while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done; shift; exec "$@"`) },
	Run:    func(t *T) { brokenBwrap(t, Opts{Env: withBwrap(t.Base + "/fake-bin/bwrap")}, "") },
}, {
	ID:    "fail-closed/bwrap-boundary",
	Title: "--backend bwrap on a kernel with Landlock holds the whole write boundary",
	Rationale: "--backend bwrap asks for bubblewrap even where Landlock exists, and confine must then enforce with " +
		"bwrap's read-only binds what Landlock would: every write-class op inside the worktree works and every " +
		"one aimed outside fails with EROFS (EXDEV for a move across the bind), with nothing outside changed, " +
		"and the report says backend bwrap, metadata mount-layer, no handled rights. It runs wherever bwrap is " +
		"installed (the VM guest has it), which on a Landlock kernel is the only place the boundary is proven " +
		"under bwrap without the runner's --backend bwrap. The FIFO is judged by boundary/fifo-outside.",
	Expect: []Expect{{"bwrap installed", "inside: every op succeeds; outside: EROFS (EXDEV across); report backend bwrap, mount-layer, handled []"},
		{"bwrap not installed", "SKIP, with the reason"},
		{"a host emulation, or a user where user namespaces are off (bwrap cannot make its namespaces or mounts)", "SKIP: confine refused, 125, backend-unavailable (fail-closed/bwrap-no-namespaces)"}},
	Needs: Needs{Tools: []string{"bwrap"}},
	Setup: controlWriteOps,
	Run: func(t *T) {
		same, cross := writeOps(t.Out, t.WT)
		var outside []helper.Op
		for _, o := range append(same, cross...) {
			if o.Op != "fifo-write" {
				outside = append(outside, o)
			}
		}
		w := t.WT
		inside := []helper.Op{opArg("create", w+"/new.txt", "x"), opArg("write", w+"/existing.txt", "y"),
			op("mkdir", w+"/newdir"), op2("rename", w+"/new.txt", w+"/sub/moved.txt"), op2("link", w+"/sub/moved.txt", w+"/sub2/hard.txt"),
			op2("symlink", w+"/sym", "existing.txt"), op("mkfifo", w+"/fifo"), op("unlink", w+"/sub2/hard.txt"), op("rmdir", w+"/newdir")}
		flags, ops := t.Flags("--backend", "bwrap"), append(inside, outside...)
		r := t.Confine(flags, t.HelperArgv(ops...), Opts{})
		if r.Report != nil && r.Report.Outcome == "refused" && r.Report.Reason == "backend-unavailable" {
			// Under a host emulation (no user or mount namespace, or mounts denied in new ones), or as a user where
			// user namespaces are off, bwrap cannot build its sandbox: confine must then refuse, as fail-closed/bwrap-no-namespaces checks, and there is no
			// boundary to test. expected.yaml reviews where this SKIP is right; anywhere else it is a deviation.
			if checkRefused(t, "--backend bwrap", r, w+"/new.txt") {
				t.Skipf("bwrap cannot build its sandbox here, and confine refused (125, backend-unavailable): %s", firstLine(r.Stderr))
			}
			return
		}
		res := t.helperResults("confine "+strings.Join(flags, " "), r, len(ops))
		t.WantOK("bwrap: inside the worktree", res[:len(inside)]...)
		for i, x := range res[len(inside):] {
			if i < len(same)-1 {
				t.WantDenied("bwrap: outside the worktree", erofs, x)
			} else {
				t.WantDenied("bwrap: across the boundary", erofsExdev, x)
			}
		}
		wantContent(t, w+"/sub/moved.txt", "x")
		if r.Report == nil || r.Report.Backend != "bwrap" || r.Report.Metadata != "mount-layer" || len(r.Report.Handled) != 0 {
			t.Errorf("bwrap: report %s, want backend bwrap, metadata mount-layer, handled []", r.ReportRaw)
		}
	},
}}

// withBwrap is the runner's environment with CONFINE_BWRAP set to path (absolute), the only bwrap confine will
// then try.
func withBwrap(path string) []string {
	env := []string{"CONFINE_BWRAP=" + path}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONFINE_BWRAP=") {
			env = append(env, kv)
		}
	}
	return env
}

// fakeBwrap writes Base/fake-bin/bwrap, a shell script with body, which the case names by CONFINE_BWRAP
// (withBwrap), so that confine runs it whatever the machine has.
func fakeBwrap(t *T, body string) {
	t.WriteFile(t.Base+"/fake-bin/bwrap", "#!/bin/sh\n"+body+"\n", 0o755)
}

// brokenBwrap runs the sentinel command with --backend bwrap, and with auto where Landlock is absent or
// disabled, under o (a fake bwrap named by CONFINE_BWRAP, or no namespaces), and checks each refusal: exit 125, one
// stderr line, reason backend-unavailable, a message that contains why (when set), no sentinel.
func brokenBwrap(t *T, o Opts, why string) {
	fake := o.Env != nil // a fake bwrap named by CONFINE_BWRAP
	backends := []string{"bwrap"}
	if !t.Landlock() {
		backends = append(backends, "auto")
	}
	s := t.WT + "/sentinel"
	for _, b := range backends {
		what := "--backend " + b
		r := t.Confine(t.Flags("--backend", b), t.HelperArgv(opArg("create", s, "x")), o)
		ok := checkRefused(t, what, r, s)
		if n := strings.Count(strings.TrimRight(r.Stderr, "\n"), "\n"); n > 0 {
			t.Errorf("%s: %d stderr lines, want one: %q", what, n+1, r.Stderr)
		}
		switch {
		case r.Report == nil:
			t.Errorf("%s: no report on --report-fd", what)
		case r.Report.Outcome != "refused" || r.Report.Reason != "backend-unavailable":
			t.Errorf("%s: report outcome %q reason %q, want refused, backend-unavailable (%s)", what, r.Report.Outcome, r.Report.Reason, r.ReportRaw)
		case fake && os.Geteuid() != 0 && strings.Contains(r.Report.Error, "not owned by root"):
			// As a user the fake is the user's own file, which confine never trusts (a confined command could
			// have written it): refused before it runs, which is the stronger answer.
			t.Logf("%s: refused before running a bwrap the user owns: %s", what, strings.TrimSpace(r.Stderr))
		case why != "" && !strings.Contains(r.Report.Error, why):
			t.Errorf("%s: the refusal does not name %q: %q", what, why, r.Report.Error)
		case ok:
			t.Logf("%s: %s", what, strings.TrimSpace(r.Stderr))
		}
	}
}

// refusedRun runs `confine FLAGS -- helper create sentinel` and checks the refusal (checkRefused). It returns
// the run and whether a report was there to inspect further.
func refusedRun(t *T, what string, flags []string) (Run, bool) {
	return refusedRunEnv(t, what, flags, nil)
}

// refusedRunEnv is refusedRun with the environment env (the runner's when nil), and one stderr line required.
func refusedRunEnv(t *T, what string, flags, env []string) (Run, bool) {
	s := t.WT + "/sentinel"
	r := t.Confine(flags, t.HelperArgv(opArg("create", s, "x")), Opts{Env: env})
	ok := checkRefused(t, what, r, s)
	if n := strings.Count(strings.TrimRight(r.Stderr, "\n"), "\n"); env != nil && n > 0 {
		t.Errorf("%s: %d stderr lines, want one: %q", what, n+1, r.Stderr)
	}
	if r.Report == nil {
		t.Errorf("%s: no report on --report-fd", what)
		return r, false
	}
	if r.Report.Outcome != "refused" {
		t.Errorf("%s: report outcome %q, want refused", what, r.Report.Outcome)
	}
	return r, ok
}

// checkRefused checks exit 125, that every stderr line carries the confine: prefix, and that the sentinel does
// not exist. It returns whether all held.
func checkRefused(t *T, what string, r Run, sentinel string) bool {
	ok := true
	if r.Exit != 125 {
		t.Errorf("%s: exit %d, want 125 (stderr %q)", what, r.Exit, r.Stderr)
		ok = false
	}
	if Exists(sentinel) {
		t.Errorf("%s: the command ran: sentinel %s exists", what, sentinel)
		os.Remove(sentinel)
		ok = false
	}
	if strings.TrimSpace(r.Stderr) == "" {
		t.Errorf("%s: refused with nothing on stderr", what)
		ok = false
	}
	for _, line := range strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "confine: ") {
			t.Errorf("%s: stderr line without the 'confine: ' prefix: %q", what, line)
			ok = false
		}
	}
	return ok
}

// sentinelVerdict runs a command that creates a sentinel and prints stderrText, and checks the verdict for this
// kernel: ran (exit 0, sentinel, report exec, stderr passed through) or refused.
func sentinelVerdict(t *T, stderrText string) {
	s := t.WT + "/sentinel"
	cmd := t.HelperArgv(opArg("create", s, "x"), opArg("stdio", "", stderrText))
	r := t.Confine(t.Flags(), cmd, Opts{})
	if t.Backend() == BackendNone {
		checkRefused(t, "no Landlock, no bwrap", r, s)
		if r.Report == nil || r.Report.Outcome != "refused" {
			t.Errorf("no Landlock, no bwrap: report %q, want outcome refused", r.ReportRaw)
		}
		return
	}
	t.WantBackend(r)
	if r.Exit != 0 || !Exists(s) {
		t.Errorf("exit %d, sentinel exists=%v, want 0 and true (stderr %q)", r.Exit, Exists(s), r.Stderr)
	}
	if r.Report == nil || r.Report.Outcome != "exec" {
		t.Errorf("report %q, want outcome exec", r.ReportRaw)
	}
	if r.Stderr != stderrText {
		t.Errorf("stderr %q, want the command's own %q", r.Stderr, stderrText)
	}
	own := t.Confine(t.Flags(), t.HelperArgv(opArg("stdio", "", stderrText), opArg("exit", "", "125")), Opts{})
	if own.Exit != 125 || own.Report == nil || own.Report.Outcome != "exec" {
		t.Errorf("a command's own exit 125: got exit %d, report %q; want 125 and outcome exec", own.Exit, own.ReportRaw)
	}
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// configAliasedRun is fail-closed/config-aliased's run. Its mounts are made in a mount namespace of this thread's
// own (unshare(CLONE_NEWNS), private from the start so that nothing propagates out), and confine is started from
// this thread, so it inherits them; the thread stays locked and ends with the case, and the namespace with it.
// ownMountNamespace moves the case's goroutine, on a thread of its own from here on, into a private mount
// namespace, or skips the case where that cannot be done; it returns a function that binds src at at, failing
// the case on an error.
func ownMountNamespace(t *T) (bind func(src, at string)) {
	if os.Geteuid() != 0 {
		t.Skipf("needs root: a bind mount in a mount namespace of the runner's own (one thread of a Go program " +
			"cannot enter a user namespace); the check is the launcher's plan, the same code for every caller")
	}
	runtime.LockOSThread() // never unlocked: the thread, and the namespace, end with the case's goroutine
	// A host emulation denies the runner these too (no-namespaces and nested-supervisor: unshare;
	// ubuntu-userns-restricted: mounts in the new namespace).
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		t.Skipf("no mount namespace can be made here: unshare(CLONE_NEWNS): %v", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Skipf("no mount can be made here: making the mount namespace private: %v", err)
	}
	return func(src, at string) {
		if err := unix.Mount(src, at, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind %s at %s: %v", src, at, err)
		}
	}
}

func worktreeAliasedRun(t *T) {
	bind := ownMountNamespace(t)
	b := t.Base
	launch := func(what string, flags ...string) Run {
		return t.Confine(flags, t.HelperArgv(opArg("create", b+"/other/sentinel", "x")), Opts{})
	}
	if r := launch("control", "--worktree", b+"/wa", "--allow", b+"/other"); r.Report == nil || r.Report.Outcome != "exec" {
		t.Fatalf("control: a worktree no writable root shows elsewhere did not run the command: exit %d, report %q", r.Exit, r.ReportRaw)
	}
	os.Remove(b + "/other/sentinel")
	refused := func(what string, flags ...string) {
		r := launch(what, flags...)
		checkRefused(t, what, r, b+"/other/sentinel")
		if r.Report == nil || r.Report.Outcome != "refused" || r.Report.Reason != "bad-root" {
			t.Errorf("%s: report %q, want outcome refused, reason bad-root", what, r.ReportRaw)
		}
	}
	bind(b+"/wa", b+"/allowed/in")
	refused("the worktree bound into an --allow directory", "--worktree", b+"/wa", "--allow", b+"/allowed", "--allow", b+"/other")
	bind(b+"/allowed/src", b+"/wb")
	refused("the worktree a bind of a checkout in an --allow directory", "--worktree", b+"/wb", "--allow", b+"/allowed", "--allow", b+"/other")
	tmp, err := os.MkdirTemp("/tmp", "confine-conformance-alias")
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	defer os.RemoveAll(tmp)
	bind(b+"/wd/.git/hooks", b+"/allowed/hooks")
	refused("the worktree's .git/hooks bound into an --allow directory", "--worktree", b+"/wd", "--allow", b+"/allowed", "--allow", b+"/other")
	t.WriteFile(b+"/we/.git", "gitdir: "+b+"/sepsrc/g\n", 0o644)
	bind(b+"/sepsrc", b+"/allowed/sep")
	refused("a worktree's separate git directory bound into an --allow directory", "--worktree", b+"/we", "--allow", b+"/allowed", "--allow", b+"/other")
	bind(tmp, b+"/wc")
	// read-only mode: no --allow (refused there); the sentinel's directory is not writable, and a refusal runs nothing.
	refused("--mode read-only, the worktree a bind of a directory in /tmp", "--worktree", b+"/wc", "--mode", "read-only")
}

func configAliasedRun(t *T) {
	bind := ownMountNamespace(t)
	run := func(what, conf string) Run {
		return t.Confine(t.Flags("--config", conf), t.HelperArgv(opArg("create", t.WT+"/sentinel", "x")), Opts{})
	}
	if r := run("control", t.Base+"/etc/ci.conf"); r.Report == nil || r.Report.Outcome != "exec" {
		t.Fatalf("control: --config %s/etc/ci.conf, shown nowhere else, did not run the command: exit %d, report %q",
			t.Base, r.Exit, r.ReportRaw)
	}
	os.Remove(t.WT + "/sentinel")
	refused := func(what, conf string) {
		r := run(what, conf)
		checkRefused(t, what, r, t.WT+"/sentinel")
		if r.Report == nil || r.Report.Outcome != "refused" || r.Report.Reason != "usage" {
			t.Errorf("%s: --config %s: report %q, want outcome refused, reason usage", what, conf, r.ReportRaw)
		}
	}
	bind(t.WT, t.Base+"/alias-wt")
	refused("the worktree bound outside", t.Base+"/alias-wt/sub/ci.conf")
	bind(t.WT+"/sub", t.Base+"/alias-sub")
	refused("a directory of the worktree bound outside", t.Base+"/alias-sub/ci.conf")
	opts := "lowerdir=" + t.Base + "/low,upperdir=" + t.WT + "/up,workdir=" + t.Base + "/ovwork"
	if err := unix.Mount("overlay", t.Base+"/merged", "overlay", 0, opts); err != nil {
		// ENODEV: no overlayfs in this kernel (a module the guest does not load); EINVAL: the scratch directory's
		// file system cannot be an upper layer (an overlay itself, in a container).
		t.Logf("overlay: cannot mount one here (%v): that alias is not tried", err)
	} else {
		refused("an overlay whose upper layer is in the worktree", t.Base+"/merged/ci.conf")
	}
	bind(t.Base+"/etc", t.WT+"/etc-in")
	refused("the config's directory bound into the worktree", t.Base+"/etc/ci.conf")
}
