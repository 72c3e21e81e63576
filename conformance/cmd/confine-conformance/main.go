// Command confine-conformance runs the conformance cases against a confine binary, and builds the kernel × case
// matrix report from the results.
//
//	confine-conformance --confine PATH [--family F]... [--case ID]... [--json] [--toctou-attempts N] [--expect FILE]
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
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/events"
	"github.com/confine-dev/confine/conformance/internal/expect"
	"github.com/confine-dev/confine/conformance/internal/helper"
	"github.com/confine-dev/confine/conformance/internal/kabi"
	"github.com/confine-dev/confine/conformance/internal/nsdeny"
	"github.com/confine-dev/confine/conformance/internal/report"
	"github.com/confine-dev/confine/conformance/internal/suite"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 {
		switch args[0] {
		case "helper": // hidden: the confined side of a case
			os.Exit(helper.Main(args[1:], os.Stdout, os.Stderr))
		case "no-namespaces": // hidden: run confine where namespaces cannot be made (no mount layer)
			os.Exit(nsdeny.Main(args[1:]))
		case "cases":
			fmt.Print(suite.Markdown())
			return
		case "list":
			for _, c := range suite.All() {
				fmt.Println(c.ID)
			}
			return
		case "report":
			os.Exit(report.Main(args[1:], os.Stdout, os.Stderr))
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
	attempts := fs.Int("toctou-attempts", 2000, "confine starts per toctou-symlink-swap race case (lower it under TCG; the count is reported)")
	scratch := fs.String("scratch", "", "parent of the run's scratch directory; must not be under /tmp (default: /var/tmp, $HOME, the cwd, /)")
	destructive := fs.Bool("destructive", false, "also run cases that could break this machine if confine were broken (default: only in the VM guest)")
	keep := fs.Bool("keep", false, "keep the scratch directories")
	expectFile := fs.String("expect", "", "gate the exit status on this reviewed expectations file (expected.yaml) instead of on plain failures")
	timeout := fs.Duration("timeout", 2*time.Minute, "limit for each confine invocation")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: confine-conformance --confine PATH [--family F] [--case ID] [--json] [flags]\n       confine-conformance report|cases|list …")
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
	cases, err := suite.Select(families, ids)
	if err != nil {
		return fail("%v", err)
	}
	cfg, env, err := configure(*confine, *scratch, *attempts, *destructive, *timeout)
	if err != nil {
		return fail("%v", err)
	}
	if !*keep {
		defer os.RemoveAll(cfg.Scratch)
	}
	r := &suite.Runner{Cfg: cfg, Keep: *keep}
	if *jsonOut {
		r.JSON = events.NewWriter(stdout)
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
	sum := r.RunAll(cases, env)
	if exp == nil {
		if sum.Fail > 0 {
			return 1
		}
		return 0
	}
	// The same verdict as the matrix report: every outcome as reviewed, an expected failure included.
	xenv := expect.Env{Landlock: env.Landlock, ABI: env.ABI, Git: env.Git, VM: cfg.InVM, Arch: env.Arch}
	bad := 0
	for _, o := range r.Outcomes {
		shown, dev := exp.For(o.ID, xenv).Verdict(strings.ToUpper(o.Action))
		if shown == expect.Fail || dev != "" {
			bad++
			fmt.Fprintf(stderr, "confine-conformance: %s: %s %s\n", o.ID, shown, dev)
		}
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// configure resolves the binaries, asks the kernel, reads the VM runner's environment and makes the scratch dir.
func configure(confine, scratchParent string, attempts int, destructive bool, timeout time.Duration) (*suite.Config, events.Env, error) {
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
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return nil, env, fmt.Errorf("uname: %w", err)
	}
	_, gitErr := exec.LookPath("git")
	env = events.Env{
		Kernel: unix.ByteSliceToString(uts.Release[:]), Arch: unix.ByteSliceToString(uts.Machine[:]),
		Landlock: string(k.State), ABI: k.ABI, Errata: k.Errata, Root: os.Geteuid() == 0, Git: gitErr == nil,
		VMKernelID: os.Getenv("VM_KERNEL_ID"), Confine: strings.TrimSpace(string(out)), Attempts: attempts,
		ConfineSHA256: fmt.Sprintf("%x", sha256.Sum256(bin)),
	}
	cfg := &suite.Config{Confine: confine, Self: self, Landlock: k, InVM: env.VMKernelID != "", Destructive: destructive,
		Attempts: attempts, Timeout: timeout}
	if s := os.Getenv("VM_EXPECTED_ABI"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, env, fmt.Errorf("VM_EXPECTED_ABI=%q is not a number", s)
		}
		cfg.ExpectedABI, env.ExpectedABI = &n, &n
	}
	if cfg.Scratch, err = makeScratch(scratchParent); err != nil {
		return nil, env, err
	}
	if k.State == kabi.Available {
		env.LaunchMicros = launchMedian(confine, cfg.Scratch)
	}
	return cfg, env, nil
}

// launchMedian is the median wall time, in microseconds, of `confine --worktree dir -- true`, over
// events.LaunchRuns launches; 0 when true is missing or a launch fails (the cases then say why).
func launchMedian(confine, dir string) int {
	yes, err := exec.LookPath("true")
	if err != nil {
		return 0
	}
	times := make([]time.Duration, events.LaunchRuns)
	for i := range times {
		t0 := time.Now()
		if exec.Command(confine, "--worktree", dir, "--", yes).Run() != nil {
			return 0
		}
		times[i] = time.Since(t0)
	}
	slices.Sort(times)
	return int(times[len(times)/2].Microseconds())
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
