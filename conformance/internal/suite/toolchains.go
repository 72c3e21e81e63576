package suite

// The toolchains family (issue 11): what ordinary developer tools need of a sandbox and used to break under
// confine: Python's multiprocessing (POSIX semaphores in /dev/shm), a temporary-directory variable that points
// outside, git's init, commit and gc in a plain checkout, a confine inside confine, and a nested user namespace.
// Each case runs the real tool (python3, mktemp, git, confine, unshare: in the VM guest from vm/kernels.json
// guest_tools and busybox) in both passes, as root and as the unprivileged user. Where a tool cannot work under
// confine on a host, the case checks that it fails the documented way and says so, and ends as a SKIP whose reason
// starts "unavailable and reported" (python3 without the mount layer) or "fails, and says why" (unshare -Ur);
// expected.yaml says where that is the reviewed outcome, so a change either way is a reviewed diff. As in every
// case, the invariant snapshot checks that nothing outside the writable set changed; the outside tree is under the
// scratch directory, never under /tmp.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// mpScript takes a multiprocessing.Lock and maps over a two-process pool, then leaves a file of its own in
// /dev/shm (named by argv[1]): with the mount layer that file is in the sandbox's private tmpfs, and the runner
// watches that it never appears in the host's /dev/shm; without it, the host's /dev/shm is granted.
const mpScript = `import concurrent.futures, multiprocessing, sys

def square(x):
    return x * x

if __name__ == "__main__":
    lock = multiprocessing.Lock()
    with lock:
        pass
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        total = sum(pool.map(square, range(10)))
    with open("/dev/shm/" + sys.argv[1], "w") as f:
        f.write("private\n")
    print("ok", total)
`

// shmName is the /dev/shm file mpScript leaves behind: one per pass, so the root and the unprivileged pass (which
// run at once in the VM guest) do not see each other's.
func shmName() string { return fmt.Sprintf("confine-conformance-toolchains-%d", os.Getuid()) }

// pyEnv is python3's environment: the runner's, without bytecode writes (the unconfined control must leave the
// guest's /usr as it is; under confine they would fail quietly).
func pyEnv() []string { return append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") }

// deniedText are strerror(EACCES), strerror(EROFS) and strerror(EPERM) as glibc, musl and busybox print them.
var deniedText = []string{"Permission denied", "Read-only file system", notPermitted}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// tempVarNames are the variables confine's report checks for a temporary directory outside the writable set
// (sandbox/launch/plan.go tempVars).
var tempVarNames = []string{"TMPDIR", "TMP", "TEMP", "GOTMPDIR", "XDG_RUNTIME_DIR"}

// envWithTmp is the runner's environment with no temporary-directory variable but TMPDIR=dir.
func envWithTmp(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !contains(tempVarNames, name) {
			env = append(env, kv)
		}
	}
	return append(env, "TMPDIR="+dir)
}

// toolchainsNeedLandlock is the family's row for hosts without Landlock: its cases need Landlock (not yet reviewed
// under the bwrap backend, whose private /dev/shm and /proc change what two of them find).
var toolchainsNeedLandlock = Expect{"no Landlock, or the runner's --backend bwrap", "SKIP: needs Landlock (the family is not yet reviewed under bwrap)"}

var toolchainsCases = []Case{{
	ID:    "toolchains/python-multiprocessing",
	Title: "Python's multiprocessing.Lock() and a ProcessPoolExecutor work in every mode, in a /dev/shm of the sandbox's own where there is a mount layer",
	Rationale: "multiprocessing.Lock() is a POSIX semaphore (sem_open, a file in /dev/shm), and a process pool needs " +
		"one for its queues: with /dev/shm read-only every such script dies with EROFS or EACCES, and " +
		"`--allow /dev/shm` is refused (the host's is shared by every process). With the mount layer confine " +
		"mounts a private tmpfs there: the script takes a lock, maps over a two-process pool and leaves a file in " +
		"/dev/shm, which must not appear in the host's /dev/shm. Without the mount layer (no user or mount " +
		"namespace: a container's seccomp profile, Ubuntu's AppArmor restriction) there is no private tmpfs: the " +
		"host's /dev/shm is granted instead (issue 28), so the script must work there too, and the report must " +
		"say the channel shm is open and warn about /dev/shm. A control first runs the script without confine.",
	Expect: []Expect{{"ABI ≥ 1, mount-layer", "exit 0, `ok 285`; the script's /dev/shm file is not in the host's /dev/shm"},
		{"ABI ≥ 1, supervisor or seccomp-deny", "exit 0, `ok 285`; the script's file is in the host's /dev/shm; channel shm open; a warning names /dev/shm"},
		{"`python3` absent", "SKIP, with the reason"}, toolchainsNeedLandlock},
	Needs: Needs{Landlock: true, Tools: []string{"python3"}},
	Setup: func(t *T) {
		t.WriteFile(t.WT+"/mp.py", mpScript, 0o644)
		t.Watch("/dev/shm/" + shmName())
	},
	Run: func(t *T) {
		py := python3Path()
		ctl := t.Unconfined([]string{py, t.WT + "/mp.py", shmName() + "-control"}, Opts{Dir: t.WT, Env: pyEnv()})
		os.Remove("/dev/shm/" + shmName() + "-control")
		if ctl.Exit != 0 || !strings.Contains(ctl.Stdout, "ok 285") {
			t.Skipf("the script fails without confine (exit %d): %s", ctl.Exit, firstLines(ctl.Stderr, 4))
		}
		r := t.Confine(t.Flags(), []string{py, "mp.py", shmName()}, Opts{Dir: t.WT, Env: pyEnv()})
		if r.Report == nil || r.Report.Outcome != "exec" {
			t.Fatalf("confine did not run the script (exit %d): %s", r.Exit, firstLine(r.Stderr))
		}
		m := r.Report.Metadata
		t.Logf("report.metadata %q: exit %d, stdout %q, stderr %q", m, r.Exit, strings.TrimSpace(r.Stdout), firstLines(r.Stderr, 4))
		if r.Report.MountLayer() {
			if r.Exit != 0 || !strings.Contains(r.Stdout, "ok 285") {
				t.Fatalf("mount-layer: the script failed (exit %d): %s", r.Exit, firstLines(r.Stderr, 4))
			}
			return // the watch on the host's /dev/shm/NAME decides the rest
		}
		os.Remove("/dev/shm/" + shmName()) // the host's, granted without the layer: removed for the watch
		warned := ""
		for _, w := range r.Report.Warnings {
			if strings.Contains(w, "/dev/shm") {
				warned = w
			}
		}
		switch {
		case r.Exit != 0 || !strings.Contains(r.Stdout, "ok 285"):
			t.Errorf("%s: the script failed without a mount layer (exit %d): %s", m, r.Exit, firstLines(r.Stderr, 4))
		case r.Report.Channels["shm"].Status != "open":
			t.Errorf("%s: the host's /dev/shm is granted, but the channel shm is %q", m, r.Report.Channels["shm"].Status)
		case warned == "":
			t.Errorf("%s: no report warning names /dev/shm: %q", m, r.Report.Warnings)
		default:
			t.Logf("%s: the script ran in the host's /dev/shm; the report warns %q", m, warned)
		}
	},
}, {
	ID:    "toolchains/mktemp-tmpdir-outside",
	Title: "mktemp -d with TMPDIR outside the writable set fails, and the report and stderr name TMPDIR",
	Rationale: "confine keeps the command's environment: a TMPDIR (or TMP, TEMP, GOTMPDIR, XDG_RUNTIME_DIR) " +
		"inherited from the caller may name a directory the command cannot write, and `mktemp -d` then fails with " +
		"EROFS or EACCES, which no tool explains. The report's warnings and one stderr line before execve must " +
		"name the variable and its value. With TMPDIR in the outside tree, mktemp -d must fail and be named; " +
		"with TMPDIR inside the worktree it must work, with no such warning (the warning is about the value, " +
		"not the variable's presence).",
	Expect: []Expect{{"ABI ≥ 1", "TMPDIR outside: mktemp -d fails; a report warning and the stderr line `confine: warning: TMPDIR=…` name it; " +
		"TMPDIR in the worktree: mktemp -d makes its directory there, no TMPDIR warning"}, toolchainsNeedLandlock},
	Needs: Needs{Landlock: true, Shell: true},
	Setup: func(t *T) { t.Mkdir(t.WT + "/.tmp") },
	Run: func(t *T) {
		named := "TMPDIR=" + t.Out
		r := t.Confine(t.Flags(), []string{"/bin/sh", "-c", "mktemp -d"}, Opts{Dir: t.WT, Env: envWithTmp(t.Out)})
		if r.Report == nil || r.Report.Outcome != "exec" {
			t.Fatalf("confine did not run the command (exit %d): %s", r.Exit, firstLine(r.Stderr))
		}
		t.Logf("TMPDIR outside (%s): exit %d, stdout %q, stderr %q", r.Report.Metadata, r.Exit, strings.TrimSpace(r.Stdout), firstLines(r.Stderr, 4))
		if r.Exit == 0 {
			t.Errorf("mktemp -d with %s exited 0: %q", named, r.Stdout)
		}
		if !containsAny(strings.Join(r.Report.Warnings, "\n"), named+":") {
			t.Errorf("no report warning names %s: %q", named, r.Report.Warnings)
		}
		if !strings.Contains(r.Stderr, "confine: warning: "+named+":") {
			t.Errorf("stderr has no line `confine: warning: %s: …`: %q", named, firstLines(r.Stderr, 4))
		}
		in := t.WT + "/.tmp"
		r = t.Confine(t.Flags(), []string{"/bin/sh", "-c", "mktemp -d"}, Opts{Dir: t.WT, Env: envWithTmp(in)})
		if r.Report == nil {
			t.Fatalf("no report (exit %d): %s", r.Exit, firstLine(r.Stderr))
		}
		made := strings.TrimSpace(r.Stdout)
		t.Logf("TMPDIR in the worktree: exit %d, made %q", r.Exit, made)
		if r.Exit != 0 || !strings.HasPrefix(made, in+"/") || !Exists(made) {
			t.Errorf("mktemp -d with TMPDIR=%s: exit %d, made %q: %s", in, r.Exit, made, firstLines(r.Stderr, 4))
		}
		for _, w := range r.Report.Warnings {
			if strings.Contains(w, "TMPDIR=") {
				t.Errorf("TMPDIR inside the worktree is warned about: %q", w)
			}
		}
	},
}, {
	ID:    "toolchains/git-init-commit-gc",
	Title: "git init, commit and gc in a plain checkout (the worktree); gc of a repository outside fails",
	Rationale: "git gc is where git's housekeeping writes: it packs refs (packed-refs through a lock file), " +
		"repacks objects into a new pack whose mode it sets read-only, prunes loose objects and expires reflogs. " +
		"In a plain checkout (.git inside the worktree) all of it must work under confine: the command runs git " +
		"init, two commits, then git gc, and the runner checks, without confine, that there are two commits and " +
		"no loose objects left, in one pack. The same git gc aimed at a repository in the outside tree (made " +
		"beforehand, with loose objects to pack) must fail and leave it as it was (the invariant snapshot).",
	Expect: []Expect{{"ABI ≥ 1, mount-layer or supervisor", "exit 0; 2 commits, 0 loose objects, 1 pack; gc of the outside repository fails"},
		{"ABI ≥ 1, seccomp-deny", "PASS with a note: git init fails with \"Operation not permitted\" (it chmods its config lock); gc outside fails"},
		{"`git` absent", "SKIP, with the reason"}, toolchainsNeedLandlock},
	Needs: Needs{Landlock: true, Shell: true, Tools: []string{"git"}},
	Setup: func(t *T) {
		t.Mkdir(t.WT+"/.home", t.Base+"/outrepo")
		t.WriteFile(t.WT+"/a.txt", "a\n", 0o644)
		t.WriteFile(t.Base+"/outrepo/o.txt", "o\n", 0o644)
		for _, argv := range [][]string{{"init", "-q", "-b", "main"}, {"add", "o.txt"}, {"commit", "-q", "-m", "outside"}} {
			cmd := exec.Command("git", argv...)
			cmd.Dir, cmd.Env = t.Base+"/outrepo", wfGitEnv(t)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("fixture: git %s: %v: %s", strings.Join(argv, " "), err, out)
			}
		}
	},
	Run: func(t *T) {
		env := wfGitEnv(t)
		r := t.Confine(t.Flags(), []string{"/bin/sh", "-c", "umask 022; git init -q -b main . && git add a.txt && " +
			"git commit -q -m one && echo b > b.txt && git add b.txt && git commit -q -m two && git gc -q"}, Opts{Dir: t.WT, Env: env})
		if r.Report == nil || r.Report.Outcome != "exec" {
			t.Fatalf("confine did not run the command (exit %d): %s", r.Exit, firstLine(r.Stderr))
		}
		m := r.Report.Metadata
		t.Logf("report.metadata %q: exit %d, stderr %q", m, r.Exit, firstLines(r.Stderr, 4))
		switch {
		case r.Report.MetadataInside():
			if r.Exit != 0 {
				t.Errorf("%s: git init, commit or gc failed in the worktree (exit %d): %s", m, r.Exit, firstLines(r.Stderr, 4))
			} else if msg := gitPacked(t, t.WT, "2"); msg != "" {
				t.Errorf("%s: %s", m, msg)
			}
		case m == "seccomp-deny" && r.Exit != 0 && strings.Contains(r.Stderr, notPermitted):
			t.Logf("note: seccomp-deny denies metadata changes inside the worktree too: git failed with %q, as documented", notPermitted)
		default:
			t.Errorf("%s: exit %d: %s", m, r.Exit, firstLines(r.Stderr, 4))
		}
		ro := t.Confine(t.Flags(), []string{"git", "-C", t.Base + "/outrepo", "gc", "-q"}, Opts{Dir: t.WT, Env: env})
		t.Logf("git gc of the outside repository: exit %d, stderr %q", ro.Exit, firstLines(ro.Stderr, 3))
		if ro.Exit == 0 {
			t.Errorf("git gc of a repository outside the writable set exited 0")
		}
	},
}, {
	ID:    "toolchains/nested-confine",
	Title: "confine inside confine runs, and the inner one is at least as confined as the outer",
	Rationale: "Agents nest: an agent under confine runs each of its tools under confine again. The inner confine " +
		"must start (as root, where the outer took CAP_SYS_ADMIN and denied the mount API; as a user, who cannot " +
		"write its child's uid_map on the outer layer's read-only /proc) and must not widen anything: Landlock " +
		"domains and seccomp filters stack. The outer confine grants the worktree; the inner one is given the " +
		"worktree and `--allow` of the outside tree. The inner command (the helper) creates a file in the " +
		"worktree, which must work, and creates and overwrites files in the outside tree, which must still fail " +
		"(EACCES or EROFS). The inner report (on a descriptor the outer command opens) must say exec, list the " +
		"outside tree as a rule it believes it granted, and say why it has no mount layer of its own.",
	Expect: []Expect{{"ABI ≥ 1", "the inner confine execs; its worktree create works; every write to the outside tree it `--allow`s fails with EACCES or EROFS"}, toolchainsNeedLandlock},
	Needs:  Needs{Landlock: true, Shell: true},
	Run: func(t *T) {
		innerReport := t.WT + "/inner-report.json"
		inner := append([]string{t.cfg.Confine, "--report-fd", "3", "--worktree", t.WT, "--allow", t.Out, "--"},
			t.HelperArgv(opArg("create", t.WT+"/nested.txt", "x"), opArg("create", t.Out+"/nested.txt", "x"),
				opArg("write", t.Out+"/file.txt", "x"), op("mkdir", t.Out+"/nested"))...)
		script := `exec 3>"$1"; shift; exec "$@"`
		r := t.Confine(t.Flags(), append([]string{"/bin/sh", "-c", script, "sh", innerReport}, inner...), Opts{Dir: t.WT})
		if r.Report == nil || r.Report.Outcome != "exec" {
			t.Fatalf("the outer confine did not run the command (exit %d): %s", r.Exit, firstLine(r.Stderr))
		}
		raw, err := os.ReadFile(innerReport)
		if err != nil {
			t.Fatalf("no inner report: %v (exit %d, stderr %q)", err, r.Exit, firstLines(r.Stderr, 4))
		}
		var rep Report
		first, _, _ := strings.Cut(string(raw), "\n")
		if err := json.Unmarshal([]byte(first), &rep); err != nil {
			t.Fatalf("inner report is not JSON: %v: %q", err, raw)
		}
		t.Logf("outer metadata %q; inner: outcome %q, metadata %q, warnings %q", r.Report.Metadata, rep.Outcome, rep.Metadata, rep.Warnings)
		if rep.Outcome != "exec" {
			t.Fatalf("the inner confine refused (exit %d): %s: %s", r.Exit, rep.Reason, rep.Error)
		}
		res := t.helperResults("inner confine", r, 4)
		t.WantOK("inner confine, in the worktree", res[0])
		t.WantDenied("inner confine, the outside tree it --allow-s", denied, res[1:]...)
		granted := false
		for _, rule := range rep.Rules {
			granted = granted || rule.Path == t.Out
		}
		if !granted {
			t.Errorf("the inner report has no rule for %s (its --allow): the case would prove nothing", t.Out)
		}
		if rep.Metadata == "mount-layer" {
			t.Errorf("the inner confine reports a mount layer of its own, which sandbox/README.md (Nesting) says it cannot build")
		} else if len(rep.Warnings) == 0 {
			t.Errorf("the inner confine has no mount layer (%s) and does not warn why", rep.Metadata)
		}
	},
}, {
	ID:    "toolchains/unshare-userns",
	Title: "unshare -Ur inside confine works without widening anything, or fails with a message that says why",
	Rationale: "bwrap, rootless podman, Chromium's sandbox and confine itself make a user namespace with an ID map " +
		"(`unshare -Ur`: unshare(CLONE_NEWUSER), then write /proc/self/setgroups, uid_map and gid_map). Inside " +
		"confine that map cannot be written today (/proc is on the mount layer's read-only mounts; without it, " +
		"Landlock denies the write): sandbox/README.md, Limitations, Nesting. The case runs `unshare -Ur sh -c " +
		"'id -u; echo x > OUTSIDE'`: if it works, id must say 0 and the write outside must still fail; if it " +
		"fails, its stderr must name the file or call and the errno (EROFS, EACCES or EPERM), and the case ends as " +
		"a SKIP \"fails, and says why\", which expected.yaml reviews. A control without confine first proves that " +
		"this kernel and user can make a user namespace at all.",
	Expect: []Expect{{"ABI ≥ 1", "SKIP \"fails, and says why\": unshare names /proc/self/{setgroups,uid_map} and EROFS or EACCES (or, where it works: uid 0 inside, the write outside fails)"},
		{"no user namespace for this user (the nouserns kernel, Docker's profile)", "SKIP: the control fails without confine"}, toolchainsNeedLandlock},
	Needs: Needs{Landlock: true, Shell: true, Tools: []string{"unshare"}},
	Run: func(t *T) {
		target := t.Out + "/unshared.txt"
		argv := []string{"unshare", "-Ur", "/bin/sh", "-c", `id -u && { echo x > "$1" && echo WROTE; true; }`, "sh", target}
		if ctl := t.Unconfined([]string{"unshare", "-Ur", "id", "-u"}, Opts{}); ctl.Exit != 0 || strings.TrimSpace(ctl.Stdout) != "0" {
			t.Skipf("the control fails without confine: unshare -Ur id -u: exit %d, %q: no user namespace here", ctl.Exit, firstLine(ctl.Stderr))
		}
		r := t.Confine(t.Flags(), argv, Opts{Dir: t.WT})
		if r.Report == nil || r.Report.Outcome != "exec" {
			t.Fatalf("confine did not run unshare (exit %d): %s", r.Exit, firstLine(r.Stderr))
		}
		m := r.Report.Metadata
		t.Logf("report.metadata %q: exit %d, stdout %q, stderr %q", m, r.Exit, strings.TrimSpace(r.Stdout), firstLines(r.Stderr, 4))
		if strings.Contains(r.Stdout, "WROTE") {
			t.Fatalf("%s: inside the nested user namespace, a write to the outside tree succeeded", m)
		}
		if r.Exit == 0 {
			if id := firstLine(r.Stdout); id != "0" {
				t.Errorf("%s: unshare -Ur exited 0 but id -u said %q inside", m, id)
			}
			if !containsAny(r.Stderr, deniedText...) {
				t.Errorf("%s: the write outside failed without a permission error: %q", m, firstLines(r.Stderr, 4))
			}
			return
		}
		why := strings.TrimSpace(r.Stderr)
		switch {
		case why == "":
			t.Errorf("%s: unshare -Ur failed (exit %d) without a word", m, r.Exit)
		case !containsAny(why, "uid_map", "gid_map", "setgroups", "unshare(", "unshare failed"):
			t.Errorf("%s: unshare -Ur failed (exit %d) without naming the ID map or the call: %q", m, r.Exit, firstLines(why, 4))
		case !containsAny(why, deniedText...):
			t.Errorf("%s: unshare -Ur failed (exit %d) without EROFS, EACCES or EPERM's message: %q", m, r.Exit, firstLines(why, 4))
		default:
			t.Skipf("fails, and says why: %s: %s", m, firstLine(why))
		}
	},
}}

// gitPacked returns "" when the repository at dir has want commits on HEAD and, after gc, no loose objects and
// one pack; else what differs.
func gitPacked(t *T, dir, want string) string {
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = wfGitEnv(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "<git " + strings.Join(args, " ") + ": " + err.Error() + ": " + strings.TrimSpace(string(out)) + ">"
		}
		return strings.TrimSpace(string(out))
	}
	if n := git("rev-list", "--count", "HEAD"); n != want {
		return "rev-list --count HEAD is " + n + ", want " + want
	}
	counts := git("count-objects", "-v")
	if !strings.Contains(counts, "count: 0\n") || !strings.Contains(counts, "packs: 1\n") {
		return "after git gc, count-objects -v says " + strings.ReplaceAll(counts, "\n", ", ") + "; want count 0, packs 1"
	}
	packs, _ := filepath.Glob(dir + "/.git/objects/pack/pack-*.pack")
	if len(packs) != 1 {
		return fmt.Sprintf("%d packs in .git/objects/pack, want 1", len(packs))
	}
	return ""
}
