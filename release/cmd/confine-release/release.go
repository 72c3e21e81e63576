package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/confine-dev/confine/release/attest"
	"github.com/confine-dev/confine/release/elfcheck"
	"github.com/confine-dev/confine/release/oci"
	"github.com/confine-dev/confine/release/pack"
	"github.com/confine-dev/confine/release/platforms"
	"github.com/confine-dev/confine/release/registry"
	"github.com/confine-dev/confine/release/verify"
)

// row is one line of the artifact table: one platform's launcher.
type row struct {
	platform, sha256, reproducible, digest string
	size                                   int64
	static, stripped                       bool
}

// pipeline is the state `release` threads through its stages.
type pipeline struct {
	rf      releaseFlags
	gf      gateFlags
	sf      signFlags
	repro   string // a second clean build's dist dir, "" for none
	out     string
	regBin  string
	npmRoot string
	sizes   string          // platforms/sizes.json: the last release's sizes, rewritten once the release passed; "" for none
	last    platforms.Sizes // read from sizes
	ps      []platforms.Platform
	rows    map[string]*row
	srv     *registry.Server // the loopback registry, once started
	// reportSHA256 is the sha256 of --report once the gate stage passed it, "" before or without one.
	reportSHA256 string
	w            io.Writer
}

// stage is one step of the release, run in order; the first error stops the release.
type stage struct {
	title string
	run   func(*pipeline) error
}

var stages = []stage{
	{"verifying Bazel's artifacts against platforms.json", (*pipeline).verify},
	{"comparing with a second clean build", (*pipeline).reproducible},
	{"gating on the conformance report", (*pipeline).gate},
	{"packaging each VS Code target and the npm packages", (*pipeline).pack},
	{"pushing the OCI index to a loopback registry and a layout", (*pipeline).push},
	{"pulling each child back by platform and verifying it", (*pipeline).pull},
	{"writing each launcher's provenance and signing the checksums", (*pipeline).attest},
	{"verifying the provenance and the signature", (*pipeline).verifyAttestations},
}

func runRelease(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	p := &pipeline{w: stdout, rows: map[string]*row{}}
	p.rf.register(fs)
	p.gf.register(fs)
	p.sf.register(fs)
	fs.StringVar(&p.repro, "repro", "", "a second clean build's artifacts (`DIR`/<platform>/confine) to compare byte for byte")
	fs.StringVar(&p.out, "out", "out/release", "where the layouts, the OCI layout and the registry's storage go (`DIR`, recreated)")
	fs.StringVar(&p.npmRoot, "npm-root", "release/npm/confine", "the npm root package's source folder")
	fs.StringVar(&p.regBin, "registry-bin", registry.DefaultBinary, "the docker-registry server binary")
	fs.StringVar(&p.sizes, "sizes", "platforms/sizes.json", "the last release's sizes (`FILE`): the table prints each change against it, and a passed release rewrites it; \"\" for none")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(fs, "version", "source-commit"); err != nil {
		return err
	}
	var err error
	if p.ps, err = p.rf.platforms(); err != nil {
		return err
	}
	if p.sizes != "" {
		if p.last, err = platforms.LoadSizes(p.sizes); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(p.out); err != nil {
		return err
	}
	defer func() {
		if p.srv != nil {
			p.srv.Stop()
		}
	}()
	for _, s := range stages {
		fmt.Fprintf(stdout, "== %s\n", s.title)
		t := time.Now()
		if err := s.run(p); err != nil {
			return err
		}
		if d := time.Since(t); d > 10*time.Second {
			fmt.Fprintf(stdout, "   took %v\n", d.Round(time.Second))
		}
	}
	p.table()
	return p.recordSizes()
}

// recordSizes rewrites the sizes file with this release's sizes, once every stage has passed: the next
// release's table compares with them. The file is committed with the release.
func (p *pipeline) recordSizes() error {
	if p.sizes == "" {
		return nil
	}
	s := platforms.Sizes{Version: p.rf.version, Commit: p.rf.commit, Bytes: map[string]int64{}}
	for _, pl := range p.ps {
		s.Bytes[pl.Name] = p.rows[pl.Name].size
	}
	if err := platforms.WriteSizes(p.sizes, s); err != nil {
		return err
	}
	fmt.Fprintf(p.w, "wrote this release's sizes to %s: commit it with the release\n", p.sizes)
	return nil
}

func (p *pipeline) verify() error {
	ok := true
	for _, pl := range p.ps {
		path := p.rf.binary(pl.Name)
		rs := verify.Artifact(path, pl, p.rf.release())
		for _, r := range rs {
			fmt.Fprintf(p.w, "   %-11s %s\n", pl.Name, r)
		}
		ok = ok && !verify.Failed(rs)
		r := &row{platform: pl.Name, reproducible: "not checked", digest: "-"}
		if rep, err := elfcheck.Inspect(path); err == nil {
			for _, f := range rep.Findings(pl.GOARCH) {
				r.static = r.static || f.Check == elfcheck.CheckStatic
				r.stripped = r.stripped || f.Check == elfcheck.CheckStripped
			}
			r.static, r.stripped = !r.static, !r.stripped
		}
		r.sha256, r.size, _ = pack.SHA256(path)
		p.rows[pl.Name] = r
	}
	if !ok {
		return fmt.Errorf("verify: %w", errChecksFailed)
	}
	return nil
}

func (p *pipeline) reproducible() error {
	if p.repro == "" {
		fmt.Fprintln(p.w, "   skipped: no --repro build given; the table says \"not checked\"")
		return nil
	}
	ok := true
	for _, pl := range p.ps {
		same, detail, err := compare(p.rf.binary(pl.Name), filepath.Join(p.repro, pl.Name, "confine"))
		if err != nil {
			return err
		}
		fmt.Fprintf(p.w, "   %-11s %s\n", pl.Name, detail)
		p.rows[pl.Name].reproducible = map[bool]string{true: "yes", false: "NO"}[same]
		ok = ok && same
	}
	if !ok {
		return fmt.Errorf("reproducibility: %w", errChecksFailed)
	}
	return nil
}

func (p *pipeline) gate() error {
	if p.rf.report == "" {
		fmt.Fprintln(p.w, "   skipped: no --report (run `make matrix-full` for reports/matrix.json); the manifests say not gated")
		return nil
	}
	var err error
	p.reportSHA256, err = runGateWith(p.w, &p.rf, p.gf, p.ps)
	return err
}

func (p *pipeline) pack() error {
	// The report's sha256 comes from the gate stage, which passed it (or there was no --report).
	src := p.rf.source(p.ps)
	src.ReportSHA256 = p.reportSHA256
	if src.ReportSHA256 == "" {
		fmt.Fprintln(p.w, "   NOT GATED: no --report; the manifests record no conformance report (not a release)")
	}
	for _, t := range pack.Targets() {
		arch, _ := pack.GOARCH(t)
		dir := filepath.Join(p.out, "vsix", t)
		m, err := pack.Layout(dir, t, arch, src)
		if err != nil {
			return err
		}
		for _, b := range m.Binaries {
			if b.SHA256 != p.rows[b.Platform].sha256 {
				return fmt.Errorf("%s/%s: sha256 %s, Bazel built %s", dir, b.Path, b.SHA256, p.rows[b.Platform].sha256)
			}
		}
		fmt.Fprintf(p.w, "   %-13s %s (%d launchers, sha256 = Bazel's)\n", t, dir, len(m.Binaries))
	}
	dirs, err := pack.NPM(filepath.Join(p.out, "npm"), p.npmRoot, src)
	if err != nil {
		return err
	}
	fmt.Fprintf(p.w, "   npm %s: %s\n", pack.NPMVersion(p.rf.version), strings.Join(dirs, " "))
	return nil
}

func (p *pipeline) tag() (name.Tag, error) {
	return name.NewTag(p.srv.Addr+"/confine:"+p.rf.version, name.Insecure)
}

func (p *pipeline) push() error {
	var err error
	if p.srv, err = registry.Start(p.regBin, filepath.Join(p.out, "registry")); err != nil {
		return err
	}
	fmt.Fprintf(p.w, "   docker-registry on %s (storage %s)\n", p.srv.Addr, filepath.Join(p.out, "registry"))
	idx, err := oci.Index(indexChildren(&p.rf, p.ps))
	if err != nil {
		return err
	}
	tag, err := p.tag()
	if err != nil {
		return err
	}
	d, err := oci.Push(tag, idx)
	if err != nil {
		return err
	}
	fmt.Fprintf(p.w, "   pushed %s@%s\n", tag, d)
	lay := filepath.Join(p.out, "oci")
	if err := oci.WriteLayout(lay, idx, p.rf.version); err != nil {
		return err
	}
	fmt.Fprintf(p.w, "   wrote the OCI layout %s (ref %s)\n", lay, p.rf.version)
	return nil
}

func (p *pipeline) pull() error {
	tag, err := p.tag()
	if err != nil {
		return err
	}
	fromRegistry, err := remote.Index(tag)
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	fromLayout, err := oci.LayoutIndex(filepath.Join(p.out, "oci"), p.rf.version)
	if err != nil {
		return err
	}
	ok := true
	for _, pl := range p.ps {
		if pl.WSL2 {
			continue
		}
		for src, idx := range map[string]v1.ImageIndex{"registry": fromRegistry, "layout": fromLayout} {
			out := filepath.Join(p.out, "pulled", src, pl.Name, "confine")
			d, err := oci.Extract(idx, pl.GOARCH, out)
			if err != nil {
				return err
			}
			sum, _, err := pack.SHA256(out)
			if err != nil {
				return err
			}
			rs := verify.Artifact(out, pl, p.rf.release())
			for _, r := range rs {
				fmt.Fprintf(p.w, "   %-8s %-11s %s\n", src, pl.Name, r)
			}
			if sum != p.rows[pl.Name].sha256 {
				fmt.Fprintf(p.w, "   %-8s %-11s FAIL sha256   %s, Bazel built %s\n", src, pl.Name, sum, p.rows[pl.Name].sha256)
				ok = false
			}
			ok = ok && !verify.Failed(rs)
			if src == "registry" {
				p.rows[pl.Name].digest = d.String()
			}
		}
	}
	if !ok {
		return fmt.Errorf("pulled back: %w", errChecksFailed)
	}
	return nil
}

// table prints the artifact table, one row per platform of the table: its size in bytes, the change against
// the last release (platforms/sizes.json, named in the heading), and the budget.
func (p *pipeline) table() {
	fmt.Fprint(p.w, sizeTable(p.ps, p.rows, p.last))
}

// sizeTable is the artifact table's text (see table).
func sizeTable(ps []platforms.Platform, rows map[string]*row, last platforms.Sizes) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	since := "change"
	if last.Version != "" {
		since = "change since " + strings.Fields(last.Version)[0]
	}
	fmt.Fprintf(tw, "target\tsize\t%s\tbudget\tsha256\tstatic\tstripped\treproducible\tregistry digest\n", since)
	yes := map[bool]string{true: "yes", false: "NO"}
	for _, pl := range ps {
		r := rows[pl.Name]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.platform, r.size, last.Change(pl.Name, r.size), pl.MaxBytes,
			r.sha256, yes[r.static], yes[r.stripped], r.reproducible, strings.TrimSpace(r.digest))
	}
	tw.Flush()
	return b.String()
}

func (p *pipeline) attest() error {
	return writeAttestations(p.w, p.out, &p.rf, &p.sf, p.ps, p.reportSHA256, true)
}

// verifyAttestations runs what `verify --provenance --signature` runs on what attest wrote.
func (p *pipeline) verifyAttestations() error {
	af := attestFlags{provenance: filepath.Join(p.out, "provenance"), signature: filepath.Join(p.out, attest.SignatureFile)}
	sc := checkSignature(af)
	ok := true
	for _, pl := range p.ps {
		rs := attestResults(af, &sc, pl.Name, p.rf.binary(pl.Name), p.sf.sourceCommit)
		for _, r := range rs {
			fmt.Fprintf(p.w, "   %-11s %s\n", pl.Name, r)
		}
		ok = ok && !verify.Failed(rs)
	}
	if !ok {
		return fmt.Errorf("provenance and signature: %w", errChecksFailed)
	}
	return nil
}
