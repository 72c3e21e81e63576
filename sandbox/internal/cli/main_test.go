package cli

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/launch"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// normalize takes out of a report what depends on who runs the test rather than on the launcher: why the mount
// layer is missing (root unshares in place, anyone else starts a child) becomes a placeholder, and root's
// capability line goes.
func normalize(t *testing.T, raw string) []byte {
	t.Helper()
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &rep), "report %q", raw)
	warnings := []any{}
	for _, w := range rep["warnings"].([]any) {
		text := w.(string)
		switch {
		case strings.HasPrefix(text, "root: "):
			continue
		case strings.HasPrefix(text, "mount layer unavailable: "):
			text = "mount layer unavailable: $WHY"
		}
		warnings = append(warnings, text)
	}
	rep["warnings"] = warnings
	// Root's own words for its capabilities.
	if ch, ok := rep["channels"].(map[string]any); ok {
		for _, name := range []string{"caps"} {
			if c, ok := ch[name].(map[string]any); ok {
				c["how"] = "$BY-UID"
			}
		}
	}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	return b
}

// fakeEnv selects a fake kernel in a re-executed test binary. Only the test binary reads it: the shipped
// launcher has no such hook.
const fakeEnv = "CONFINE_TEST_FAKE_KERNEL"

// truncateEnv makes the test binary, run as the confined command, call truncate(2) on its value.
const truncateEnv = "CONFINE_TEST_TRUNCATE"

// addKeyEnv makes the test binary, run as the confined command, call add_key(2) into its session keyring and
// print the errno name (or "added").
const addKeyEnv = "CONFINE_TEST_ADD_KEY"

// peekEnv makes the test binary, run as the confined command, try to open /proc/PPID/task/TID/mem for each
// thread of its parent (PTRACE_MODE_ATTACH, as ptrace and process_vm_writev need) and print "opened TID" for
// each it could, then "done".
const peekEnv = "CONFINE_TEST_PEEK_PARENT"

// TestMain lets the test binary act as confine with a fake kernel: the real Exec stays, so if a refusal were
// missed the sentinel command would really run.
func TestMain(m *testing.M) {
	if path, ok := os.LookupEnv(truncateEnv); ok { // the confined command: one truncate(2) by path
		if err := unix.Truncate(path, 0); err != nil {
			fmt.Println(unix.ErrnoName(err.(unix.Errno)))
			os.Exit(1)
		}
		fmt.Println("truncated")
		os.Exit(0)
	}
	if _, ok := os.LookupEnv(peekEnv); ok {
		// PPid from /proc, not getppid(2): in a PID namespace of its own the parent is 1, but /proc is the host's.
		status, _ := os.ReadFile("/proc/self/status")
		ppid := ""
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				ppid = strings.TrimSpace(v)
			}
		}
		task := "/proc/" + ppid + "/task"
		tids, _ := os.ReadDir(task)
		for _, tid := range tids {
			if f, err := os.Open(task + "/" + tid.Name() + "/mem"); err == nil {
				f.Close()
				fmt.Println("opened", tid.Name())
			}
		}
		fmt.Println("done", len(tids))
		os.Exit(0)
	}
	if _, ok := os.LookupEnv(addKeyEnv); ok {
		_, err := unix.AddKey("user", "confine-test", []byte("x"), unix.KEY_SPEC_SESSION_KEYRING)
		if err != nil {
			fmt.Println(unix.ErrnoName(err.(unix.Errno)))
			os.Exit(1)
		}
		fmt.Println("added")
		os.Exit(0)
	}
	if spec, ok := os.LookupEnv(fakeEnv); ok {
		f := newFake(spec)
		if f.hostDeniesKeyctl {
			denyKeyctl()
		}
		os.Exit(Main(os.Args[1:], f.facts(), f, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// fake answers what spec says ("abi=enosys,addrule=EINVAL,..."), and passes everything else to the host.
type fake struct {
	launch.Host
	abi, errata                     int
	abiErr, addErr, restrErr, scErr error
	release                         string
	interop                         launch.Interop
	noLayer                         bool
	abortLayer                      bool
	noSupervisor                    bool   // no seccomp listener can be had (EBUSY)
	hostDeniesKeyctl                bool   // a filter like Docker's default profile answers keyctl with EPERM
	listenErr                       error  // the supervised child's seccomp listener fails (as EBUSY under another supervisor)
	swap                            string // a root to swap for a symlink to swap+".outside" once it was opened
	buildErr                        error  // the mount layer fails to build, uncommitted (root in place, or in the child)
	die                             bool   // the process building the mount layer dies by SIGKILL
}

func errno(name string) error {
	for _, e := range []unix.Errno{unix.ENOSYS, unix.EOPNOTSUPP, unix.EINVAL, unix.EPERM, unix.E2BIG, unix.EBUSY} {
		if strings.EqualFold(unix.ErrnoName(e), name) || (name == "EOPNOTSUPP" && e == unix.EOPNOTSUPP) {
			return e
		}
	}
	panic("unknown errno " + name)
}

func newFake(spec string) *fake {
	f := &fake{abi: -1, errata: 0}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "abi":
			if n, err := strconv.Atoi(v); err == nil {
				f.abi = n
			} else {
				f.abiErr = errno(v)
			}
		case "errata":
			f.errata, _ = strconv.Atoi(v)
		case "addrule":
			f.addErr = errno(v)
		case "restrict":
			f.restrErr = errno(v)
		case "seccomp":
			f.scErr = errno(v)
		case "release":
			f.release = v
		case "interop":
			f.interop = launch.Interop(v)
		case "layer":
			f.noLayer = v == "off"
			f.abortLayer = v == "abort"
		case "hostkeyctl":
			f.hostDeniesKeyctl = v == "EPERM"
		case "supervisor":
			f.noSupervisor = v == "off"
		case "listener":
			f.listenErr = errno(v)
		case "swap":
			f.swap = v
		case "buildlayer":
			f.buildErr = errno(v)
		case "die":
			f.die = true
		}
	}
	return f
}

func (f *fake) CreateRuleset(handled, scoped uint64, flags uint32) (int, error) {
	switch {
	case flags == unix.LANDLOCK_CREATE_RULESET_VERSION && (f.abi >= 0 || f.abiErr != nil):
		return f.abi, f.abiErr
	case flags == unix.LANDLOCK_CREATE_RULESET_ERRATA && (f.abi >= 0 || f.abiErr != nil):
		return f.errata, nil
	}
	return f.Host.CreateRuleset(handled, scoped, flags)
}
func (f *fake) AddPathBeneath(rs int, allowed uint64, fd int) error {
	if f.addErr != nil {
		return f.addErr
	}
	return f.Host.AddPathBeneath(rs, allowed, fd)
}
func (f *fake) RestrictSelf(rs int) error {
	if f.restrErr != nil {
		return f.restrErr
	}
	return f.Host.RestrictSelf(rs)
}
func (f *fake) SetSeccomp(prog []unix.SockFilter) error {
	if f.scErr != nil {
		return f.scErr
	}
	return f.Host.SetSeccomp(prog)
}
func (f *fake) SetSeccompListener(prog []unix.SockFilter) (int, error) {
	switch {
	case f.listenErr != nil:
		return -1, f.listenErr
	case f.noSupervisor:
		return -1, unix.EBUSY
	}
	return f.Host.SetSeccompListener(prog)
}
func (f *fake) UnshareMountNS() (func() error, error) {
	if f.noLayer {
		return nil, unix.EPERM
	}
	return f.Host.UnshareMountNS()
}
func (f *fake) StartLayered(reportFD int, pidNS bool) (launch.LayeredChild, error) {
	if f.noLayer {
		return nil, fmt.Errorf("%w: user namespaces are off in this test", launch.ErrLayerUnavailable)
	}
	if f.abortLayer { // a child that starts, and is given up before it is handed a plan
		if c, err := f.Host.StartLayered(reportFD, pidNS); err == nil {
			c.Abort()
		}
		return nil, fmt.Errorf("%w: the layered child was aborted in this test", launch.ErrLayerUnavailable)
	}
	c, err := f.Host.StartLayered(reportFD, pidNS)
	if err != nil || f.swap == "" {
		return c, err
	}
	return swapping{c, f}, nil
}

// swapping hands the plan over only after the fake swapped its root: the roots are open by then.
type swapping struct {
	launch.LayeredChild
	f *fake
}

func (s swapping) Run(h *launch.Handoff) (syscall.WaitStatus, error) {
	s.f.swapRoot()
	return s.LayeredChild.Run(h)
}

// LayerAvailable and SupervisorAvailable answer probe as the fake answers a run: no layer where its namespaces,
// its child or its build fail; no listener where one is held.
func (f *fake) LayerAvailable(pidNS bool) error {
	if f.noLayer || f.buildErr != nil || f.abortLayer && (pidNS || os.Geteuid() != 0) { // abort: a layered child's
		return fmt.Errorf("%w: the layer is off in this test", launch.ErrLayerUnavailable)
	}
	return f.Host.LayerAvailable(pidNS)
}
func (f *fake) SupervisorAvailable() error {
	if f.noSupervisor || f.listenErr != nil {
		return fmt.Errorf("%w: the listener is held in this test", launch.ErrSupervisorUnavailable)
	}
	return f.Host.SupervisorAvailable()
}

func (f *fake) BuildMountLayer(roots []*pathfd.Root, priv launch.Private) (launch.Mounted, bool, error) {
	f.swapRoot()
	if f.die {
		unix.Kill(os.Getpid(), unix.SIGKILL)
	}
	if f.buildErr != nil {
		return launch.Mounted{Devpts: -1, Shm: -1}, false, f.buildErr
	}
	return f.Host.BuildMountLayer(roots, priv)
}

// swapRoot renames the root f.swap to f.swap+".validated" and puts a symlink to f.swap+".outside" in its place,
// once: the attack of a caller racing the launcher between its open and its use of a root.
func (f *fake) swapRoot() {
	if f.swap == "" {
		return
	}
	if _, err := os.Lstat(f.swap + ".validated"); err == nil {
		return
	}
	if err := os.Rename(f.swap, f.swap+".validated"); err != nil {
		panic(err)
	}
	if err := os.Symlink(f.swap+".outside", f.swap); err != nil {
		panic(err)
	}
}

// facts are the host's, with the release and WSL interop the spec names.
func (f *fake) facts() launch.Facts {
	facts := launch.ReadFacts()
	facts.Release = "6.99.0-test"
	if f.release != "" {
		facts.Release = f.release
	}
	if os.Getenv(noBwrapEnv) != "" {
		facts.Bwrap, facts.BwrapSet, facts.BwrapDirs = "", false, []string{"/nonexistent/confine-test"}
	}
	facts.WSL = launch.DetectWSL(facts.Release)
	facts.Interop = launch.InteropDisabled
	if facts.WSL == launch.WSL2 {
		facts.Interop = launch.InteropUnknown
		if f.interop != "" {
			facts.Interop = f.interop
		}
	}
	return facts
}

type result struct {
	status   int
	stderr   string
	report   map[string]any
	raw      string
	sentinel bool
	// sentinelPath is $S, which the command may have written.
	sentinelPath string
	// terminal is what the command wrote to its terminal, where confineOnTerminal ran it on one.
	terminal string
}

// confine runs the test binary as confine with the fake kernel spec, a report on fd 3, and args in which
// $W is a fresh worktree and $S a sentinel path that exists only if the command ran.
func confine(t *testing.T, spec string, args ...string) result {
	t.Helper()
	return confineEnv(t, nil, spec, args...)
}

// noBwrap is an environment in which the fake (facts) finds no bwrap: it looks in no directory, whatever
// CONFINE_BWRAP says. A kernel without Landlock then has no backend.
func noBwrap(t *testing.T) []string { return []string{noBwrapEnv + "=1"} }

// noBwrapEnv makes the fake's Facts name no directory to look bwrap up in, and no CONFINE_BWRAP.
const noBwrapEnv = "CONFINE_TEST_NO_BWRAP"

// confineEnv is confine with env added to the environment.
func confineEnv(t *testing.T, env []string, spec string, args ...string) result {
	t.Helper()
	return confineWith(t, env, spec, false, args...)
}

// confineOnTerminal is confine in a session of its own whose controlling terminal, a new pseudo-terminal, is on
// its descriptors 0 to 2 (as a shell's foreground job has it); the result's terminal is what came out of it.
func confineOnTerminal(t *testing.T, spec string, args ...string) result {
	t.Helper()
	return confineWith(t, nil, spec, true, args...)
}

// openPty opens a new pseudo-terminal pair from /dev/ptmx (unlocked with TIOCSPTLCK, named with TIOCGPTN).
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("needs a pseudo-terminal: %v", err)
	}
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	return m, s
}

func confineWith(t *testing.T, env []string, spec string, terminal bool, args ...string) result {
	t.Helper()
	w := t.TempDir()
	sentinel := filepath.Join(w, "SENTINEL")
	for i := range args {
		args[i] = strings.NewReplacer("$W", w, "$S", sentinel).Replace(args[i])
	}
	rep, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(withoutTempVars(os.Environ()), fakeEnv+"="+spec), env...) // no warning line about the caller's TMPDIR
	cmd.ExtraFiles = []*os.File{rep}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var output chan string
	if terminal {
		master, slave := openPty(t)
		defer master.Close()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		output = make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(master) // EIO once no one holds the terminal open
			output <- string(b)
		}()
		err = cmd.Run()
		slave.Close()
	} else {
		err = cmd.Run()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(rep.Name())
	r := result{status: cmd.ProcessState.ExitCode(), stderr: stderr.String(),
		raw: strings.ReplaceAll(string(raw), w, "$W")}
	if len(raw) > 0 { // the report; an exec-failed record may follow it on the next line
		first, _, _ := bytes.Cut(raw, []byte("\n"))
		require.NoError(t, json.Unmarshal(first, &r.report), "report: %s", raw)
	}
	_, err = os.Stat(sentinel)
	r.sentinel, r.sentinelPath = err == nil, sentinel
	if terminal {
		r.terminal = <-output
		r.stderr = r.terminal
	}
	return r
}

func requireLandlock(t *testing.T) {
	t.Helper()
	// landlock.Query, not launch.Probe: Probe starts /proc/self/exe, which here is this test binary.
	if st, err := landlock.Query(landlock.Host{}); err != nil || st.ABI < 1 {
		t.Skipf("needs Landlock on the host kernel: %s (%v)", st.State, err)
	}
}

func TestSentinelRunsWhenConfinementHolds(t *testing.T) {
	requireLandlock(t)
	r := confine(t, "", "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", ": > $S")
	require.Equal(t, 0, r.status, r.stderr)
	require.True(t, r.sentinel, "control: the sentinel mechanism must be able to see a run")
	require.Equal(t, "exec", r.report["outcome"])
}

func TestFailClosed(t *testing.T) {
	sh := []string{"--", "/bin/sh", "-c", ": > $S"}
	cases := []struct {
		name, spec string
		args       []string
		reason     report.Reason
		needsLL    bool
	}{
		{"landlock absent", "abi=ENOSYS", nil, report.LandlockAbsent, false},
		{"landlock disabled", "abi=EOPNOTSUPP", nil, report.LandlockDisabled, false},
		{"landlock absent, explicit backend", "abi=ENOSYS", []string{"--backend", "landlock"}, report.LandlockAbsent, false},
		{"bwrap asked for", "abi=7", []string{"--backend", "bwrap"}, report.BackendUnavailable, false},
		{"wsl1", "release=4.4.0-19041-Microsoft", nil, report.WSL1, false},
		// WSL2's interop is closed in the mount layer; without one (supervisor or seccomp-deny) it is refused.
		{"wsl2 interop enabled, no layer", "abi=3,release=6.6.36.6-microsoft-standard-WSL2,interop=enabled,layer=off", nil, report.WSL2Interop, true},
		{"wsl2 interop unknown, no layer", "abi=3,release=6.6.36.6-microsoft-standard-WSL2,interop=unknown,layer=off", nil, report.WSL2Interop, true},
		{"wsl2 interop enabled, no layer nor listener", "abi=3,release=6.6.36.6-microsoft-standard-WSL2,interop=enabled,layer=off,supervisor=off", nil, report.WSL2Interop, true},
		{"wsl2 interop enabled, --strict with --allow-interop", "abi=3,release=6.6.36.6-microsoft-standard-WSL2,interop=enabled", []string{"--allow-interop", "--strict"}, report.ChannelOpen, true},
		{"rule fails", "abi=7,addrule=EINVAL", nil, report.Ruleset, true},
		{"restrict fails", "abi=7,restrict=EPERM", nil, report.Ruleset, true},
		{"seccomp fails", "abi=7,seccomp=EINVAL", nil, report.Seccomp, true},
		{"missing worktree", "abi=7", []string{"--allow", "/nonexistent/confine-test"}, report.BadRoot, false},
		{"symlinked allow", "abi=7", []string{"--allow", "/proc/self/cwd"}, report.BadRoot, false},
		{"bad flag", "abi=7", []string{"--nope"}, report.Usage, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needsLL {
				requireLandlock(t)
			}
			args := append(append([]string{"--worktree", "$W", "--report-fd", "3"}, c.args...), sh...)
			r := confineEnv(t, noBwrap(t), c.spec, args...)
			require.Equal(t, launch.ExitRefused, r.status, "stderr: %s", r.stderr)
			require.False(t, r.sentinel, "the command ran")
			require.Equal(t, "refused", r.report["outcome"], r.raw)
			require.Equal(t, string(c.reason), r.report["reason"], r.raw)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			require.Len(t, lines, 1, "one line on stderr, from one process: %q", r.stderr)
			require.True(t, strings.HasPrefix(lines[0], "confine: "), "stderr line %q", lines[0])
			require.Empty(t, r.report["command"], "a refused report names no command: %s", r.raw)
		})
	}
}

// Refusals of the caller's input name the flag and say what to pass instead, on one line (exit 125, nothing runs).
func TestRefusalsSayWhatToDo(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--worktree", "$W", "--report-fd", "99"}, "confine: --report-fd 99: bad file descriptor (open it in the caller, e.g. 99>FILE)\n"},
		{[]string{"--worktree", "$W", "--allow", "/proc/sys"}, "confine: --allow: bad path: /proc/sys is in /proc, which holds kernel state, not files\n"},
		{[]string{"--worktree", "wt"}, `confine: --worktree: bad path: wt is not absolute; pass an absolute path, e.g. "$(realpath wt)"` + "\n"},
		{[]string{"--worktree", "/dev/null"}, "confine: --worktree: bad path: /dev/null is not a directory\n"},
	} {
		r := confineEnv(t, nil, "abi=7", append(c.args, "--", "/bin/sh", "-c", ": > $S")...)
		require.Equal(t, launch.ExitRefused, r.status, "%v: %s", c.args, r.stderr)
		require.False(t, r.sentinel, "%v: the command ran", c.args)
		require.Equal(t, c.want, r.stderr, "%v", c.args)
	}
}

func TestReportGolden(t *testing.T) {
	cases := map[string]struct {
		spec    string
		args    []string
		needsLL bool
	}{
		"abi1":            {"abi=1,errata=0", []string{"--worktree", "$W", "--tty"}, true},
		"abi2-nolayer":    {"abi=2,errata=0,layer=off,supervisor=off", []string{"--worktree", "$W"}, true},
		"abi2-supervisor": {"abi=2,errata=0,layer=off", []string{"--worktree", "$W"}, true},
		"abi3":            {"abi=3,errata=1", []string{"--worktree", "$W"}, true},
		"abi7":            {"abi=7,errata=7", []string{"--worktree", "$W", "--allow", "/dev/zero"}, true},
		"read-only":       {"abi=6,errata=15", []string{"--mode", "read-only"}, true},
		"absent":          {"abi=ENOSYS", []string{"--worktree", "$W"}, false}, // and no bwrap
		"disabled":        {"abi=EOPNOTSUPP", []string{"--worktree", "$W"}, false},
		"usage":           {"abi=7", []string{"--mode", "nope"}, false},
		"wsl2-abi3":       {"abi=3,errata=0,release=6.6.36.6-microsoft-standard-WSL2,interop=disabled", []string{"--worktree", "$W"}, true},
		"wsl2-interop":    {"abi=3,errata=0,release=6.6.36.6-microsoft-standard-WSL2,interop=enabled", []string{"--worktree", "$W"}, true},
		"wsl2-allow-interop": {"abi=3,errata=0,release=6.6.36.6-microsoft-standard-WSL2,interop=enabled",
			[]string{"--worktree", "$W", "--allow-interop"}, true},
		"wsl2-allow-interop-nolayer": {"abi=3,errata=0,release=6.6.36.6-microsoft-standard-WSL2,interop=enabled,layer=off",
			[]string{"--worktree", "$W", "--allow-interop"}, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.needsLL {
				requireLandlock(t)
			}
			r := confineEnv(t, noBwrap(t), c.spec, append(append([]string{"--report-fd", "3"}, c.args...), "--", "/bin/true")...)
			raw := normalize(t, r.raw)
			golden := filepath.Join("testdata", name+".golden.json")
			var pretty bytes.Buffer
			require.NoError(t, json.Indent(&pretty, raw, "", "  "), "raw %q, stderr %s", r.raw, r.stderr)
			if *update {
				require.NoError(t, os.WriteFile(golden, pretty.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create it")
			require.Equal(t, string(want), pretty.String())
		})
	}
}

// An older ABI answer makes the launcher build that ABI's ruleset on this kernel, which enforces it as such:
// any domain denies cross-directory rename unless REFER is granted, and truncate is left to seccomp below 3.
func TestOlderABIRulesetsOnThisKernel(t *testing.T) {
	requireLandlock(t)
	// ln has no copy fallback on EXDEV, unlike mv.
	script := `cd "$0" && mkdir a b && echo x > a/f && ln a/f a/g && echo same-dir-ok && ln a/g b/g && echo cross-dir-ok`
	r := confine(t, "abi=1", "--worktree", "$W", "--", "/bin/sh", "-c", script, "$W")
	require.NotEqual(t, 0, r.status)
	require.Equal(t, "same-dir-ok\n", stdoutOf(t, "abi=1", script))
	require.Equal(t, "same-dir-ok\ncross-dir-ok\n", stdoutOf(t, "abi=2", script))

	require.Equal(t, "EPERM\n", truncateIn(t, "abi=2,layer=off"), "ABI 2 without the mount layer: "+
		"truncate(2) is denied by seccomp, even inside")
	require.Equal(t, "truncated\n", truncateIn(t, "abi=2"), "ABI 2 with the mount layer: allowed inside")
	require.Equal(t, "truncated\n", truncateIn(t, "abi=3,layer=off"), "ABI 3: Landlock allows TRUNCATE inside")
}

func truncateIn(t *testing.T, spec string) string {
	t.Helper()
	w := t.TempDir()
	f := filepath.Join(w, "f")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	// env(1) gives only the confined child the helper variable, and takes the fake kernel away from it.
	cmd := exec.Command(os.Args[0], "--worktree", w, "--", "env", "-u", fakeEnv, truncateEnv+"="+f, os.Args[0])
	cmd.Env = append(os.Environ(), fakeEnv+"="+spec)
	out, _ := cmd.Output()
	return string(out)
}

func stdoutOf(t *testing.T, spec, script string) string {
	t.Helper()
	w := t.TempDir()
	cmd := exec.Command(os.Args[0], "--worktree", w, "--", "/bin/sh", "-c", script, w)
	cmd.Env = append(os.Environ(), fakeEnv+"="+spec)
	out, _ := cmd.Output()
	return string(out)
}

// Without the mount layer, Landlock alone must deny: the kernel answers EACCES, not EROFS.
func TestLandlockAloneDeniesOutside(t *testing.T) {
	requireLandlock(t)
	base, err := os.MkdirTemp("/var/tmp", "confine-ll")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	target := filepath.Join(base, "outside")
	for spec, metadata := range map[string]string{"layer=off": "supervisor", "layer=off,supervisor=off": "seccomp-deny"} {
		r := confine(t, spec, "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", "echo x > "+target)
		require.NotEqual(t, 0, r.status, spec)
		require.Contains(t, r.stderr, "Permission denied", spec)
		require.NoFileExists(t, target, spec)
		require.Equal(t, metadata, r.report["metadata"], spec)
	}
}

// The roots are opened once: a root swapped for a symlink right after the launcher opened it changes nothing.
// The command writes where the validated directory now is, and the symlink's target stays read-only, as root
// (layer in place) and as anyone else (the layered child, which opens no path).
func TestASwappedRootIsNeverReopened(t *testing.T) {
	requireLandlock(t)
	base, err := os.MkdirTemp("/var/tmp", "confine-swap") // not under /tmp, which is writable
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o777))
	w := filepath.Join(base, "w")
	for _, d := range []string{w, w + ".outside"} {
		require.NoError(t, os.Mkdir(d, 0o777))
		require.NoError(t, os.Chmod(d, 0o777))
	}
	cmd := exec.Command(os.Args[0], "--worktree", w, "--", "/bin/sh", "-c",
		`echo in > "$0.validated/in"; echo out > "$0/out"; echo done`, w)
	cmd.Env = append(os.Environ(), fakeEnv+"=swap="+w)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "done")
	fi, err := os.Lstat(w)
	require.NoError(t, err)
	require.Equal(t, os.ModeSymlink, fi.Mode()&os.ModeSymlink, "the swap happened")
	require.FileExists(t, filepath.Join(w+".validated", "in"), "the validated directory stays writable: %s", out)
	require.NoFileExists(t, filepath.Join(w+".outside", "out"), "the symlink's target was written: %s", out)
}

// A worktree beneath another writable root (here an --allow of its parent) that another process replaces before
// the layer is built is not found again through the outer root's clone: the launch is refused (bad-root), in
// place as root and in the layered child otherwise, never run without the layer (the attack review found the
// layered child falling back to the supervisor, with the worktree's git metadata unguarded).
func TestASwappedNestedRootIsRefused(t *testing.T) {
	requireLandlock(t)
	base, err := os.MkdirTemp("/var/tmp", "confine-swap") // not under /tmp, which is writable
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	p := filepath.Join(base, "p")
	w := filepath.Join(p, "w")
	for _, d := range []string{base, p, w, w + ".outside"} {
		require.NoError(t, os.MkdirAll(d, 0o777))
		require.NoError(t, os.Chmod(d, 0o777))
	}
	rep, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	ran := filepath.Join(base, "ran")
	cmd := exec.Command(os.Args[0], "--worktree", w, "--allow", p, "--report-fd", "3", "--", "/bin/sh", "-c", `echo ran > "$0"`, ran)
	cmd.Env = append(os.Environ(), fakeEnv+"=swap="+w)
	cmd.ExtraFiles = []*os.File{rep}
	out, _ := cmd.CombinedOutput()
	raw, _ := os.ReadFile(rep.Name())
	require.Equal(t, 125, cmd.ProcessState.ExitCode(), "%s\n%s", out, raw)
	require.Contains(t, string(raw), `"reason":"bad-root"`, "%s", out)
	require.NoFileExists(t, ran)
}

// In read-only mode a checkout's git metadata is closed, with or without a mount layer: the worktree and its
// git directory lie in no writable root (a launch where one does is refused), so --strict does not refuse for it;
// unless its config reaches elsewhere (an include, core.hooksPath), which is named.
func TestReadOnlyModeClosesGitMetadata(t *testing.T) {
	requireLandlock(t)
	base, err := os.MkdirTemp("/var/tmp", "confine-ro") // not under /tmp, which is writable
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	require.NoError(t, os.Mkdir(filepath.Join(base, ".git"), 0o755))
	rep, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "--mode", "read-only", "--worktree", base, "--report-fd", "3", "--", "/bin/true")
	cmd.Env = append(os.Environ(), fakeEnv+"=")
	cmd.ExtraFiles = []*os.File{rep}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var r struct {
		Channels map[string]struct{ Status, How string }
	}
	raw, _ := os.ReadFile(rep.Name())
	require.NoError(t, json.Unmarshal(raw, &r), "%s", raw)
	require.Equal(t, "closed", r.Channels["git-metadata"].Status, "%s", raw)
	require.Contains(t, r.Channels["git-metadata"].How, "read-only mode")
	// A core.hooksPath (here in /tmp, which the command writes) is named, and the channel is open.
	require.NoError(t, os.WriteFile(filepath.Join(base, ".git", "config"), []byte("[core]\n\thooksPath = /tmp/h\n"), 0o644))
	cmd = exec.Command(os.Args[0], "--mode", "read-only", "--worktree", base, "--report-fd", "3", "--", "/bin/true")
	cmd.Env = append(os.Environ(), fakeEnv+"=")
	rep, err = os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd.ExtraFiles = []*os.File{rep}
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	raw, _ = os.ReadFile(rep.Name())
	require.NoError(t, json.Unmarshal(raw, &r), "%s", raw)
	require.Equal(t, "open", r.Channels["git-metadata"].Status, "%s", raw)
	require.Contains(t, r.Channels["git-metadata"].How, "core.hooksPath")
}

// A separate git directory inside a --protect'ed directory is left to that bind: it is no writable root there (the
// attack review wrote into it through one), and confine makes no placeholder in it.
func TestASeparateGitDirInAProtectedDirStaysReadOnly(t *testing.T) {
	requireLandlock(t)
	base, err := os.MkdirTemp("/var/tmp", "confine-prot") // not under /tmp, which is writable
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	g := filepath.Join(base, ".prot", "g")
	require.NoError(t, os.MkdirAll(g, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(base, ".git"), []byte("gitdir: .prot/g\n"), 0o644))
	for _, d := range []string{base, filepath.Join(base, ".prot"), g} {
		require.NoError(t, os.Chmod(d, 0o777))
	}
	cmd := exec.Command(os.Args[0], "--protect", filepath.Join(base, ".prot"), "--worktree", base, "--",
		"/bin/sh", "-c", `echo x > "$0/planted"`, g)
	cmd.Env = append(os.Environ(), fakeEnv+"=")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() == 125 && strings.Contains(string(out), "protect-unavailable") {
		t.Skip("no mount layer here: --protect is refused: " + string(out))
	}
	require.NotEqual(t, 0, cmd.ProcessState.ExitCode(), "%s", out)
	entries, err := os.ReadDir(g)
	require.NoError(t, err)
	require.Empty(t, entries, "%s", out) // neither the command's file nor a placeholder of confine's
}

// When the layer cannot be built where it is tried (in place as root, in the layered child otherwise), nothing
// has run: confine goes on with the descriptors it opened, under the seccomp fallback, and still confines.
func TestALayerThatFailsToBuildFallsBackConfined(t *testing.T) {
	requireLandlock(t)
	base, err := os.MkdirTemp("/var/tmp", "confine-fallback") // not under /tmp, which is writable
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	target := filepath.Join(base, "outside")
	r := confine(t, "buildlayer=EPERM", "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c",
		`echo out > "$1"; echo in > "$0"`, "$S", target)
	require.Equal(t, "supervisor", r.report["metadata"], r.raw)
	require.Contains(t, fmt.Sprint(r.report["warnings"]), "mount layer unavailable")
	require.Contains(t, r.stderr, "Permission denied", "Landlock denies the write outside")
	require.NoFileExists(t, target)
	require.True(t, r.sentinel, "the write inside works: %s", r.stderr)
}

// A layered child that dies before executing the command is a refusal (125, a refused report), never the
// command's own result.
func TestALayeredChildThatDiesIsARefusal(t *testing.T) {
	requireLandlock(t)
	if os.Geteuid() == 0 {
		t.Skip("as root the layer is built in place, without a layered child; make sandbox-test runs this as nobody too")
	}
	r := confine(t, "die", "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", ": > $S")
	require.Equal(t, launch.ExitRefused, r.status, r.stderr)
	require.False(t, r.sentinel)
	require.Equal(t, "refused", r.report["outcome"], r.raw)
	require.Equal(t, "internal", r.report["reason"], r.raw)
	require.Contains(t, r.stderr, "killed by SIGKILL")
}

// An execve that fails after the report was written exits 126 or 127 with one line on stderr, whichever
// process executes the command.
func TestAFailedExecIsOneLineAndItsStatus(t *testing.T) {
	requireLandlock(t)
	w := t.TempDir()
	script := filepath.Join(w, "script")
	require.NoError(t, os.WriteFile(script, []byte("#!/nonexistent/interpreter\n"), 0o755))
	cmd := exec.Command(os.Args[0], "--worktree", w, "--", script)
	cmd.Env = append(os.Environ(), fakeEnv+"=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	require.Equal(t, launch.ExitNotFound, cmd.ProcessState.ExitCode(), stderr.String())
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	require.Len(t, lines, 1, "%q", stderr.String())
	require.True(t, strings.HasPrefix(lines[0], "confine: "+script+": "), lines[0])
}

// --strict refuses when any channel stays open, names each, and runs nothing; without it the same run goes on
// and reports the open channels.
func TestStrictRefusesAnOpenChannel(t *testing.T) {
	requireLandlock(t)
	r := confine(t, "abi=5,errata=0", "--report-fd", "3", "--strict", "--worktree", "$W", "--", "/bin/touch", "$S")
	require.Equal(t, launch.ExitRefused, r.status, "stderr: %s", r.stderr)
	require.False(t, r.sentinel, "the command ran")
	require.Equal(t, string(report.ChannelOpen), r.report["reason"], r.raw)
	require.NotContains(t, r.stderr, "signals", "a PID namespace closes it below ABI 6")
	require.Contains(t, r.stderr, "abstract-unix")
	require.Contains(t, r.stderr, "unix-pathname")

	r = confine(t, "abi=5,errata=0", "--report-fd", "3", "--worktree", "$W", "--", "/bin/touch", "$S")
	require.Equal(t, 0, r.status, "stderr: %s", r.stderr)
	require.True(t, r.sentinel, "the command did not run")
	ch := r.report["channels"].(map[string]any)
	require.Equal(t, "open", ch["abstract-unix"].(map[string]any)["status"], r.raw)
	require.Equal(t, "closed", ch["signals"].(map[string]any)["status"], r.raw)
	require.Equal(t, "closed", ch["keyring"].(map[string]any)["status"], r.raw)
}

// A writable root with a kernel filesystem mounted beneath it is refused, so /proc/sys cannot be reached as a
// path inside the worktree (Landlock's rule and the mount layer's clone would both cover the submount).
func TestAProcfsInsideTheWorktreeIsRefused(t *testing.T) {
	requireLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a procfs inside the worktree")
	}
	// Not under /tmp, a default root of every confine: other tests' launches running meanwhile would refuse.
	w, err := os.MkdirTemp("/var/tmp", "confine-procfs-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(w) })
	require.NoError(t, os.Mkdir(filepath.Join(w, "proc"), 0o755))
	require.NoError(t, unix.Mount("proc", filepath.Join(w, "proc"), "proc", 0, ""))
	t.Cleanup(func() { unix.Unmount(filepath.Join(w, "proc"), unix.MNT_DETACH) })
	r := confine(t, "abi=7,errata=0", "--report-fd", "3", "--worktree", w, "--", "/bin/touch", "$S")
	require.Equal(t, launch.ExitRefused, r.status, "stderr: %s", r.stderr)
	require.Equal(t, string(report.BadRoot), r.report["reason"], r.raw)
	require.Contains(t, r.stderr, "has a proc mounted beneath it")
}

// Below Landlock ABI 6 the command runs in a PID namespace of its own, under a layered child as its init: it
// cannot signal a process outside, and nothing it started outlives it.
func TestBelowABI6APIDNamespaceHidesEveryProcessOutside(t *testing.T) {
	requireLandlock(t)
	victim := exec.Command("sleep", "600")
	require.NoError(t, victim.Start())
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	marker := "confine-pidns-" + strconv.Itoa(os.Getpid())
	script := `kill -TERM ` + strconv.Itoa(victim.Process.Pid) + ` 2>/dev/null && exit 3
		grep CapEff /proc/self/status > "$0"
		exec -a ` + marker + ` sleep 600 &`
	r := confine(t, "abi=5,errata=0", "--report-fd", "3", "--worktree", "$W", "--", "/bin/sh", "-c", script, "$S")
	require.Equal(t, 0, r.status, "stderr: %s", r.stderr)
	require.True(t, r.sentinel, "the command did not run")
	require.Equal(t, "closed", r.report["channels"].(map[string]any)["signals"].(map[string]any)["status"], r.raw)
	require.NoError(t, victim.Process.Signal(syscall.Signal(0)), "the victim outside was signalled")
	// Root's command keeps only rootCaps there too (the attack review found the layered root child kept all).
	capEff, err := os.ReadFile(r.sentinelPath)
	require.NoError(t, err)
	eff, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(capEff), "CapEff:")), 16, 64)
	require.NoError(t, err, "%q", capEff)
	require.Zero(t, eff&(1<<unix.CAP_SYS_ADMIN|1<<unix.CAP_SETFCAP|1<<unix.CAP_SYS_MODULE|1<<unix.CAP_KILL),
		"the command kept capabilities it must not: CapEff %#x", eff)
	// The background sleep died with the namespace: no process outside has its name.
	names, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	for _, name := range names {
		b, _ := os.ReadFile(name)
		require.NotContains(t, string(b), marker, "%s outlived confine", name)
	}
}

// Whichever process executes the command (root in place, the layered child, the init of a PID namespace below
// ABI 6, or the seccomp fallback in place), a failed execve after the report is written once, as a second
// record by that process, and said once on stderr.
func TestAFailedExecIsRecordedAfterTheReport(t *testing.T) {
	requireLandlock(t)
	dir, err := os.MkdirTemp("/var/tmp", "confine-execfail")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	noInterp, interp := missingInterpreterELF(t, dir)
	foreign, machine := "", ""
	if gobin, err := exec.LookPath("go"); err == nil || os.Getenv(foreignEnv) != "" {
		foreign, machine = foreignBinary(t, gobin, dir)
	} else {
		t.Log("no go command: the wrong-arch case is left to cmd/confine's test")
	}
	for _, spec := range []string{"abi=7,errata=0", "abi=5,errata=0", "abi=7,errata=0,layer=off"} {
		r := confine(t, spec, "--worktree", "$W", "--report-fd", "3", "--", noInterp)
		require.Equal(t, launch.ExitNotFound, r.status, "%s: %s", spec, r.stderr)
		lines := strings.Split(strings.TrimSuffix(r.raw, "\n"), "\n")
		require.Len(t, lines, 2, "%s: %s", spec, r.raw)
		var first, rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
		require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
		require.Equal(t, "exec", first["outcome"], spec)
		require.Equal(t, "exec-failed", rec["outcome"], spec)
		require.Equal(t, string(report.InterpreterMissing), rec["reason"], spec)
		require.Equal(t, interp, rec["interpreter"], spec)
		require.Equal(t, float64(127), rec["status"], spec)
		require.Equal(t, "confine: "+rec["error"].(string)+"\n", r.stderr, spec)
		if foreign == "" {
			continue
		}
		r = confine(t, spec, "--worktree", "$W", "--report-fd", "3", "--", foreign)
		require.Equal(t, launch.ExitCannotExec, r.status, "%s: %s", spec, r.stderr)
		lines = strings.Split(strings.TrimSuffix(r.raw, "\n"), "\n")
		require.Len(t, lines, 2, "%s: %s", spec, r.raw)
		require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
		require.Equal(t, string(report.WrongArch), rec["reason"], spec)
		require.Equal(t, machine, rec["machine"], spec)
		require.Equal(t, "ENOEXEC", rec["errno"], spec)
		require.Contains(t, r.stderr, "ELF "+machine+" on ", spec)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "%s: %q", spec, r.stderr)
	}
}

// foreignBinary builds a tiny Go program for the other architecture into dir (see cmd/confine's test).
func foreignBinary(t *testing.T, gobin, dir string) (path, machine string) {
	t.Helper()
	goarch, machine := "arm64", "aarch64"
	if runtime.GOARCH == "arm64" {
		goarch, machine = "amd64", "x86_64"
	}
	src := filepath.Join(dir, "foreign-src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"ran\") }\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module foreign\n\ngo 1.22\n"), 0o644))
	path = filepath.Join(dir, "foreign-"+goarch)
	if pre := os.Getenv(foreignEnv); pre != "" { // built beforehand (scripts/sandbox-test-nobody.sh)
		path = pre
	} else {
		build := exec.Command(gobin, "build", "-o", path, ".")
		build.Dir = src
		build.Env = append(os.Environ(), "GOARCH="+goarch, "CGO_ENABLED=0", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "GOARCH=%s go build: %s", goarch, out)
	}
	if err := exec.Command(path).Run(); err == nil {
		t.Skipf("this host runs %s binaries (binfmt_misc, qemu-user): no exec failure to classify", goarch)
	}
	return path, machine
}

// missingInterpreterELF copies /bin/true into dir with its PT_INTERP pointing nowhere (see cmd/confine's test).
func missingInterpreterELF(t *testing.T, dir string) (path, interp string) {
	t.Helper()
	f, err := elf.Open("/bin/true")
	require.NoError(t, err)
	defer f.Close()
	var ph *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			ph = p
		}
	}
	if ph == nil {
		t.Skip("/bin/true has no PT_INTERP here")
	}
	b, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	interp = "/nonexistent/ld.so"
	require.Greater(t, int(ph.Filesz), len(interp))
	field := b[ph.Off : ph.Off+ph.Filesz]
	copy(field, make([]byte, len(field)))
	copy(field, interp)
	path = filepath.Join(dir, "true-no-interp")
	require.NoError(t, os.WriteFile(path, b, 0o755))
	return path, interp
}

// foreignEnv names a prebuilt binary of the other architecture (the tiny program foreignBinary builds), so that
// a run as nobody need not build Go's runtime for it from a cold cache.
const foreignEnv = "CONFINE_TEST_FOREIGN_BIN"

// /dev/shm is a private tmpfs wherever the mount layer is built (in place, in the layered child, under the PID
// namespace's init), with its rule on the tmpfs; without the layer there is no private one, so the host's keeps
// its rule and is writable (POSIX shared memory and semaphores work: issue 28), and the report says so, with the
// shm channel open.
func TestDevShmIsPrivateOrShared(t *testing.T) {
	requireLandlock(t)
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skip("this host has no /dev/shm directory")
	}
	mark := "/dev/shm/confine-cli-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { os.Remove(mark) })
	script := `echo x > "$1" && : > "$0"`
	for _, spec := range []string{"abi=7,errata=0", "abi=5,errata=0"} {
		r := confine(t, spec, "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", script, "$S", mark)
		require.Equal(t, 0, r.status, "%s: %s", spec, r.stderr)
		require.True(t, r.sentinel, spec)
		require.Equal(t, "mount-layer", r.report["metadata"], spec)
		require.Contains(t, r.raw, `"path":"/dev/shm"`, spec)
		require.NoFileExists(t, mark, "%s: the host's /dev/shm was written", spec)
		require.Equal(t, "closed", shmChannel(t, r.report)["status"], spec)
	}
	r := confine(t, "abi=7,errata=0,layer=off", "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", script, "$S", mark)
	require.Equal(t, 0, r.status, r.stderr)
	require.True(t, r.sentinel)
	require.FileExists(t, mark, "the host's /dev/shm is writable without the layer")
	require.Contains(t, r.raw, `"path":"/dev/shm"`, "the rule on the host's /dev/shm")
	require.Contains(t, fmt.Sprint(r.report["warnings"]), "no private /dev/shm: the host's is writable")
	require.Equal(t, "open", shmChannel(t, r.report)["status"])
}

// shmChannel is the report's channel shm.
func shmChannel(t *testing.T, rep map[string]any) map[string]any {
	t.Helper()
	ch, _ := rep["channels"].(map[string]any)
	shm, ok := ch["shm"].(map[string]any)
	require.True(t, ok, "no channel shm in %v", rep["channels"])
	return shm
}

// withoutTempVars is env without the temporary-directory variables confine warns about.
func withoutTempVars(env []string) []string {
	var out []string
	for _, kv := range env {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "TMPDIR", "TMP", "TEMP", "GOTMPDIR", "XDG_RUNTIME_DIR":
		default:
			out = append(out, kv)
		}
	}
	return out
}

// outsideDir is a directory for the outside tree of a test: not under /tmp, which is writable under confine.
func outsideDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "confine-outside")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	return base
}

// Without the mount layer, the supervisor makes metadata changes beneath the writable roots (by path, through
// a symlink inside, and by descriptor) and answers EPERM outside: through a symlink in the worktree, by a
// descriptor on an outside file, through /proc/self/fd, and to an outside directory. Nothing outside changes.
// Both where no namespace can be had (layer=off) and where they can but the layer's mounts fail
// (buildlayer=EPERM: root's unshare worked, so the command must not be left in that new mount namespace, whose
// mounts the supervisor never matches; touch's futimens failed there).
func TestSupervisorChangesMetadataOnlyBeneathRoots(t *testing.T) {
	for _, spec := range []string{"layer=off", "buildlayer=EPERM"} {
		t.Run(spec, func(t *testing.T) { testSupervisorChangesMetadataOnlyBeneathRoots(t, spec) })
	}
}

func testSupervisorChangesMetadataOnlyBeneathRoots(t *testing.T, spec string) {
	requireLandlock(t)
	out := outsideDir(t)
	victim := filepath.Join(out, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("x"), 0o644))
	old := time.Unix(1_000_000_000, 0)
	require.NoError(t, os.Chtimes(victim, old, old))
	script := `cd "$(dirname "$0")" || exit 9
	exec > answers
	try() { label=$1; shift; if "$@" 2>/dev/null; then echo "$label ok"; else echo "$label denied"; fi; }
	: > in && ln -s "$1" link
	try chmod-in chmod 600 in
	try touch-new touch new
	try touch-in touch -d @42 in
	try chown-in chown "$(id -u)" in
	try chmod-out chmod 600 "$1"
	try touch-out touch -d @42 "$1"
	try chown-out chown "$(id -u)" "$1"
	try chmod-link chmod 600 link
	try touch-link touch -d @42 link
	try fd-out sh -c 'exec 5<"$0"; chmod 600 /proc/self/fd/5' "$1"
	try dir-out chmod 700 "$(dirname "$1")"
	: > "$0"`
	r := confine(t, spec, "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", script, "$S", victim)
	require.Equal(t, 0, r.status, r.stderr)
	require.True(t, r.sentinel, r.stderr)
	require.Equal(t, "supervisor", r.report["metadata"], r.raw)
	w := filepath.Dir(r.sentinelPath)
	st, err := os.Stat(filepath.Join(w, "in"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "chmod inside")
	require.Equal(t, int64(42), st.ModTime().Unix(), "touch inside")
	st, err = os.Stat(victim)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "the outside file's mode changed")
	require.True(t, st.ModTime().Equal(old), "the outside file's time changed: %v", st.ModTime())
	ost, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), ost.Mode().Perm(), "the outside directory's mode changed")
	answers, err := os.ReadFile(filepath.Join(w, "answers"))
	require.NoError(t, err)
	for _, l := range []string{"chmod-in", "touch-new", "touch-in", "chown-in"} {
		require.Contains(t, string(answers), l+" ok\n", l)
	}
	for _, l := range []string{"chmod-out", "touch-out", "chown-out", "chmod-link", "touch-link", "fd-out", "dir-out"} {
		require.Contains(t, string(answers), l+" denied\n", l)
	}
}

// A supervised child that cannot have a listener (EBUSY under another confine's supervisor) runs nothing: the
// launcher falls back to seccomp-deny, says why, and the command runs once, with metadata denied inside too.
func TestNoListenerFallsBackToSeccompDeny(t *testing.T) {
	requireLandlock(t)
	r := confine(t, "layer=off,listener=EBUSY", "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c",
		`[ -e "$0" ] && exit 7; : > "$0"; chmod 600 "$0" 2>/dev/null && exit 8; exit 0`, "$S")
	require.Equal(t, 0, r.status, "ran twice (7) or chmod inside worked (8): %s", r.stderr)
	require.True(t, r.sentinel)
	require.Equal(t, "seccomp-deny", r.report["metadata"], r.raw)
	require.Contains(t, fmt.Sprint(r.report["warnings"]), "supervisor unavailable: ")
	require.Contains(t, fmt.Sprint(r.report["warnings"]), "device or resource busy")
}

// denyKeyctl installs, on every thread, a filter that answers keyctl with EPERM and allows the rest, as
// Docker's default seccomp profile does (it denies keyctl, add_key and request_key; add_key is left allowed
// here, to show that confine closes it itself). The thread stays locked: no_new_privs is per thread, and
// seccomp(2) without CAP_SYS_ADMIN fails with EACCES on a thread that lacks it, so the prctl and the seccomp
// call must run on the same one (unlocked, the Go scheduler moved them apart in 9 of 1,500 launches as nobody).
func denyKeyctl() {
	runtime.LockOSThread()
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_KEYCTL, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		panic(err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); e != 0 {
		panic(e)
	}
}

// Under a host profile that denies keyctl (Docker's default), confine cannot join a session keyring of its own:
// it runs anyway, and denies add_key itself, so that no key reaches the caller's session keyring, in every
// metadata mode.
func TestAHostThatDeniesKeyctlGetsNoKeyringCalls(t *testing.T) {
	requireLandlock(t)
	for _, spec := range []string{"hostkeyctl=EPERM", "hostkeyctl=EPERM,layer=off", "hostkeyctl=EPERM,layer=off,supervisor=off"} {
		out, stderr, _ := confinedSelf(t, spec, addKeyEnv)
		require.Equal(t, "EPERM\n", out, "%s: %s", spec, stderr)
	}
	// The control: the helper can add a key where nothing denies it (into the new session keyring).
	out, stderr, _ := confinedSelf(t, "", addKeyEnv)
	require.Equal(t, "added\n", out, stderr)
}

// confinedSelf runs this test binary as the confined command, with the fake kernel spec and helper variable
// env set (and the fake taken away from the command), and returns its stdout, confine's stderr and the error.
func confinedSelf(t *testing.T, spec, env string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--worktree", t.TempDir(), "--", "env", "-u", fakeEnv, env+"=1", os.Args[0])
	cmd.Env = append(withoutTempVars(os.Environ()), fakeEnv+"="+spec)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return string(out), stderr.String(), err
}

// Where confine stays beside the command (the supervisor; below ABI 6, the init of a PID namespace), one of its
// threads shares the command's domain and credentials: the command must still not be able to attach to any
// of its threads, or it could drive an unconfined one (the attack review's escape through process_vm_writev).
func TestTheCommandCannotAttachToConfinesOwnThreads(t *testing.T) {
	requireLandlock(t)
	for _, spec := range []string{"abi=5,errata=0", "layer=off"} {
		out, stderr, err := confinedSelf(t, spec, peekEnv)
		require.NoError(t, err, "%s: %s", spec, stderr)
		require.Regexp(t, `^done [1-9][0-9]*\n$`, out, "%s: the command could open its parent's memory", spec)
	}
}

// Where Landlock is absent or disabled, auto runs the command under bwrap, if it is installed.
func TestAutoUsesBwrapWithoutLandlock(t *testing.T) {
	sys := systemBwrap(t)
	for _, spec := range []string{"abi=ENOSYS", "abi=EOPNOTSUPP"} {
		r := confine(t, spec, "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", ": > $S")
		require.Equal(t, 0, r.status, "%s: stderr %s", spec, r.stderr)
		require.True(t, r.sentinel, "%s: the command ran", spec)
		require.Equal(t, "bwrap", r.report["backend"], r.raw)
		require.Equal(t, sys, r.report["bwrap"], r.raw)
		require.Equal(t, "exec", r.report["outcome"], r.raw)
	}
}

// CONFINE_BWRAP names the only bwrap confine will try. Under auto without Landlock, one that names no file is
// an absent bwrap (the Landlock reason, with its errno); an empty or relative one is a mistake, refused as
// backend-unavailable; neither falls back to the system's bwrap.
func TestConfineBwrapNamesTheOnlyBwrap(t *testing.T) {
	for value, want := range map[string]report.Reason{
		"/nonexistent/confine-test/bwrap": report.LandlockAbsent,
		"bwrap":                           report.BackendUnavailable,
		"":                                report.BackendUnavailable,
	} {
		r := confineEnv(t, []string{"CONFINE_BWRAP=" + value}, "abi=ENOSYS", "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", ": > $S")
		require.Equal(t, launch.ExitRefused, r.status, "%q: %s", value, r.stderr)
		require.False(t, r.sentinel, "%q: the command ran", value)
		require.Equal(t, string(want), r.report["reason"], r.raw)
		require.Contains(t, r.report["error"], "CONFINE_BWRAP", r.raw)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
	}
}

// systemBwrap is the bwrap confine finds without CONFINE_BWRAP (the first in /usr/bin, /bin, /usr/local/bin),
// or skips.
func systemBwrap(t *testing.T) string {
	t.Helper()
	if _, set := os.LookupEnv("CONFINE_BWRAP"); set {
		t.Skip("CONFINE_BWRAP is set in the test's environment: the lookup in the system directories is not what runs")
	}
	for _, dir := range []string{"/usr/bin", "/bin", "/usr/local/bin"} {
		if st, err := os.Stat(dir + "/bwrap"); err == nil && st.Mode().IsRegular() {
			return dir + "/bwrap"
		}
	}
	t.Skip("bwrap is not installed in /usr/bin, /bin or /usr/local/bin (make deps installs bubblewrap)")
	return ""
}

// probe runs bwrap where Landlock is unusable, and says auto would use it only if its test command showed a
// read-only root; a missing or failing bwrap leaves auto with none, and says why.
func TestProbeTriesBwrapWithoutLandlock(t *testing.T) {
	probe := func(env []string) map[string]any {
		cmd := exec.Command(os.Args[0], "probe", "--json")
		cmd.Env = append(append(os.Environ(), fakeEnv+"=abi=ENOSYS"), env...)
		out, err := cmd.Output()
		require.NoError(t, err)
		var p map[string]any
		require.NoError(t, json.Unmarshal(out, &p), "%s", out)
		return p
	}
	p := probe(noBwrap(t))
	require.Equal(t, "none", p["auto_backend"])
	require.Contains(t, p["auto_reason"], "bwrap is not installed")
	require.Nil(t, p["bwrap"])

	// Outside /tmp: probe holds bwrap to the roots every launch can write, and refuses one beneath /tmp.
	fake, err := os.MkdirTemp("/var/tmp", "confine-probe-bwrap-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(fake) })
	require.NoError(t, os.Chmod(fake, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fake, "bwrap"), []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755))
	p = probe([]string{"CONFINE_BWRAP=" + filepath.Join(fake, "bwrap")})
	require.Equal(t, "none", p["auto_backend"])
	if os.Geteuid() == 0 {
		require.Contains(t, p["auto_reason"], "AppArmor", "the failure is named")
	} else {
		require.Contains(t, p["auto_reason"], "not owned by root", "a user's own bwrap is not trusted")
	}

	require.NoError(t, os.WriteFile(filepath.Join(fake, "bwrap"), []byte("#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"\n"), 0o755))
	p = probe([]string{"CONFINE_BWRAP=" + filepath.Join(fake, "bwrap")})
	require.Equal(t, "none", p["auto_backend"], "a bwrap that ignores its arguments is not trusted")
	require.Nil(t, p["bwrap"])

	p = probe([]string{"CONFINE_BWRAP=bwrap"})
	require.Equal(t, "none", p["auto_backend"])
	require.Contains(t, p["auto_reason"], "CONFINE_BWRAP=bwrap is not an absolute path")

	sys := systemBwrap(t)
	p = probe(nil)
	require.Equal(t, "bwrap", p["auto_backend"], "%v", p)
	require.Equal(t, "mount-layer", p["metadata"])
	require.Equal(t, sys, p["bwrap"], "probe names the bwrap it ran")
	require.Contains(t, p["auto_reason"], sys)
}

// probe's human output names the bwrap its JSON names (sandbox/README.md promises both), and no bwrap line
// where none passed.
func TestProbeTextNamesTheBwrap(t *testing.T) {
	text := func(env []string) string {
		cmd := exec.Command(os.Args[0], "probe")
		cmd.Env = append(append(os.Environ(), fakeEnv+"=abi=ENOSYS"), env...)
		out, err := cmd.Output()
		require.NoError(t, err)
		return string(out)
	}
	out := text(noBwrap(t))
	require.Contains(t, out, "\nauto:     none: ")
	require.NotContains(t, out, "\nbwrap:")

	sys := systemBwrap(t)
	out = text(nil)
	require.Contains(t, out, "\nauto:     bwrap: ")
	require.Contains(t, out, "\nbwrap:    "+sys+"\nwsl:      ", "%s", out)
}

// A layered child given up before its plan leaves the caller's descriptors as they were: the command still reads
// the caller's stdin (an earlier build closed descriptor 0 there, and the next root opened took its number).
func TestAnAbortedLayeredChildLeavesStdinAlone(t *testing.T) {
	requireLandlock(t)
	in := filepath.Join(t.TempDir(), "in")
	require.NoError(t, os.WriteFile(in, []byte("from the caller\n"), 0o644))
	stdin, err := os.Open(in)
	require.NoError(t, err)
	defer stdin.Close()
	cmd := exec.Command(os.Args[0], "--worktree", t.TempDir(), "--", "/bin/cat")
	cmd.Env = append(withoutTempVars(os.Environ()), fakeEnv+"=abi=5,errata=0,layer=abort")
	cmd.Stdin = stdin
	out, err := cmd.Output()
	require.NoError(t, err)
	require.Equal(t, "from the caller\n", string(out))
}

// On WSL2 with interop on, bwrap's mount layer does not carry the interop closure (an empty tmpfs over
// /run/WSL): the bwrap backend refuses there (wsl2-interop) and nothing runs; --allow-interop runs under bwrap.
func TestWSL2InteropIsNotLeftToBwrap(t *testing.T) {
	systemBwrap(t)
	spec := "abi=ENOSYS,release=6.6.36.6-microsoft-standard-WSL2,interop=enabled"
	r := confine(t, spec, "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", ": > $S")
	require.Equal(t, launch.ExitRefused, r.status, r.stderr)
	require.False(t, r.sentinel, "the command ran")
	require.Equal(t, string(report.WSL2Interop), r.report["reason"], r.raw)
	require.Contains(t, r.stderr, "bwrap's")
	r = confine(t, spec, "--worktree", "$W", "--report-fd", "3", "--allow-interop", "--", "/bin/sh", "-c", ": > $S")
	require.Equal(t, 0, r.status, r.stderr)
	require.True(t, r.sentinel, "--allow-interop: the command ran")
	require.Equal(t, "bwrap", r.report["backend"], r.raw)
	require.Equal(t, "allowed", r.report["wsl_interop"], r.raw)
}

// A --config file reached through a symlink, or with another name by a hard link, could be one the command can
// rewrite: the symlink at its end is refused, and a hard link is refused (the fresh user's routes). A symlink on
// the way is resolved before launch.Run's check (cmd/confine's TestConfigBeneathAnyWritableRootIsRefused).
func TestConfigThroughLinksIsRefused(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "confine-cfglink")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	w := filepath.Join(base, "wt")
	require.NoError(t, os.Mkdir(w, 0o755))
	cfg := filepath.Join(w, "ci.conf")
	require.NoError(t, os.WriteFile(cfg, []byte("--no-git\n"), 0o644))
	require.NoError(t, os.Symlink(cfg, filepath.Join(base, "link.conf")))
	require.NoError(t, os.Symlink(w, filepath.Join(base, "wtlink")))
	other := filepath.Join(base, "other.conf")
	require.NoError(t, os.WriteFile(other, []byte("--no-git\n"), 0o644))
	require.NoError(t, os.Link(other, filepath.Join(w, "hard.conf")))
	for path, want := range map[string]string{
		filepath.Join(base, "link.conf"): "is a symlink",
		other:                            "has other hard links",
	} {
		_, _, err := parse([]string{"--config", path, "--worktree", w, "--", "true"})
		require.Error(t, err, path)
		require.Contains(t, err.Error(), want, path)
	}
}

// probe holds bwrap to the roots every launch can write by their identity too: the third attack review had it
// run, as root, a bwrap a confined command left in /tmp, through a bind mount of /tmp elsewhere.
func TestProbeRefusesABwrapInABindMountOfTmp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a bind mount, and a trusted bwrap is root's")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1) for a private mount namespace")
	}
	alias, err := os.MkdirTemp("/var/tmp", "confine-tmp-alias-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(alias) })
	require.NoError(t, os.Chmod(alias, 0o755))
	planted, err := os.CreateTemp("/tmp", "bwrap-")
	require.NoError(t, err)
	planted.Close()
	t.Cleanup(func() { os.Remove(planted.Name()) })
	require.NoError(t, os.Chmod(planted.Name(), 0o755))
	bwrap := filepath.Join(alias, filepath.Base(planted.Name()))
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount --bind /tmp "$0" && exec "$1" probe --json`, alias, os.Args[0])
	cmd.Env = append(os.Environ(), fakeEnv+"=abi=ENOSYS", "CONFINE_BWRAP="+bwrap)
	out, err := cmd.Output()
	require.NoError(t, err)
	var p map[string]any
	require.NoError(t, json.Unmarshal(out, &p), "%s", out)
	require.Equal(t, "none", p["auto_backend"])
	require.Contains(t, p["auto_reason"], " is beneath the writable /tmp: ")
}

// TestProbeAndRunAgree: on each host shape the fake kernel can play, `confine probe --json` and a run with a
// report agree on what guards the launch: the metadata mechanism, the seccomp denials, each channel's status,
// and a refusal. Probe decides once, asking the host beforehand; Run decides by trying (launch.Decide both).
func TestProbeAndRunAgree(t *testing.T) {
	requireLandlock(t)
	for _, spec := range []string{
		"abi=7", "abi=5", "abi=2,layer=off", "abi=2,layer=off,supervisor=off", "abi=5,buildlayer=EPERM",
		"abi=6,layer=abort", "abi=5,layer=abort", "abi=4,layer=off,listener=EBUSY",
		"abi=3,release=6.6.36.6-microsoft-standard-WSL2,interop=disabled",
		"abi=3,release=6.6.36.6-microsoft-standard-WSL2,interop=enabled",
		"abi=3,release=6.6.36.6-microsoft-standard-WSL2,interop=enabled,layer=off",
	} {
		t.Run(spec, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "probe", "--json")
			cmd.Env = append(append(withoutTempVars(os.Environ()), fakeEnv+"="+spec), noBwrap(t)...)
			out, err := cmd.Output()
			require.NoError(t, err)
			var p map[string]any
			require.NoError(t, json.Unmarshal(out, &p), "%s", out)
			r := confineEnv(t, noBwrap(t), spec, "--report-fd", "3", "--worktree", "$W", "--", "/bin/true")
			if p["auto_backend"] == "none" {
				require.Equal(t, launch.ExitRefused, r.status, "probe refuses (%s), the run did not: %s", p["auto_reason"], r.stderr)
				return
			}
			require.Equal(t, 0, r.status, "probe says %s, the run failed: %s", p["strategies"], r.stderr)
			require.NotEmpty(t, p["strategies"])
			require.Equal(t, p["metadata"], r.report["metadata"], "probe's strategies %v", p["strategies"])
			require.Equal(t, p["seccomp"], r.report["seccomp"])
			status := func(ch any) map[string]any {
				out := map[string]any{}
				for name, c := range ch.(map[string]any) {
					out[name] = c.(map[string]any)["status"]
				}
				return out
			}
			require.Equal(t, status(p["channels"]), status(r.report["channels"]))
		})
	}
}

// A program that reopens /dev/tty (a pager, an editor, a password prompt) reaches the caller's terminal through
// it where a mount layer binds that terminal over /dev/tty: its size, raw mode and output work without --tty.
// Without a mount layer /dev/tty stays unwritable, and the report warns that such programs fail.
func TestTerminalThroughDevTTY(t *testing.T) {
	requireLandlock(t)
	script := `stty size </dev/tty && stty raw </dev/tty && stty sane </dev/tty && echo through-dev-tty >/dev/tty && : > "$0"`
	const warning = "a program that writes to /dev/tty"
	t.Run("layer", func(t *testing.T) {
		r := confineOnTerminal(t, "", "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", script, "$S")
		require.Equal(t, "mount-layer", r.report["metadata"], r.raw)
		require.Equal(t, 0, r.status, r.terminal)
		require.True(t, r.sentinel, r.terminal)
		require.Contains(t, r.terminal, "through-dev-tty")
		require.NotContains(t, r.raw, warning)
	})
	t.Run("layer=off", func(t *testing.T) {
		r := confineOnTerminal(t, "layer=off", "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", script, "$S")
		require.Equal(t, "supervisor", r.report["metadata"], r.raw)
		require.False(t, r.sentinel, "without a mount layer /dev/tty is not the caller's terminal: %s", r.terminal)
		require.Contains(t, r.raw, warning)
	})
	t.Run("no terminal", func(t *testing.T) {
		r := confine(t, "", "--worktree", "$W", "--report-fd", "3", "--", "/bin/sh", "-c", script, "$S")
		require.False(t, r.sentinel, "a caller without a terminal gives the command none")
		require.NotContains(t, r.raw, warning)
	})
}

// --allow-socket takes a pathname unix socket only: anything else is a bad-root refusal and nothing runs. A
// socket gets a connect-only rule where RESOLVE_UNIX is handled (ABI 9), else a note that none is needed.
func TestAllowSocket(t *testing.T) {
	requireLandlock(t)
	out := outsideDir(t)
	sock := filepath.Join(out, "S.agent")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	r := confine(t, "", "--worktree", "$W", "--allow-socket", out, "--report-fd", "3", "--", "/bin/sh", "-c", `: > "$0"`, "$S")
	require.Equal(t, 125, r.status, r.stderr)
	require.False(t, r.sentinel)
	require.Equal(t, "bad-root", r.report["reason"], r.raw)
	require.Contains(t, r.stderr, "is not a unix socket")

	r = confine(t, "", "--worktree", "$W", "--allow-socket", sock, "--report-fd", "3", "--", "/bin/sh", "-c", `: > "$0"`, "$S")
	require.Equal(t, 0, r.status, r.stderr)
	require.True(t, r.sentinel)
	st, _ := landlock.Query(landlock.Host{})
	var socketRules int
	for _, rule := range r.report["rules"].([]any) {
		if m := rule.(map[string]any); m["type"] == "socket" {
			socketRules++
			require.Equal(t, sock, m["path"])
			require.Equal(t, []any{"RESOLVE_UNIX"}, m["rights"], "connect only, no write")
		}
	}
	if st.ABI >= 9 {
		require.Equal(t, 1, socketRules, r.raw)
	} else {
		require.Zero(t, socketRules, r.raw)
		require.Contains(t, r.raw, "--allow-socket "+sock+": no rule needed")
	}
}

// `confine probe --worktree DIR` says, before any launch, what git cannot do in a linked worktree at DIR (issue 28:
// some git commands exit 0 there and leave state behind); the layout is made by hand, git need not be installed.
func TestProbeWorktreeWarnsOfGitLimits(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	c := d + "/main/.git"
	for _, dir := range []string{c + "/objects", c + "/refs", c + "/logs", c + "/worktrees/wt", d + "/wt"} {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	require.NoError(t, os.WriteFile(d+"/wt/.git", []byte("gitdir: "+c+"/worktrees/wt\n"), 0o644))
	require.NoError(t, os.WriteFile(c+"/worktrees/wt/commondir", []byte("../..\n"), 0o644))
	require.NoError(t, os.WriteFile(c+"/worktrees/wt/gitdir", []byte(d+"/wt/.git\n"), 0o644))
	probe := func(args ...string) (string, int) {
		cmd := exec.Command(os.Args[0], append([]string{"probe"}, args...)...)
		cmd.Env = append(os.Environ(), fakeEnv+"=abi=5,errata=0")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		require.NoError(t, err)
		return string(out), 0
	}
	out, code := probe("--worktree", d+"/wt")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "warning:  git: linked worktree: "+c+" itself is not writable")
	require.Contains(t, out, "cannot delete a ref")
	out, code = probe("--json", "--worktree="+d+"/wt")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"git: linked worktree: `+c)
	out, _ = probe()
	require.NotContains(t, out, "git: linked worktree")
	out, code = probe("--worktree", "wt")
	require.Equal(t, 125, code, out)
	require.Contains(t, out, "absolute path")
	// a pointer a launch would refuse is named, not hidden
	require.NoError(t, os.WriteFile(c+"/worktrees/wt/gitdir", []byte(d+"/elsewhere/.git\n"), 0o644))
	out, code = probe("--worktree", d+"/wt")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "a launch there is refused")
}

// A signal the caller ignores stays ignored for the command, as it would unconfined (nohup's SIGHUP), with a
// mount layer and without one: confine neither catches it nor lets a child of its own reset it.
func TestCallerIgnoredSignalsStayIgnored(t *testing.T) {
	requireLandlock(t)
	for _, spec := range []string{"", "layer=off"} {
		t.Run("spec="+spec, func(t *testing.T) {
			w := t.TempDir()
			cmd := exec.Command("/bin/sh", "-c", `trap "" HUP; exec "$0" "$@"`, os.Args[0], "--worktree", w, "--",
				"/bin/sh", "-c", `grep SigIgn /proc/self/status > "$0"`, w+"/sigign")
			cmd.Env = append(withoutTempVars(os.Environ()), fakeEnv+"="+spec)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			b, err := os.ReadFile(w + "/sigign")
			require.NoError(t, err)
			mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(b), "SigIgn:")), 16, 64)
			require.NoError(t, err, "%s", b)
			require.NotZero(t, mask&(1<<(unix.SIGHUP-1)), "SIGHUP, ignored by the caller, is not ignored by the command: %s", b)
			require.Zero(t, mask&(1<<(unix.SIGTERM-1)), "SIGTERM, which the caller did not ignore, is ignored: %s", b)
		})
	}
}

// A process with children that execs confine is refused (foreign-children), and nothing runs: confine would take
// those children for the command's, ending them when it exits and letting the command signal them. The children
// live on.
func TestForeignChildrenRefused(t *testing.T) {
	requireLandlock(t)
	w := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", `sleep 30 >/dev/null 2>&1 & echo $! > "$0.pid"; exec "$@"`, w+"/bg", os.Args[0], "--worktree", w,
		"--report-fd", "3", "--", "/bin/sh", "-c", `: > "$0"`, w+"/SENTINEL")
	cmd.Env = append(withoutTempVars(os.Environ()), fakeEnv+"=")
	rep, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd.ExtraFiles = []*os.File{rep}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, 125, ee.ExitCode(), "%s", out)
	raw, _ := os.ReadFile(rep.Name())
	require.Contains(t, string(raw), `"reason":"foreign-children"`)
	require.NoFileExists(t, w+"/SENTINEL")
	b, err := os.ReadFile(w + "/bg.pid")
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NoError(t, unix.Kill(pid, 0), "the caller's background job was ended")
	unix.Kill(pid, unix.SIGKILL)
}
