package suite

// The side-channels family: ways a confined command can change state outside its writable set without writing a
// file there (issue 10). Each route is run as a real command would run it, then the OUTSIDE state is checked
// (a host message queue, a victim process, a socket server, the caller's keyring, a file's mode after the command
// has exited) and compared with what the report claims for the channel (report.channels.NAME.status):
//
//	found closed, reported closed  PASS
//	found closed, reported open    PASS (the report is conservative; logged)
//	found open,   reported closed  FAIL: the report lies, or the launcher's closure leaks
//	found open,   reported open    SKIP "open and reported": expected.yaml says on which ABIs and modes that is
//	                               the reviewed outcome; anywhere else a SKIP is a deviation and fails the report
//
// Every route has two cases: NAME (the mode confine picks: the mount layer where a namespace can be had) and
// NAME-fallback (no user or mount namespace can be made, see internal/nsdeny: the supervisor fallback of issue 15,
// or seccomp-deny on launchers before it).

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/helper"
)

// Channels are the channel names of the report contract (sandbox/README.md, threat model).
// strictCloses are the channels --strict closes itself rather than refusing for them.
var strictCloses = map[string]bool{"locks": true}

var Channels = []string{"stdio", "ipc", "shm", "setuid", "tty", "signals", "abstract-unix", "unix-pathname", "keyring",
	"caps", "core-dump", "metadata", "atime", "locks", "device-nodes", "git-metadata"}

// strictNamed are the channels a --strict refusal's stderr names: "confine: --strict: open channels: A, B (…)".
// Whole names, since one can hold another (git-metadata, metadata).
func strictNamed(stderr string) []string {
	_, list, ok := strings.Cut(stderr, "open channels: ")
	if !ok {
		return nil
	}
	list, _, _ = strings.Cut(list, " (")
	list, _, _ = strings.Cut(list, "\n")
	return strings.Split(strings.TrimSpace(list), ", ")
}

// ChannelStatus is one entry of report.channels.
type ChannelStatus struct {
	Status string `json:"status"` // closed or open
	How    string `json:"how"`
}

// scReport is the part of confine's report the family reads.
type scReport struct {
	Outcome  string                   `json:"outcome"`
	Reason   string                   `json:"reason"`
	Error    string                   `json:"error"`
	Metadata string                   `json:"metadata"`
	ABI      int                      `json:"abi"`
	Channels map[string]ChannelStatus `json:"channels"`
}

// scMode is how a route's case runs confine: as it is, or with namespaces taken away (the fallback).
type scMode struct{ fallback bool }

func (m scMode) name() string {
	if m.fallback {
		return "fallback"
	}
	return "default"
}

// scOpts are one confine invocation's descriptors and wrapper.
type scOpts struct {
	stdin *os.File                      // descriptor 0 (a pipe from nothing when nil)
	extra []*os.File                    // descriptors 4 and up (3 is the report)
	dir   string                        // working directory (Base when empty)
	wrap  func(inner []string) []string // when set, runs the argv it returns for confine's own argv
	ctty  bool                          // stdin (a terminal) becomes the controlling terminal of a new session
}

// scRun is one confine invocation's outcome.
type scRun struct {
	exit    int
	signal  syscall.Signal
	stdout  string
	stderr  string
	raw     string
	rep     *scReport
	results []helper.Result // the command's helper results, when it printed them
}

// confine runs `confine --report-fd 3 FLAGS -- ARGV` in mode m.
func (m scMode) confine(t *T, flags, argv []string, o scOpts) scRun {
	if !m.fallback && t.cfg.ForceBackend != "" && !contains(flags, "--backend") {
		flags = append(append([]string{}, flags...), "--backend", t.cfg.ForceBackend)
	}
	args := append(append(append([]string{"--report-fd", "3"}, flags...), "--"), argv...)
	path := t.cfg.Confine
	if m.fallback {
		path, args = t.cfg.Self, append([]string{"no-namespaces", "--", t.cfg.Confine}, args...)
	}
	if o.wrap != nil {
		w := o.wrap(append([]string{path}, args...))
		path, args = w[0], w[1:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = o.dir
	if cmd.Dir == "" {
		cmd.Dir = t.Base
	}
	cmd.WaitDelay = 5 * time.Second
	if o.stdin != nil {
		cmd.Stdin = o.stdin
	} else {
		cmd.Stdin = strings.NewReader("")
	}
	if o.ctty {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	rp, wp, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	cmd.ExtraFiles = append([]*os.File{wp}, o.extra...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	wp.Close()
	var report bytes.Buffer
	done := make(chan struct{})
	go func() { report.ReadFrom(rp); rp.Close(); close(done) }()
	err = cmd.Wait()
	<-done
	if ctx.Err() != nil {
		t.Fatalf("confine %s: timed out after %s", strings.Join(args, " "), t.cfg.Timeout)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("wait %s: %v", path, err)
	}
	r := newScRun(t, cmd.ProcessState, stdout.String(), stderr.String(), report.String())
	t.Logf("%s: exit %d signal %d; command results %s; stderr %q", m.name(), r.exit, r.signal, resultsText(r.results), r.stderr)
	return r
}

// newScRun is the outcome of a confine invocation that has ended as ps, with what it wrote to stdout, stderr and
// its report descriptor: the exit status or signal, the parsed report (a report that is not one JSON object fails
// the case), and the command's helper results, from the last stdout line that parses as a list of them.
func newScRun(t *T, ps *os.ProcessState, stdout, stderr, report string) scRun {
	r := scRun{stdout: stdout, stderr: stderr, raw: strings.TrimSpace(report)}
	ws := ps.Sys().(syscall.WaitStatus)
	r.exit = ws.ExitStatus()
	if ws.Signaled() {
		r.signal = ws.Signal()
	}
	if r.raw != "" {
		var rep scReport
		if err := json.Unmarshal([]byte(r.raw), &rep); err != nil {
			t.Errorf("report is not one JSON object: %v: %q", err, r.raw)
		} else {
			r.rep = &rep
		}
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var res []helper.Result
		if json.Unmarshal([]byte(lines[i]), &res) == nil && len(res) > 0 && res[0].Op != "session-keyring" {
			r.results = res
			break
		}
	}
	return r
}

func resultsText(res []helper.Result) string {
	var parts []string
	for _, x := range res {
		s := x.Op + " " + x.Path + ": "
		if x.OK {
			s += "ok"
		} else {
			s += x.Errno
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// ran checks that confine exec'd the command in mode m (report outcome exec; in the fallback, metadata
// supervisor or seccomp-deny) and that the command printed its results.
func (m scMode) ran(t *T, r scRun) {
	if r.rep == nil {
		t.Fatalf("%s: no report on --report-fd (exit %d, stderr %q)", m.name(), r.exit, r.stderr)
	}
	if r.rep.Outcome != "exec" {
		t.Fatalf("%s: confine refused (%s: %s); the route could not be tried", m.name(), r.rep.Reason, r.rep.Error)
	}
	if m.fallback && !contains(fallbackMetadata, r.rep.Metadata) {
		t.Errorf("fallback: report.metadata %q, want supervisor or seccomp-deny (the case could not take the namespaces away)", r.rep.Metadata)
	}
	if r.results == nil {
		t.Fatalf("%s: the command printed no results (exit %d, stdout %q)", m.name(), r.exit, r.stdout)
	}
}

// callerTerminal is a new pseudo-terminal of 24 rows by 80 columns to stand for the caller's (see openPTY): the
// case skips where none can be opened.
func callerTerminal(t *T) (master, slave *os.File) {
	master, slave, err := openPTY()
	if err != nil {
		t.Skipf("cannot open a pseudo-terminal here: %v", err)
	}
	return master, slave
}

// judge compares what the route found outside (open, with the evidence) with report.channels[channel].
func judge(t *T, r scRun, channel string, open bool, evidence string) {
	if r.rep == nil {
		t.Fatalf("no report: cannot compare with the channel's status (found open=%v: %s)", open, evidence)
	}
	st, ok := r.rep.Channels[channel]
	switch {
	case !ok:
		t.Errorf("report.channels has no %q (found %s: %s): %s", channel, openWord(open), evidence, r.raw)
	case st.Status != "closed" && st.Status != "open":
		t.Errorf("report.channels.%s.status %q, want closed or open", channel, st.Status)
	case open && st.Status == "closed":
		t.Errorf("channel %s is reported closed (%s) but the route is open: %s", channel, st.How, evidence)
	case open:
		t.Skipf("open and reported: channel %s is %s (%s): %s", channel, st.Status, st.How, evidence)
	case st.Status == "open":
		t.Logf("channel %s is reported open (%s); this route found it closed: %s", channel, st.How, evidence)
	default:
		t.Logf("channel %s closed (%s): %s", channel, st.How, evidence)
	}
}

func openWord(open bool) string {
	if open {
		return "open"
	}
	return "closed"
}

// route is one attack of the family; it yields two cases (default and fallback).
type route struct {
	name, channel, title, rationale string
	expect                          []Expect // rows shared by both cases; the fallback case adds its own
	fallbackExpect                  string   // the fallback case's expected result
	setup                           func(t *T)
	attack                          func(t *T, m scMode)
}

func (rt route) cases() []Case {
	mk := func(m scMode) Case {
		id, title, rat := "side-channels/"+rt.name, rt.title, rt.rationale
		exp := rt.expect
		if m.fallback {
			id += "-fallback"
			title += ", where no namespace can be had (the fallback)"
			rat += " This case runs confine where no user or mount namespace can be made (internal/nsdeny), so " +
				"the launcher must close the channel without them, or report it open."
			exp = []Expect{{"ABI ≥ 1, fallback", rt.fallbackExpect}}
		}
		exp = append(append([]Expect{}, exp...), noLandlockRowFor(m.fallback))
		setup := func(t *T) {
			// The victim process's files (signals routes) are the runner's, outside the writable set.
			t.Mkdir(t.Base + "/victim")
			t.Unwatch(t.Base + "/victim")
			if rt.setup != nil {
				rt.setup(t)
			}
		}
		if rt.channel != "" {
			rat += " Channel: " + rt.channel + "."
		}
		return Case{ID: id, Title: title, Rationale: rat, Expect: exp,
			Needs: needsFallback(m.fallback), Setup: setup, Run: func(t *T) { rt.attack(t, m) }}
	}
	return []Case{mk(scMode{}), mk(scMode{fallback: true})}
}

func sideChannelCases() []Case {
	var out []Case
	for _, rt := range routes {
		out = append(out, rt.cases()...)
	}
	return out
}

var sideChannelsCases = sideChannelCases()

// tag is a name unique to this run and case, for host-wide objects (queues, keys, sockets).
func tag(t *T, what string) string {
	return fmt.Sprintf("confine-conf-%d-%s-%s-%d", os.Getpid(), strings.ReplaceAll(filepath.Base(t.Base), "_", "-"), what, rand.Intn(1e6))
}

// modeOf is a file's permission bits, setuid, setgid and sticky included, or -1 when it does not exist.
func modeOf(path string) int {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return -1
	}
	return int(st.Mode & 0o7777)
}

// setuidLeft returns the paths among paths that exist with a setuid or setgid bit.
func setuidLeft(paths ...string) []string {
	var bad []string
	for _, p := range paths {
		if m := modeOf(p); m >= 0 && m&0o6000 != 0 {
			bad = append(bad, fmt.Sprintf("%s mode %04o", p, m))
		}
	}
	return bad
}

func setuidVerdict(t *T, r scRun, paths ...string) {
	for _, p := range paths {
		if strings.HasPrefix(p, "/tmp/") {
			defer os.Remove(p)
		}
	}
	bad := setuidLeft(paths...)
	var modes []string
	for _, p := range paths {
		modes = append(modes, fmt.Sprintf("%s=%04o", filepath.Base(p), modeOf(p)))
	}
	ev := "after the command exited: " + strings.Join(modes, " ")
	if len(bad) > 0 {
		ev = "setuid/setgid left behind: " + strings.Join(bad, ", ")
	}
	judge(t, r, "setuid", len(bad) > 0, ev)
}

// startVictim starts a process of the caller's uid, outside confine, that records in dir/got any SIGTERM, SIGIO
// or SIGHUP it receives; stop ends it (SIGUSR1) and returns what it recorded.
func startVictim(t *T) (pid int, stop func() string) {
	dir := t.Base + "/victim"
	t.Mkdir(dir)
	ready, got := dir+"/ready", dir+"/got"
	argv := t.HelperArgv(helper.Op{Op: "victim", Path: ready, Path2: got})
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("victim: %v", err)
	}
	deadline := time.Now().Add(t.cfg.Timeout / 2)
	for !Exists(ready) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if !Exists(ready) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("victim never became ready")
	}
	return cmd.Process.Pid, func() string {
		cmd.Process.Signal(unix.SIGUSR1)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		b, _ := os.ReadFile(got)
		return strings.TrimSpace(string(b))
	}
}

// unixServer listens on addr ('@name': abstract) outside confine and counts the connections it accepts and the
// bytes it receives.
func unixServer(t *T, addr string) (stop func() (conns int, data string)) {
	l, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	// No accept loop: a connection the command made sits in the backlog until accepted, and a listener closed
	// first would drop it uncounted (a slow guest lost one that way). stop drains the backlog instead, with
	// non-blocking accept4 and read on a duplicate of the listening socket, once the command has ended.
	f, err := l.(*net.UnixListener).File()
	if err != nil {
		t.Fatalf("listener %s: %v", addr, err)
	}
	return func() (int, string) {
		defer l.Close()
		defer f.Close()
		fd := int(f.Fd()) // once: each Fd() call puts the descriptor back in blocking mode
		unix.SetNonblock(fd, true)
		var n int
		var buf bytes.Buffer
		for {
			c, _, err := unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			if err != nil {
				break
			}
			n++
			b := make([]byte, 256)
			if k, err := unix.Read(c, b); err == nil && k > 0 {
				buf.Write(b[:k])
			}
			unix.Close(c)
		}
		return n, buf.String()
	}
}

// findProc returns the pid of the process whose command line contains marker (the outside view of the
// command, whatever PID namespace it is in), waiting up to the run's timeout for marker's file to appear.
func findProc(t *T, readyFile string) int {
	deadline := time.Now().Add(t.cfg.Timeout / 2)
	for !Exists(readyFile) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.Contains(b, []byte(readyFile)) && !bytes.Contains(b, []byte("no-namespaces")) &&
			!bytes.Contains(b, []byte("--report-fd")) {
			return pid
		}
	}
	return 0
}

// procField returns the value of the line starting with key in /proc/PID/FILE.
func procField(pid int, file, key string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, key) {
			return strings.TrimSpace(strings.TrimPrefix(l, key))
		}
	}
	return ""
}

// keySearch finds a "user" key described desc in keyring (a KEY_SPEC_* or a serial), from outside confine.
func keySearch(keyring int, desc string) (int, bool) {
	id, err := unix.KeyctlSearch(keyring, "user", desc, 0)
	return id, err == nil
}

// vfsCapV2 is a security.capability value (include/uapi/linux/capability.h, VFS_CAP_REVISION_2 with
// VFS_CAP_FLAGS_EFFECTIVE) granting CAP_SETUID: a file capability that would give its runner uid changes.
const vfsCapV2 = "01000002" + "80000000" + "00000000" + "00000000" + "00000000"

func scTar(t *T, path string, files map[string]int64) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, mode := range files {
		content := []byte("#!/bin/sh\nid\n")
		tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(content)), Typeflag: tar.TypeReg})
		tw.Write(content)
	}
	tw.Close()
	t.WriteFile(path, b.String(), 0o644)
}

var routes = []route{
	// 1. Descriptors 0 to 2 and inherited descriptors.
	{
		name: "stdio-dir-fd0", channel: "stdio",
		title: "a directory on descriptor 0 gives no way to change files under it",
		rationale: "Issue 10, route 1: with `confine --mode read-only -- CMD < /outside/dir` the command could " +
			"fchmodat and setxattr files under that directory relative to fd 0, or through /proc/self/fd/0/…, on the " +
			"caller's writable mount. confine must refuse a directory on 0 to 2 (bad-stdio) or, if it runs the " +
			"command, nothing under the directory may change. The outside file's mode and xattr are checked after.",
		expect:         []Expect{{"ABI ≥ 1", "exit 125, reason bad-stdio (or the command ran and every change failed); the outside file's mode and xattr unchanged"}},
		fallbackExpect: "the same: refused with bad-stdio, nothing changed",
		attack: func(t *T, m scMode) {
			d, err := os.Open(t.Out)
			if err != nil {
				t.Fatalf("open %s: %v", t.Out, err)
			}
			defer d.Close()
			r := m.confine(t, t.Flags("--mode", "read-only"), t.HelperArgv(
				helper.Op{Op: "fchmodat", Path: "file.txt", Path2: "0", Arg: "777"},
				helper.Op{Op: "fchmodat", Path: "/proc/self/fd/0/file.txt", Arg: "4777"},
				helper.Op{Op: "setxattr-hex", Path: "/proc/self/fd/0/file.txt", Path2: "user.conformance", Arg: "6368616e676564"}),
				scOpts{stdin: d})
			mode := modeOf(t.Out + "/file.txt")
			open := mode != 0o640
			ev := fmt.Sprintf("outside file.txt mode %04o (was 0640)", mode)
			if r.rep != nil && r.rep.Outcome == "refused" {
				if r.exit != 125 || r.rep.Reason != "bad-stdio" {
					t.Errorf("refused with exit %d reason %q, want 125 bad-stdio", r.exit, r.rep.Reason)
				}
				if open {
					t.Errorf("refused, yet %s", ev)
				}
				t.Logf("refused (bad-stdio): %s", ev)
				return
			}
			m.ran(t, r)
			judge(t, r, "stdio", open, ev)
		},
	},
	{
		name: "stdio-inherited-fd", channel: "stdio",
		title: "a writable descriptor 4 the caller leaked does not reach the command",
		rationale: "Only descriptors 0 to 2 are the caller's choice: a jobserver pipe or a leaked O_RDWR descriptor " +
			"of an outside file on 4 must be closed before exec, or the command writes and chmods that file through " +
			"it, past every rule. The case passes an outside file open O_RDWR as descriptor 4; the command writes to " +
			"it and fchmods it; the file's content and mode are checked after.",
		expect:         []Expect{{"ABI ≥ 1", "descriptor 4 is closed in the command (EBADF); the outside file's content and mode unchanged"}},
		fallbackExpect: "the same",
		attack: func(t *T, m scMode) {
			f, err := os.OpenFile(t.Out+"/file.txt", os.O_RDWR, 0)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer f.Close()
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "write-fd", Path: "4", Arg: "pwned"},
				helper.Op{Op: "fchmod-fd", Path: "4", Arg: "4777"}), scOpts{extra: []*os.File{f}})
			m.ran(t, r)
			b, _ := os.ReadFile(t.Out + "/file.txt")
			mode := modeOf(t.Out + "/file.txt")
			open := string(b) != "outside\n" || mode != 0o640
			judge(t, r, "stdio", open, fmt.Sprintf("outside file.txt content %q mode %04o", b, mode))
		},
	},
	// 2. IPC.
	{
		name: "ipc-mqueue-create", channel: "ipc",
		title: "a POSIX message queue the command creates does not appear in the caller's IPC namespace",
		rationale: "Issue 10, route 2: mq_open(O_CREAT) created the queue in the host's mqueue filesystem (and even " +
			"returned EACCES after creating it). The runner checks from its own IPC namespace, after the command " +
			"has exited, whether a queue of that name exists.",
		expect:         []Expect{{"ABI ≥ 1", "no queue of that name in the caller's namespace (a private IPC namespace)"}},
		fallbackExpect: "closed, or open and reported where no IPC namespace can be had (expected.yaml)",
		attack: func(t *T, m scMode) {
			name := "/" + tag(t, "mq")
			defer helper.MqUnlink(name)
			if err := helper.MqCreate(name + "-control"); err != nil {
				t.Skipf("POSIX message queues unavailable here (control mq_open: %v)", err)
			}
			helper.MqUnlink(name + "-control")
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "mq-create", Path: name}), scOpts{})
			m.ran(t, r)
			exists, err := helper.MqExists(name)
			if err != nil {
				t.Fatalf("mq_open %s from outside: %v", name, err)
			}
			judge(t, r, "ipc", exists, fmt.Sprintf("queue %s exists in the caller's namespace: %v", name, exists))
		},
	},
	{
		name: "ipc-mqueue-unlink", channel: "ipc",
		title: "the command cannot delete the caller's POSIX message queue",
		rationale: "Issue 10, route 2: host queues could be deleted (any queue as root, the caller's own as a user). " +
			"The runner creates a queue of its own uid, the command mq_unlinks it, and the runner checks it still " +
			"exists.",
		expect:         []Expect{{"ABI ≥ 1", "the caller's queue still exists"}},
		fallbackExpect: "closed, or open and reported where no IPC namespace can be had (expected.yaml)",
		attack: func(t *T, m scMode) {
			name := "/" + tag(t, "mqv")
			if err := helper.MqCreate(name); err != nil {
				t.Skipf("POSIX message queues unavailable here (mq_open: %v)", err)
			}
			defer helper.MqUnlink(name)
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "mq-unlink", Path: name}), scOpts{})
			m.ran(t, r)
			exists, err := helper.MqExists(name)
			if err != nil {
				t.Fatalf("mq_open %s from outside: %v", name, err)
			}
			judge(t, r, "ipc", !exists, fmt.Sprintf("the caller's queue %s still exists: %v", name, exists))
		},
	},
	{
		name: "ipc-sysv-create", channel: "ipc",
		title: "a SysV message queue the command creates does not appear in the caller's IPC namespace",
		rationale: "Issue 10, route 2, SysV: msgget(key, IPC_CREAT) makes an object that outlives the command in " +
			"the host's IPC namespace, and any process of the uid that knows the key reads and writes it. The runner " +
			"checks msgget(key, 0) from its own namespace after the command has exited.",
		expect:         []Expect{{"ABI ≥ 1", "no queue with that key in the caller's namespace"}},
		fallbackExpect: "closed, or open and reported where no IPC namespace can be had (expected.yaml)",
		attack: func(t *T, m scMode) {
			key := 0x4e000000 + rand.Intn(0xffffff)
			defer func() {
				if id, err := helper.Msgget(key, 0); err == nil {
					helper.MsgRmid(id)
				}
			}()
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "msgget-create", Arg: strconv.Itoa(key)}), scOpts{})
			m.ran(t, r)
			_, err := helper.Msgget(key, 0)
			judge(t, r, "ipc", err == nil, fmt.Sprintf("msgget(%#x, 0) from outside: %v", key, errOr(err)))
		},
	},
	{
		name: "ipc-sysv-remove", channel: "ipc",
		title: "the command cannot remove the caller's SysV message queue",
		rationale: "SysV objects of the caller's uid are the command's to remove in a shared IPC namespace. The runner " +
			"creates a queue, the command finds it by key and removes it (IPC_RMID), and the runner checks that it " +
			"still exists.",
		expect:         []Expect{{"ABI ≥ 1", "the caller's queue still exists"}},
		fallbackExpect: "closed, or open and reported where no IPC namespace can be had (expected.yaml)",
		attack: func(t *T, m scMode) {
			key := 0x4f000000 + rand.Intn(0xffffff)
			id, err := helper.Msgget(key, unix.IPC_CREAT|0o600)
			if err != nil {
				t.Skipf("SysV message queues unavailable here (msgget: %v)", err)
			}
			defer helper.MsgRmid(id)
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "msg-rmid", Arg: strconv.Itoa(key)}), scOpts{})
			m.ran(t, r)
			_, err = helper.Msgget(key, 0)
			judge(t, r, "ipc", err != nil, fmt.Sprintf("the caller's queue %#x after the command: %v", key, errOr(err)))
		},
	},
	// 3. Setuid files.
	{
		name: "setuid-chmod", channel: "setuid",
		title: "no setuid or setgid bit is left by chmod, in the worktree or /tmp",
		rationale: "Issue 10, route 3: a root command left a setuid-root executable in the worktree or /tmp; once it " +
			"has ended, any user runs it and gets euid 0 (nosuid applies only inside the sandbox). As a user, a " +
			"setuid file lets others act as that user. The command chmods an executable it owns to 4755 and 6755; " +
			"the runner checks the modes after the command has exited.",
		expect:         []Expect{{"ABI ≥ 1", "no file keeps S_ISUID or S_ISGID (the chmod fails, or the bits are stripped)"}},
		fallbackExpect: "the same (chmod is denied outright in the fallback)",
		setup: func(t *T) {
			t.WriteFile(t.WT+"/tool", "#!/bin/sh\nid\n", 0o755)
		},
		attack: func(t *T, m scMode) {
			tmp := fmt.Sprintf("/tmp/%s", tag(t, "suid"))
			t.WriteFile(tmp, "#!/bin/sh\nid\n", 0o755)
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "fchmodat", Path: t.WT + "/tool", Arg: "4755"},
				helper.Op{Op: "fchmodat", Path: tmp, Arg: "6755"}), scOpts{})
			m.ran(t, r)
			setuidVerdict(t, r, t.WT+"/tool", tmp)
		},
	},
	{
		name: "setuid-create-mode", channel: "setuid",
		title: "no setuid or setgid bit is left by a creation mode (open, mknod, openat2)",
		rationale: "The mode argument of open(O_CREAT), mknod(S_IFREG) and openat2 (whose mode seccomp cannot even " +
			"read: it is inside struct open_how) sets S_ISUID on a new file with no chmod at all. The command " +
			"creates one file each way with mode 4755 or 6755 and umask 0; the runner checks the modes after.",
		expect:         []Expect{{"ABI ≥ 1", "no file keeps S_ISUID or S_ISGID"}},
		fallbackExpect: "the same",
		attack: func(t *T, m scMode) {
			w := t.WT
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "create-mode", Path: w + "/c-open", Arg: "4755"},
				helper.Op{Op: "mknod-reg", Path: w + "/c-mknod", Arg: "6755"},
				helper.Op{Op: "openat2-mode", Path: w + "/c-openat2", Arg: "4755"}), scOpts{})
			m.ran(t, r)
			setuidVerdict(t, r, w+"/c-open", w+"/c-mknod", w+"/c-openat2")
		},
	},
	{
		name: "setuid-untar", channel: "setuid",
		title: "archive extraction leaves no setuid or setgid file",
		rationale: "tar -p (the default as root) restores an archived 4755 with chmod after writing the file: the " +
			"ordinary way a setuid file reaches a worktree. The command extracts an archive holding a 4755 and a " +
			"2755 file into the worktree the way tar does; the runner checks the modes after.",
		expect:         []Expect{{"ABI ≥ 1", "neither extracted file keeps S_ISUID or S_ISGID"}},
		fallbackExpect: "the same",
		setup: func(t *T) {
			scTar(t, t.Base+"/archive.tar", map[string]int64{"suid-tool": 0o4755, "sgid-tool": 0o2755})
		},
		attack: func(t *T, m scMode) {
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "untar", Path: t.WT, Path2: t.Base + "/archive.tar"}), scOpts{})
			m.ran(t, r)
			setuidVerdict(t, r, t.WT+"/suid-tool", t.WT+"/sgid-tool")
		},
	},
	{
		name: "setuid-stdio-fd", channel: "setuid",
		title: "a file the caller put on descriptor 0 cannot be made setuid",
		rationale: "The command may change the metadata of the files the caller named on descriptors 0 to 2, but a " +
			"setuid bit is more than metadata: an executable on stdin (a script, a build artifact) turned 4755 stays " +
			"so after the command ends. The command fchmods descriptor 0 to 4755; the runner checks the mode after.",
		expect:         []Expect{{"ABI ≥ 1", "the file on descriptor 0 has no S_ISUID or S_ISGID"}},
		fallbackExpect: "the same",
		setup: func(t *T) {
			t.WriteFile(t.Base+"/stdin-tool", "#!/bin/sh\nid\n", 0o755)
			t.Unwatch(t.Base + "/stdin-tool") // the caller named it: its other metadata may change
		},
		attack: func(t *T, m scMode) {
			f, err := os.Open(t.Base + "/stdin-tool")
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer f.Close()
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "fchmod-fd", Path: "0", Arg: "4755"}), scOpts{stdin: f})
			m.ran(t, r)
			setuidVerdict(t, r, t.Base+"/stdin-tool")
		},
	},
	{
		name: "setuid-fcap-xattr", channel: "setuid",
		title: "no file capability (security.capability) is left on a file in the worktree",
		rationale: "A file capability is a setuid bit by another name: security.capability granting CAP_SETUID " +
			"makes the file's runner able to become root. Writing it needs CAP_SETFCAP, which a root command must " +
			"not keep. The command writes one on a worktree file; the runner reads the xattr after. As a user the " +
			"write fails without confine too (the control), and the case says so.",
		expect:         []Expect{{"ABI ≥ 1", "the file has no security.capability xattr"}},
		fallbackExpect: "the same (setxattr is denied outright in the fallback)",
		setup: func(t *T) {
			t.WriteFile(t.WT+"/captool", "#!/bin/sh\nid\n", 0o755)
			t.WriteFile(t.Base+"/control-captool", "x", 0o755)
			t.Unwatch(t.Base + "/control-captool")
		},
		attack: func(t *T, m scMode) {
			ctl := t.Base + "/control-captool"
			if res := t.Control(helper.Op{Op: "setxattr-hex", Path: ctl, Path2: "security.capability", Arg: vfsCapV2}); !res[0].OK {
				t.Logf("control: writing security.capability fails without confine too (%s): the route needs privilege", res[0].Errno)
			}
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "setxattr-hex", Path: t.WT + "/captool", Path2: "security.capability", Arg: vfsCapV2}), scOpts{})
			m.ran(t, r)
			buf := make([]byte, 64)
			n, err := unix.Lgetxattr(t.WT+"/captool", "security.capability", buf)
			judge(t, r, "setuid", err == nil && n > 0, fmt.Sprintf("security.capability on the worktree file after: %d bytes, %v", max(n, 0), errOr(err)))
		},
	},
	{
		name: "setuid-uring-open", channel: "setuid",
		title: "io_uring cannot create a setuid file either",
		rationale: "An io_uring operation is not a system call: IORING_OP_OPENAT carries the creation mode in the " +
			"submission queue entry, where no seccomp filter looks. Unless io_uring is unavailable to the command, " +
			"a setuid bit set this way must be stripped too. The command creates a file with mode 4755 through " +
			"io_uring; the runner checks its mode after.",
		expect:         []Expect{{"ABI ≥ 1", "the file does not exist (io_uring denied) or has no S_ISUID"}},
		fallbackExpect: "the same (io_uring is denied in the fallback)",
		attack: func(t *T, m scMode) {
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "uring-open-mode", Path: t.WT + "/u-open", Arg: "4755"}), scOpts{})
			m.ran(t, r)
			setuidVerdict(t, r, t.WT+"/u-open")
		},
	},
	// 4. Terminals.
	{
		name: "tty-other-pts", channel: "tty",
		title: "with --tty, the command cannot write into another terminal of the caller",
		rationale: "Issue 10, route 4: --tty granted all of /dev/pts, so the command wrote into an unrelated " +
			"terminal of the host (as root, into every terminal). The runner opens a pseudo-terminal of its own (the " +
			"victim), the command opens its /dev/pts/N and writes a marker, and the runner reads the victim's master " +
			"side to see whether the marker arrived.",
		expect:         []Expect{{"ABI ≥ 1", "the marker never reaches the victim terminal (a private devpts instance)"}},
		fallbackExpect: "closed, or open and reported where no devpts instance can be mounted (expected.yaml)",
		attack: func(t *T, m scMode) {
			master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
			if err != nil {
				t.Skipf("no /dev/ptmx here: %v", err)
			}
			defer master.Close()
			if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
				t.Fatalf("unlockpt: %v", err)
			}
			n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
			if err != nil {
				t.Fatalf("ptsname: %v", err)
			}
			pts := fmt.Sprintf("/dev/pts/%d", n)
			// Hold the slave open so that the terminal stays up whatever the command does.
			slave, err := os.OpenFile(pts, os.O_RDWR|unix.O_NOCTTY, 0)
			if err != nil {
				t.Fatalf("open %s: %v", pts, err)
			}
			defer slave.Close()
			marker := tag(t, "tty")
			r := m.confine(t, t.Flags("--tty"), t.HelperArgv(opArg("write", pts, marker)), scOpts{})
			m.ran(t, r)
			fd := int(master.Fd()) // once: each Fd() call puts the descriptor back in blocking mode
			unix.SetNonblock(fd, true)
			buf := make([]byte, 4096)
			k, _ := unix.Read(fd, buf)
			got := string(buf[:max(k, 0)])
			judge(t, r, "tty", strings.Contains(got, marker), fmt.Sprintf("victim terminal %s received %q", pts, got))
		},
	},
	{
		name: "tty-resize", channel: "tty",
		title: "the command cannot resize the caller's terminal (no SIGWINCH to the caller's foreground group)",
		rationale: "Issue 43, finding 2: with descriptors 0 to 2 on the caller's terminal, TIOCSWINSZ changes its " +
			"size and makes the kernel send SIGWINCH to its foreground process group, the caller's: no Landlock " +
			"scope covers a signal the kernel sends. The runner makes a new pseudo-terminal of 24 rows by 80 " +
			"columns the controlling terminal of confine's session, as a shell's terminal is; the command sets " +
			"91 by 191 on descriptor 0 without --tty; the runner reads the size from the master side after.",
		expect:         []Expect{{"ABI ≥ 1", "the terminal is still 24 by 80 (seccomp denies TIOCSWINSZ without --tty)"}},
		fallbackExpect: "the same (the filter is the same in every mode)",
		attack: func(t *T, m scMode) {
			master, slave := callerTerminal(t)
			defer master.Close()
			defer slave.Close()
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "tty-resize"}), scOpts{stdin: slave, ctty: true})
			m.ran(t, r)
			ws, err := unix.IoctlGetWinsize(int(master.Fd()), unix.TIOCGWINSZ)
			if err != nil {
				t.Fatalf("TIOCGWINSZ on the master side: %v", err)
			}
			judge(t, r, "tty", ws.Row != 24 || ws.Col != 80, fmt.Sprintf("the terminal is %d by %d after", ws.Row, ws.Col))
		},
	},
	{
		name: "tty-disturb", channel: "tty",
		title: "the command cannot leave the caller's terminal dead, unopenable or stopped",
		rationale: "The attack review of issue 43's terminal fix: three ioctls on the caller's terminal outlast the " +
			"command and need no capability: TIOCSETD to N_NULL (a built-in line discipline that drops everything: " +
			"the caller's terminal is dead after the run), TIOCEXCL (the caller cannot open its own terminal " +
			"again) and TCXONC with TCOOFF (the caller's next write blocks). The runner makes a new pseudo-" +
			"terminal the controlling terminal of confine's session; without --tty, the command tries each on " +
			"descriptor 0; the runner then reads the line discipline (TIOCGETD) and exclusive mode (TIOCGEXCL) " +
			"and writes to the terminal without blocking.",
		expect:         []Expect{{"ABI ≥ 1", "line discipline N_TTY (0), not exclusive, output flows (seccomp denies the three without --tty)"}},
		fallbackExpect: "the same (the filter is the same in every mode)",
		attack: func(t *T, m scMode) {
			master, slave := callerTerminal(t)
			defer master.Close()
			defer slave.Close()
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "tty-disturb"}), scOpts{stdin: slave, ctty: true})
			m.ran(t, r)
			fd := int(slave.Fd())
			ldisc, err := unix.IoctlGetInt(fd, unix.TIOCGETD)
			if err != nil {
				t.Fatalf("TIOCGETD: %v", err)
			}
			excl, err := unix.IoctlGetUint32(fd, unix.TIOCGEXCL)
			if err != nil {
				t.Fatalf("TIOCGEXCL: %v", err)
			}
			unix.SetNonblock(fd, true)
			_, werr := unix.Write(fd, []byte("x"))
			var broken []string
			if ldisc != 0 {
				broken = append(broken, fmt.Sprintf("line discipline %d", ldisc))
			}
			if excl != 0 {
				broken = append(broken, "exclusive mode")
			}
			if werr != nil {
				broken = append(broken, "a write: "+werr.Error())
			}
			// Put it right for the runner's other cases' sake (the pseudo-terminal is this case's own anyway).
			unix.IoctlSetPointerInt(fd, unix.TIOCSETD, 0)
			unix.IoctlSetInt(fd, unix.TIOCNXCL, 0)
			unix.IoctlSetInt(fd, unix.TCXONC, unix.TCOON)
			judge(t, r, "tty", len(broken) > 0, fmt.Sprintf("after the run: %v (the command's ioctls: %s)", broken, resultsText(r.results)))
		},
	},
	{
		name: "tty-foreground", channel: "tty",
		title: "the command cannot take the caller's terminal's foreground (the caller's next read would stop it)",
		rationale: "Issue 43, finding 2: TIOCSPGRP (tcsetpgrp) on the caller's controlling terminal puts the " +
			"command's own process group in the foreground; the caller, left in the background, is stopped by " +
			"SIGTTIN at its next read of the terminal. The runner makes a new pseudo-terminal the controlling " +
			"terminal of confine's session (so its foreground is the session's group); without --tty, the command " +
			"makes a group of its own, tries to make it the foreground and then waits; while it waits, the runner " +
			"compares the terminal's foreground group with its session, from the master side.",
		expect:         []Expect{{"ABI ≥ 1", "the foreground stays the session's group (seccomp denies TIOCSPGRP without --tty)"}},
		fallbackExpect: "the same (the filter is the same in every mode)",
		attack: func(t *T, m scMode) {
			master, slave := callerTerminal(t)
			defer master.Close()
			defer slave.Close()
			ready, release := t.WT+"/tty-ready", t.WT+"/tty-release"
			done, seen := make(chan struct{}), make(chan string, 1)
			go func() { // the terminal's foreground and session while the command waits, then release it
				defer os.WriteFile(release, nil, 0o644)
				for i := 0; i < pagerPolls*10; i++ {
					if _, err := os.Stat(ready); err == nil {
						fg, ferr := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPGRP)
						sid, serr := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGSID)
						if ferr != nil || serr != nil {
							seen <- fmt.Sprintf("unreadable: TIOCGPGRP %v, TIOCGSID %v", ferr, serr)
						} else {
							seen <- fmt.Sprintf("%d %d", fg, sid)
						}
						return
					}
					select {
					case <-done:
						seen <- "the command never got as far as waiting"
						return
					case <-time.After(pagerPoll / 10):
					}
				}
				seen <- "the command did not get as far as waiting in time"
			}()
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "tty-foreground", Path: release, Path2: ready}),
				scOpts{stdin: slave, ctty: true})
			close(done)
			got := <-seen
			m.ran(t, r)
			var fg, sid int
			if _, err := fmt.Sscanf(got, "%d %d", &fg, &sid); err != nil {
				t.Fatalf("the terminal's foreground could not be read while the command ran: %s", got)
			}
			judge(t, r, "tty", fg != sid, fmt.Sprintf("foreground process group %d, session %d, while the command waited", fg, sid))
		},
	},
	// 5. Signals.
	{
		name: "signals-kill", channel: "signals",
		title: "the command cannot signal a process of the caller's uid outside the sandbox",
		rationale: "Issue 10, route 5: the command killed its caller's shell and any process of its uid (as root, " +
			"every process). The runner starts a victim process of its own uid that records every SIGTERM it gets; " +
			"the command sends it SIGTERM with kill(2); the runner asks the victim what it received. Landlock ABI 6 " +
			"scopes signals; below it a PID namespace hides the victim.",
		expect: []Expect{{"ABI ≥ 6", "the victim receives nothing (LANDLOCK_SCOPE_SIGNAL, or a PID namespace)"},
			{"ABI 1-5", "closed with a PID namespace, else open and reported (expected.yaml)"}},
		fallbackExpect: "ABI ≥ 6: closed (Landlock); below: open and reported unless a PID namespace can be had",
		attack:         signalAttack("kill", "SIGTERM", strconv.Itoa(int(unix.SIGTERM))),
	},
	{
		name: "signals-pidfd", channel: "signals",
		title: "nor through a pidfd (pidfd_open, pidfd_send_signal)",
		rationale: "pidfd_send_signal is a second way to signal, by a descriptor rather than a PID. It must be " +
			"scoped like kill(2). The victim records the SIGTERM the command sends it through a pidfd.",
		expect: []Expect{{"ABI ≥ 6", "the victim receives nothing"},
			{"ABI 1-5", "closed with a PID namespace, else open and reported"}},
		fallbackExpect: "ABI ≥ 6: closed; below: open and reported unless a PID namespace can be had",
		attack:         signalAttack("pidfd-kill", "SIGTERM", strconv.Itoa(int(unix.SIGTERM))),
	},
	{
		name: "signals-sigio", channel: "signals",
		title: "nor by asking the kernel to send SIGIO (F_SETOWN on an O_ASYNC descriptor)",
		rationale: "fcntl(F_SETOWN, pid) on an O_ASYNC descriptor makes the kernel itself send SIGIO to pid when " +
			"I/O is ready, so no kill(2) is ever made. Landlock's signal scope covers it (the file_send_sigiotask " +
			"hook); a filter on kill(2) alone would not. The victim records the SIGIO.",
		expect: []Expect{{"ABI ≥ 6", "the victim receives nothing"},
			{"ABI 1-5", "closed with a PID namespace, else open and reported"}},
		fallbackExpect: "ABI ≥ 6: closed; below: open and reported unless a PID namespace can be had",
		attack:         signalAttack("sigio", "SIGIO", ""),
	},
	{
		name: "signals-prlimit", channel: "signals",
		title: "the command cannot change the resource limits of a process outside",
		rationale: "A route added by this family: prlimit64(pid) changes another process's resource limits with " +
			"no signal at all, for any process of the same uid (as root, of every root process), and Landlock's " +
			"signal scope does not cover it. The command lowers the victim's RLIMIT_NOFILE to 7; the runner reads " +
			"/proc/VICTIM/limits after. It is checked against the signals channel: the channel that is about " +
			"reaching processes outside.",
		expect:         []Expect{{"ABI ≥ 1", "the victim's limit unchanged (a PID namespace hides it), else open: a finding"}},
		fallbackExpect: "the same",
		attack: func(t *T, m scMode) {
			pid, stop := startVictim(t)
			before := procField(pid, "limits", "Max open files")
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "prlimit-nofile", Path: strconv.Itoa(pid), Arg: "7"}), scOpts{})
			after := procField(pid, "limits", "Max open files")
			stop()
			m.ran(t, r)
			judge(t, r, "signals", before != after, fmt.Sprintf("victim's 'Max open files' %q before, %q after", before, after))
		},
	},
	// 5b/6. Unix sockets.
	{
		name: "abstract-unix", channel: "abstract-unix",
		title: "the command cannot connect to an abstract unix socket served outside",
		rationale: "Issue 10, route 5: an abstract unix socket has no file, so no filesystem rule applies; a " +
			"daemon listening on one acts for whoever connects. The runner listens on an abstract address and " +
			"counts connections; the command connects and writes. Landlock ABI 6 scopes abstract sockets.",
		expect: []Expect{{"ABI ≥ 6", "no connection reaches the server (LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET)"},
			{"ABI 1-5", "open and reported (expected.yaml)"}},
		fallbackExpect: "ABI ≥ 6: closed; below: open and reported",
		attack: func(t *T, m scMode) {
			addr := "@" + tag(t, "abs")
			stop := unixServer(t, addr)
			r := m.confine(t, t.Flags(), t.HelperArgv(opArg("unix-connect", addr, "hello")), scOpts{})
			n, data := stop()
			m.ran(t, r)
			judge(t, r, "abstract-unix", n > 0, fmt.Sprintf("the server at %s accepted %d connection(s), received %q", addr, n, data))
		},
	},
	{
		name: "unix-pathname", channel: "unix-pathname",
		title: "the command cannot connect to a pathname unix socket served outside the writable set",
		rationale: "Issue 10, route 6: a daemon's pathname socket (Docker, tmux, D-Bus, systemd) acts for the " +
			"command unconfined; connect(2) needs no write right Landlock handled before ABI 9, and a read-only " +
			"mount does not stop it. The runner serves a socket in the outside tree and counts connections; the " +
			"command connects and writes. ABI 9 adds LANDLOCK_ACCESS_FS_RESOLVE_UNIX.",
		expect: []Expect{{"ABI ≥ 9", "no connection reaches the server (RESOLVE_UNIX)"},
			{"ABI 1-8", "open and reported (expected.yaml)"}},
		fallbackExpect: "ABI ≥ 9: closed; below: open and reported",
		setup: func(t *T) {
			t.Mkdir(t.Base + "/sock")
			t.Unwatch(t.Base + "/sock") // the runner's own server socket, bound and removed by the case
		},
		attack: func(t *T, m scMode) {
			addr := t.Base + "/sock/daemon.sock"
			os.Remove(addr)
			stop := unixServer(t, addr)
			r := m.confine(t, t.Flags(), t.HelperArgv(opArg("unix-connect", addr, "hello")), scOpts{})
			n, data := stop()
			m.ran(t, r)
			judge(t, r, "unix-pathname", n > 0, fmt.Sprintf("the server at %s accepted %d connection(s), received %q", addr, n, data))
		},
	},
	{
		name: "unix-pathname-allowed", channel: "unix-pathname",
		title: "--allow-socket lets the command connect to that one socket, and to no other beside it",
		rationale: "Issue 28, item 6: a signing or ssh agent serves a pathname socket outside the writable set, " +
			"which ABI 9 denies; --allow-socket grants RESOLVE_UNIX on that socket alone, and no write. The runner " +
			"serves two sockets in one outside directory; the command, given --allow-socket for the first, " +
			"connects to each. The first must accept everywhere; the second is the unix-pathname channel.",
		expect: []Expect{{"every ABI", "the allowed socket accepts the connection"},
			{"ABI ≥ 9", "its sibling in the same directory receives none"}, {"ABI 1-8", "the sibling: open and reported (expected.yaml)"}},
		fallbackExpect: "the same",
		setup: func(t *T) {
			t.Mkdir(t.Base + "/agent")
			t.Unwatch(t.Base + "/agent") // the runner's own server sockets, bound and removed by the case
		},
		attack: func(t *T, m scMode) {
			allowed, sibling := t.Base+"/agent/S.agent", t.Base+"/agent/S.other"
			os.Remove(allowed)
			os.Remove(sibling)
			flags := t.Flags("--allow-socket", allowed)
			stopAllowed := unixServer(t, allowed) // served through both runs: --allow-socket needs it to exist
			r := m.confine(t, flags, t.HelperArgv(opArg("unix-connect", allowed, "hello")), scOpts{})
			m.ran(t, r)
			stop := unixServer(t, sibling)
			rs := m.confine(t, flags, t.HelperArgv(opArg("unix-connect", sibling, "hello")), scOpts{})
			n, data := stop()
			if na, da := stopAllowed(); na == 0 || da != "hello" {
				t.Fatalf("the allowed socket %s accepted %d connection(s), received %q: %s", allowed, na, da, r.raw)
			}
			r = rs
			m.ran(t, r)
			judge(t, r, "unix-pathname", n > 0, fmt.Sprintf("the sibling %s accepted %d connection(s), received %q", sibling, n, data))
		},
	},
	// 7. Kernel state shared with the caller.
	{
		name: "keyring-session", channel: "keyring",
		title: "a key the command adds does not land in the caller's session keyring",
		rationale: "Issue 10, route 7: add_key into the caller's session keyring succeeded, so the command could " +
			"plant credentials (a Kerberos or fscrypt key) its caller would later use. The runner starts confine " +
			"from a process holding a fresh session keyring of its own, the command adds a key to its session " +
			"keyring, and the runner lists the caller's keyring after.",
		expect:         []Expect{{"ABI ≥ 1", "the caller's session keyring is empty (the command had a fresh one)"}},
		fallbackExpect: "the same (a session keyring needs no namespace)",
		attack: func(t *T, m scMode) {
			desc := tag(t, "key")
			r := m.confineWrapped(t, t.Flags(), t.HelperArgv(helper.Op{Op: "add-key", Path: desc, Path2: "session", Arg: "planted"}), tag(t, "ses"))
			m.ran(t, r.scRun)
			open := strings.Contains(r.keys, desc)
			judge(t, r.scRun, "keyring", open, fmt.Sprintf("the caller's session keyring after the command: %s", r.keys))
		},
	},
	{
		name: "keyring-user", channel: "keyring",
		title: "the command cannot add a key to its uid's user keyring",
		rationale: "The user keyring (KEY_SPEC_USER_KEYRING) is shared by every process of the uid and outlives " +
			"the command: a fresh session keyring alone does not isolate it. The command adds a key there; the " +
			"runner searches its own user keyring after (and removes the key).",
		expect:         []Expect{{"ABI ≥ 1", "no such key in the caller's user keyring"}},
		fallbackExpect: "the same",
		attack:         userKeyAttack(false),
	},
	{
		name: "keyring-user-by-id", channel: "keyring",
		title: "nor by the user keyring's serial number",
		rationale: "A filter that refuses the special id KEY_SPEC_USER_KEYRING is bypassed by the keyring's serial " +
			"number, which keyctl(KEYCTL_GET_KEYRING_ID) or /proc/keys tells any process of the uid. The runner " +
			"passes its user keyring's serial; the command adds a key to it; the runner searches after.",
		expect:         []Expect{{"ABI ≥ 1", "no such key in the caller's user keyring"}},
		fallbackExpect: "the same",
		attack:         userKeyAttack(true),
	},
	{
		name: "keyring-rewrite-linked", channel: "keyring",
		title: "nor rewrite a key of the caller's by linking it into its own session keyring first",
		rationale: "Found by the attack review: with the destination of add_key and KEYCTL_LINK filtered, the command " +
			"linked the caller's user keyring into its own session keyring (KEYCTL_LINK, or KEYCTL_SEARCH with the " +
			"session keyring as destination); every key in it was then possessed, and add_key with the same " +
			"description into the session keyring updated the caller's key in place. The runner adds a key to its " +
			"user keyring; the command tries the route, by special id as root and by serial as a user; the runner " +
			"reads the key's payload after.",
		expect:         []Expect{{"ABI ≥ 1", "the caller's key still holds its payload"}},
		fallbackExpect: "the same",
		attack: func(t *T, m scMode) {
			desc := tag(t, "rkey")
			id, err := unix.AddKey("user", desc, []byte("original"), unix.KEY_SPEC_USER_KEYRING)
			if err != nil {
				t.Skipf("cannot add a key to the user keyring here: %v", err)
			}
			defer unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
			ring := "user"
			if os.Geteuid() != 0 {
				uid, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, false)
				if err != nil {
					t.Fatalf("user keyring id: %v", err)
				}
				ring = strconv.Itoa(uid)
			}
			r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "key-rewrite", Path: desc, Path2: ring, Arg: "PWNED"}), scOpts{})
			m.ran(t, r)
			buf := make([]byte, 64)
			n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
			got := string(buf[:max(n, 0)])
			judge(t, r, "keyring", err != nil || got != "original", fmt.Sprintf("the caller's key %q reads %q (%v) after the command", desc, got, err))
		},
	},
	{
		name: "locks-flock", channel: "locks",
		title: "an advisory lock on a file outside is reported as the open channel it is",
		rationale: "Found by the attack review: flock(LOCK_EX) works through a read-only descriptor, so a command " +
			"(or a process it left behind) stalls every process of the caller that locks the same file. Tools lock " +
			"their own files all the time, so by default locks stay open and the report says so; --strict denies " +
			"flock and fcntl locks (leases are denied always; the seccomp tests cover both). The command takes the " +
			"lock and waits; the runner tries the same lock from outside meanwhile.",
		expect:         []Expect{{"ABI ≥ 1", "open and reported (expected.yaml): the runner finds the lock held"}},
		fallbackExpect: "the same",
		attack: func(t *T, m scMode) {
			ready := t.WT + "/locks-ready"
			target := t.Out + "/file.txt"
			var held bool
			r := m.confineStarted(t, t.Flags(), t.HelperArgv(helper.Op{Op: "flock-hold", Path: target},
				helper.Op{Op: "wait-signal", Path: ready, Arg: "0"}), "", func() {
				pid := findProc(t, ready)
				if fd, err := unix.Open(target, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
					held = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == unix.EWOULDBLOCK
					unix.Close(fd)
				}
				if pid > 0 {
					unix.Kill(pid, unix.SIGUSR1)
				}
			})
			m.ranNoResults(t, r)
			judge(t, r, "locks", held, fmt.Sprintf("the outside file was locked by the command: %v", held))
		},
	},
	{
		name: "caps-bounding", channel: "caps",
		title: "a root command has no CAP_SETFCAP, CAP_AUDIT_WRITE, CAP_SYS_RESOURCE or CAP_SYS_ADMIN, seen from outside",
		rationale: "Issue 10, route 7: root kept CAP_AUDIT_WRITE (messages in the host's audit log). The runner reads " +
			"the running command's /proc/PID/status from outside (found by its command line, whatever PID " +
			"namespace it is in) and checks the bounding and effective sets. As a user, the command must have no " +
			"effective capability in the initial user namespace.",
		expect:         []Expect{{"ABI ≥ 1", "root: none of CAP_SETFCAP, CAP_AUDIT_WRITE, CAP_SYS_RESOURCE, CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_MKNOD in CapBnd or CapEff; a user: CapEff 0 or a user namespace of its own"}},
		fallbackExpect: "the same",
		attack: func(t *T, m scMode) {
			ready := t.WT + "/caps-ready"
			var pid int
			var status string
			r := m.confineStarted(t, t.Flags(), t.HelperArgv(opArg("wait-signal", ready, "0")), "", func() {
				pid = findProc(t, ready)
				if pid > 0 {
					b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
					status = string(b)
					uidmap, _ := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", pid))
					status += "uid_map: " + strings.Join(strings.Fields(string(uidmap)), " ") + "\n"
					unix.Kill(pid, unix.SIGUSR1)
				}
			})
			if pid == 0 {
				t.Fatalf("the command's process was never found")
			}
			m.ranNoResults(t, r)
			bnd, eff := capField(status, "CapBnd:"), capField(status, "CapEff:")
			var bad []string
			if os.Geteuid() == 0 {
				for name, bit := range map[string]uint{"CAP_SETFCAP": 31, "CAP_AUDIT_WRITE": 29, "CAP_SYS_RESOURCE": 24,
					"CAP_SYS_ADMIN": 21, "CAP_SYS_MODULE": 16, "CAP_MKNOD": 27} {
					if (bnd|eff)&(1<<bit) != 0 {
						bad = append(bad, name)
					}
				}
			} else if eff != 0 && strings.Contains(status, "uid_map: 0 0 4294967295") {
				bad = append(bad, fmt.Sprintf("CapEff %#x in the initial user namespace", eff))
			}
			judge(t, r, "caps", len(bad) > 0, fmt.Sprintf("command pid %d: CapBnd %#x CapEff %#x; kept: %v", pid, bnd, eff, bad))
		},
	},
	{
		name: "core-dump", channel: "core-dump",
		title: "a crashing command dumps no core, to a file or to a core_pattern pipe",
		rationale: "Issue 10, route 7: a piped core_pattern runs its helper as root outside the sandbox with the " +
			"command's memory; a file pattern writes wherever the pattern says. RLIMIT_CORE with a hard limit of 1 " +
			"stops both (the kernel treats 1 as 'no pipe dump'). The command tries to raise its limit and aborts; " +
			"the runner reads the command's limit from /proc/PID/limits while it runs, and looks for a core file " +
			"afterwards in the command's working directory.",
		expect:         []Expect{{"ABI ≥ 1", "the command's hard core limit is at most 1 and no core file appears"}},
		fallbackExpect: "the same",
		attack: func(t *T, m scMode) {
			ready := t.WT + "/core-ready"
			var limit string
			r := m.confineStarted(t, t.Flags(), t.HelperArgv(op("core-wait", ready)), t.WT, func() {
				if pid := findProc(t, ready); pid > 0 {
					limit = procField(pid, "limits", "Max core file size")
					unix.Kill(pid, unix.SIGUSR1)
				}
			})
			if r.rep == nil || r.rep.Outcome != "exec" {
				t.Fatalf("confine did not exec the command: %q", r.raw)
			}
			fields := strings.Fields(limit)
			hard := "?"
			if len(fields) >= 2 {
				hard = fields[1]
			}
			cores, _ := filepath.Glob(t.WT + "/core*")
			var found []string
			for _, c := range cores {
				if filepath.Base(c) != "core-ready" {
					found = append(found, c)
				}
			}
			pattern, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
			open := len(found) > 0 || (hard != "0" && hard != "1")
			judge(t, r, "core-dump", open, fmt.Sprintf("core_pattern %q; the command's core limit %q (hard %s); signal %v; core files %v",
				strings.TrimSpace(string(pattern)), limit, hard, r.signal, found))
		},
	},
	// 8. The fallback's metadata gaps (checked in both modes).
	{
		name: "metadata-uring-xattr", channel: "metadata",
		title: "io_uring cannot set an xattr on a file outside",
		rationale: "Issue 10, route 8: IORING_OP_SETXATTR changed xattrs of outside files in the fallback, where " +
			"seccomp (which cannot see io_uring operations) was the only metadata guard. The command sets " +
			"user.conformance on the outside file through io_uring; the runner reads the xattr after (and the " +
			"invariant snapshot compares every other attribute).",
		expect:         []Expect{{"ABI ≥ 1", "the outside file's xattr unchanged (EROFS under the mount layer)"}},
		fallbackExpect: "the xattr unchanged (io_uring denied)",
		attack: func(t *T, m scMode) {
			before := getxattr(t.Out+"/file.txt", "user.conformance")
			r := m.confine(t, t.Flags(), t.HelperArgv(opArg("uring-setxattr", t.Out+"/file.txt", "changed")), scOpts{})
			m.ran(t, r)
			after := getxattr(t.Out+"/file.txt", "user.conformance")
			judge(t, r, "metadata", before != after, fmt.Sprintf("outside user.conformance %q before, %q after", before, after))
		},
	},
	{
		name: "metadata-file-setattr", channel: "metadata",
		title: "file_setattr (6.17) cannot set an inode flag on a file outside",
		rationale: "Issue 10, route 8: file_setattr, new in 6.17, sets inode flags by path, and a seccomp list " +
			"written before it existed does not deny it. The command sets FS_XFLAG_NODUMP on the outside file; the " +
			"runner reads the file's flags (FS_IOC_GETFLAGS) after. Where the kernel has no file_setattr the route " +
			"cannot be taken and the case says so.",
		expect:         []Expect{{"ABI ≥ 1", "the outside file's flags unchanged"}},
		fallbackExpect: "the same (file_setattr denied)",
		attack: func(t *T, m scMode) {
			before, ferr := getFlags(t.Out + "/file.txt")
			if ferr != nil {
				t.Logf("FS_IOC_GETFLAGS unsupported here (%v): the mode and ctime snapshot is the check", ferr)
			}
			r := m.confine(t, t.Flags(), t.HelperArgv(opArg("file-setattr", t.Out+"/file.txt", "128")), scOpts{})
			m.ran(t, r)
			after, _ := getFlags(t.Out + "/file.txt")
			t.Logf("file_setattr in the command: %s", resultsText(r.results))
			judge(t, r, "metadata", before != after, fmt.Sprintf("outside flags %#x before, %#x after", before, after))
		},
	},
	{
		name: "metadata-xattrat", channel: "metadata",
		title: "setxattrat and removexattrat (6.13) cannot change an xattr of a file outside",
		rationale: "setxattrat and removexattrat, new in 6.13, set and remove xattrs by a path relative to a " +
			"directory descriptor: two more system calls a seccomp list or a supervisor written before them would " +
			"not see. The command sets user.conformance on the outside file, which holds it, then removes it; the " +
			"runner reads the xattr after (and the invariant snapshot compares every xattr). A control of each " +
			"call without confine, on a copy of the trees, shows whether the route exists here: where it does " +
			"not (ENOSYS before 6.13, EOPNOTSUPP on a file system without user xattrs) the case logs that it " +
			"proves nothing more than a clean run.",
		expect:         []Expect{{"ABI ≥ 1", "the outside file's xattr unchanged"}},
		fallbackExpect: "the same (setxattrat and removexattrat denied)",
		setup: func(t *T) { // the control, in copies of the trees, before the invariant snapshot
			if ctl := t.ControlEach(xattratOps); !ctl[0] && !ctl[1] {
				t.Logf("neither call works here without confine (control above): the route cannot be taken, and this run shows only that nothing changed")
			}
		},
		attack: func(t *T, m scMode) {
			target := t.Out + "/file.txt"
			before := getxattr(target, "user.conformance")
			r := m.confine(t, t.Flags(), t.HelperArgv(xattratOps(t.Out, t.WT)...), scOpts{})
			m.ran(t, r)
			after := getxattr(target, "user.conformance")
			t.Logf("setxattrat, removexattrat in the command: %s", resultsText(r.results))
			judge(t, r, "metadata", before != after, fmt.Sprintf("outside user.conformance %q before, %q after", before, after))
		},
	},
	{
		name: "metadata-atime", channel: "metadata",
		title: "reading a file outside does not update its access time",
		rationale: "Issue 10, route 8: in the fallback, reads update atime outside (relatime updates an atime " +
			"older than the mtime), a change of state outside that no write right covers; the mount layer's " +
			"read-only mounts stop it. The runner sets an outside file's atime before its mtime, checks that a " +
			"read updates it without confine (the control: not on a noatime mount), and after the command has " +
			"read it compares the atime.",
		expect:         []Expect{{"ABI ≥ 1", "the atime unchanged (read-only mount)"}},
		fallbackExpect: "closed, or open and reported (expected.yaml): a seccomp filter cannot stop atime updates",
		setup: func(t *T) {
			// Kept out of the invariant snapshot, which reads every watched file (and so updates its atime): the
			// case compares this file's atime itself. Its other attributes are not the route.
			for _, p := range []string{t.Base + "/atime.txt", t.Base + "/atime-control.txt"} {
				t.WriteFile(p, "read me\n", 0o644)
				t.Unwatch(p)
			}
		},
		attack: func(t *T, m scMode) {
			target, ctl := t.Base+"/atime.txt", t.Base+"/atime-control.txt"
			setOldAtime(t, ctl)
			ctlBefore := atime(ctl)
			t.Control(op("read", ctl))
			if atime(ctl) == ctlBefore {
				t.Skipf("a read does not update atime here even without confine (noatime mount?): the route cannot be observed")
			}
			setOldAtime(t, target)
			before := atime(target)
			r := m.confine(t, t.Flags(), t.HelperArgv(op("read", target)), scOpts{})
			m.ran(t, r)
			after := atime(target)
			channel := "metadata"
			if _, ok := r.rep.Channels["atime"]; ok { // the launcher reports atime as a channel of its own
				channel = "atime"
			}
			judge(t, r, channel, before != after, fmt.Sprintf("outside atime %d before, %d after", before, after))
		},
	},
	// The report contract itself.
	{
		name: "strict", channel: "",
		title: "--strict refuses with 125, naming every channel the report calls open, and runs where none is",
		rationale: "A caller that needs every channel closed asks for --strict: confine must then refuse (exit 125, " +
			"nothing run) whenever a channel is open on this kernel and in this mode, and say which. The case reads " +
			"the channels of a plain run's report, then runs --strict with a sentinel command.",
		expect:         []Expect{{"ABI ≥ 1", "every channel has a status; with any open: exit 125, no sentinel, each open channel named on stderr; with none: the command runs"}},
		fallbackExpect: "the same, in the fallback's channel statuses",
		attack: func(t *T, m scMode) {
			r := m.confine(t, t.Flags(), t.HelperArgv(op("pid", "")), scOpts{})
			m.ran(t, r)
			var open, missing []string
			for _, name := range Channels {
				_, ok := r.rep.Channels[name]
				if !ok {
					missing = append(missing, name)
					continue
				}
			}
			for name, st := range r.rep.Channels { // every channel the report names, beyond the contract's too
				if st.Status == "open" && !strictCloses[name] {
					open = append(open, name)
				}
			}
			if len(missing) > 0 {
				t.Fatalf("report.channels has no %v: %s", missing, r.raw)
			}
			sentinel := t.WT + "/strict-ran"
			s := m.confine(t, t.Flags("--strict"), t.HelperArgv(opArg("create", sentinel, "x")), scOpts{})
			if len(open) == 0 {
				if s.exit != 0 || !Exists(sentinel) {
					t.Errorf("no channel open, yet --strict did not run the command: exit %d, stderr %q", s.exit, s.stderr)
				}
				return
			}
			if s.exit != 125 || Exists(sentinel) {
				t.Errorf("channels %v open, yet --strict gave exit %d (sentinel exists: %v), want 125 and nothing run", open, s.exit, Exists(sentinel))
			}
			// The refusal names the channels open in the plan it refused. Where a mount layer is tried and only
			// then found missing (a host whose namespaces allow everything but mounts), that plan is the
			// layer's, which leaves fewer open than the run without --strict ended with: so every channel named
			// must be open, and at least one is named.
			named := strictNamed(s.stderr)
			for _, name := range named {
				if st, ok := r.rep.Channels[name]; !ok || st.Status != "open" {
					t.Errorf("--strict named channel %s, which the run without it reported %q: %q", name, st.Status, s.stderr)
				}
			}
			if len(named) == 0 {
				t.Errorf("--strict refused without naming any of the open channels %v: %q", open, s.stderr)
			}
		},
	},
	{
		name: "probe-channels", channel: "",
		title: "confine probe prints a status line for every channel",
		rationale: "`confine probe` must tell an operator, before anything runs, which channels this kernel and " +
			"this host leave open: one line `channel:  NAME: closed (how)` or `channel:  NAME: open (why)` per channel. The case checks " +
			"that every channel of the contract is listed once with one of the two statuses.",
		expect:         []Expect{{"ABI ≥ 1", "one 'NAME: closed|open (…)' line per channel"}},
		fallbackExpect: "the same, where probe itself runs without namespaces",
		attack: func(t *T, m scMode) {
			argv := []string{t.cfg.Confine, "probe"}
			if m.fallback {
				argv = []string{t.cfg.Self, "no-namespaces", "--", t.cfg.Confine, "probe"}
			}
			r := t.Unconfined(argv, Opts{})
			if r.Exit != 0 {
				t.Fatalf("confine probe: exit %d, stderr %q", r.Exit, r.Stderr)
			}
			for _, name := range Channels {
				var lines []string
				for _, l := range strings.Split(r.Stdout, "\n") {
					// `channel:  NAME: status (how)`; other lines (`metadata: mount-layer`) are not channels.
					rest, ok := strings.CutPrefix(strings.TrimSpace(l), "channel:")
					if l = strings.TrimSpace(rest); ok && strings.HasPrefix(l, name+":") {
						lines = append(lines, l)
					}
				}
				if len(lines) != 1 {
					t.Errorf("probe: %d lines for channel %s, want 1 (%q)", len(lines), name, lines)
					continue
				}
				rest := strings.TrimSpace(strings.TrimPrefix(lines[0], name+":"))
				if !strings.HasPrefix(rest, "closed") && !strings.HasPrefix(rest, "open") {
					t.Errorf("probe: %q, want %s: closed|open (how)", lines[0], name)
				}
			}
		},
	},
}

func errOr(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// signalAttack: the command sends sig (a number; the victim's pid is the path) with op; the victim records it.
func signalAttack(opName, sigName, sig string) func(t *T, m scMode) {
	return func(t *T, m scMode) {
		pid, stop := startVictim(t)
		r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: opName, Path: strconv.Itoa(pid), Arg: sig}), scOpts{})
		got := stop()
		m.ran(t, r)
		judge(t, r, "signals", strings.Contains(got, sigName), fmt.Sprintf("the victim (pid %d, outside) recorded %q", pid, got))
	}
}

func userKeyAttack(byID bool) func(t *T, m scMode) {
	return func(t *T, m scMode) {
		desc := tag(t, "ukey")
		ring := "user"
		if byID {
			id, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, true)
			if err != nil {
				t.Skipf("no user keyring here: %v", err)
			}
			ring = strconv.Itoa(id)
		}
		defer func() {
			if id, ok := keySearch(unix.KEY_SPEC_USER_KEYRING, desc); ok {
				unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
			}
		}()
		r := m.confine(t, t.Flags(), t.HelperArgv(helper.Op{Op: "add-key", Path: desc, Path2: ring, Arg: "planted"}), scOpts{})
		m.ran(t, r)
		_, found := keySearch(unix.KEY_SPEC_USER_KEYRING, desc)
		judge(t, r, "keyring", found, fmt.Sprintf("key %q in the caller's user keyring (%s) after the command: %v", desc, ring, found))
	}
}

// wrappedRun is a run through the session-keyring wrapper, with what the caller's keyring held after.
type wrappedRun struct {
	scRun
	keys string
}

// confineWrapped runs confine from `helper [session-keyring ring]`: a process with a fresh session keyring that
// stays alive to list it after confine has exited.
func (m scMode) confineWrapped(t *T, flags, argv []string, ring string) wrappedRun {
	r := m.confine(t, flags, argv, scOpts{wrap: func(inner []string) []string {
		b, _ := json.Marshal(inner)
		return t.HelperArgv(helper.Op{Op: "session-keyring", Path: ring, Arg: string(b)})
	}})
	w := wrappedRun{scRun: r}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var res []helper.Result
	if json.Unmarshal([]byte(lines[len(lines)-1]), &res) != nil || len(res) != 1 || !res[0].OK {
		if len(res) == 1 && (res[0].Errno == "EPERM" || res[0].Errno == "ENOSYS") {
			t.Skipf("the host denies keyctl (%s), as Docker's default seccomp profile does: no session keyring can be "+
				"made for the caller, and none can be reached from the command", res[0].Errno)
		}
		t.Fatalf("session-keyring wrapper: stdout %q stderr %q", r.stdout, r.stderr)
	}
	var out struct {
		Exit int      `json:"exit"`
		Keys []string `json:"keys"`
	}
	json.Unmarshal([]byte(res[0].Data), &out)
	w.keys = strings.Join(out.Keys, ", ")
	if w.keys == "" {
		w.keys = "(empty)"
	}
	return w
}

// confineStarted runs confine and calls during while it runs (in a goroutine), waiting for both.
func (m scMode) confineStarted(t *T, flags, argv []string, dir string, during func()) scRun {
	done := make(chan struct{})
	go func() { defer close(done); during() }()
	r := m.confine(t, flags, argv, scOpts{dir: dir})
	<-done
	return r
}

// ranNoResults is ran for a command that prints no results (it ends by a signal or an exit).
func (m scMode) ranNoResults(t *T, r scRun) {
	if r.rep == nil || r.rep.Outcome != "exec" {
		t.Fatalf("%s: confine did not exec the command: exit %d, report %q, stderr %q", m.name(), r.exit, r.raw, r.stderr)
	}
	if m.fallback && !contains(fallbackMetadata, r.rep.Metadata) {
		t.Errorf("fallback: report.metadata %q, want supervisor or seccomp-deny", r.rep.Metadata)
	}
}

func capField(status, key string) uint64 {
	for _, l := range strings.Split(status, "\n") {
		if strings.HasPrefix(l, key) {
			v, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(l, key)), 16, 64)
			return v
		}
	}
	return 0
}

// xattratOps are side-channels/metadata-xattrat's calls on out's file.txt: setxattrat of user.conformance, then
// removexattrat of it.
func xattratOps(out, _ string) []helper.Op {
	return []helper.Op{opArg("setxattrat", out+"/file.txt", "changed"), op("removexattrat", out+"/file.txt")}
}

func getxattr(path, name string) string {
	buf := make([]byte, 256)
	n, err := unix.Lgetxattr(path, name, buf)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(buf[:n])
}

func getFlags(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
}

func setOldAtime(t *T, path string) {
	// atime 2001, mtime 2002: relatime then updates the atime on the next read.
	ts := []unix.Timespec{{Sec: 978307200}, {Sec: 1009843200}}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatalf("fixture: utimensat: %v", err)
	}
}

func atime(path string) int64 {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return -1
	}
	return st.Atim.Sec*1e9 + st.Atim.Nsec
}
