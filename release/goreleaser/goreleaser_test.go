package goreleaser

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confine-dev/confine/release/platforms"
)

// snapshot writes, under a temp root, Bazel-like launchers (dist/<platform>/confine) and what goreleaser
// makes of them (binaries, archives, SBOMs, checksums.txt, artifacts.json), and returns the root, the
// table and the artifacts. Tests then break one thing.
func snapshot(t *testing.T) (string, []platforms.Platform, []Artifact) {
	t.Helper()
	ps, err := platforms.Load("../../platforms/platforms.json")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write := func(rel string, b []byte, mode os.FileMode) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	var as []Artifact
	art := func(typ, path, goarch, id string) {
		a := Artifact{Name: filepath.Base(path), Path: path, GOOS: "linux", GOARCH: goarch, Type: typ}
		if typ == "SBOM" || typ == "Checksum" {
			a.GOOS = ""
		}
		a.Extra.ID = id
		as = append(as, a)
	}
	sums := ""
	for _, p := range ps {
		bin := []byte("launcher " + p.Name)
		write(filepath.Join("dist", p.Name, "confine"), bin, 0o755)
		bp := filepath.Join("gr", kind(p)+"_"+p.GOARCH, "confine")
		write(bp, bin, 0o755)
		art("Binary", bp, p.GOARCH, kind(p))
		ap := filepath.Join("gr", "confine_"+p.Name+".tar.gz")
		f, _ := os.Create(filepath.Join(root, ap))
		zw := gzip.NewWriter(f)
		tw := tar.NewWriter(zw)
		tw.WriteHeader(&tar.Header{Name: "confine", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg})
		tw.Write(bin)
		tw.Close()
		zw.Close()
		f.Close()
		art("Archive", ap, p.GOARCH, kind(p))
		sp := filepath.Join("gr", "confine_"+p.Name+".cdx.json")
		write(sp, []byte(`{"bomFormat":"CycloneDX","components":[{"name":"golang.org/x/sys"}]}`), 0o644)
		art("SBOM", sp, "", kind(p))
		for _, rel := range []string{ap, sp} {
			b, _ := os.ReadFile(filepath.Join(root, rel))
			h := sha256.Sum256(b)
			sums += fmt.Sprintf("%s  %s\n", hex.EncodeToString(h[:]), filepath.Base(rel))
		}
	}
	write("gr/checksums.txt", []byte(sums), 0o644)
	art("Checksum", "gr/checksums.txt", "", "")
	b, _ := json.Marshal(as)
	write("gr/artifacts.json", b, 0o644)
	return root, ps, as
}

func failures(t *testing.T, root string, as []Artifact, ps []platforms.Platform) []string {
	t.Helper()
	var out []string
	for _, f := range Check(root, as, ps, func(n string) string { return filepath.Join(root, "dist", n, "confine") }) {
		t.Log(f)
		if !f.OK {
			out = append(out, f.String())
		}
	}
	return out
}

func TestGoodSnapshot(t *testing.T) {
	root, ps, _ := snapshot(t)
	as, err := Load(filepath.Join(root, "gr", "artifacts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(t, root, as, ps); len(f) != 0 {
		t.Fatalf("a faithful snapshot failed: %q", f)
	}
}

func TestBrokenSnapshots(t *testing.T) {
	for name, tc := range map[string]struct {
		breakIt func(t *testing.T, root string, as []Artifact) []Artifact
		want    string
	}{
		"binary differs from Bazel's": {func(t *testing.T, root string, as []Artifact) []Artifact {
			os.WriteFile(filepath.Join(root, as[0].Path), []byte("rebuilt by goreleaser"), 0o755)
			return as
		}, "Bazel built"},
		"platform missing": {func(t *testing.T, root string, as []Artifact) []Artifact {
			var out []Artifact
			for _, a := range as {
				if !(a.Extra.ID == "wsl2" && a.GOARCH == "arm64") {
					out = append(out, a)
				}
			}
			return out
		}, "0 Binary entries for build wsl2 linux/arm64"},
		"platform not in the table": {func(t *testing.T, root string, as []Artifact) []Artifact {
			a := as[0]
			a.GOARCH = "riscv64"
			return append(as, a)
		}, "is not a platform of the table"},
		"checksum wrong": {func(t *testing.T, root string, as []Artifact) []Artifact {
			for _, a := range as {
				if a.Type == "SBOM" {
					os.WriteFile(filepath.Join(root, a.Path), []byte(`{"bomFormat":"CycloneDX","components":[{"name":"golang.org/x/sys"}],"x":1}`), 0o644)
					break
				}
			}
			return as
		}, "listed"},
		"sbom not cyclonedx": {func(t *testing.T, root string, as []Artifact) []Artifact {
			for _, a := range as {
				if a.Type == "SBOM" {
					os.WriteFile(filepath.Join(root, a.Path), []byte(`{"spdxVersion":"SPDX-2.3"}`), 0o644)
					break
				}
			}
			return as
		}, `bomFormat "", want CycloneDX`},
	} {
		t.Run(name, func(t *testing.T) {
			root, ps, as := snapshot(t)
			f := failures(t, root, tc.breakIt(t, root, as), ps)
			if !strings.Contains(strings.Join(f, "\n"), tc.want) {
				t.Fatalf("failures %q, want one containing %q", f, tc.want)
			}
		})
	}
}
