package suite

// The workloads family (issue 28, item 9): real toolchains, where they are installed, run once unconfined (the
// control) and once confined in each mode the host gives, and the outcomes are compared, not only the exit codes:
// the built binary runs and says the same thing, the test verdicts and counts match, the wheel is installed in the
// venv, the signature verifies, the server's port is released and its process tree is gone, the pager exits on q.
// A tool that exits 0 and leaves the wrong state fails the case.
//
// Each project is made by the runner (no network: a stdlib-only Go module, an npm package whose one dependency is a
// local tarball with its lock entry, a wheel the runner zips, a hand-written configure script), in a directory of
// its own for the control (Base/control, unwatched) and for each confined mode (WT/p, WT/n). HOME is in that
// directory, so that the unprivileged pass has a writable one, and every tool cache (GOCACHE, ~/.npm, pip's, cargo's)
// is beneath it: no --profile is needed, and none is passed.
//
// The modes (wlModes): the launch as confine picks it (the mount layer with Landlock; bwrap under the runner's
// --backend bwrap), and, where the suite runs under Landlock, the same launch where no user or mount namespace can
// be made (internal/nsdeny: the supervisor). So the host suite's four runs (root and nobody, with and without
// --backend bwrap) cover every mode as root and as a user. The family runs in the host suite only (Needs.HostOnly):
// the VM guests carry git, bwrap and a minimal python3 (vm/kernels.json guest_tools), not these toolchains.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// wlHostOnly is the family's Needs.HostOnly reason.
const wlHostOnly = "the toolchains it runs (go, npm, a venv with pip, pytest, cc and make, cargo, less, gpg) are not " +
	"in the VM guests' userland (vm/kernels.json guest_tools carries git, bwrap and a minimal python3), and its " +
	"outcome follows confine's modes, which the host suite covers as root and as a user, not the kernel"

// wlMode is one confined launch of a workload: as confine picks it, or with no namespaces to be had.
type wlMode struct {
	name string // "picked" or "no-namespaces", for the log
	dir  string // the project directory's name under WT: short, for gpg-agent's sockets (108 bytes with the path)
	noNS bool
}

// wlModes are the confined launches of a workload here: the launch confine picks, and, where the suite runs under
// Landlock, the launch without namespaces (the supervisor). Under bwrap (which needs namespaces) there is one.
func wlModes(t *T) []wlMode {
	modes := []wlMode{{name: "picked", dir: "p"}}
	if t.Backend() == BackendLandlock {
		modes = append(modes, wlMode{name: "no-namespaces", dir: "n", noNS: true})
	}
	return modes
}

// wlModeOf names a launch's mode from its report: "bwrap", else report.metadata (mount-layer, supervisor or
// seccomp-deny).
func wlModeOf(r Run) string {
	switch {
	case r.Report == nil:
		return "no report"
	case r.Report.Backend == BackendBwrap:
		return "bwrap"
	}
	return r.Report.Metadata
}

// wlDropVars are variables of the runner's environment that would point a tool outside its project: homes,
// caches, tool configuration and temporary directories. wlEnv removes them and names its own.
var wlDropVars = []string{"HOME", "GOCACHE", "GOPATH", "GOMODCACHE", "GOFLAGS", "GOENV", "GOTOOLCHAIN", "GOPROXY",
	"GNUPGHOME", "CARGO_HOME", "CARGO_TARGET_DIR", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "VIRTUAL_ENV",
	"PIP_CONFIG_FILE", "LESS", "LESSOPEN", "LESSCLOSE", "PAGER", "NODE_OPTIONS"}

// wlEnv is a workload's environment in project directory dir: the runner's, without wlDropVars, the XDG_*,
// npm_config_* and PIP_* variables and the temporary-directory ones (tempVarNames: /tmp is used), with HOME at
// dir/.home, then extra ("NAME=value").
func wlEnv(dir string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if contains(wlDropVars, name) || contains(tempVarNames, name) || strings.HasPrefix(name, "XDG_") ||
			strings.HasPrefix(strings.ToLower(name), "npm_config_") || strings.HasPrefix(name, "PIP_") {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "HOME="+dir+"/.home"), extra...)
}

// workload is a case made of one shell script run in a project directory, unconfined and then confined in each
// mode, whose outcomes (observe) must be the same.
type workload struct {
	name, title, rationale string
	effect                 string   // what the script leaves, for the expectation rows
	tools                  []string // executables it needs on PATH
	// ready returns "" when the tools can run the workload here, else the reason for a SKIP (e.g. a python3
	// without venv); nil: always ready.
	ready func(t *T) string
	// project writes the project into dir (unconfined, before the run).
	project func(t *T, dir string)
	// warm, when set, copies what a developer's machine would already hold (a build cache) from the control's
	// directory into dir, before a confined run.
	warm   func(t *T, control, dir string)
	script string                          // the /bin/sh -c script, run in the project directory
	env    func(t *T, dir string) []string // its environment (nil: wlEnv(dir))
	// observe returns the outcome of a run in dir as lines that must be equal between the control and each
	// confined run (it reads the run's output and the files it left, unconfined), or an error for a broken outcome.
	observe func(t *T, dir string, r Run) ([]string, error)
}

func (w workload) toCase() Case {
	exp := []Expect{
		{"ABI ≥ 1, mount-layer or supervisor", "exit 0; " + w.effect + "; the same outcome as unconfined"},
		{"ABI ≥ 1, seccomp-deny (a confine under an outer supervisor)", "the same, or, where the tool changes a mode, it fails with EPERM (or a file it built is not executable): SKIP, \"fails, and says why\""},
		{"bwrap (no Landlock, or --backend bwrap)", "the same"},
		{"`" + strings.Join(w.tools, "`, `") + "` absent", "SKIP, with the reason"},
		{"a VM guest", "SKIP: runs in the host suite only"},
	}
	return Case{ID: "workloads/" + w.name, Title: w.title, Rationale: w.rationale + " " + wlCompare, Expect: exp,
		Needs: Needs{Confined: true, Shell: true, Tools: w.tools, HostOnly: wlHostOnly},
		Setup: func(t *T) { t.Mkdir(t.Base + "/control"); t.Unwatch(t.Base + "/control") },
		Run:   w.run}
}

// wlCompare is the rationale's common end.
const wlCompare = "The script runs first without confine (the control: a failure there is a SKIP), then under " +
	"confine in each mode this run has (the one confine picks, and, under Landlock, the one without namespaces: the " +
	"supervisor), each in a fresh copy of the project; the outcomes must be equal."

func (w workload) run(t *T) {
	if w.ready != nil {
		if why := w.ready(t); why != "" {
			t.Skipf("%s", why)
		}
	}
	envOf := func(dir string) []string {
		if w.env != nil {
			return w.env(t, dir)
		}
		return wlEnv(dir)
	}
	do := func(dir string, confined bool, m wlMode) (Run, []string, error, time.Duration) {
		t.Mkdir(dir + "/.home")
		w.project(t, dir)
		if confined && w.warm != nil {
			w.warm(t, t.Base+"/control", dir)
		}
		start := time.Now()
		argv := []string{"/bin/sh", "-c", w.script}
		var r Run
		if confined {
			r = t.Confine(t.Flags(), argv, Opts{Dir: dir, Env: envOf(dir), NoNamespaces: m.noNS})
		} else {
			r = t.Unconfined(argv, Opts{Dir: dir, Env: envOf(dir)})
		}
		took := time.Since(start).Round(100 * time.Millisecond)
		obs, err := w.observe(t, dir, r)
		return r, obs, err, took
	}
	ctl, want, err, took := do(t.Base+"/control", false, wlMode{})
	if ctl.Exit != 0 || err != nil {
		t.Skipf("the workload fails without confine (exit %d, %v): %s", ctl.Exit, err, firstLines(ctl.Stdout+ctl.Stderr, 6))
	}
	t.Logf("control (unconfined, %s): %s", took, strings.Join(want, "; "))
	denied := "" // the documented failure of seccomp-deny, where that is how a confined run failed
	for _, m := range wlModes(t) {
		r, got, err, took := do(t.WT+"/"+m.dir, true, m)
		if r.Report == nil || r.Report.Outcome != "exec" {
			t.Errorf("%s: confine did not run the script (exit %d): %s", m.name, r.Exit, firstLines(r.Stderr, 4))
			continue
		}
		mode := wlModeOf(r)
		if m.noNS && r.Report.MountLayer() {
			t.Errorf("%s: the launch without namespaces has a mount layer", m.name)
		}
		t.Logf("%s (%s): exit %d in %s", m.name, mode, r.Exit, took)
		switch {
		case r.Exit != 0 && mode == "seccomp-deny" && containsAny(r.Stdout+r.Stderr, wlDeniedText...):
			// Documented (sandbox/README.md, Limitations, Nesting): a confine under an outer supervisor gets no
			// seccomp listener, and seccomp-deny denies metadata changes (chmod) inside the worktree too.
			denied = firstLines(strings.Join(matchingLines(r.Stdout+r.Stderr, append(wlDeniedText, "syscall")...), "\n"), 4)
			t.Logf("%s: the script failed the documented way (exit %d): %s", mode, r.Exit, denied)
		case r.Exit != 0:
			t.Errorf("%s: the script failed under confine (exit %d): %s", mode, r.Exit, firstLines(r.Stdout+r.Stderr, 8))
		case err != nil:
			t.Errorf("%s: the script exited 0 under confine, but %v", mode, err)
		default:
			if d := diffLines(want, got); d != "" {
				t.Errorf("%s: the outcome differs from the control's: %s", mode, d)
			}
		}
	}
	if denied != "" {
		t.Skipf("fails, and says why: seccomp-deny denies metadata changes inside the worktree too: %s", denied)
	}
}

// wlDeniedText are how a tool says a metadata change was denied with EPERM (strerror, Node's code), or that a
// file it built could not be executed because its chmod was (EACCES).
var wlDeniedText = []string{notPermitted, "EPERM", "Permission denied"}

// confineVia is T.Confine (with a report on descriptor 3, and the runner's --backend) with confine started through
// prefix (e.g. `env --ignore-signal=INT`, which execs it), and, with noNS, where no namespace can be made.
func (t *T) confineVia(prefix, flags, argv []string, noNS bool, o Opts) Run {
	args := append([]string{"--report-fd", "3"}, flags...)
	if t.cfg.ForceBackend != "" && !contains(flags, "--backend") {
		args = append(args, "--backend", t.cfg.ForceBackend)
	}
	head := []string{t.cfg.Confine}
	if noNS {
		head = []string{t.cfg.Self, "no-namespaces", "--", t.cfg.Confine}
	}
	full := append(append(append(append([]string{}, prefix...), head...), args...), append([]string{"--"}, argv...)...)
	rp, wp, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	return t.exec(full[0], full[1:], o, rp, wp)
}

// diffLines returns "" when a and b are equal, else the first difference as "line N: want %q, got %q".
func diffLines(want, got []string) string {
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return fmt.Sprintf("line %d: want %q, got %q", i+1, w, g)
		}
	}
	return ""
}

// writeTree writes files (path relative to dir → content) into dir; a path ending in "*" is written executable
// (0755, the star dropped), the others 0644.
func writeTree(t *T, dir string, files map[string]string) {
	for name, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		t.WriteFile(filepath.Join(dir, name), body, mode)
	}
}

// copyTree copies the directory from to to (cp -a, unconfined), failing the case on error.
func copyTree(t *T, from, to string) {
	t.Mkdir(filepath.Dir(to))
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("fixture: cp -a %s %s: %v: %s", from, to, err, out)
	}
}

// matchingLines returns the lines of s that contain one of subs, trimmed, in order.
func matchingLines(s string, subs ...string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if containsAny(l, subs...) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// workloadsCases are the family's cases, in catalogue order.
func workloadsCases() []Case {
	var cases []Case
	for _, w := range []workload{goWorkload, npmWorkload, venvWorkload, pytestWorkload, makeWorkload, cargoWorkload, gpgInsideWorkload} {
		cases = append(cases, w.toCase())
	}
	return append(cases, gpgAgentCase, devServerCase(false), devServerCase(true), pagerCase)
}

// readJSON decodes the JSON file at path into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// pythonWith returns the first python3 (the one on PATH, then /usr/bin/python3) that imports every module in
// mods, or "" and what each candidate lacked.
func pythonWith(t *T, mods ...string) (string, string) {
	var why []string
	for _, py := range []string{python3Path(), "/usr/bin/python3"} {
		if py == "" || !Exists(py) {
			continue
		}
		r := t.Unconfined([]string{py, "-c", "import " + strings.Join(mods, ", ")}, Opts{Env: pyEnv()})
		if r.Exit == 0 {
			return py, ""
		}
		why = append(why, py+": "+lastLine(r.Stderr))
	}
	if len(why) == 0 {
		return "", "no python3 on PATH or in /usr/bin"
	}
	return "", strings.Join(why, "; ")
}
