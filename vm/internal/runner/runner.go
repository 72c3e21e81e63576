// Package runner boots a payload across kernels: it fetches and checks every input first, builds the initramfs
// (a cached base plus per-arch payload and per-kernel config archives), picks the accelerator, runs one QEMU per
// job slot and writes a Record, the payload's stdout and a JUnit file per kernel.
package runner

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/u-root/u-root/pkg/cpio"
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/vm"
	"github.com/confine-dev/confine/vm/internal/console"
	"github.com/confine-dev/confine/vm/internal/fetch"
	"github.com/confine-dev/confine/vm/internal/guest"
	"github.com/confine-dev/confine/vm/internal/initramfs"
	"github.com/confine-dev/confine/vm/internal/preflight"
	"github.com/confine-dev/confine/vm/internal/qemu"
)

// Target is one kernel to boot: a manifest entry, an OCI image (ImageTarget), or an ad-hoc one for --kernel PATH
// (Image set, Package empty).
type Target struct {
	vm.Kernel
	Image       string // kernel image path; empty: Run pulls Ref, else fetches Package, into the cache
	ImageSHA256 string // hex sha256 of Image, set by Run (from the cache's record, or hashed once)
	Digest      string // digest of Ref's image manifest ("sha256:<hex>"), once pulled
	// PinnedVersion is the manifest's version when the package that ran is another (Version), set by Run when
	// the pin has left the archive and the newest package of the same series was fetched instead.
	PinnedVersion string
}

// Options configure Run. Zero values take the documented defaults.
type Options struct {
	Targets  []Target
	Payload  string        // payload directory; "{arch}" is replaced by the guest arch
	Argv     []string      // guest command
	Timeout  time.Duration // guest-side payload timeout; default 10m
	Silence  time.Duration // host watchdog: longest time without console output; default 120s
	Boot     time.Duration // host deadline allowance on top of Timeout for boot and power-off; default 120s
	Jobs     int           // VMs at once; default 1
	Accel    string        // auto (default: KVM if a probe boot works, else TCG), kvm or tcg
	Results  string        // results directory; default reports/vm
	Keep     bool          // keep each console log as <id>.console.log
	InitDir  string        // where vm-linux-<arch> guest init binaries are
	Self     string        // this executable, used as guest init for its own arch when InitDir has none
	Cache    *fetch.Cache  // kernel and busybox cache
	Busybox  vm.Package    // pinned busybox-static
	Tools    []vm.Tool     // pinned tools and libraries put into every guest (git, bwrap, python3)
	Progress io.Writer     // live progress lines; default io.Discard
	// Retries is how many times a kernel whose run ended infra is booted again (default 0 here; `vm run` passes
	// --retries, default 1). Each earlier run is kept in Record.Retries.
	Retries int
	// Evidence is how long the watchdog may collect the guest's task states before killing QEMU (default 15s).
	Evidence time.Duration
	// CPUs is the vCPUs per VM (default 1).
	CPUs int
}

// SetupError is a problem found before any VM booted (bad input, failed fetch).
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

type prepared struct {
	base, tools, payload []byte // gzip'd cpio per arch
	accel                string
}

// Run boots every target and returns one Record per target, in target order. An error is a *SetupError (nothing
// booted) or the context's error.
func Run(ctx context.Context, o Options) ([]Record, error) {
	o.defaults()
	setup := func(err error) ([]Record, error) { return nil, &SetupError{err} }
	if len(o.Targets) == 0 {
		return setup(errors.New("no kernels selected"))
	}
	if len(o.Argv) == 0 || !strings.HasPrefix(o.Argv[0], "/") {
		return setup(errors.New("guest command must be an absolute path in the guest, e.g. /payload/tool"))
	}
	archs := map[string]*prepared{}
	for _, t := range o.Targets {
		archs[t.Arch] = &prepared{}
	}
	// Every input is checked before anything boots: payloads, kernels, init binaries.
	for arch := range archs {
		if err := preflight.Payload(o.payloadDir(arch), arch, o.Argv[0]); err != nil {
			return setup(err)
		}
	}
	for i := range o.Targets {
		if err := o.resolveKernel(ctx, &o.Targets[i]); err != nil {
			return setup(err)
		}
	}
	for arch, p := range archs {
		var err error
		if p.base, err = o.baseArchive(ctx, arch); err != nil {
			return setup(err)
		}
		if p.tools, err = o.toolsArchive(ctx, arch); err != nil {
			return setup(err)
		}
		recs, err := initramfs.Payload(o.payloadDir(arch))
		if err != nil {
			return setup(err)
		}
		if p.payload, err = initramfs.Bytes(recs); err != nil {
			return setup(err)
		}
		o.progress("initramfs %s: %d bytes (base %d, tools %d, payload %d; gzip'd cpio)", arch,
			len(p.base)+len(p.tools)+len(p.payload), len(p.base), len(p.tools), len(p.payload))
	}
	if err := os.MkdirAll(o.Results, 0o755); err != nil {
		return setup(err)
	}
	ids := make([]string, len(o.Targets))
	for i, t := range o.Targets {
		ids[i] = t.ID
	}
	if err := clean(o.Results, ids); err != nil {
		return setup(err)
	}
	for _, arch := range vm.Arches {
		if p := archs[arch]; p != nil {
			p.accel = o.pickAccel(ctx, arch, p, o.firstTarget(arch))
		}
	}

	records := make([]Record, len(o.Targets))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	began := time.Now()
	running := map[string]time.Time{} // by boot name
	started := map[string]bool{}
	var doneSecs float64
	// Each kernel's time the last time this guest command ran in it (CACHE/vm/timings.json) gives the estimate
	// of the time left from the first line on, and the order the boots start in; this run's times replace them at
	// the end.
	timingsFile, cmdKey := filepath.Join(o.Cache.Root, "timings.json"), filepath.Base(o.Argv[0])
	timings := loadTimings(timingsFile)
	expect := timings[cmdKey]
	if expect == nil {
		expect = map[string]float64{}
	}
	boots := o.boots(expect)
	bootExpect := map[string]float64{} // a boot's expected seconds, where one of its passes has a cached time
	for _, b := range boots {
		if b.cached > 0 {
			bootExpect[b.name] = b.expect
		}
	}
	// status is the live progress line: kernel entries done, boots running (and for how long), and the time left:
	// the cached (else this run's mean) time of each boot not done, packed onto the job slots.
	status := func() string {
		var names []string
		had := map[string]time.Duration{}
		for name, t := range running {
			names = append(names, fmt.Sprintf("%s %.0fs", name, time.Since(t).Seconds()))
			had[name] = time.Since(t)
		}
		sort.Strings(names)
		var queued []string
		for _, b := range boots {
			if !started[b.name] {
				queued = append(queued, b.name)
			}
		}
		mean := 0.0
		if done > 0 {
			mean = doneSecs / float64(done)
		}
		left := "?"
		if d, ok := eta(bootExpect, mean, had, queued, o.Jobs); ok {
			left = fmt.Sprintf("~%.0fs", d.Seconds())
		}
		return fmt.Sprintf("%d/%d done, %.0fs elapsed, %s left; running: %s", done, len(o.Targets),
			time.Since(began).Seconds(), left, strings.Join(names, ", "))
	}
	got := map[string]float64{}
	defer func() {
		if len(got) == 0 {
			return
		}
		if timings[cmdKey] == nil {
			timings[cmdKey] = map[string]float64{}
		}
		for id, s := range got {
			timings[cmdKey][id] = s
		}
		if err := timings.save(timingsFile); err != nil {
			o.progress("timings not cached: %v", err)
		}
	}()
	tickDone := make(chan struct{})
	defer close(tickDone)
	go func() {
		tk := time.NewTicker(30 * time.Second)
		defer tk.Stop()
		for {
			select {
			case <-tickDone:
				return
			case <-tk.C:
				mu.Lock()
				o.progress("status %s", status())
				mu.Unlock()
			}
		}
	}()
	work := make(chan boot)
	for w := 0; w < o.Jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				ts := make([]Target, len(b.targets))
				for j, i := range b.targets {
					ts[j] = o.Targets[i]
				}
				arch := ts[0].Arch
				mu.Lock()
				running[b.name], started[b.name] = time.Now(), true
				last := ""
				if s, ok := bootExpect[b.name]; ok {
					last = fmt.Sprintf(" (last run %.0fs)", s)
				}
				passes := ""
				if len(ts) > 1 {
					passes = fmt.Sprintf(" %d passes: %s", len(ts), strings.Join(targetIDs(ts), " "))
				}
				o.progress("start  %-22s %s %s%s%s  [%s]", b.name, arch, archs[arch].accel, passes, last, status())
				mu.Unlock()
				recs := o.runBoot(ctx, ts, archs[arch])
				// The passes that ended infra boot again, together; those with a verified result keep it.
				for n := 0; n < o.Retries && ctx.Err() == nil; n++ {
					var again []int
					for j, r := range recs {
						if r.Result == Infra {
							again = append(again, j)
						}
					}
					if len(again) == 0 {
						break
					}
					retry := make([]Target, len(again))
					for k, j := range again {
						retry[k] = ts[j]
						o.progress("retry  %-22s %s: run %d ended infra: %s", ts[j].ID, arch, n+1, recs[j].Error)
					}
					for k, r := range o.runBoot(ctx, retry, archs[arch]) {
						j := again[k]
						r.Retries = append(recs[j].Retries, Retry{Error: recs[j].Error, Seconds: recs[j].Seconds,
							Evidence: recs[j].Evidence, ConsoleTail: recs[j].ConsoleTail})
						recs[j] = r
					}
				}
				mu.Lock()
				delete(running, b.name)
				for j, r := range recs {
					if err := o.write(r); err != nil && r.Result == OK {
						r.Result, r.Error = Infra, "write results: "+err.Error()
					}
					records[b.targets[j]] = r
					done++
					doneSecs += r.Seconds
					if r.Result == OK || r.Result == Fail { // a verified run's time; an infra one says little
						got[r.Kernel] = r.Seconds
					}
					o.progress("%-6s %-22s %s %s %5.1fs  [%s]%s", r.Result, r.Kernel, r.Arch, r.Accel, r.Seconds, status(), errSuffix(r))
				}
				mu.Unlock()
			}
		}()
	}
	for _, b := range boots {
		select {
		case work <- b:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return records, ctx.Err()
}

func errSuffix(r Record) string {
	if r.Error == "" {
		return ""
	}
	return "  " + r.Error
}

func (o *Options) defaults() {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Silence == 0 {
		o.Silence = 120 * time.Second
	}
	if o.Boot == 0 {
		o.Boot = 120 * time.Second
	}
	if o.Jobs < 1 {
		o.Jobs = 1
	}
	if o.Accel == "" {
		o.Accel = "auto"
	}
	if o.Results == "" {
		o.Results = filepath.Join("reports", "vm")
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Evidence == 0 {
		o.Evidence = 15 * time.Second
	}
	if o.CPUs < 1 {
		o.CPUs = 1
	}
}

func (o *Options) progress(format string, args ...any) {
	fmt.Fprintf(o.Progress, "vm: "+format+"\n", args...)
}

func (o *Options) payloadDir(arch string) string {
	return strings.ReplaceAll(o.Payload, "{arch}", arch)
}

func (o *Options) firstTarget(arch string) Target {
	for _, t := range o.Targets {
		if t.Arch == arch {
			return t
		}
	}
	panic("BUG(vm): no target for " + arch)
}

// resolveKernel pulls or fetches a manifest kernel into the cache (or takes a local image), checks its arch and
// records its sha256.
func (o *Options) resolveKernel(ctx context.Context, t *Target) error {
	if t.Image == "" && t.Ref != "" {
		if err := pullKernel(ctx, o.Cache.Root, t); err != nil {
			return err
		}
	}
	if t.Image == "" {
		ex, err := FetchKernel(ctx, o.Cache, t.Kernel)
		var gone *fetch.GoneError
		if errors.As(err, &gone) {
			// The pin left the archive: the newest package of the same series runs instead, with a warning, and
			// the record names both versions (vm/README.md, "Kernels that stay fetchable").
			pkg, ver, nerr := o.Cache.Newest(ctx, t.Package, t.Arch)
			if nerr != nil {
				return fmt.Errorf("%w; no fallback: %v", err, nerr)
			}
			o.progress("WARNING: kernel %s: %s=%s has left the archive; using the newest of its series, %s=%s", t.ID, t.Package, t.Version, pkg, ver)
			k := t.Kernel
			k.Package, k.Version = pkg, ver
			if ex, err = FetchKernel(ctx, o.Cache, k); err == nil {
				t.PinnedVersion = t.Package + "=" + t.Version
				t.Package, t.Version = pkg, ver
			}
		}
		if err != nil {
			return err
		}
		t.Image, t.ImageSHA256 = ex.Path, ex.SHA256
	}
	if err := preflight.KernelImage(t.Image, t.Arch); err != nil {
		return fmt.Errorf("kernel %s: %w", t.ID, err)
	}
	if t.ImageSHA256 == "" {
		f, err := os.Open(t.Image)
		if err != nil {
			return fmt.Errorf("kernel %s: %w", t.ID, err)
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return fmt.Errorf("kernel %s: %w", t.ID, err)
		}
		t.ImageSHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return nil
}

// FetchKernel fetches k's package into the cache and extracts its kernel image.
func FetchKernel(ctx context.Context, c *fetch.Cache, k vm.Kernel) (fetch.Extracted, error) {
	// binfmt_misc.ko comes out of the same download: the conformance payload takes it from here (vm fetch
	// --module), and the package is large.
	ex, err := c.ExtractAlso(ctx, k.Package, k.Version, k.Arch, "vmlinuz", isKernelImage, ModuleWant("binfmt_misc"))
	if err != nil {
		return ex, fmt.Errorf("kernel %s: %w", k.ID, err)
	}
	return ex, nil
}

// ModuleWant is kernel module name's file in a kernel package: .../lib/modules/REL/kernel/.../name.ko, plain or
// compressed (.ko.xz, .ko.zst, .ko.gz), cached as name.ko whatever its compression (the member says which).
func ModuleWant(name string) fetch.Want {
	re := regexp.MustCompile(`^\.?(/usr)?/lib/modules/[^/]+/kernel/(.+/)?` + regexp.QuoteMeta(name) + `\.ko(\.xz|\.zst|\.gz)?$`)
	return fetch.Want{File: name + ".ko", Match: re.MatchString}
}

// KernelWant is the kernel image in a kernel package (isKernelImage), cached as vmlinuz.
func KernelWant() fetch.Want { return fetch.Want{File: "vmlinuz", Match: isKernelImage} }

// isKernelImage matches the kernel in a linux-image-* (/boot/vmlinuz-REL) or linux-binary-* package (from 6.19:
// /boot/vmlinuz-REL or /usr/lib/modules/REL/vmlinuz).
func isKernelImage(member string) bool {
	m := strings.TrimPrefix(member, ".")
	if strings.HasPrefix(m, "/boot/vmlinuz-") {
		return true
	}
	return strings.HasPrefix(m, "/usr/lib/modules/") && strings.HasSuffix(m, "/vmlinuz") && strings.Count(m, "/") == 5
}

// initBinary returns the static guest init for arch: InitDir/vm-linux-<arch>, or this executable for its own arch.
func (o *Options) initBinary(arch string) (string, error) {
	if o.InitDir != "" {
		p := filepath.Join(o.InitDir, "vm-linux-"+arch)
		if _, err := os.Stat(p); err == nil {
			return p, preflight.StaticBinary(p, arch)
		}
	}
	if o.Self != "" && arch == runtime.GOARCH && preflight.StaticBinary(o.Self, arch) == nil {
		return o.Self, nil
	}
	return "", fmt.Errorf("no guest init for %s: expected %s (make vm-build builds it)", arch, filepath.Join(o.InitDir, "vm-linux-"+arch))
}

// baseArchive returns the base initramfs for arch, building it once per (init, busybox) content and caching it.
func (o *Options) baseArchive(ctx context.Context, arch string) ([]byte, error) {
	initPath, err := o.initBinary(arch)
	if err != nil {
		return nil, err
	}
	initBin, err := os.ReadFile(initPath)
	if err != nil {
		return nil, err
	}
	bb, err := o.Cache.Extract(ctx, o.Busybox.Package, o.Busybox.Version, arch, "busybox", func(m string) bool {
		return m == "./bin/busybox" || m == "./usr/bin/busybox"
	})
	if err != nil {
		return nil, fmt.Errorf("busybox for %s: %w", arch, err)
	}
	initSum := sha256.Sum256(initBin)
	path := filepath.Join(o.Cache.Root, "base", fmt.Sprintf("%s-%x-%.16s.cpio.gz", arch, initSum[:8], bb.SHA256))
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	bbBin, err := os.ReadFile(bb.Path)
	if err != nil {
		return nil, err
	}
	b, err := initramfs.Bytes(initramfs.Base(initBin, bbBin))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	tmp := path + ".part"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	// Bases of this arch built from another init binary are dropped, so the cache does not grow with each build
	// (rebuilding one takes well under a second; a run using one has read it whole already).
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), arch+"-*.cpio.gz"))
	for _, p := range old {
		if p != path {
			os.Remove(p)
		}
	}
	return b, nil
}

// toolsArchive returns the archive of Options.Tools for arch (nil when there are none): each file fetched into the
// cache (one download per package with a file not yet cached) and placed at its guest path (mode 0755), in a merged-/usr layout (/lib and /lib64 link into /usr), with
// the dynamic loader where the programs' PT_INTERP names it and git's exec path (/usr/lib/git-core/git, and the
// dashed commands of its local transport).
func (o *Options) toolsArchive(ctx context.Context, arch string) ([]byte, error) {
	if len(o.Tools) == 0 {
		return nil, nil
	}
	var recs []cpio.Record
	for _, t := range o.Tools {
		// Each file is cached under its whole guest path, flattened: a package may hold several files of one name
		// (Python's __init__.py), and one cached under its base name would stand in for all of them.
		members := map[string]string{}
		for _, f := range t.Files {
			members[vm.Expand(f[1], arch)] = strings.ReplaceAll(strings.TrimPrefix(vm.Expand(f[0], arch), "/"), "/", "_")
		}
		exs, err := o.Cache.ExtractMembers(ctx, t.Package, t.Version, arch, members)
		if err != nil {
			return nil, fmt.Errorf("guest tool %s for %s: %w", t.Package, arch, err)
		}
		for _, f := range t.Files {
			guestPath := vm.Expand(f[0], arch)
			b, err := os.ReadFile(exs[vm.Expand(f[1], arch)].Path)
			if err != nil {
				return nil, err
			}
			recs = append(recs, initramfs.File(strings.TrimPrefix(guestPath, "/"), b, 0o755))
		}
	}
	recs = append(recs, cpio.Symlink("lib", "usr/lib"), cpio.Symlink("usr/lib/git-core/git", "../../bin/git"))
	// The dashed commands of git's local transport (fetch and push between two repositories on disk run
	// git-upload-pack and git-receive-pack through the exec path), as links to git, as Debian installs them.
	for _, c := range []string{"git-receive-pack", "git-upload-pack", "git-upload-archive"} {
		recs = append(recs, cpio.Symlink("usr/lib/git-core/"+c, "../../bin/git"))
	}
	switch arch {
	case "amd64":
		recs = append(recs, cpio.Symlink("lib64", "usr/lib64"),
			cpio.Symlink("usr/lib64/"+vm.Loader[arch], "../lib/"+vm.Triplet[arch]+"/"+vm.Loader[arch]))
	case "arm64":
		recs = append(recs, cpio.Symlink("usr/lib/"+vm.Loader[arch], vm.Triplet[arch]+"/"+vm.Loader[arch]))
	}
	return initramfs.Bytes(recs)
}

// pickAccel returns the accelerator for arch: TCG unless KVM is forced, or auto and a probe boot under KVM
// returns a verified result.
func (o *Options) pickAccel(ctx context.Context, arch string, p *prepared, t Target) string {
	switch o.Accel {
	case qemu.KVM, qemu.TCG:
		o.progress("accel  %s: %s (--accel %s)", arch, o.Accel, o.Accel)
		return o.Accel
	}
	if ok, why := qemu.KVMUsable(arch); !ok {
		o.progress("accel  %s: tcg (no KVM: %s)", arch, why)
		return qemu.TCG
	}
	// A probe that failed costs its whole silence limit (15 s) on every run: its verdict is kept, keyed by what
	// decides it (host kernel, QEMU binary), and reused while those stay the same.
	key := probeKey(arch, t)
	memo := filepath.Join(o.Cache.Root, "accel", arch+".json")
	var seen struct{ Key, Accel, Why string }
	if b, err := os.ReadFile(memo); err == nil && json.Unmarshal(b, &seen) == nil && seen.Key == key && key != "" {
		o.progress("accel  %s: %s (%s; remembered in %s)", arch, seen.Accel, seen.Why, memo)
		return seen.Accel
	}
	probe := *o
	probe.Argv, probe.Timeout, probe.Silence, probe.Boot = []string{"/bin/true"}, 10*time.Second, 15*time.Second, 20*time.Second
	probe.Evidence = -1
	start := time.Now()
	r := probe.boot(ctx, []Target{t}, p, qemu.KVM, []io.Writer{io.Discard}, nil)[0]
	accel, why := qemu.KVM, fmt.Sprintf("probe boot %.1fs", time.Since(start).Seconds())
	if r.Result != OK {
		accel, why = qemu.TCG, "KVM probe boot failed: "+r.Error
	}
	o.progress("accel  %s: %s (%s)", arch, accel, why)
	if key != "" && ctx.Err() == nil {
		seen.Key, seen.Accel, seen.Why = key, accel, why
		if b, err := json.Marshal(seen); err == nil && os.MkdirAll(filepath.Dir(memo), 0o755) == nil {
			os.WriteFile(memo, b, 0o644)
		}
	}
	return accel
}

// probeKey identifies what a KVM probe's verdict depends on: the host kernel (and with it /dev/kvm) and the QEMU
// binary (path, size, mtime). "" when one of them cannot be read (then nothing is remembered).
func probeKey(arch string, _ Target) string {
	var uts unix.Utsname
	if unix.Uname(&uts) != nil {
		return ""
	}
	bin, err := qemu.Binary(arch)
	if err != nil {
		return ""
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s %s %d %d", unix.ByteSliceToString(uts.Release[:]), path, fi.Size(), fi.ModTime().UnixNano())
}

// boot is the kernel entries that share one VM, run as its passes in target order (bootKey); name is the first
// entry's id.
type boot struct {
	name    string
	targets []int   // indices into Options.Targets
	cached  int     // how many of targets have a time from the last run
	expect  float64 // those times summed, in seconds
}

// bootKey is what a VM depends on: the arch, the kernel image and its command line. Entries that differ only in
// what the payload is told (abi_cap, host_emulation) share a boot; a boot takes 5 to 20 s under TCG.
func bootKey(t Target) string { return t.Arch + " " + t.ImageSHA256 + " " + t.Cmdline }

// boots groups the targets by bootKey, longest expected first, so that the job slots end together: a boot's
// expected seconds are its passes' times in expect (a pass without one: the mean of those known), summed. With
// no times known (a first run), every pass counts alike, so the boots with the most passes start first (the
// 8-pass 7.3-amd64 boot took 1,706 s of a first run's 3,238 s, in which it started 879 s in); ties keep the
// targets' order.
func (o *Options) boots(expect map[string]float64) []boot {
	var out []boot
	at := map[string]int{}
	for i, t := range o.Targets {
		k := bootKey(t)
		if j, ok := at[k]; ok {
			out[j].targets = append(out[j].targets, i)
			continue
		}
		at[k] = len(out)
		out = append(out, boot{name: t.ID, targets: []int{i}})
	}
	var sum float64
	var n int
	for j, b := range out {
		for _, i := range b.targets {
			if s, ok := expect[o.Targets[i].ID]; ok {
				out[j].cached, out[j].expect = out[j].cached+1, out[j].expect+s
				sum, n = sum+s, n+1
			}
		}
	}
	mean := 1.0 // for an entry with no time of its own: with none known, each pass weighs the same
	if n > 0 {
		mean = sum / float64(n)
	}
	est := func(b boot) float64 { return b.expect + float64(len(b.targets)-b.cached)*mean }
	sort.SliceStable(out, func(i, j int) bool { return est(out[i]) > est(out[j]) })
	return out
}

func targetIDs(ts []Target) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}

// runBoot boots one VM for ts (one boot's passes) and returns a record per pass, writing each pass's payload
// stdout to <id>.out (and with Keep the boot's whole console to each pass's <id>.console.log).
func (o *Options) runBoot(ctx context.Context, ts []Target, p *prepared) []Record {
	failAll := func(err error) []Record { return o.infraAll(ts, p.accel, err) }
	outs := make([]io.Writer, len(ts))
	var logs []io.Writer
	for i, t := range ts {
		f, err := os.Create(filepath.Join(o.Results, t.ID+".out"))
		if err != nil {
			return failAll(err)
		}
		defer f.Close()
		outs[i] = f
		if o.Keep {
			f, err := os.Create(filepath.Join(o.Results, t.ID+".console.log"))
			if err != nil {
				return failAll(err)
			}
			defer f.Close()
			logs = append(logs, f)
		}
	}
	var log io.Writer
	if len(logs) > 0 {
		log = io.MultiWriter(logs...)
	}
	return o.boot(ctx, ts, p, p.accel, outs, log)
}

// infraAll is an INFRA record for each of ts, saying err: the boot they share could not be made or run.
func (o *Options) infraAll(ts []Target, accel string, err error) []Record {
	recs := make([]Record, len(ts))
	for i, t := range ts {
		recs[i] = o.record(t, accel, Infra, err.Error())
	}
	return recs
}

func (o *Options) record(t Target, accel, result, msg string) Record {
	return Record{
		Schema: "confine.vm.result/v1", Kernel: t.ID, Package: t.Package, Version: t.Version, Image: t.Image,
		PinnedVersion: t.PinnedVersion, ABICap: t.ABICap, HostEmulation: t.HostEmulation, CPUs: o.CPUs,
		ImageSHA256: t.ImageSHA256, ImageRef: t.Ref, ImageDigest: t.Digest, Arch: t.Arch, Accel: accel,
		CmdlineExtra: t.Cmdline, ExpectedLandlock: t.Landlock, ExpectedABI: t.ABI, Exit: -1, Result: result, Error: msg,
	}
}

// boot runs one VM whose passes are ts (each pass's payload stdout to the stdouts of the same index) and
// classifies each pass's outcome. A pass's Seconds is its share of the boot's wall time (Record.Seconds).
func (o *Options) boot(ctx context.Context, ts []Target, p *prepared, accel string, stdouts []io.Writer, log io.Writer) []Record {
	recs := make([]Record, len(ts))
	failAll := func(err error) []Record { return o.infraAll(ts, accel, err) }
	cfg := guest.Config{Argv: o.Argv, Timeout: o.Timeout}
	parsers := make([]*console.Parser, len(ts))
	sinks := make([]io.Writer, 0, len(ts)+1)
	for i, t := range ts {
		nonce := newNonce()
		cfg.Passes = append(cfg.Passes, guest.Pass{Nonce: nonce, Env: []string{
			"VM_KERNEL_ID=" + t.ID,
			"VM_ARCH=" + t.Arch,
			"VM_EXPECTED_ABI=" + fmt.Sprint(t.ABI),
			"VM_EXPECTED_LANDLOCK=" + t.Landlock,
			"VM_CMDLINE_EXTRA=" + t.Cmdline,
			"VM_ABI_CAP=" + abiCap(t.ABICap),
			"VM_HOST_EMULATION=" + t.HostEmulation,
			"VM_ACCEL=" + accel, // tcg or kvm: a race's win rate depends on it (conformance/race-rates.json)
		}})
		parsers[i] = console.NewParser(nonce, stdouts[i])
		sinks = append(sinks, parsers[i])
	}
	if log != nil {
		sinks = append(sinks, log)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return failAll(err)
	}
	cfgArchive, err := initramfs.Bytes([]cpio.Record{initramfs.File(guest.ConfigPath, js, 0o644)})
	if err != nil {
		return failAll(err)
	}
	initrd, err := os.CreateTemp("", "vm-initrd-"+ts[0].ID+"-*.img")
	if err != nil {
		return failAll(err)
	}
	defer os.Remove(initrd.Name())
	for _, b := range [][]byte{p.base, p.tools, p.payload, cfgArchive} {
		if _, err := initrd.Write(b); err != nil {
			initrd.Close()
			return failAll(err)
		}
	}
	if err := initrd.Close(); err != nil {
		return failAll(err)
	}

	start := time.Now()
	t0 := ts[0]
	spec := qemu.Spec{Arch: t0.Arch, Accel: accel, Kernel: t0.Image, Initrd: initrd.Name(), Extra: t0.Cmdline, CPUs: o.CPUs}
	// Each pass has the guest timeout of its own: the host's deadline is theirs summed, plus the boot's allowance.
	limits := qemu.Limits{Deadline: time.Duration(len(ts))*o.Timeout + o.Boot, Silence: o.Silence, Evidence: o.Evidence}
	bootErr := qemu.Boot(ctx, spec, limits, io.MultiWriter(sinks...))
	wall := time.Since(start).Seconds()
	var evidence []string
	var hang *qemu.HangError
	if errors.As(bootErr, &hang) && len(hang.Evidence) > 0 {
		evidence = summarizeEvidence(hang.Evidence)
		// The whole dump (every task's stack) goes next to the results; the records keep one line per task.
		full := filepath.Join(o.Results, t0.ID+".evidence.log")
		if err := os.WriteFile(full, []byte(strings.Join(hang.Evidence, "\n")+"\n"), 0o644); err == nil {
			evidence = append(evidence, "full task dump: "+full)
		}
	}
	var guestSum float64
	for i, t := range ts {
		rec := o.record(t, accel, Infra, "")
		rec.Boot, rec.BootSeconds = t0.ID, wall
		perr := parsers[i].Close()
		res, rerr := parsers[i].Result()
		switch {
		case perr != nil:
			rec.Error = "write payload stdout: " + perr.Error()
		case rerr == nil:
			rec.Release, rec.Landlock, rec.ABI, rec.Exit, rec.GuestSeconds = res.Release, res.Landlock, res.ABI, res.Exit, res.Seconds
			rec.Seconds = res.Seconds
			guestSum += res.Seconds
			rec.Result, rec.Error = classify(t, res)
		case bootErr != nil:
			rec.Evidence = evidence
			if hang != nil && hang.Kind == qemu.ErrSilent && parsers[i].Began() {
				rec.Error = fmt.Sprintf("watchdog: %v (payload started, then went silent)", bootErr)
			} else {
				rec.Error = bootErr.Error()
			}
			if pe := parsers[i].Panic(); pe != nil {
				rec.Error += "; " + pe.Error()
			}
		default:
			rec.Error = "QEMU exited without a verified result: " + rerr.Error()
		}
		if rec.Result != OK {
			// The payload's stderr, which goes to the console, often says why; a panic's tail is its stack, and the
			// oops's head says what faulted.
			rec.ConsoleTail = parsers[i].Tail()
			rec.Evidence = append(rec.Evidence, parsers[i].Oops()...)
		}
		recs[i] = rec
	}
	// What no pass accounts for (the boot, unpacking, power-off, a pass with no result) is the first pass's.
	recs[0].Seconds += max(0, wall-guestSum)
	return recs
}

// classify turns a verified guest result into ok/fail/infra/skip with a one-line reason.
func classify(t Target, r *console.Result) (string, string) {
	switch {
	case r.TimedOut:
		return Fail, r.Error
	case r.Error != "" && r.Exit == -1:
		return Infra, "guest supervisor: " + r.Error
	case t.Landlock == "" && r.Landlock != vm.LandlockAvailable:
		return Skip, fmt.Sprintf("no Landlock expectation for this kernel (no labels, vm/KERNEL-IMAGE.md) and the kernel reports %s (payload exit %d)",
			vm.RenderABI(r.Landlock, r.ABI), r.Exit)
	case r.Exit != 0:
		msg := fmt.Sprintf("payload exited with status %d", r.Exit)
		if r.Signal != "" {
			msg = "payload killed by " + r.Signal
		}
		return Fail, msg
	case r.Error != "":
		return Fail, r.Error
	case t.Landlock != "" && (r.Landlock != t.Landlock || r.ABI != t.ABI):
		return Fail, fmt.Sprintf("Landlock: kernel reports %s, manifest expects %s (fix vm/kernels.json or the pin)",
			vm.RenderABI(r.Landlock, r.ABI), t.ExpectedABI())
	}
	return OK, ""
}

func (o *Options) write(r Record) error {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.Results, r.Kernel+".json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	ju, err := r.JUnit()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.Results, r.Kernel+".junit.xml"), ju, 0o644)
}

// summarizeEvidence keeps, of a sysrq task dump, the sysrq lines and one line per task (name, state, pid, ppid):
// enough to see what ran and what it waited in, small enough for a result record.
func summarizeEvidence(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, "sysrq:") || strings.Contains(l, "task:") {
			out = append(out, l)
		}
	}
	if len(out) == 0 && len(lines) > 0 { // no dump came: keep what the guest did print
		out = lines[:min(len(lines), 50)]
	}
	return out
}

// abiCap renders a cap for the guest's environment: "" when there is none.
func abiCap(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func newNonce() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic("BUG(vm): crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b)
}
