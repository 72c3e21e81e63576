package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var passthroughCases = []Case{{
	ID:    "passthrough/exit-codes",
	Title: "exit statuses pass through unchanged: each bit alone, all bits, and confine's own 125..127",
	Rationale: "confine execs the command in its own process, so the caller must see the command's own status, " +
		"including 125, 126 and 127, which confine also uses: only the report tells them apart. A launcher that " +
		"forks and maps statuses, or that reserves a range, fails here. An exit status is 8 bits that the kernel " +
		"and every waiter pass on whole, so the case checks each bit alone (1, 2, 4 .. 128), none and all (0, 255), " +
		"confine's own statuses and their neighbours (124..129) and the signal-like range (130, 137, 143, 254): " +
		"a launcher that masks, maps or reserves any status shows it here, at a sixth of the launches of all 256.",
	Expect: []Expect{{"ABI ≥ 1", "for each n tested, exit n"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Run: func(t *T) {
		var wrong []string
		for _, n := range exitStatuses {
			r := t.Confine(t.Flags(), t.HelperArgv(opArg("exit", "", strconv.Itoa(n))), Opts{NoReport: true})
			if r.Exit != n {
				wrong = append(wrong, fmt.Sprintf("%d→%d", n, r.Exit))
			}
		}
		if len(wrong) > 0 {
			t.Errorf("exit statuses changed: %s", strings.Join(wrong, " "))
		}
	},
}, {
	ID:    "passthrough/signals",
	Title: "signals sent to confine's pid reach the command; the caller sees the command's death by signal; SIGKILL leaves no orphan",
	Rationale: "An agent's timeout signals the pid it started. In every mode that pid is confine, the command's " +
		"parent (issues 15 and 28: it stays to end the command's background processes), which must forward the " +
		"signal to the command and then end the way the command ended (the same signal, not an exit status). SIGKILL cannot be forwarded, so the command must die with confine (a parent-death " +
		"signal) instead of living on, still running, after the caller believes it killed it. The case runs " +
		"confine as it is and again where no namespace can be made (in place), and signals the started pid as a " +
		"caller would. Under bwrap only the first run applies: bwrap needs namespaces, and without Landlock " +
		"confine refuses where none can be made (fail-closed/bwrap-no-namespaces).",
	Expect: []Expect{{"ABI ≥ 1", "a command killed by TERM/INT/HUP/KILL is seen as that signal; SIGUSR1 to the started pid reaches the command's handler (exit 42); SIGTERM to it kills the command (seen as SIGTERM); after SIGKILL to it the command is gone"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Run: func(t *T) {
		for _, noNS := range []bool{false, true} {
			if noNS && t.Bwrap() {
				t.Logf("bwrap: no run without namespaces (bwrap needs them; fail-closed/bwrap-no-namespaces)")
				break
			}
			r := t.Confine(t.Flags(), t.HelperArgv(op("pid", "")), Opts{NoNamespaces: noNS})
			res := t.helperResults("pid", r, 1)
			if r.Report == nil {
				t.Fatalf("no report on --report-fd")
			}
			m := r.Report.Metadata
			if noNS {
				t.WantFallback(r)
			}
			t.Logf("%s: confine (pid %d) stays as the command's parent (pid %s)", m, r.Pid, res[0].Data)
			for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGKILL} {
				r := t.Confine(t.Flags(), t.HelperArgv(opArg("kill-self", "", strconv.Itoa(int(sig)))), Opts{NoReport: true, NoNamespaces: noNS})
				if r.Signal != sig {
					t.Errorf("%s: the command killed itself with %v: the caller saw exit %d signal %v", m, sig, r.Exit, r.Signal)
				}
			}
			var cmdPid int
			for _, c := range []struct {
				sig        syscall.Signal
				exit       int
				seenSignal syscall.Signal
			}{{syscall.SIGUSR1, 42, 0}, {syscall.SIGTERM, -1, syscall.SIGTERM}, {syscall.SIGKILL, -1, syscall.SIGKILL}} {
				ready := t.WT + "/ready"
				os.Remove(ready)
				r := t.Confine(t.Flags(), t.HelperArgv(opArg("wait-signal", ready, "42")), Opts{NoReport: true, NoNamespaces: noNS,
					Started: func(pid int) {
						deadline := time.Now().Add(t.Cfg().Timeout / 2)
						for !Exists(ready) && time.Now().Before(deadline) {
							time.Sleep(5 * time.Millisecond)
						}
						b, _ := os.ReadFile(ready)
						cmdPid, _ = strconv.Atoi(string(b))
						if host := hostPID(ready); host > 0 { // in a PID namespace (below ABI 6) getpid is not ours
							cmdPid = host
						}
						syscall.Kill(pid, c.sig)
					}})
				if r.Exit != c.exit || r.Signal != c.seenSignal {
					t.Errorf("%s: %v sent to the started pid: exit %d signal %v, want exit %d signal %v", m, c.sig, r.Exit, r.Signal, c.exit, c.seenSignal)
				}
			}
			// After SIGKILL to confine, the command must not outlive it.
			if cmdPid <= 0 {
				t.Errorf("%s: the command never said its pid", m)
			} else if !gone(cmdPid, 5*time.Second) {
				t.Errorf("%s: the command (pid %d) still runs after SIGKILL to confine: an orphan", m, cmdPid)
				syscall.Kill(cmdPid, syscall.SIGKILL)
			}
		}
	},
}, {
	ID:    "passthrough/background-ends",
	Title: "a background process the command leaves behind is ended when the command exits, in every mode",
	Rationale: "An agent runs one command per confine call and takes confine's return as \"done\". A background " +
		"process that outlives the command would go on writing in the worktree after that, and without a mount " +
		"layer it would lose its metadata rights halfway (chmod and touch got ENOSYS once the supervisor was gone, " +
		"issue 28). confine ends every process the command leaves behind when the command exits: a PID namespace's " +
		"end, or confine as child subreaper killing what it adopted. The command starts a shell loop that appends " +
		"to a file in the worktree every 10 ms for half a minute, holding none of confine's output pipes, and exits " +
		"0.3 s later. When confine returns, no process of the command may be left, the file must stop growing, and " +
		"the loop must have said no error. The case runs confine as it is and again where no namespace can be made.",
	Expect: []Expect{{"ABI ≥ 1", "exit 0; no process of the command left when confine returns; the file does not grow afterwards"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Run: func(t *T) {
		for _, noNS := range []bool{false, true} {
			if noNS && t.Bwrap() {
				t.Logf("bwrap: no run without namespaces (bwrap needs them; fail-closed/bwrap-no-namespaces)")
				break
			}
			marker := fmt.Sprintf("confine-conformance-bg-%d-%d", os.Getpid(), time.Now().UnixNano())
			log, errs := t.WT+"/bg.log", t.WT+"/bg.err"
			os.Remove(log)
			os.Remove(errs)
			// $0 is the marker: the background subshell keeps sh's command line, so /proc finds it.
			script := `cd "$1" && (i=0; while [ $i -lt 3000 ]; do echo x >> bg.log; sleep 0.01; i=$((i+1)); done) >/dev/null 2>bg.err & sleep 0.3; echo started`
			r := t.Confine(t.Flags(), []string{"/bin/sh", "-c", script, marker, t.WT}, Opts{NoNamespaces: noNS})
			m := "default"
			if r.Report != nil {
				m = r.Report.Metadata
			}
			if noNS {
				t.WantFallback(r)
			}
			if r.Exit != 0 || strings.TrimSpace(r.Stdout) != "started" {
				t.Fatalf("%s: exit %d, stdout %q, stderr %q", m, r.Exit, r.Stdout, firstLines(r.Stderr, 4))
			}
			if left := withMarker(marker); len(left) > 0 {
				t.Errorf("%s: processes of the command still run after confine returned: %v", m, left)
			}
			a, err := os.Stat(log)
			if err != nil {
				t.Fatalf("%s: the background loop never wrote: %v", m, err)
			}
			time.Sleep(500 * time.Millisecond)
			if b, err := os.Stat(log); err != nil || b.Size() != a.Size() {
				t.Errorf("%s: %s grew after confine returned (%d bytes, then %v)", m, log, a.Size(), b)
			}
			if e, _ := os.ReadFile(errs); len(e) > 0 {
				t.Errorf("%s: the background loop's errors: %s", m, firstLines(string(e), 4))
			}
			t.Logf("%s: the background loop wrote %d bytes, and nothing after confine returned", m, a.Size())
		}
	},
}, {
	ID:    "passthrough/stdio",
	Title: "stdin, stdout and stderr are the command's own",
	Rationale: "Tools are driven through pipes. Input must reach the command and its output must come back on " +
		"the right stream, byte for byte, with nothing added by the launcher on success.",
	Expect: []Expect{{"ABI ≥ 1", "stdin echoed on stdout; the text on stderr exactly; nothing else"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Run: func(t *T) {
		in := "line one\nline two\x00binary\n"
		r := t.Confine(t.Flags(), t.HelperArgv(opArg("stdio", "", "to stderr\n")), Opts{Stdin: in})
		t.helperResults("stdio", r, 1)
		if !strings.HasPrefix(r.Stdout, in) {
			t.Errorf("stdout %q does not start with stdin %q", r.Stdout, in)
		}
		if r.Stderr != "to stderr\n" {
			t.Errorf("stderr %q, want %q", r.Stderr, "to stderr\n")
		}
	},
}, {
	ID:    "passthrough/path-lookup",
	Title: "a bare command name is found through PATH, skipping non-executable matches",
	Rationale: "execve does no PATH lookup, so the launcher must, like execvp: the first executable match wins, " +
		"a non-executable file of the same name earlier in PATH is skipped, and the report's command[0] is the " +
		"absolute path that ran.",
	Expect: []Expect{{"ABI ≥ 1", "exit 0; report.command[0] = the executable match"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Setup: func(t *T) {
		t.Mkdir(t.Base+"/bin0", t.Base+"/bin")
		t.WriteFile(t.Base+"/bin0/conformance-cmd", "not executable\n", 0o644)
		mustSymlink(t, t.Cfg().Helper, t.Base+"/bin/conformance-cmd")
	},
	Run: func(t *T) {
		env := append(os.Environ(), "PATH="+t.Base+"/bin0:"+t.Base+"/bin:/usr/bin:/bin")
		args := t.HelperArgv(op("pid", ""))
		r := t.Confine(t.Flags(), append([]string{"conformance-cmd"}, args[1:]...), Opts{Env: env})
		t.helperResults("conformance-cmd via PATH", r, 1)
		if r.Report == nil || len(r.Report.Command) == 0 || r.Report.Command[0] != t.Base+"/bin/conformance-cmd" {
			t.Errorf("report command %q, want argv[0] %s", r.ReportRaw, t.Base+"/bin/conformance-cmd")
		}
	},
}, {
	ID:    "passthrough/not-executable-126",
	Title: "a command that is found but cannot be executed gives 126",
	Rationale: "The convention of env, timeout and the shell: 126 means found but not executable, so that callers " +
		"can tell it from a missing command (127) and from confine refusing (125).",
	Expect: []Expect{{"ABI ≥ 1", "exit 126 for a non-executable file and for a directory, given by path"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Setup:  func(t *T) { t.WriteFile(t.Base+"/noexec.sh", "#!/bin/sh\nexit 0\n", 0o644) },
	Run: func(t *T) {
		for _, p := range []string{t.Base + "/noexec.sh", t.Base + "/outside"} {
			if r := t.Confine(t.Flags(), []string{p}, Opts{}); r.Exit != 126 {
				t.Errorf("%s: exit %d, want 126 (stderr %q)", p, r.Exit, r.Stderr)
			}
		}
	},
}, {
	ID:    "passthrough/not-found-127",
	Title: "a command that is not found gives 127",
	Rationale: "127 is 'not found' for env, timeout and the shell; an agent uses it to tell a typo from a failure. " +
		"A launcher that reports a missing command as its own refusal (125), or as a generic failure, breaks that.",
	Expect: []Expect{{"ABI ≥ 1", "exit 127 for a bare name not on PATH and for a missing absolute path"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Run: func(t *T) {
		for _, p := range []string{"confine-conformance-no-such-command", t.Base + "/no/such/command"} {
			if r := t.Confine(t.Flags(), []string{p}, Opts{}); r.Exit != 127 {
				t.Errorf("%s: exit %d, want 127 (stderr %q)", p, r.Exit, r.Stderr)
			}
		}
	},
}, {
	ID:    "passthrough/no-leaked-fds",
	Title: "the command inherits only its stdio: no ruleset, root or report descriptor",
	Rationale: "Descriptors the launcher opened (the ruleset, each root's O_PATH fd, the report pipe) must not reach " +
		"the command: an inherited directory fd is a handle on a root the command might use in ways the rules " +
		"did not foresee, and a report fd lets the command forge the report.",
	Expect: []Expect{{"ABI ≥ 1", "beyond stdio, the command has only the descriptors its own runtime opens (as measured without confine)"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Run: func(t *T) {
		// The helper's Go runtime opens descriptors of its own (cgroup files, epoll); the same helper run without
		// confine has exactly those, so any descriptor beyond them came from the launcher.
		control := fdTargets(t, t.Control(op("fds", ""))[0].Data)
		r := t.Confine(t.Flags("--allow", t.Out), t.HelperArgv(op("fds", "")), Opts{})
		confined := fdTargets(t, t.helperResults("fds", r, 1)[0].Data)
		for kind, n := range confined {
			if n > control[kind] {
				t.Errorf("%d descriptor(s) %s leaked into the command (the helper alone has %d)", n-control[kind], kind, control[kind])
			}
		}
	},
}}

// fdTargets counts the helper's descriptors above 2 by what they point to, with pipe, socket and anon_inode
// numbers removed ("pipe", "anon_inode:[eventpoll]", a path).
func fdTargets(t *T, data string) map[string]int {
	var fds map[string]string
	if err := json.Unmarshal([]byte(data), &fds); err != nil {
		t.Fatalf("fds: %v: %q", err, data)
	}
	out := map[string]int{}
	for fd, target := range fds {
		if fd == "0" || fd == "1" || fd == "2" {
			continue
		}
		if i := strings.Index(target, ":["); i > 0 && !strings.HasPrefix(target, "anon_inode:") {
			target = target[:i]
		}
		out[target]++
	}
	return out
}

// withMarker lists the processes (pid and command line) whose command line holds marker, and kills them (SIGKILL),
// so that a failing run leaves none behind.
func withMarker(marker string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), marker) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return found
}

// gone waits up to limit for pid to exit (absent, or a zombie waiting for its new parent to reap it).
// hostPID finds, in this PID namespace, the command whose argv names ready: the one process whose command line
// has it but not confine's own flags (confine's argv carries the command's). 0 if none or several.
func hostPID(ready string) int {
	ents, _ := os.ReadDir("/proc")
	found := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(string(b), ready) && !strings.Contains(string(b), "--worktree") {
			if found != 0 {
				return 0
			}
			found = pid
		}
	}
	return found
}

func gone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if st, ok := readStat(fmt.Sprintf("/proc/%d/stat", pid)); !ok || st.state == "Z" || st.state == "X" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exitStatuses are the statuses passthrough/exit-codes checks: 0, each bit alone, 255, confine's own 125..127
// with neighbours, and statuses a shell gives a signalled command.
var exitStatuses = []int{0, 1, 2, 4, 8, 16, 32, 64, 128, 255, 124, 125, 126, 127, 129, 130, 137, 143, 254}
