package suite

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/confine-dev/confine/conformance/internal/interopsim"
)

// wslNeedsLandlock is the row of a kernel without Landlock: every WSL2 kernel has it, and under the bwrap backend
// the WSL2 artifact refuses interop before anything runs.
var wslNeedsLandlock = Expect{"no Landlock", "SKIP: the WSL2 artifact refuses interop under the bwrap backend"}

// The wsl-interop family runs confine's WSL2 artifact (--wsl2-confine, built with -tags wsl2, which treats
// every kernel as WSL2) against a simulated Windows interop (internal/interopsim): a binfmt_misc entry for MZ
// files registered as WSL's is, interpreter /init with flags PF, whose interpreter asks a daemon outside the
// sandbox, over a unix socket in /run/WSL, to write a file outside. The simulation is registered by the root
// runner in the VM guest before either pass starts; elsewhere the cases skip.
var wslInteropCases = []Case{{
	ID:    "wsl-interop/exe-escape",
	Title: "an .exe started under the WSL2 artifact cannot reach the interop server; it can without confine and with --allow-interop",
	Rationale: "On WSL2, executing an .exe runs /init (binfmt_misc, pinned at registration), which asks WSL's " +
		"interop server over a unix socket in /run/WSL to start a Windows process: that process is outside any " +
		"Landlock domain and can write anywhere the Windows user can. Interop is on by default, so the WSL2 " +
		"artifact closes it inside the sandbox instead of refusing: an empty read-only tmpfs over /run/WSL, " +
		"WSL_INTEROP dropped, AF_VSOCK denied. The simulated .exe tries what WSL's /init tries (WSL_INTEROP, the " +
		"ancestors' /run/WSL/<pid>_interop) and what an attacker would (the socket's path written into it, and " +
		"through /proc/PID/root of the server), and AF_VSOCK. It must write its file without confine, fail " +
		"to under confine (each way refused, vsock EPERM, report wsl_interop closed), and write it again " +
		"under --allow-interop (report wsl_interop allowed, channel wsl-interop open).",
	Expect: []Expect{
		{"ABI ≥ 1, VM guest, mount layer", "without confine: written; under confine: exit 1, not written, vsock EPERM, the socket ENOENT; --allow-interop: written"},
		{"no mount layer (host emulation), or not the VM guest", "SKIP (wsl-interop/no-layer-refused covers the refusal)"},
		wslNeedsLandlock},
	Needs: Needs{Landlock: true},
	Setup: func(t *T) { interopFixture(t) },
	Run: func(t *T) {
		f := interopFixture(t)
		if m := wsl2Metadata(t); m != "mount-layer" {
			t.Skipf("the WSL2 artifact has no mount layer here (probe: metadata %s): it refuses, which wsl-interop/no-layer-refused checks", m)
		}
		srv := f.serve(t)
		defer srv.Close()
		env := append(os.Environ(), "WSL_INTEROP="+srv.Socket)

		r := t.Unconfined([]string{f.exe}, Opts{Env: env, Dir: t.WT})
		if r.Exit != 0 || !exists(f.target) {
			t.Fatalf("control: without confine the simulated .exe did not write %s (exit %d): %s", f.target, r.Exit, r.Stderr)
		}
		os.Remove(f.target)

		r = t.confineWSL2(t.Flags(), []string{f.exe}, Opts{Env: env, Dir: t.WT})
		t.Logf("under confine: exit %d: %s", r.Exit, strings.TrimSpace(r.Stderr))
		rep := wsl2Report(t, r)
		switch {
		case exists(f.target):
			t.Errorf("under confine the simulated Windows process wrote %s (exit %d): %s", f.target, r.Exit, r.Stderr)
		case r.Exit != 1:
			t.Errorf("under confine: exit %d, want 1 (the interpreter ran and found no server): %s", r.Exit, r.Stderr)
		case rep.WSLInterop != "closed" || rep.Channels["wsl-interop"].Status != "closed":
			t.Errorf("report: wsl_interop %q, channel wsl-interop %+v; want closed", rep.WSLInterop, rep.Channels["wsl-interop"])
		case !strings.Contains(r.Stderr, "interop: vsock EPERM"):
			t.Errorf("AF_VSOCK was not denied with EPERM: %s", r.Stderr)
		case !strings.Contains(r.Stderr, "interop: "+srv.Socket+" ENOENT"):
			t.Errorf("the interop socket %s was not hidden (want ENOENT): %s", srv.Socket, r.Stderr)
		}
		if strings.Contains(r.Stderr, "_interop ok") {
			t.Errorf("an interop socket answered under confine: %s", r.Stderr)
		}

		r = t.confineWSL2(t.Flags("--allow-interop"), []string{f.exe}, Opts{Env: env, Dir: t.WT})
		rep = wsl2Report(t, r)
		if r.Exit != 0 || !exists(f.target) {
			t.Errorf("--allow-interop: the simulated .exe did not write %s (exit %d): %s", f.target, r.Exit, r.Stderr)
		}
		if rep.WSLInterop != "allowed" || rep.Channels["wsl-interop"].Status != "open" {
			t.Errorf("--allow-interop: report wsl_interop %q, channel %+v; want allowed, open", rep.WSLInterop, rep.Channels["wsl-interop"])
		}
	},
}, {
	ID:    "wsl-interop/no-layer-refused",
	Title: "without a mount namespace the WSL2 artifact refuses (wsl2-interop) unless --allow-interop",
	Rationale: "The interop sockets can only be hidden with a mount namespace. Where none can be had (a " +
		"container's seccomp profile, Ubuntu's AppArmor restriction for users), the WSL2 artifact must refuse " +
		"with exit 125 and reason wsl2-interop, and run nothing, rather than run with interop open; " +
		"--allow-interop is the explicit opt-out, which then runs (supervised) and lets the .exe through.",
	Expect: []Expect{
		{"ABI ≥ 1, VM guest", "125, reason wsl2-interop, nothing written; --allow-interop: written, metadata supervisor or seccomp-deny"},
		{"not the VM guest", "SKIP"}, wslNeedsLandlock},
	Needs: Needs{Landlock: true},
	Setup: func(t *T) { interopFixture(t) },
	Run: func(t *T) {
		f := interopFixture(t)
		srv := f.serve(t)
		defer srv.Close()
		env := append(os.Environ(), "WSL_INTEROP="+srv.Socket)
		r := t.confineWSL2(t.Flags(), []string{f.exe}, Opts{Env: env, Dir: t.WT, NoNamespaces: true})
		rep := wsl2Report(t, r)
		if r.Exit != 125 || rep.Reason != "wsl2-interop" || exists(f.target) {
			t.Errorf("without namespaces: exit %d, reason %q, written %v; want 125, wsl2-interop, nothing: %s",
				r.Exit, rep.Reason, exists(f.target), r.Stderr)
		}
		r = t.confineWSL2(t.Flags("--allow-interop"), []string{f.exe}, Opts{Env: env, Dir: t.WT, NoNamespaces: true})
		rep = wsl2Report(t, r)
		if r.Exit != 0 || !exists(f.target) || rep.WSLInterop != "allowed" || rep.Metadata == "mount-layer" {
			t.Errorf("without namespaces, --allow-interop: exit %d, written %v, wsl_interop %q, metadata %q; "+
				"want 0, written, allowed, no mount layer: %s", r.Exit, exists(f.target), rep.WSLInterop, rep.Metadata, r.Stderr)
		}
	},
}}

// interopPaths are a case's simulated .exe (in the worktree) and the file its Windows process writes, in a
// directory outside the writable set that only these cases write (unwatched: they check it themselves).
type interopPaths struct{ exe, target, dir string }

// interopFixture skips unless the WSL2 artifact and the simulated interop are there, and makes the .exe.
func interopFixture(t *T) interopPaths {
	if t.cfg.WSL2Confine == "" {
		t.Skipf("needs --wsl2-confine, the WSL2 artifact (-tags wsl2; the VM payload ships it as /payload/confine-wsl2)")
	}
	if err := interopsim.Registered(); err != nil {
		t.Skipf("needs the simulated interop, registered by the root runner in the VM guest: %v", err)
	}
	f := interopPaths{exe: filepath.Join(t.WT, "tool.exe"), dir: filepath.Join(t.Base, "windows")}
	f.target = filepath.Join(f.dir, "written-by-windows")
	t.Unwatch(f.dir)
	if _, err := os.Stat(f.exe); err == nil {
		return f
	}
	t.Mkdir(f.dir)
	// The socket's name is known only once the server runs; the pid part is this runner's, as the server's.
	sock := filepath.Join(interopsim.Dir, itoa(os.Getpid())+"_interop")
	t.WriteFile(f.exe, interopsim.Exe(sock, f.target), 0o755)
	return f
}

func (f interopPaths) serve(t *T) *interopsim.Server {
	srv, err := interopsim.Serve(f.dir)
	if err != nil {
		t.Fatalf("starting the simulated interop server: %v", err)
	}
	return srv
}

// confineWSL2 is Confine with the WSL2 artifact.
func (t *T) confineWSL2(flags, argv []string, o Opts) Run {
	rp, wp, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	args := append(append(append([]string{"--report-fd", "3"}, flags...), "--"), argv...)
	if o.NoNamespaces {
		return t.exec(t.cfg.Self, append([]string{"no-namespaces", "--", t.cfg.WSL2Confine}, args...), o, rp, wp)
	}
	return t.exec(t.cfg.WSL2Confine, args, o, rp, wp)
}

// wsl2Rep is the part of the report these cases read.
type wsl2Rep struct {
	Reason     string `json:"reason"`
	Metadata   string `json:"metadata"`
	WSLInterop string `json:"wsl_interop"`
	Channels   map[string]struct {
		Status string `json:"status"`
	} `json:"channels"`
}

func wsl2Report(t *T, r Run) wsl2Rep {
	var rep wsl2Rep
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.ReportRaw)), &rep); err != nil {
		t.Fatalf("no report from the WSL2 artifact (exit %d): %v: %q, stderr %s", r.Exit, err, r.ReportRaw, r.Stderr)
	}
	return rep
}

// wsl2Metadata is what the WSL2 artifact's probe says a run would use.
func wsl2Metadata(t *T) string {
	out, err := exec.Command(t.cfg.WSL2Confine, "probe", "--json").Output()
	var p struct {
		Metadata string `json:"metadata"`
	}
	if err != nil || json.Unmarshal(out, &p) != nil {
		t.Fatalf("%s probe --json: %v: %s", t.cfg.WSL2Confine, err, out)
	}
	return p.Metadata
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
