// Command confine-conformance runs the conformance cases against a confine binary, and builds the kernel × case
// matrix report from the results.
//
//	confine-conformance --confine PATH [--family F]... [--case ID]... [--json] [--toctou-attempts N] [--expect FILE]
//	                    [--host-emulation ubuntu-userns-restricted|no-namespaces|nested-supervisor]
//	confine-conformance report [--results DIR] [--host FILE] [--expect FILE] [--manifest FILE] [--out DIR]
//	confine-conformance cases            # print CASES.md
//	confine-conformance list             # print the case IDs
//
// Exit status: 0 when every case passed or was skipped (run; with --expect, when every outcome is the reviewed
// one, an expected failure included) or the matrix matches the expectations (report); 1 on any failure or
// deviation; 2 on bad usage or when the suite cannot start.
package main

//go:generate sh -c "go run . cases > ../../CASES.md"

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/events"
	"github.com/confine-dev/confine/conformance/internal/expect"
	"github.com/confine-dev/confine/conformance/internal/helper"
	"github.com/confine-dev/confine/conformance/internal/hostemu"
	"github.com/confine-dev/confine/conformance/internal/interopsim"
	"github.com/confine-dev/confine/conformance/internal/kabi"
	"github.com/confine-dev/confine/conformance/internal/nsdeny"
	"github.com/confine-dev/confine/conformance/internal/plan"
	"github.com/confine-dev/confine/conformance/internal/power"
	"github.com/confine-dev/confine/conformance/internal/report"
	"github.com/confine-dev/confine/conformance/internal/suite"
)

func main() {
	if interopsim.IsClient() { // the simulated WSL interop's /init, run by binfmt_misc for an .exe
		os.Exit(interopsim.Client())
	}
	args := os.Args[1:]
	if len(args) > 0 {
		switch args[0] {
		case "helper": // hidden: the confined side of a case
			os.Exit(helper.Main(args[1:], os.Stdout, os.Stderr))
		case "interop-register": // hidden: registers the simulated WSL interop, in a mount namespace of its own
			self, err := os.Executable()
			if err == nil {
				err = interopsim.RegisterHere(self)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "interop-register:", err)
				os.Exit(1)
			}
			os.Exit(0)
		case "no-namespaces": // hidden: run confine where namespaces cannot be made (no mount layer)
			os.Exit(nsdeny.Main(args[1:]))
		case "host-emulation": // run a command under a host emulation (--host-emulation), or check one
			os.Exit(hostemu.Main(args[1:]))
		case "cases":
			fmt.Print(suite.Markdown())
			return
		case "git-table": // the git table of sandbox/README.md (conformance/internal/suite/gitparity.go)
			fmt.Print(suite.GitTable())
			return
		case "list":
			for _, c := range suite.All() {
				fmt.Println(c.ID)
			}
			return
		case "report":
			os.Exit(report.Main(args[1:], os.Stdout, os.Stderr))
		case "plan":
			var ids []string
			for _, c := range suite.All() {
				ids = append(ids, c.ID)
			}
			os.Exit(plan.Main(args[1:], ids, os.Stdout, os.Stderr))
		case "race-rates":
			os.Exit(power.Main(args[1:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("confine-conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var families, ids listFlag
	confine := fs.String("confine", "", "path of the confine binary under test (required)")
	fs.Var(&families, "family", "run only this family (repeatable, or comma-separated)")
	fs.Var(&ids, "case", "run only this case ID (repeatable, or comma-separated)")
	jsonOut := fs.Bool("json", false, "emit JSON Lines events (go test -json compatible) instead of text")
	attempts := fs.Int("toctou-attempts", 2000, "confine starts per toctou-symlink-swap race case without a measured win rate in --race-rates (lower it under TCG; the count is reported); metadata-swap counts racing calls here, ⌈N/50⌉ launches")
	rateFile := fs.String("race-rates", "", "measured win rates of the planted bugs (conformance/race-rates.json): each race case with one gets the attempts that catch its mutant with --race-power, within --race-min and --race-max")
	racePower := fs.Float64("race-power", power.Target, "with --race-rates: the probability each race case must have of catching its mutant")
	raceMin := fs.Int("race-min", 0, "with --race-rates: at least this many attempts per race case (the host keeps 2000)")
	raceMax := fs.Int("race-max", 20000, "with --race-rates: at most this many attempts per race case (0: no bound)")
	planFile := fs.String("plan", "", "in the VM guest: the kernel manifest (kernels.json) whose columns the matrix plans over; a case the plan runs in another column (internal/plan) is not run in this one, and its event says where it ran")
	measure := fs.Bool("measure-races", false, "count every attempt in which a write lands outside (a planted bug's wins) instead of stopping a race case at the first; for make conformance-mutants")
	scratch := fs.String("scratch", "", "parent of the run's scratch directory; must not be under /tmp (default: /var/tmp, $HOME, the cwd, /)")
	destructive := fs.Bool("destructive", false, "also run cases that could break this machine if confine were broken (default: only in the VM guest)")
	keep := fs.Bool("keep", false, "keep the scratch directories")
	expectFile := fs.String("expect", "", "gate the exit status on this reviewed expectations file (expected.yaml) instead of on plain failures")
	timeout := fs.Duration("timeout", 2*time.Minute, "limit for each confine invocation")
	caseTimeout := fs.Duration("case-timeout", 3*time.Minute, "a case that goes this long without progress (no command it ran finishing) is killed and ends as FAIL with the reason; the run goes on (0: no bound)")
	heartbeat := fs.Duration("heartbeat", 15*time.Second, "a running case prints a heartbeat line this often (0: never)")
	alsoAs := fs.Int("also-as", -1, "when root: run the suite a second time, concurrently, as this uid and gid (e.g. 65534); events carry pass root or nobody, and the exit status covers both")
	sequential := fs.Bool("sequential-passes", false, "with --also-as: run the second pass after the first instead of alongside it")
	passName := fs.String("pass", "", "name this run's events (set for the --also-as pass)")
	raceGate := fs.String("race-gate", "", "the lock files' path prefix that keeps a race case from running alongside the other pass (set by the root pass for the --also-as pass; suite.RaceGateCreate)")
	abiCap := fs.Int("abi-cap", 0, "make confine act as this Landlock ABI (needs --abicap-confine, a confine_abicap test build; default: $VM_ABI_CAP)")
	wsl2Confine := fs.String("wsl2-confine", "", "the WSL2 artifact (confine built with -tags wsl2), for the wsl-interop family; as root in the VM guest the simulated interop is registered for it before the passes start")
	abiCapConfine := fs.String("abicap-confine", "", "the confine_abicap test build of the launcher, used instead of --confine when an ABI cap is set")
	backend := fs.String("backend", "auto", "auto: confine picks its backend (Landlock, or bwrap where Landlock is absent or disabled); bwrap: every launch of a case that runs the suite's own sandbox gets --backend bwrap, and the Landlock-specific cases skip (needs bwrap where confine finds it: CONFINE_BWRAP, else /usr/bin, /bin, /usr/local/bin)")
	hostEmulation := fs.String("host-emulation", os.Getenv("VM_HOST_EMULATION"), "run the whole suite (every confine launch, both passes) under this host emulation, a seccomp filter reproducing a host with no mount layer: "+
		strings.Join(hostemu.Names, ", ")+" (internal/hostemu; default: $VM_HOST_EMULATION)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: confine-conformance --confine PATH [--family F] [--case ID] [--json] [flags]\n"+
			"       confine-conformance report|plan|race-rates|cases|list|git-table …\n"+
			"       confine-conformance host-emulation NAME -- COMMAND …   (run COMMAND under a host emulation)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "confine-conformance: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if *confine == "" {
		return fail("--confine PATH is required")
	}
	if *attempts < 1 {
		return fail("--toctou-attempts must be at least 1")
	}
	if *backend != "auto" && *backend != suite.BackendBwrap {
		return fail("--backend %q: want auto or bwrap", *backend)
	}
	cases, err := suite.Select(families, ids)
	if err != nil {
		return fail("%v", err)
	}
	if *hostEmulation != "" {
		if err := underEmulation(*hostEmulation, args); err != nil {
			return fail("%v", err)
		}
	}
	if *abiCap == 0 && os.Getenv("VM_ABI_CAP") != "" {
		if *abiCap, err = strconv.Atoi(os.Getenv("VM_ABI_CAP")); err != nil || *abiCap < 1 {
			return fail("VM_ABI_CAP=%q is not an ABI >= 1", os.Getenv("VM_ABI_CAP"))
		}
	}
	if *abiCap > 0 {
		if *abiCapConfine == "" {
			return fail("an ABI cap (%d) needs --abicap-confine, a launcher built with -tags confine_abicap", *abiCap)
		}
		*confine = *abiCapConfine
	}
	root := os.Geteuid() == 0
	if *alsoAs >= 0 && root && *passName == "" {
		*passName = "root"
	}
	cfg, env, err := configure(*confine, *scratch, *attempts, *destructive, *timeout, *abiCap, *backend)
	if err != nil {
		return fail("%v", err)
	}
	cfg.CaseTimeout, cfg.Heartbeat, cfg.MeasureRaces, cfg.RaceGate = *caseTimeout, *heartbeat, *measure, *raceGate
	if *planFile != "" && cfg.InVM {
		cols, err := plan.Columns(*planFile)
		if err != nil {
			return fail("--plan: %v", err)
		}
		col := os.Getenv("VM_KERNEL_ID")
		if !root {
			col += "@nobody"
		}
		var ids []string
		for _, c := range cases {
			ids = append(ids, c.ID)
		}
		p := plan.Make(ids, cols, plan.Depends)
		cfg.Elsewhere = map[string]string{}
		for id, by := range p.Elsewhere {
			if why, ok := by[col]; ok {
				cfg.Elsewhere[id] = why
			}
		}
	}
	if *wsl2Confine != "" {
		if cfg.WSL2Confine, err = filepath.Abs(*wsl2Confine); err != nil {
			return fail("%v", err)
		}
		// binfmt_misc is global: only a root runner in the VM guest registers the simulation, before the
		// unprivileged pass starts (which then finds it); elsewhere the family skips, saying why.
		if root && cfg.InVM {
			if err := interopsim.Register(cfg.Self); err != nil {
				fmt.Fprintf(stderr, "confine-conformance: the simulated WSL interop could not be registered (wsl-interop will skip): %v\n", err)
			}
		}
	}
	env.Pass, env.CaseSeconds, env.HostEmulation = *passName, caseTimeout.Seconds(), *hostEmulation
	env.RaceWhere, env.User = "host", "user"
	if cfg.InVM {
		if env.RaceWhere = os.Getenv("VM_ACCEL"); env.RaceWhere == "" {
			env.RaceWhere = "tcg"
		}
	}
	switch os.Geteuid() {
	case 0:
		env.User = "root"
	case 65534:
		env.User = "nobody"
	}
	if *rateFile != "" {
		if *racePower <= 0 || *racePower >= 1 {
			return fail("--race-power %v: want a probability between 0 and 1", *racePower)
		}
		rates, err := power.Load(*rateFile)
		if err != nil {
			return fail("--race-rates: %v", err)
		}
		col := power.Column{Where: env.RaceWhere, Arch: runtime.GOARCH, Backend: cfg.Backend, User: env.User}
		cfg.RacePlans = map[string]power.Plan{}
		for _, c := range suite.All() {
			if c.RatedWhere != nil && !c.RatedWhere(env.Metadata, env.FallbackMetadata) {
				continue // its planted bug cannot win in this column: no plan, power unknown
			}
			id := cmp.Or(c.RateOf, c.ID)
			if p, ok := rates.For(id, col, *racePower, *raceMin, *raceMax); ok {
				if id != c.ID {
					p.Source += ", the rate of " + id
				}
				cfg.RacePlans[c.ID] = p
			}
		}
	}
	if !*keep {
		defer os.RemoveAll(cfg.Scratch)
	}
	r := &suite.Runner{Cfg: cfg, Keep: *keep}
	if *jsonOut {
		r.JSON = events.NewWriter(stdout)
		r.JSON.SetPass(*passName)
	} else {
		r.Text = stdout
	}
	var exp *expect.File
	if *expectFile != "" {
		var ids []string
		for _, c := range suite.All() {
			ids = append(ids, c.ID)
		}
		if exp, err = expect.Load(*expectFile, ids); err != nil {
			return fail("%v", err)
		}
	}
	var second *pass
	if *alsoAs >= 0 && root {
		if !*jsonOut {
			return fail("--also-as needs --json (the two passes' events are interleaved)")
		}
		passArgs := args
		if !*sequential {
			// The passes run alongside each other, but a race case runs alone (suite.passGate).
			if err := makeVarTmp(); err != nil {
				return fail("%v", err)
			}
			prefix, remove, err := suite.RaceGateCreate("/var/tmp")
			if err != nil {
				return fail("%v", err)
			}
			defer remove()
			cfg.RaceGate = prefix
			passArgs = append(append([]string(nil), args...), "--race-gate", prefix)
		}
		if second, err = startPass(passArgs, *alsoAs, r.JSON, stderr); err != nil {
			return fail("%v", err)
		}
		if *sequential {
			second.wait()
		}
	} else if *alsoAs >= 0 {
		fmt.Fprintf(stderr, "confine-conformance: --also-as %d ignored: not root, this run is the unprivileged one\n", *alsoAs)
	}
	sum := r.RunAll(cases, env)
	secondRC := 0
	if second != nil {
		if secondRC = second.wait(); secondRC > 1 {
			fmt.Fprintf(stderr, "confine-conformance: the pass as uid %d could not run (exit %d)\n", *alsoAs, secondRC)
		}
	}
	if exp == nil {
		if sum.Fail > 0 || secondRC != 0 {
			return max(1, secondRC)
		}
		return 0
	}
	// The same verdict as the matrix report: every outcome as reviewed, an expected failure included.
	xenv := expect.Env{Landlock: env.Landlock, ABI: env.ABI, Kernel: env.VMKernelID, Git: env.Git, VM: cfg.InVM, Arch: env.Arch, Root: env.Root,
		Cmdline: os.Getenv("VM_CMDLINE_EXTRA"), HostEmulation: env.HostEmulation, Backend: env.Backend, Bwrap: env.Bwrap != ""}
	bad := 0
	for _, o := range r.Outcomes {
		if o.Elsewhere != "" { // judged in the column that ran it
			continue
		}
		shown, dev := exp.For(o.ID, xenv).Verdict(strings.ToUpper(o.Action))
		if shown == expect.Fail || dev != "" {
			bad++
			fmt.Fprintf(stderr, "confine-conformance: %s: %s %s\n", o.ID, shown, dev)
		}
	}
	if bad > 0 || secondRC != 0 {
		return max(1, secondRC)
	}
	return 0
}

// underEmulation makes sure this run is under host emulation name: the first time, it re-executes this binary with
// the same args under `host-emulation NAME --` (it returns only on failure); under the wrapper (hostemu.EnvMarker
// set), it checks in a throwaway child that the emulation is in force and returns nil.
func underEmulation(name string, args []string) error {
	if !hostemu.Known(name) {
		return fmt.Errorf("--host-emulation %q: want one of %s", name, strings.Join(hostemu.Names, ", "))
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	switch active := hostemu.Active(); active {
	case "":
		argv := hostemu.Argv(self, name, append([]string{self}, args...))
		return fmt.Errorf("exec %s: %w", self, unix.Exec(self, argv, os.Environ()))
	case name:
		if out, err := exec.Command(self, "host-emulation", "check", name).CombinedOutput(); err != nil {
			return fmt.Errorf("host emulation %s is not in force: %s (%v)", name, strings.TrimSpace(string(out)), err)
		}
		return nil
	default:
		return fmt.Errorf("--host-emulation %s asked, but this run is already under %s", name, active)
	}
}

// pass is the suite's second run, as an unprivileged uid, whose events are relayed into this run's stream.
type pass struct {
	cmd     *exec.Cmd
	relayed chan struct{}
	rc      int
	once    sync.Once
}

// pathFlags are the flags whose value is a path.
var pathFlags = map[string]bool{"confine": true, "race-rates": true, "plan": true, "scratch": true, "expect": true,
	"wsl2-confine": true, "abicap-confine": true}

// absPaths returns args with the value of each of pathFlags made absolute (as "-f v", "--f v", "-f=v" or
// "--f=v"): startPass runs the second pass from /, where a relative path names another file.
func absPaths(args []string) ([]string, error) {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		name, value, inline := strings.Cut(strings.TrimLeft(out[i], "-"), "=")
		if !strings.HasPrefix(out[i], "-") || !pathFlags[name] {
			continue
		}
		at := i
		if !inline {
			if i+1 >= len(out) {
				break
			}
			at, value = i+1, out[i+1]
			i++
		}
		if value == "" {
			continue
		}
		abs, err := filepath.Abs(value)
		if err != nil {
			return nil, err
		}
		if inline {
			out[at] = "--" + name + "=" + abs
		} else {
			out[at] = abs
		}
	}
	return out, nil
}

// startPass re-executes this binary with args (less --also-as) as uid:gid, no supplementary groups, named
// "nobody" for 65534 else "uid-N". Its scratch parent /var/tmp is created (mode 1777) when missing, as in the
// VM guest. Each line it prints is relayed whole into w; its stderr is ours.
func startPass(args []string, uid int, w *events.Writer, stderr io.Writer) (*pass, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("uid-%d", uid)
	if uid == 65534 {
		name = "nobody"
	}
	var child []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--also-as" || a == "-also-as" || a == "--pass" || a == "-pass":
			i++
		case strings.HasPrefix(a, "--also-as=") || strings.HasPrefix(a, "-also-as=") || strings.HasPrefix(a, "--pass=") ||
			a == "--sequential-passes" || a == "-sequential-passes":
		default:
			child = append(child, a)
		}
	}
	if child, err = absPaths(child); err != nil {
		return nil, err
	}
	if err := makeVarTmp(); err != nil {
		return nil, err
	}
	p := &pass{cmd: exec.Command(self, append([]string{"--pass", name}, child...)...), relayed: make(chan struct{})}
	p.cmd.Dir = "/"
	p.cmd.Stderr = stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("the pass as uid %d: %w", uid, err)
	}
	go func() {
		defer close(p.relayed)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			w.Raw(sc.Bytes())
		}
	}()
	return p, nil
}

// makeVarTmp creates /var/tmp (mode 1777) where it is missing, as in the VM guest.
func makeVarTmp() error {
	if _, err := os.Stat("/var/tmp"); os.IsNotExist(err) {
		if err := os.MkdirAll("/var/tmp", 0o755); err != nil {
			return err
		}
		return os.Chmod("/var/tmp", os.ModeSticky|0o777) // os.FileMode(0o1777) would drop the sticky bit
	}
	return nil
}

// wait returns the pass's exit status once its output is relayed (-1 when it did not exit normally: 2).
func (p *pass) wait() int {
	p.once.Do(func() {
		<-p.relayed
		err := p.cmd.Wait()
		p.rc = p.cmd.ProcessState.ExitCode()
		if err != nil && p.rc <= 0 {
			p.rc = 2
		}
	})
	return p.rc
}

// configure resolves the binaries, asks the kernel, reads the VM runner's environment and makes the scratch dir.
func configure(confine, scratchParent string, attempts int, destructive bool, timeout time.Duration, abiCap int, backend string) (*suite.Config, events.Env, error) {
	var env events.Env
	confine, err := filepath.Abs(confine)
	if err != nil {
		return nil, env, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, env, fmt.Errorf("locating this binary for the helper: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return nil, env, err
	}
	// The helper: confine-conformance-helper beside this binary (a start costs half of this one's under TCG),
	// else this binary itself. The start event names it.
	helperBin := filepath.Join(filepath.Dir(self), "confine-conformance-helper")
	if _, err := os.Stat(helperBin); err != nil {
		helperBin = self
	}
	out, err := exec.Command(confine, "version").Output()
	if err != nil {
		return nil, env, fmt.Errorf("%s version: %w (is it a confine binary?)", confine, err)
	}
	bin, err := os.ReadFile(confine)
	if err != nil {
		return nil, env, err
	}
	k, err := kabi.Query()
	if err != nil {
		return nil, env, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	kernelABI := k.ABI
	if abiCap > 0 && k.ABI > abiCap {
		k.ABI = abiCap // what confine acts as: the cases' needs and the expectations follow it
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return nil, env, fmt.Errorf("uname: %w", err)
	}
	_, gitErr := exec.LookPath("git")
	// The backend the cases' confined commands run under: what --backend auto picks (suite.FindBwrap looks bwrap
	// up as confine does: CONFINE_BWRAP, else fixed system directories, never $PATH), or bwrap when asked. A bwrap
	// that is found but broken is not "none": the cases then fail, and the fail-closed family checks the refusal
	// itself.
	bwrapPath, bwrapErr := suite.FindBwrap()
	use := suite.BackendNone
	switch {
	case backend == suite.BackendBwrap && bwrapErr != nil:
		return nil, env, fmt.Errorf("--backend bwrap: %w", bwrapErr)
	case backend == suite.BackendBwrap:
		use = suite.BackendBwrap
	case k.State == kabi.Available:
		use = suite.BackendLandlock
	case bwrapErr == nil:
		use = suite.BackendBwrap
	}
	forced := ""
	if backend == suite.BackendBwrap {
		forced = backend
	}
	env = events.Env{
		Kernel: unix.ByteSliceToString(uts.Release[:]), Arch: unix.ByteSliceToString(uts.Machine[:]),
		Landlock: string(k.State), ABI: k.ABI, Errata: k.Errata, Root: os.Geteuid() == 0, Git: gitErr == nil,
		VMKernelID: os.Getenv("VM_KERNEL_ID"), Confine: strings.TrimSpace(string(out)), Attempts: attempts, Helper: filepath.Base(helperBin),
		ConfineSHA256: fmt.Sprintf("%x", sha256.Sum256(bin)), Backend: use, BackendFlag: forced, Bwrap: bwrapPath,
	}
	if abiCap > 0 {
		env.ABICap, env.KernelABI = abiCap, kernelABI
	}
	cfg := &suite.Config{Confine: confine, Self: self, Helper: helperBin, Landlock: k, InVM: env.VMKernelID != "", Destructive: destructive,
		Attempts: attempts, Timeout: timeout, Backend: use, ForceBackend: forced}
	if abiCap > 0 {
		cfg.Env = []string{"CONFINE_TEST_ABI_CAP=" + strconv.Itoa(abiCap)}
		os.Setenv("CONFINE_TEST_ABI_CAP", strconv.Itoa(abiCap)) // for confine version and the launch median too
	}
	if s := os.Getenv("VM_EXPECTED_ABI"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, env, fmt.Errorf("VM_EXPECTED_ABI=%q is not a number", s)
		}
		if abiCap > 0 {
			n = min(n, abiCap) // confine acts as the cap; the report checks the kernel's own ABI (kernel_abi) against the manifest
		}
		cfg.ExpectedABI, env.ExpectedABI = &n, &n
	}
	if cfg.Scratch, err = makeScratch(scratchParent); err != nil {
		return nil, env, err
	}
	if use != suite.BackendNone {
		var flags []string
		if forced != "" {
			flags = []string{"--backend", forced}
		}
		env.LaunchMicros = launchMedian(confine, cfg.Scratch, flags)
		env.Metadata, env.LaunchBackend = launchMetadata(nil, confine, cfg.Scratch, flags)
		env.FallbackMetadata, _ = launchMetadata([]string{self, "no-namespaces", "--"}, confine, cfg.Scratch, flags)
	}
	return cfg, env, nil
}

// launchMedian is the median wall time, in microseconds, of `confine --worktree dir -- true`, over
// events.LaunchRuns launches; 0 when true is missing or a launch fails (the cases then say why).
func launchMedian(confine, dir string, flags []string) int {
	yes, err := exec.LookPath("true")
	if err != nil {
		return 0
	}
	times := make([]time.Duration, events.LaunchRuns)
	for i := range times {
		t0 := time.Now()
		if exec.Command(confine, append(append([]string{"--worktree", dir}, flags...), "--", yes)...).Run() != nil {
			return 0
		}
		times[i] = time.Since(t0)
	}
	slices.Sort(times)
	return int(times[len(times)/2].Microseconds())
}

// launchMetadata is the report's metadata field (mount-layer, supervisor or seccomp-deny) and backend of one plain
// launch here with flags, run under the argv prefix wrap (none, or the no-namespaces wrapper of the fallback
// cases), or "" where the launch gives no report (a refusal still gives one).
// It says which layer closes metadata changes for this user on this kernel: where unprivileged user namespaces
// are disabled, a non-root launch must fall back (supervisor, or seccomp-deny before issue 15).
func launchMetadata(wrap []string, confine, dir string, flags []string) (metadata, backend string) {
	yes, err := exec.LookPath("true")
	if err != nil {
		return "", ""
	}
	r, w, err := os.Pipe()
	if err != nil {
		return "", ""
	}
	defer r.Close()
	argv := append(append(append(wrap, confine, "--report-fd", "3", "--worktree", dir), flags...), "--", yes)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return "", ""
	}
	b, _ := io.ReadAll(r)
	cmd.Wait()
	var rep struct {
		Metadata string `json:"metadata"`
		Backend  string `json:"backend"`
	}
	if json.Unmarshal(b, &rep) != nil {
		return "", ""
	}
	return rep.Metadata, rep.Backend
}

// makeScratch creates the run's scratch directory under the first usable parent. It must not be under /tmp or
// /dev/shm (writable under confine, so "outside" would not be outside), and its path must be symlink-free
// (confine refuses a root with a symlink in its path).
func makeScratch(parent string) (string, error) {
	candidates := []string{parent}
	if parent == "" {
		home, _ := os.UserHomeDir()
		cwd, _ := os.Getwd()
		candidates = []string{"/var/tmp", home, cwd, "/"}
	}
	var errs []string
	for _, p := range candidates {
		if p == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if under(real, "/tmp") || under(real, "/dev/shm") {
			errs = append(errs, real+" is under /tmp or /dev/shm, which confine always allows")
			continue
		}
		d, err := os.MkdirTemp(real, "confine-conformance-")
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		return d, nil
	}
	return "", fmt.Errorf("no usable scratch directory: %s", strings.Join(errs, "; "))
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
