// Command vm boots Debian kernels (or kernels packed as OCI images) in QEMU and runs a payload in each:
// `vm run --payload DIR -- CMD ARGS...`.
// The same static binary is the guest's /init: run as PID 1 it becomes the guest supervisor.
//
// Exit statuses: 0 every kernel ok; 1 a payload failed (or reported an unexpected Landlock state); 2 usage;
// 3 setup failed before any VM booted (fetch, bad kernel image, bad payload); 4 an infrastructure failure (a VM
// hung, panicked or came back without a verified result) and no payload failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/confine-dev/confine/vm"
	"github.com/confine-dev/confine/vm/internal/fetch"
	"github.com/confine-dev/confine/vm/internal/guest"
	"github.com/confine-dev/confine/vm/internal/oci"
	"github.com/confine-dev/confine/vm/internal/runner"
)

const (
	exitFail  = 1
	exitUsage = 2
	exitSetup = 3
	exitInfra = 4
)

func main() {
	if os.Getpid() == 1 {
		guest.Main() // never returns
	}
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  vm run [flags] --payload DIR -- GUEST-CMD [ARGS...]   boot kernels, run GUEST-CMD in each
  vm fetch [--kernels IDS] [--arch ARCHES] [--module M]  fetch kernels (or module M.ko of each) into the cache
  vm kernels                                             list the kernel manifest
  vm kernel import-deb|import-file|pull ...              kernels as OCI images (vm/KERNEL-IMAGE.md)
run 'vm run -h' for its flags; 'vm kernel' for the image subcommands`

func cli(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	m, err := vm.Load()
	if err != nil {
		fmt.Fprintf(stderr, "vm: %v\n", err)
		return exitSetup
	}
	switch args[0] {
	case "run":
		return runCmd(m, args[1:], stdout, stderr)
	case "fetch":
		return fetchCmd(m, args[1:], stdout, stderr)
	case "kernels":
		return kernelsCmd(m, stdout)
	case "kernel":
		return kernelCmd(m, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "vm: unknown command %q\n%s\n", args[0], usage)
	return exitUsage
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func cacheFor(m *vm.Manifest, root string, stderr io.Writer) *fetch.Cache {
	return &fetch.Cache{Root: root, Sources: m.AptSources, Log: func(f string, a ...any) {
		fmt.Fprintf(stderr, "vm: "+f+"\n", a...)
	}}
}

func runCmd(m *vm.Manifest, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vm run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kernels := fs.String("kernels", "", "comma-separated kernel ids (default: the whole manifest; see 'vm kernels'), image references "+
		"(REF: expectation from its labels) or ID=REF (manifest kernel ID, its kernel taken from REF)")
	arches := fs.String("arch", "", "comma-separated guest arches: amd64, arm64 (default: both)")
	shard := fs.String("shard", "", "run only shard i of n of the selection, as i/n with 1 <= i <= n")
	timeout := fs.Duration("timeout", 10*time.Minute, "guest-side payload timeout")
	silence := fs.Duration("silence", 120*time.Second, "host watchdog: kill a VM after this long without console output")
	keep := fs.Bool("keep", false, "keep each console log as RESULTS/<id>.console.log")
	results := fs.String("results", filepath.Join("reports", "vm"), "results directory")
	payload := fs.String("payload", "", "payload directory, shown as /payload in the guest; {arch} is replaced per VM")
	kernelPath := fs.String("kernel", "", "boot this local kernel image instead of the manifest (needs one --arch)")
	jobs := fs.Int("jobs", runtime.NumCPU(), "VMs at once")
	accel := fs.String("accel", "auto", "auto (KVM if a probe boot works, else TCG), kvm or tcg")
	cache := fs.String("cache", fetch.DefaultRoot(), "kernel and initramfs cache ($CACHE/vm)")
	retries := fs.Int("retries", 1, "boot a kernel whose run ended infra (no verified result) again, this many times; each earlier run is kept in the result's retries")
	cpus := fs.Int("cpus", 0, "vCPUs per VM (default: 2 when the host has at least 2 cores per job, else 1)")
	evidence := fs.Duration("evidence", 15*time.Second, "before the watchdog kills a silent VM, collect the guest's task states (sysrq t) for at most this long (0: kill at once)")
	initDir := fs.String("init-dir", "", "directory holding vm-linux-<arch> guest init binaries (default: this binary's directory)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: vm run [flags] --payload DIR -- GUEST-CMD [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "vm run: "+format+"\n", a...)
		return exitUsage
	}
	argv := fs.Args()
	if *payload == "" || len(argv) == 0 {
		return usageErr("--payload DIR and a guest command after -- are required")
	}
	if *accel != "auto" && *accel != "kvm" && *accel != "tcg" {
		return usageErr("--accel %q: want auto, kvm or tcg", *accel)
	}
	if *jobs < 1 {
		return usageErr("--jobs must be at least 1")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var targets []runner.Target
	if *kernelPath != "" {
		a := list(*arches)
		if len(a) != 1 || (a[0] != "amd64" && a[0] != "arm64") || *kernels != "" {
			return usageErr("--kernel PATH needs exactly one --arch (amd64 or arm64) and no --kernels")
		}
		abs, err := filepath.Abs(*kernelPath)
		if err != nil {
			return usageErr("%v", err)
		}
		targets = []runner.Target{{Kernel: vm.Kernel{ID: "custom-" + a[0], Arch: a[0]}, Image: abs}}
	} else {
		var code int
		if targets, code = selectTargets(ctx, m, list(*kernels), list(*arches), *cache, stderr); code != 0 {
			return code
		}
		if *shard != "" {
			i, n, err := parseShard(*shard)
			if err != nil {
				return usageErr("%v", err)
			}
			if targets, err = vm.Shard(targets, i, n); err != nil {
				return usageErr("%v", err)
			}
			if len(targets) == 0 {
				fmt.Fprintf(stderr, "vm run: shard %s is empty\n", *shard)
				return 0
			}
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "vm run: %v\n", err)
		return exitSetup
	}
	if *initDir == "" {
		*initDir = filepath.Dir(self)
	}
	start := time.Now()
	recs, err := runner.Run(ctx, runner.Options{
		Targets: targets, Payload: *payload, Argv: argv, Timeout: *timeout, Silence: *silence, Jobs: *jobs,
		Accel: *accel, Results: *results, Keep: *keep, InitDir: *initDir, Self: self,
		Cache: cacheFor(m, *cache, stderr), Busybox: m.Busybox, Tools: m.GuestTools, Progress: stderr,
		Retries: *retries, Evidence: *evidence, CPUs: vcpus(*cpus, *jobs),
	})
	var se *runner.SetupError
	if errors.As(err, &se) {
		fmt.Fprintf(stderr, "vm run: %v\n", err)
		return exitSetup
	}
	printTable(stdout, recs, time.Since(start))
	if err != nil {
		fmt.Fprintf(stderr, "vm run: %v\n", err)
		return exitInfra
	}
	fmt.Fprintf(stderr, "vm: results in %s\n", *results)
	code := 0
	for _, r := range recs {
		switch {
		case r.Result == runner.Fail:
			code = exitFail
		case r.Result == runner.Infra && code == 0:
			code = exitInfra
		}
	}
	return code
}

// vcpus is --cpus, or 2 when every job can have two of the host's cores, else 1.
func vcpus(flag, jobs int) int {
	switch {
	case flag > 0:
		return flag
	case runtime.NumCPU() >= 2*max(jobs, 1):
		return 2
	}
	return 1
}

// selectTargets turns --kernels items and --arch into targets: manifest ids (in manifest order, ID=REF taking the
// kernel from REF), then image references, pulled now so their arch and labels are known (--arch, when it names
// one arch, picks the platform). It returns a non-zero exit status after printing the error.
func selectTargets(ctx context.Context, m *vm.Manifest, items, arches []string, cache string, stderr io.Writer) ([]runner.Target, int) {
	var ids, refs []string
	refOf := map[string]string{}
	for _, it := range items {
		if id, ref, ok := strings.Cut(it, "="); ok && oci.IsRef(ref) {
			ids, refOf[id] = append(ids, id), ref
		} else if oci.IsRef(it) {
			refs = append(refs, it)
		} else {
			ids = append(ids, it)
		}
	}
	var targets []runner.Target
	if len(ids) > 0 || len(refs) == 0 {
		ks, err := m.Select(ids, arches)
		if err != nil {
			fmt.Fprintf(stderr, "vm run: %v\n", err)
			return nil, exitUsage
		}
		for _, k := range ks {
			if r := refOf[k.ID]; r != "" {
				k.Ref = r
			}
			targets = append(targets, runner.Target{Kernel: k})
		}
	}
	for _, a := range arches {
		if a != "amd64" && a != "arm64" {
			fmt.Fprintf(stderr, "vm run: unknown arch %q (known: amd64, arm64)\n", a)
			return nil, exitUsage
		}
	}
	arch := ""
	if len(arches) == 1 {
		arch = arches[0]
	}
	seen := map[string]bool{}
	for _, t := range targets {
		seen[t.ID] = true
	}
	for _, ref := range refs {
		t, err := runner.ImageTarget(ctx, cache, ref, arch)
		if err != nil {
			fmt.Fprintf(stderr, "vm run: %v\n", err)
			return nil, exitSetup
		}
		if seen[t.ID] {
			fmt.Fprintf(stderr, "vm run: kernel id %q given twice (%s): tag the images apart\n", t.ID, ref)
			return nil, exitUsage
		}
		seen[t.ID] = true
		targets = append(targets, t)
	}
	return targets, 0
}

func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("--shard %q: want i/n, e.g. 1/2", s)
	}
	return i, n, nil
}

// printTable prints kernel, arch, accel, ABI reported, ABI expected, result and seconds (its share of its boot's)
// for each record, then the counts and the number of boots (entries that differ only in abi_cap or
// host_emulation share one).
func printTable(w io.Writer, recs []runner.Record, wall time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KERNEL\tARCH\tACCEL\tRELEASE\tABI REPORTED\tABI EXPECTED\tRESULT\tSECONDS")
	var boot float64
	counts := map[string]int{}
	boots := map[string]bool{}
	for _, r := range recs {
		if r.Kernel == "" {
			continue // not run (cancelled)
		}
		reported, expected := "-", "-"
		if r.Landlock != "" {
			reported = vm.RenderABI(r.Landlock, r.ABI)
		}
		if r.ExpectedLandlock != "" {
			expected = vm.RenderABI(r.ExpectedLandlock, r.ExpectedABI)
		}
		rel := r.Release
		if rel == "" {
			rel = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\n", r.Kernel, r.Arch, r.Accel, rel, reported, expected, r.Result, r.Seconds)
		boot += r.Seconds
		counts[r.Result]++
		boots[r.Boot] = true
	}
	tw.Flush()
	fmt.Fprintf(w, "%d kernels: %d ok, %d fail, %d infra, %d skip; %d boots, wall %.1fs, sum of boots %.1fs\n",
		len(recs), counts[runner.OK], counts[runner.Fail], counts[runner.Infra], counts[runner.Skip], len(boots), wall.Seconds(), boot)
}

func fetchCmd(m *vm.Manifest, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vm fetch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kernels := fs.String("kernels", "", "comma-separated kernel ids (default: all)")
	arches := fs.String("arch", "", "comma-separated arches (default: both)")
	cache := fs.String("cache", fetch.DefaultRoot(), "cache root")
	module := fs.String("module", "", "fetch this kernel module (e.g. binfmt_misc: */kernel/**/binfmt_misc.ko[.xz|.zst]) "+
		"of each kernel instead of the kernel; prints ID, ARCH, SHA256, PATH and the package MEMBER (which names "+
		"the release and the compression), or ID, ARCH and \"built-in\" where the package holds no such module")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *module != "" && !moduleName.MatchString(*module) {
		fmt.Fprintf(stderr, "vm fetch: --module %q: want a module name like binfmt_misc\n", *module)
		return exitUsage
	}
	ks, err := m.Select(list(*kernels), list(*arches))
	if err != nil {
		fmt.Fprintf(stderr, "vm fetch: %v\n", err)
		return exitUsage
	}
	// The cache writes its private apt configuration (and runs apt-get update) on its first download, whatever
	// asks first: a module fetch on a fresh machine works before any `vm run` (issue 27).
	c := cacheFor(m, *cache, stderr)
	for _, k := range ks {
		if *module != "" {
			// The kernel comes out of the same download, for the vm run that follows.
			mw := runner.ModuleWant(*module)
			ex, err := c.ExtractAlso(context.Background(), k.Package, k.Version, k.Arch, mw.File, mw.Match, runner.KernelWant())
			switch {
			case errors.Is(err, fetch.ErrNoMember):
				fmt.Fprintf(stdout, "%s\t%s\tbuilt-in\n", k.ID, k.Arch)
				continue
			case err != nil:
				fmt.Fprintf(stderr, "vm fetch: kernel %s: module %s: %v\n", k.ID, *module, err)
				return exitSetup
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Arch, ex.SHA256, ex.Path, ex.Member)
			continue
		}
		ex, err := runner.FetchKernel(context.Background(), c, k)
		if err != nil {
			fmt.Fprintf(stderr, "vm fetch: %v\n", err)
			return exitSetup
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\n", k.ID, ex.SHA256, ex.Path)
	}
	return 0
}

var moduleName = regexp.MustCompile(`^[a-z0-9_-]+$`)

func kernelsCmd(m *vm.Manifest, stdout io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tARCH\tPACKAGE\tVERSION\tEXPECTED ABI\tCMDLINE")
	for _, k := range m.Kernels {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Arch, k.Package, k.Version, k.ExpectedABI(), k.Cmdline)
	}
	tw.Flush()
	return 0
}
