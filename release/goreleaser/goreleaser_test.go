package goreleaser

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blakesmith/ar"
	"github.com/confine-dev/confine/release/platforms"
	"github.com/google/rpmpack"
)

// profileText stands in for packaging/apparmor/confine in the fake snapshots (its real file is checked
// by TestProfile and by `make release-snapshot`).
const profileText = "profile confine /usr/bin/confine flags=(unconfined) {\n  userns,\n}\n"

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
		rels := []string{ap, sp}
		if !p.WSL2 {
			files := []pkgFile{
				{LauncherPath, bin, 0o755, false},
				{ProfilePath, []byte(profileText), 0o644, true},
			}
			for _, format := range []string{"deb", "rpm"} {
				pp := filepath.Join("gr", "confine_"+p.Name+"."+format)
				write(pp, makePackage(t, format, p.GOARCH, files), 0o644)
				art("Linux Package", pp, p.GOARCH, PackagesID)
				as[len(as)-1].Extra.Format = format
				rels = append(rels, pp)
			}
		}
		for _, rel := range rels {
			b, _ := os.ReadFile(filepath.Join(root, rel))
			h := sha256.Sum256(b)
			sums += fmt.Sprintf("%s  %s\n", hex.EncodeToString(h[:]), filepath.Base(rel))
		}
	}
	write("gr/checksums.txt", []byte(sums), 0o644)
	write("profile", []byte(profileText), 0o644)
	art("Checksum", "gr/checksums.txt", "", "")
	b, _ := json.Marshal(as)
	write("gr/artifacts.json", b, 0o644)
	return root, ps, as
}

func failures(t *testing.T, root string, as []Artifact, ps []platforms.Platform) []string {
	t.Helper()
	var out []string
	for _, f := range Check(root, as, ps, func(n string) string { return filepath.Join(root, "dist", n, "confine") }, filepath.Join(root, "profile")) {
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
		"deb launcher differs from Bazel's": {func(t *testing.T, root string, as []Artifact) []Artifact {
			repack(t, root, as, "deb", "amd64", func(fs []pkgFile) []pkgFile { fs[0].body = []byte("rebuilt"); return fs })
			return as
		}, "/usr/bin/confine present true, sha256"},
		"rpm launcher not executable": {func(t *testing.T, root string, as []Artifact) []Artifact {
			repack(t, root, as, "rpm", "arm64", func(fs []pkgFile) []pkgFile { fs[0].mode = 0o644; return fs })
			return as
		}, "mode 644, want Bazel's"},
		"deb profile not a conffile": {func(t *testing.T, root string, as []Artifact) []Artifact {
			repack(t, root, as, "deb", "arm64", func(fs []pkgFile) []pkgFile { fs[1].config = false; return fs })
			return as
		}, "config false"},
		"rpm profile not a config file": {func(t *testing.T, root string, as []Artifact) []Artifact {
			repack(t, root, as, "rpm", "amd64", func(fs []pkgFile) []pkgFile { fs[1].config = false; return fs })
			return as
		}, "config false"},
		"rpm without the profile": {func(t *testing.T, root string, as []Artifact) []Artifact {
			repack(t, root, as, "rpm", "amd64", func(fs []pkgFile) []pkgFile { return fs[:1] })
			return as
		}, "/etc/apparmor.d/confine present false"},
		"profile differs from packaging's": {func(t *testing.T, root string, as []Artifact) []Artifact {
			os.WriteFile(filepath.Join(root, "profile"), []byte(profileText+"  capability,\n"), 0o644)
			return as
		}, "mode 644 config true"},
		"rpm missing": {func(t *testing.T, root string, as []Artifact) []Artifact {
			var out []Artifact
			for _, a := range as {
				if !(a.Extra.Format == "rpm" && a.GOARCH == "arm64") {
					out = append(out, a)
				}
			}
			return out
		}, "0 rpm Linux Package entries for linux/arm64"},
		"a package of the WSL2 build": {func(t *testing.T, root string, as []Artifact) []Artifact {
			for _, a := range as {
				if a.Type == "Linux Package" {
					a.Extra.ID = "wsl2"
					return append(as, a)
				}
			}
			return as
		}, "is not a linux platform's package"},
		"deb not gzip": {func(t *testing.T, root string, as []Artifact) []Artifact {
			for _, a := range as {
				if a.Extra.Format == "deb" {
					var buf bytes.Buffer
					w := ar.NewWriter(&buf)
					w.WriteGlobalHeader()
					for _, m := range []string{"debian-binary", "control.tar.xz", "data.tar.xz"} {
						w.WriteHeader(&ar.Header{Name: m, Mode: 0o644, Size: 1})
						w.Write([]byte("x"))
					}
					os.WriteFile(filepath.Join(root, a.Path), buf.Bytes(), 0o644)
					break
				}
			}
			return as
		}, "only gzip or uncompressed tar is read"},
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

// pkgFile is one file a fake package installs.
type pkgFile struct {
	path   string
	body   []byte
	mode   int64
	config bool
}

// makePackage builds a deb or rpm of files the way nfpm does: the deb with github.com/blakesmith/ar and
// gzip tars (conffiles in the control archive), the rpm with github.com/google/rpmpack (nfpm's rpm
// writer), gzip payload.
func makePackage(t *testing.T, format, goarch string, files []pkgFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch format {
	case "deb":
		targz := func(add func(tw *tar.Writer)) []byte {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			tw := tar.NewWriter(zw)
			add(tw)
			tw.Close()
			zw.Close()
			return b.Bytes()
		}
		conffiles := ""
		for _, f := range files {
			if f.config {
				conffiles += f.path + "\n"
			}
		}
		control := targz(func(tw *tar.Writer) {
			for name, body := range map[string]string{"./control": "Package: confine\n", "./conffiles": conffiles} {
				tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
				tw.Write([]byte(body))
			}
		})
		data := targz(func(tw *tar.Writer) {
			tw.WriteHeader(&tar.Header{Name: "./usr/", Mode: 0o755, Typeflag: tar.TypeDir})
			for _, f := range files {
				tw.WriteHeader(&tar.Header{Name: "." + f.path, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
				tw.Write(f.body)
			}
		})
		w := ar.NewWriter(&buf)
		w.WriteGlobalHeader()
		for _, m := range []struct {
			name string
			body []byte
		}{{"debian-binary", []byte("2.0\n")}, {"control.tar.gz", control}, {"data.tar.gz", data}} {
			w.WriteHeader(&ar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.body))})
			w.Write(m.body)
		}
	case "rpm":
		r, err := rpmpack.NewRPM(rpmpack.RPMMetaData{Name: "confine", Version: "1", Release: "1", Arch: goarch, Compressor: "gzip"})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			typ := rpmpack.GenericFile
			if f.config {
				typ = rpmpack.ConfigFile | rpmpack.NoReplaceFile
			}
			r.AddFile(rpmpack.RPMFile{Name: f.path, Body: f.body, Mode: uint(0o100000 | f.mode), Owner: "root", Group: "root", Type: typ})
		}
		if err := r.Write(&buf); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("format %q", format)
	}
	return buf.Bytes()
}

// repack rewrites the format package of goarch in as with the files change returns (from the faithful
// launcher and profile), leaving checksums.txt as it was.
func repack(t *testing.T, root string, as []Artifact, format, goarch string, change func([]pkgFile) []pkgFile) {
	t.Helper()
	for _, a := range as {
		if a.Type == "Linux Package" && a.Extra.Format == format && a.GOARCH == goarch {
			bin, err := os.ReadFile(filepath.Join(root, "dist", "linux_"+goarch, "confine"))
			if err != nil {
				t.Fatal(err)
			}
			files := change([]pkgFile{{LauncherPath, bin, 0o755, false}, {ProfilePath, []byte(profileText), 0o644, true}})
			if err := os.WriteFile(filepath.Join(root, a.Path), makePackage(t, format, goarch, files), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no %s package for %s", format, goarch)
}

// TestReadPackages reads what the writers nfpm uses make, file by file.
func TestReadPackages(t *testing.T) {
	files := []pkgFile{
		{"/usr/bin/confine", []byte("\x7fELF launcher"), 0o755, false},
		{"/etc/apparmor.d/confine", []byte(profileText), 0o644, true},
		{"/usr/share/doc/confine/README", []byte("doc"), 0o644, false},
	}
	for _, format := range []string{"deb", "rpm"} {
		t.Run(format, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "confine."+format)
			if err := os.WriteFile(p, makePackage(t, format, "amd64", files), 0o644); err != nil {
				t.Fatal(err)
			}
			read := ReadDeb
			if format == "rpm" {
				read = ReadRPM
			}
			got, err := read(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(files) {
				t.Errorf("read %d files %v, want %d", len(got), got, len(files))
			}
			for _, f := range files {
				h := sha256.Sum256(f.body)
				want := PackagedFile{hex.EncodeToString(h[:]), f.mode, f.config}
				if got[f.path] != want {
					t.Errorf("%s: got %+v, want %+v", f.path, got[f.path], want)
				}
			}
			other := ReadRPM
			if format == "rpm" {
				other = ReadDeb
			}
			if _, err := other(p); err == nil {
				t.Errorf("a %s read as the other format", format)
			}
		})
	}
}
