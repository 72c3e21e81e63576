package suite

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// devServer is a development server as such tools are written: it starts a worker process of its own (a file
// watcher, a compiler in watch mode) that it never stops, serves public/ on a free port of 127.0.0.1, writes the
// port to the file port (renamed into place), and on SIGINT (KeyboardInterrupt) says so and exits 0. argv[1] is a
// token the worker carries in its argv, by which the runner finds it; with argv[2] "handler" the server installs
// its SIGINT handler itself, as servers that stop gracefully do (Python installs it only where SIGINT is not
// ignored at start).
const devServer = `import functools, http.server, os, signal, subprocess, sys
if sys.argv[2:] == ["handler"]:
    signal.signal(signal.SIGINT, signal.default_int_handler)
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="public")
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
with open("port.tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename("port.tmp", "port")
try:
    srv.serve_forever()
except KeyboardInterrupt:
    print("Keyboard interrupt received, exiting.", flush=True)
srv.server_close()
sys.exit(0)
`

// devPolls is how many times, devPoll apart, the runner looks for the server's port file, and devStopPolls for the
// process's end after SIGINT, before it gives up (generous bounds: a loaded two-core host starts python3 and stops
// its server in well under a second); a process still running then is sent SIGTERM, and the case fails.
const (
	devPolls     = 300
	devStopPolls = 100
	devPoll      = 100 * time.Millisecond
)

// devRun is what one run of the dev server showed: the page it served, its exit and output, whether its port was
// free again afterwards, and the processes carrying its token that were still alive after it ended.
type devRun struct {
	run       Run
	page      string
	err       string // what went wrong while it ran ("" when it served and was sent SIGINT)
	port      int
	portFree  bool
	survivors []int
}

// runDevServer runs devServer in dir (confined with mode m, or not), fetches public/index.html once the port
// file appears, sends SIGINT to the process it started (confine, or python3), and waits for it. The process starts
// with SIGINT at its default action, as a terminal's foreground job has it, or (ignored) ignored, as a background
// job of a non-interactive shell has it; then the server installs its own handler.
func runDevServer(t *T, dir string, confined bool, m wlMode, ignored bool) devRun {
	token := "wl-devserver-worker:" + dir // unique to the pass and the case: the scratch directory is the pass's
	t.WriteFile(dir+"/serve.py", devServer, 0o644)
	t.WriteFile(dir+"/public/index.html", "<p>served</p>\n", 0o644)
	var d devRun
	o := Opts{Dir: dir, Env: wlEnv(dir, "PYTHONDONTWRITEBYTECODE=1"), NoNamespaces: m.noNS}
	o.Started = func(pid int) {
		defer devStop(pid, &d)
		for i := 0; i < devPolls; i++ {
			if b, err := os.ReadFile(dir + "/port"); err == nil {
				fmt.Sscan(string(b), &d.port)
				break
			}
			time.Sleep(devPoll)
		}
		if d.port == 0 {
			d.err = fmt.Sprintf("no port file after %s", devPolls*devPoll)
			return
		}
		c := http.Client{Timeout: 30 * time.Second}
		resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", d.port))
		if err != nil {
			d.err = "GET index.html: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d.page = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	argv := []string{python3Path(), "serve.py", token}
	disposition := "--default-signal=INT"
	if ignored {
		argv, disposition = append(argv, "handler"), "--ignore-signal=INT"
	}
	prefix := []string{"env", disposition}
	if confined {
		d.run = t.confineVia(prefix, t.Flags(), argv, m.noNS, o)
	} else {
		d.run = t.Unconfined(append(prefix, argv...), o)
	}
	if d.port != 0 {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", d.port)); err == nil {
			d.portFree = true
			l.Close()
		}
	}
	d.survivors = processesWith(token)
	if confined { // what each survivor is (name, state, parent), and whether it is still there a moment later
		for _, pid := range d.survivors {
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			f := strings.Fields(string(stat))
			time.Sleep(devPoll)
			_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
			t.Logf("survivor %d: %s, and %s later: %v", pid, strings.Join(f[:min(len(f), 4)], " "), devPoll, err == nil)
		}
	}
	return d
}

// devStop sends SIGINT to pid and waits, up to devStopPolls looks devPoll apart, for it to end (a zombie: the runner
// has not reaped it yet); one that does not is sent SIGTERM, and d.err says so.
func devStop(pid int, d *devRun) {
	syscall.Kill(pid, syscall.SIGINT)
	for i := 0; i < devStopPolls; i++ {
		if st, ok := readStat(fmt.Sprintf("/proc/%d/stat", pid)); !ok || st.state == "Z" {
			return
		}
		time.Sleep(devPoll)
	}
	if d.err == "" {
		d.err = fmt.Sprintf("still running %s after SIGINT (then sent SIGTERM)", devStopPolls*devPoll)
	}
	syscall.Kill(pid, syscall.SIGTERM)
}

// processesWith returns the pids of the processes whose argv contains token (those this uid can read in /proc).
func processesWith(token string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), token) {
			continue
		}
		var pid int
		fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid)
		if pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// devServerCase is the dev server case: started with SIGINT at its default action (a terminal's foreground job), or
// (ignored) with SIGINT ignored (a background job of a non-interactive shell: `cmd &` in a script, nohup-like
// wrappers), where the server installs its own handler.
func devServerCase(ignored bool) Case {
	id, title, rat := "workloads/dev-server-sigint", "a development server stopped by SIGINT: it served its page, exits its own way, its port is released and no process it started survives", ""
	if ignored {
		id, title = id+"-ignored", "the same, when the caller ignores SIGINT and the server installs its own handler"
		rat = " Here the process the runner starts (env --ignore-signal=INT, then confine or the server) starts with SIGINT " +
			"ignored, as a background job of a non-interactive shell does (`server &` in a script); the server installs " +
			"its own SIGINT handler, as servers that stop gracefully do (Node's process.on('SIGINT'), Python's " +
			"signal.signal). Unconfined, `kill -INT` of the server reaches that handler; under confine, which the " +
			"caller signals instead, it must too: confine leaves the signal ignored for the command (which inherits " +
			"that, as unconfined) but must still pass it on when it is sent to confine. Launchers before 7ffefad " +
			"(issue 28) left such a signal uncaught, and the server never stopped."
	}
	return Case{
		ID:    id,
		Title: title,
		Rationale: "A dev server is the long-running command an agent starts and stops: it listens on a port, starts " +
			"helpers of its own (a watcher, a compiler in watch mode) and, on Ctrl-C, stops serving, often without " +
			"stopping its helpers. Under confine the SIGINT goes to confine (the process the caller started), which " +
			"must pass it on so that the server exits its own way (KeyboardInterrupt, exit 0), and must end what the " +
			"server left behind, so that nothing confined outlives confine. The server (python3's http.server on a " +
			"free port of 127.0.0.1) starts a worker that it never stops and writes its port to a file; the runner " +
			"fetches index.html, sends SIGINT to the process it started (which starts with SIGINT at its default action, as a terminal's " +
			"foreground job does: env --default-signal=INT), and checks the page, the exit status and " +
			"the server's own exit line, that the port can be bound again, and that no process carrying the worker's " +
			"token is left. Unconfined (the control) the worker outlives the server, as it does outside any sandbox " +
			"(the runner ends it); confined it must not. " + wlModesText + rat,
		Expect: []Expect{{"ABI ≥ 1, mount-layer or supervisor", "page `200 <p>served</p>`; exit 0 with `Keyboard interrupt received`; the port is free; no worker left"},
			{"bwrap (no Landlock, or --backend bwrap)", "the same (the PID namespace ends the worker)"},
			{"`python3` absent", "SKIP, with the reason"}, {"a VM guest", "SKIP: runs in the host suite only"}},
		Needs: Needs{Confined: true, Tools: []string{"python3", "env"}, HostOnly: wlHostOnly},
		Setup: func(t *T) { t.Mkdir(t.Base + "/control"); t.Unwatch(t.Base + "/control") },
		Run: func(t *T) {
			ctl := runDevServer(t, t.Base+"/control", false, wlMode{}, ignored)
			for _, pid := range ctl.survivors {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			if ctl.err != "" || ctl.run.Exit != 0 || !ctl.portFree {
				t.Skipf("the server does not work without confine: %s (exit %d, port free %v): %s", ctl.err, ctl.run.Exit, ctl.portFree, firstLines(ctl.run.Stderr, 4))
			}
			want := strings.TrimSpace(ctl.run.Stdout)
			t.Logf("control (unconfined): page %q, exit %d, %q; the worker outlived the server (pids %v, ended by the runner)", ctl.page, ctl.run.Exit, want, ctl.survivors)
			for _, m := range wlModes(t) {
				d := runDevServer(t, t.WT+"/"+m.dir, true, m, ignored)
				for _, pid := range d.survivors {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				if d.run.Report == nil || d.run.Report.Outcome != "exec" {
					t.Errorf("%s: confine did not run the server (exit %d): %s", m.name, d.run.Exit, firstLines(d.run.Stderr, 4))
					continue
				}
				mode := wlModeOf(d.run)
				t.Logf("%s (%s): page %q, exit %d (signal %d), stdout %q, port free %v, survivors %v", m.name, mode, d.page, d.run.Exit, d.run.Signal, strings.TrimSpace(d.run.Stdout), d.portFree, d.survivors)
				switch {
				case d.err != "":
					t.Errorf("%s: %s: %s", mode, d.err, firstLines(d.run.Stderr, 4))
				case d.page != ctl.page:
					t.Errorf("%s: served %q, want %q", mode, d.page, ctl.page)
				case d.run.Exit != 0 || strings.TrimSpace(d.run.Stdout) != want:
					t.Errorf("%s: after SIGINT: exit %d (signal %d), stdout %q; want exit 0 and %q: %s", mode, d.run.Exit, d.run.Signal, strings.TrimSpace(d.run.Stdout), want, firstLines(d.run.Stderr, 4))
				case !d.portFree:
					t.Errorf("%s: port %d is still bound after confine exited", mode, d.port)
				case len(d.survivors) > 0:
					t.Errorf("%s: the server's worker outlived confine: pids %v", mode, d.survivors)
				}
			}
		},
	}
}

// wlModesText is the rationale's sentence on the modes of a case that is not a workload script.
const wlModesText = "It runs under confine in each mode this run has (the one confine picks, and, under Landlock, the one " +
	"without namespaces: the supervisor)."
