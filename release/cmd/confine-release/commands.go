package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/confine-dev/confine/release/elfcheck"
	"github.com/confine-dev/confine/release/gate"
	"github.com/confine-dev/confine/release/goreleaser"
	"github.com/confine-dev/confine/release/oci"
	"github.com/confine-dev/confine/release/pack"
	"github.com/confine-dev/confine/release/platforms"
	"github.com/confine-dev/confine/release/verify"
)

// releaseFlags are the flags every command that reads the artifacts shares.
type releaseFlags struct {
	table, dist, version, commit, report string
}

func (r *releaseFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.table, "platforms", "platforms/platforms.json", "the platform table")
	fs.StringVar(&r.dist, "dist", "dist/bin", "Bazel's artifacts: `DIR`/<platform>/confine (make build)")
	fs.StringVar(&r.version, "version", "", "the release version stamped in confine (git describe --tags --always --dirty)")
	fs.StringVar(&r.commit, "commit", "", "the released git commit; the version must name it")
	fs.StringVar(&r.report, "report", "", "the conformance report (reports/matrix.json): gated first, its sha256 goes in every manifest only if the gate passes it")
}

func (r *releaseFlags) platforms() ([]platforms.Platform, error) { return platforms.Load(r.table) }

func (r *releaseFlags) binary(platform string) string {
	return filepath.Join(r.dist, platform, "confine")
}

func (r *releaseFlags) release() verify.Release {
	return verify.Release{Version: r.version, Commit: r.commit}
}

// source is the pack.Source of these flags, recording no conformance report: a report goes in only
// through gatedSource, once the gate has passed it.
func (r *releaseFlags) source(ps []platforms.Platform) pack.Source {
	return pack.Source{Platforms: ps, Binary: r.binary, Version: r.version, Commit: r.commit}
}

// gatedSource is the pack.Source of these flags; with --report it first gates the report (as `gate`
// does, quietly) and records its sha256 only when the gate passes it. A report the gate fails is
// refused with one line (wrapping errChecksFailed: exit 1) that says how to list the problems, so no
// layout ever names a report it was not gated on.
func gatedSource(rf *releaseFlags, g gateFlags, ps []platforms.Platform) (pack.Source, error) {
	src := rf.source(ps)
	if rf.report == "" {
		return src, nil
	}
	digest, err := runGateWith(io.Discard, rf, g, ps)
	var ge gateError
	if errors.As(err, &ge) {
		return src, fmt.Errorf("refusing --report %s: the conformance gate finds %d problems in it (`confine-release gate --report %s` lists them), "+
			"and a manifest records only a report the gate passes: %w", rf.report, ge.problems, rf.report, errChecksFailed)
	}
	if err != nil {
		return src, fmt.Errorf("gating --report %s: %w", rf.report, err)
	}
	src.ReportSHA256 = digest
	return src, nil
}

// verifyOne prints one line per check of the artifact at path for p and reports whether all passed.
func verifyOne(w io.Writer, path string, p platforms.Platform, rel verify.Release) bool {
	rs := verify.Artifact(path, p, rel)
	for _, r := range rs {
		fmt.Fprintf(w, "%-11s %s\n", p.Name, r)
	}
	return !verify.Failed(rs)
}

func runVerify(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	var rf releaseFlags
	var af attestFlags
	rf.register(fs)
	af.register(fs)
	fs.Usage = func() {}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(fs, "version"); err != nil {
		return err
	}
	if af.signature == "" && (af.key != "" || af.checksums != "") {
		return usagef("--key and --checksums need --signature")
	}
	ps, err := rf.platforms()
	if err != nil {
		return err
	}
	// Positional PLATFORM=PATH pairs verify those files; none verifies every platform under --dist.
	type item struct {
		p    platforms.Platform
		path string
	}
	var items []item
	for _, a := range fs.Args() {
		n, path, ok := strings.Cut(a, "=")
		if !ok {
			return usagef("argument %q is not PLATFORM=PATH", a)
		}
		p, err := platforms.Find(ps, n)
		if err != nil {
			return usagef("%v", err)
		}
		items = append(items, item{p, path})
	}
	if len(items) == 0 {
		for _, p := range ps {
			items = append(items, item{p, rf.binary(p.Name)})
		}
	}
	var sc signatureCheck
	if af.signature != "" {
		sc = checkSignature(af)
	}
	ok := true
	for _, it := range items {
		ok = verifyOne(stdout, it.path, it.p, rf.release()) && ok
		ok = printResults(stdout, it.p.Name, attestResults(af, &sc, it.p.Name, it.path, rf.commit)) && ok
	}
	if !ok {
		return errChecksFailed
	}
	return nil
}

// printResults prints one line per result, prefixed with the platform, and reports whether all passed.
func printResults(w io.Writer, platform string, rs []verify.Result) bool {
	for _, r := range rs {
		fmt.Fprintf(w, "%-11s %s\n", platform, r)
	}
	return !verify.Failed(rs)
}

func runSections(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sections", flag.ContinueOnError)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("want two files, got %d arguments", fs.NArg())
	}
	a, b := fs.Arg(0), fs.Arg(1)
	same, detail, err := compare(a, b)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, detail)
	if !same {
		return errChecksFailed
	}
	return nil
}

// compare reports whether the files a and b are byte-identical, with a one-line detail: the sha256, or
// both sha256s and the ELF sections that differ.
func compare(a, b string) (bool, string, error) {
	sa, _, err := pack.SHA256(a)
	if err != nil {
		return false, "", err
	}
	sb, _, err := pack.SHA256(b)
	if err != nil {
		return false, "", err
	}
	if sa == sb {
		return true, "identical, sha256 " + sa, nil
	}
	secs, err := elfcheck.DiffSections(a, b)
	if err != nil {
		return false, "", err
	}
	where := "no section differs (headers only)"
	if len(secs) > 0 {
		where = "sections " + strings.Join(secs, ", ")
	}
	return false, fmt.Sprintf("differ: %s sha256 %s, %s sha256 %s; %s", a, sa, b, sb, where), nil
}

func runPackage(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("package", flag.ContinueOnError)
	var rf releaseFlags
	var g gateFlags
	rf.register(fs)
	g.register(fs)
	target := fs.String("target", "", "the VS Code target: "+strings.Join(pack.Targets(), "|"))
	out := fs.String("out", "", "the layout `DIR` to (re)create")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(fs, "target", "out", "version"); err != nil {
		return err
	}
	arch, err := pack.GOARCH(*target)
	if err != nil {
		return usagef("%v", err)
	}
	ps, err := rf.platforms()
	if err != nil {
		return err
	}
	src, err := gatedSource(&rf, g, ps)
	if err != nil {
		return err
	}
	m, err := pack.Layout(*out, *target, arch, src)
	if err != nil {
		return err
	}
	printManifest(stdout, *out, m)
	return nil
}

func printManifest(w io.Writer, dir string, m pack.Manifest) {
	report := m.ConformanceReport
	if report == "" {
		report = "none (not gated)"
	}
	fmt.Fprintf(w, "%s: target %s, version %s, conformance report %s\n", dir, m.Target, m.Version, report)
	for _, b := range m.Binaries {
		fmt.Fprintf(w, "  %-17s %-11s %9d  %s\n", b.Path, b.Platform, b.Size, b.SHA256)
	}
}

// indexChildren returns the OCI children: the plain Linux launcher of each architecture in the table.
func indexChildren(rf *releaseFlags, ps []platforms.Platform) []oci.Child {
	var cs []oci.Child
	for _, p := range ps {
		if !p.WSL2 {
			cs = append(cs, oci.Child{Arch: p.GOARCH, Binary: rf.binary(p.Name)})
		}
	}
	return cs
}

func runOCI(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "push" && args[0] != "pull") {
		return usagef("want `oci push` or `oci pull`")
	}
	fs := flag.NewFlagSet("oci "+args[0], flag.ContinueOnError)
	var rf releaseFlags
	rf.register(fs)
	tag := fs.String("tag", "", "the registry `REF` (host:port/repo:tag)")
	layoutDir := fs.String("layout", "", "an OCI image layout `DIR`")
	insecure := fs.Bool("insecure", false, "talk plain HTTP to the registry (loopback registries)")
	arch := fs.String("arch", "", "pull: the linux `ARCH` (amd64, arm64) of the child to extract")
	out := fs.String("out", "", "pull: where to write the extracted launcher")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	if args[0] == "push" {
		if err := required(fs, "tag", "version"); err != nil {
			return err
		}
		ref, err := name.NewTag(*tag, opts...)
		if err != nil {
			return usagef("%v", err)
		}
		ps, err := rf.platforms()
		if err != nil {
			return err
		}
		idx, err := oci.Index(indexChildren(&rf, ps))
		if err != nil {
			return err
		}
		// Credentials as docker and crane find them ($DOCKER_CONFIG/config.json, e.g. after `docker login`);
		// none is anonymous, as a loopback registry wants.
		d, err := oci.Push(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s@%s\n", ref, d)
		if *layoutDir != "" {
			if err := oci.WriteLayout(*layoutDir, idx, rf.version); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s (ref %s)\n", *layoutDir, rf.version)
		}
		return nil
	}
	if err := required(fs, "arch", "out"); err != nil {
		return err
	}
	var idx v1.ImageIndex
	switch {
	case *tag != "":
		ref, err := name.ParseReference(*tag, opts...)
		if err != nil {
			return usagef("%v", err)
		}
		if idx, err = remote.Index(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("oci: %w", err)
		}
	case *layoutDir != "":
		if err := required(fs, "version"); err != nil {
			return err
		}
		var err error
		if idx, err = oci.LayoutIndex(*layoutDir, rf.version); err != nil {
			return err
		}
	default:
		return usagef("pull needs --tag or --layout")
	}
	d, err := oci.Extract(idx, *arch, *out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "extracted linux/%s child %s to %s\n", *arch, d, *out)
	return nil
}

func runNPM(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("npm", flag.ContinueOnError)
	var rf releaseFlags
	var g gateFlags
	rf.register(fs)
	g.register(fs)
	out := fs.String("out", "", "the `DIR` to write the package folders into")
	root := fs.String("root", "release/npm/confine", "the root package's source folder")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(fs, "out", "version"); err != nil {
		return err
	}
	ps, err := rf.platforms()
	if err != nil {
		return err
	}
	src, err := gatedSource(&rf, g, ps)
	if err != nil {
		return err
	}
	dirs, err := pack.NPM(*out, *root, src)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "npm version %s:\n", pack.NPMVersion(rf.version))
	for _, d := range dirs {
		fmt.Fprintf(stdout, "  %s\n", d)
	}
	return nil
}

func runGoreleaserCheck(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("goreleaser-check", flag.ContinueOnError)
	var rf releaseFlags
	rf.register(fs)
	artifacts := fs.String("artifacts", "out/goreleaser/artifacts.json", "goreleaser's artifacts.json (paths in it are relative to the current directory)")
	profile := fs.String("profile", "packaging/apparmor/confine", "the AppArmor profile the deb and rpm must install at "+goreleaser.ProfilePath)
	if err := parse(fs, args); err != nil {
		return err
	}
	ps, err := rf.platforms()
	if err != nil {
		return err
	}
	as, err := goreleaser.Load(*artifacts)
	if err != nil {
		return err
	}
	ok := true
	for _, f := range goreleaser.Check(".", as, ps, rf.binary, *profile) {
		fmt.Fprintln(stdout, f)
		ok = ok && f.OK
	}
	if !ok {
		return errChecksFailed
	}
	return nil
}

// gateFlags are the inputs of the conformance gate besides the report itself (releaseFlags.report).
type gateFlags struct{ expect, kernels, cases string }

func (g *gateFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.expect, "expect", "conformance/expected.yaml", "the reviewed expectations")
	fs.StringVar(&g.kernels, "kernels", "vm/kernels.json", "the kernel matrix every report must cover")
	fs.StringVar(&g.cases, "cases", "conformance/CASES.md", "the case catalogue every kernel must cover")
}

// runGateWith gates rf.report against g and the launchers of ps. It prints one line per problem to w
// and returns the report's sha256 when the gate passes it; an error wrapping errChecksFailed (problems)
// or another error (an input or a launcher that cannot be read).
func runGateWith(w io.Writer, rf *releaseFlags, g gateFlags, ps []platforms.Platform) (string, error) {
	released := map[string]string{}
	for _, p := range ps {
		if !p.WSL2 {
			sum, _, err := pack.SHA256(rf.binary(p.Name))
			if err != nil {
				return "", fmt.Errorf("the released %s launcher: %w", p.Name, err)
			}
			released[p.GOARCH] = sum
		}
	}
	problems, digest, err := gate.Check(gate.Inputs{Matrix: rf.report, Expected: g.expect, Kernels: g.kernels,
		Cases: g.cases, Released: released})
	if err != nil {
		return "", err
	}
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	if len(problems) > 0 {
		return "", gateError{problems: len(problems), report: rf.report, digest: digest}
	}
	fmt.Fprintf(w, "ok   %s (sha256 %s): every kernel and case as expected, run with the released launchers\n", rf.report, digest)
	return digest, nil
}

// gateError is a report the gate failed; it wraps errChecksFailed (exit 1).
type gateError struct {
	problems       int
	report, digest string
}

func (e gateError) Error() string {
	return fmt.Sprintf("gate: %d problems in %s (sha256 %s): %v", e.problems, e.report, e.digest, errChecksFailed)
}

func (e gateError) Unwrap() error { return errChecksFailed }

func runGate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	var rf releaseFlags
	var g gateFlags
	rf.register(fs)
	g.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if rf.report == "" {
		rf.report = "reports/matrix.json" // the gate always has a report; `release` gates only when given one
	}
	ps, err := rf.platforms()
	if err != nil {
		return err
	}
	_, err = runGateWith(stdout, &rf, g, ps)
	return err
}
