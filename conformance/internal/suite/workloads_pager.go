package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pagerPolls is how many times, pagerPoll apart, the runner looks for what it waits for on the terminal (a
// screen drawn, the process gone) before it fails: a generous bound, not a timing assertion.
const (
	pagerPolls = 300
	pagerPoll  = 100 * time.Millisecond
)

// openPTY opens a new pseudo-terminal of 24 rows and 80 columns: its master and its slave (both without making it
// the runner's controlling terminal).
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	if err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err == nil {
		var n int
		if n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN); err == nil {
			slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
		}
	}
	if err == nil {
		err = unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80})
	}
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// screen collects what a terminal's master side reads, for polling.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}
func (s *screen) has(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Contains(s.buf.String(), text)
}
func (s *screen) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buf.String()
	return fmt.Sprintf("%q", b[max(0, len(b)-200):])
}

// pagerRun is one run of less in a terminal: the steps it reached, its exit, its report (confined), and the
// first step it did not reach ("" when it drew the first screen, paged on space and exited on q).
type pagerRun struct {
	steps  []string
	exit   int
	report *Report
	failed string
}

// runPager runs `less pager.txt` (100 numbered lines) with a new pseudo-terminal as its controlling terminal and
// descriptors 0 to 2, in dir, confined with mode m or not: it waits for the first screen (line 23), sends a space
// and waits for the next (line 45), sends q, and waits for the process to end. The bounds are pagerPolls looks,
// pagerPoll apart, per step; a process still running after them is killed.
func runPager(t *T, dir string, confined bool, m wlMode) pagerRun {
	var lines strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&lines, "pager line %d\n", i)
	}
	t.WriteFile(dir+"/pager.txt", lines.String(), 0o644)
	t.Mkdir(dir + "/.home")
	less, _ := exec.LookPath("less")
	path, args := less, []string{"pager.txt"}
	var rp, wp *os.File
	if confined {
		var err error
		if rp, wp, err = os.Pipe(); err != nil {
			t.Fatalf("pipe: %v", err)
		}
		flags := append([]string{"--report-fd", "3"}, t.Flags()...)
		if t.cfg.ForceBackend != "" {
			flags = append(flags, "--backend", t.cfg.ForceBackend)
		}
		path, args = t.cfg.Confine, append(append(flags, "--"), less, "pager.txt")
		if m.noNS {
			path, args = t.cfg.Self, append([]string{"no-namespaces", "--", t.cfg.Confine}, args...)
		}
	}
	master, slave, err := openPTY()
	if err != nil {
		t.Skipf("cannot open a pseudo-terminal here: %v", err)
	}
	defer master.Close()
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Env = append(wlEnv(dir, "TERM=xterm", "LINES=24", "COLUMNS=80"), t.cfg.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if wp != nil {
		cmd.ExtraFiles = []*os.File{wp}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	slave.Close()
	var report []byte
	reported := make(chan struct{})
	if wp != nil {
		wp.Close()
		go func() { defer close(reported); var b bytes.Buffer; b.ReadFrom(rp); report = b.Bytes(); rp.Close() }()
	} else {
		close(reported)
	}
	var scr screen
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			scr.Write(b[:max(n, 0)])
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(exited) }()
	done := func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}
	var p pagerRun
	// wait polls for ok; a process that ends before ok holds (confine refusing, less failing) ends the wait at once.
	wait := func(what string, ok func() bool) bool {
		for i := 0; i < pagerPolls; i++ {
			if ok() {
				p.steps = append(p.steps, what)
				return true
			}
			if done() {
				time.Sleep(pagerPoll) // the last output, read by then
				p.failed = fmt.Sprintf("%s: the process ended first; the terminal's last output: %s", what, scr.tail())
				return false
			}
			time.Sleep(pagerPoll)
		}
		p.failed = fmt.Sprintf("%s: not within %s; the terminal's last output: %s", what, pagerPolls*pagerPoll, scr.tail())
		return false
	}
	if wait("first screen", func() bool { return scr.has("pager line 23") }) {
		master.Write([]byte(" "))
		if wait("paged on space", func() bool { return scr.has("pager line 45") }) {
			master.Write([]byte("q"))
			wait("exited on q", done)
		}
	}
	if !done() {
		cmd.Process.Kill()
		<-exited
	}
	<-reported
	t.progress.Store(time.Now().UnixNano())
	t.done.Add(1)
	p.exit = cmd.ProcessState.ExitCode()
	if werr != nil && p.exit == 0 {
		p.exit = -1
	}
	if s := strings.TrimSpace(string(report)); s != "" {
		var rep Report
		first, _, _ := strings.Cut(s, "\n")
		if json.Unmarshal([]byte(first), &rep) == nil {
			p.report = &rep
		}
	}
	return p
}

var pagerCase = Case{
	ID:    "workloads/pager-pty",
	Title: "less in a pseudo-terminal draws its screen, pages on space and exits on q, as unconfined",
	Rationale: "A pager is what git log, man and many CLIs open when their output is a terminal: it reads keys " +
		"from the terminal (reopening /dev/tty), sets its modes, draws with the terminal's escapes and restores " +
		"it on q. Under confine without --tty the caller's terminal stays usable through descriptors 0 to 2 and, " +
		"with the mount layer, through /dev/tty (sandbox/README.md, --tty); without a mount layer or under bwrap " +
		"/dev/tty cannot be held to it, and less must still work through the descriptors. The runner opens a " +
		"pseudo-terminal (24×80) and runs `less` on a 100-line file with it as the controlling terminal and " +
		"descriptors 0 to 2, unconfined and then confined: it waits for the first screen, sends a space and waits " +
		"for the next, sends q and waits for the process to end with status 0, each step within a generous bound " +
		"(30 s) that fails loudly. " + wlModesText,
	Expect: []Expect{{"ABI ≥ 1, mount-layer or supervisor", "first screen, next screen on space, exit 0 on q"},
		{"bwrap (no Landlock, or --backend bwrap)", "the same"},
		{"`less` absent", "SKIP, with the reason"}, {"a VM guest", "SKIP: runs in the host suite only"}},
	Needs: Needs{Confined: true, Tools: []string{"less"}, HostOnly: wlHostOnly},
	Setup: func(t *T) { t.Mkdir(t.Base + "/control"); t.Unwatch(t.Base + "/control") },
	Run: func(t *T) {
		ctl := runPager(t, t.Base+"/control", false, wlMode{})
		if ctl.failed != "" || ctl.exit != 0 {
			t.Skipf("less does not work in a pseudo-terminal without confine (exit %d): %s", ctl.exit, ctl.failed)
		}
		t.Logf("control (unconfined): %s, exit %d", strings.Join(ctl.steps, ", "), ctl.exit)
		for _, m := range wlModes(t) {
			p := runPager(t, t.WT+"/"+m.dir, true, m)
			mode := wlModeOf(Run{Report: p.report})
			if p.report == nil || p.report.Outcome != "exec" {
				t.Errorf("%s: confine did not run less (exit %d): %s", m.name, p.exit, p.failed)
				continue
			}
			t.Logf("%s (%s): %s, exit %d", m.name, mode, strings.Join(p.steps, ", "), p.exit)
			switch {
			case p.failed != "":
				t.Errorf("%s: %s", mode, p.failed)
			case p.exit != 0:
				t.Errorf("%s: less exited %d on q, want 0", mode, p.exit)
			}
		}
	},
}
