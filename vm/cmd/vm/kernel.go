package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/confine-dev/confine/vm"
	"github.com/confine-dev/confine/vm/internal/fetch"
	"github.com/confine-dev/confine/vm/internal/oci"
	"github.com/confine-dev/confine/vm/internal/runner"
)

const kernelUsage = `usage:
  vm kernel import-deb PKG=VERSION --arch A --to REF [--expect-abi N|absent|disabled]
  vm kernel import-file VMLINUZ --arch A --release R --expect-abi N|absent|disabled [--source TEXT] --to REF
  vm kernel pull [--arch A] REF
REF: HOST/REPO[:TAG][@DIGEST] (loopback registries over HTTP, credentials from ~/.docker/config.json) or
oci-layout:DIR[:TAG][@DIGEST]. Image format: vm/KERNEL-IMAGE.md`

// kernelCmd runs `vm kernel SUBCOMMAND`: pack kernels into OCI images, or pull one into the cache.
func kernelCmd(m *vm.Manifest, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, kernelUsage)
		return exitUsage
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("vm kernel "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, kernelUsage); fs.PrintDefaults() }
	arch := fs.String("arch", "", "guest arch: amd64 or arm64")
	cache := fs.String("cache", fetch.DefaultRoot(), "kernel cache ($CACHE/vm)")
	var to, release, expect, source *string
	switch sub {
	case "import-deb", "import-file":
		to = fs.String("to", "", "destination reference (with a tag)")
		expect = fs.String("expect-abi", "", "expected Landlock: an ABI number, absent or disabled (import-deb: default from vm/kernels.json)")
		if sub == "import-file" {
			release = fs.String("release", "", "the kernel's uname -r")
			source = fs.String("source", "", "free-text source of the kernel (default: the file's name)")
		}
	case "pull":
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, kernelUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "vm kernel: unknown subcommand %q\n%s\n", sub, kernelUsage)
		return exitUsage
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "vm kernel %s: "+format+"\n", append([]any{sub}, a...)...)
		return exitUsage
	}
	setupErr := func(err error) int {
		fmt.Fprintf(stderr, "vm kernel %s: %v\n", sub, err)
		return exitSetup
	}
	if len(pos) != 1 {
		return usageErr("want exactly one %s", map[string]string{"import-deb": "PKG=VERSION", "import-file": "VMLINUZ", "pull": "REF"}[sub])
	}
	ctx := context.Background()
	if sub == "pull" {
		if *arch != "" && *arch != "amd64" && *arch != "arm64" {
			return usageErr("--arch %q: want amd64 or arm64", *arch)
		}
		t, err := runner.ImageTarget(ctx, *cache, pos[0], *arch)
		if err != nil {
			return setupErr(err)
		}
		fmt.Fprintf(stdout, "%s\t%s\tlinux/%s\t%s\texpected landlock %s\t%s\n", t.Digest, t.ImageSHA256, t.Arch, t.Image,
			expectation(t.Kernel), pos[0])
		return 0
	}
	if *arch != "amd64" && *arch != "arm64" {
		return usageErr("--arch amd64 or arm64 is required")
	}
	if *to == "" {
		return usageErr("--to REF is required")
	}
	dest, err := oci.ParseRef(*to)
	if err != nil {
		return usageErr("--to: %v", err)
	}
	var path string
	var meta oci.Meta
	if sub == "import-deb" {
		pkg, version, ok := strings.Cut(pos[0], "=")
		if !ok || pkg == "" || version == "" {
			return usageErr("%q: want PKG=VERSION", pos[0])
		}
		ex, mt, err := runner.DebianKernel(ctx, cacheFor(m, *cache, stderr), m, pkg, version, *arch)
		if err != nil {
			return setupErr(err)
		}
		path, meta = ex.Path, mt
		if *expect == "" && meta.Landlock == "" {
			return usageErr("%s is not in vm/kernels.json for %s: give --expect-abi", pos[0], *arch)
		}
	} else {
		if *release == "" || *expect == "" {
			return usageErr("--release and --expect-abi are required")
		}
		if *source == "" {
			*source = "file " + pos[0]
		}
		path, meta = pos[0], oci.Meta{Arch: *arch, Release: *release, Source: *source}
	}
	if *expect != "" {
		if meta.Landlock, meta.ABI, err = oci.ParseExpectation(*expect); err != nil {
			return usageErr("--expect-abi: %v", err)
		}
	}
	img, err := oci.Build(path, meta)
	if err != nil {
		return setupErr(err)
	}
	dig, err := oci.Write(ctx, img, dest)
	if err != nil {
		return setupErr(err)
	}
	fmt.Fprintf(stdout, "%s\t%s\n", dig, dest)
	return 0
}

func expectation(k vm.Kernel) string {
	if k.Landlock == "" {
		return "unknown (no labels)"
	}
	return k.ExpectedABI()
}

// parseInterspersed parses flags that may come before or after positional arguments, and returns the positionals.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if args = fs.Args(); len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}
