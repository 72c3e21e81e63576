package pack

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confine-dev/confine/release/platforms"
)

// source makes a Source whose launchers are small files with distinct contents under a temp dir.
func source(t *testing.T) (Source, string) {
	t.Helper()
	ps, err := platforms.Load("../../platforms/platforms.json")
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	for _, p := range ps {
		if err := os.MkdirAll(filepath.Join(dist, p.Name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dist, p.Name, "confine"), []byte("launcher "+p.Name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Source{Platforms: ps, Binary: func(n string) string { return filepath.Join(dist, n, "confine") },
		Version: "v1.0.0", Commit: "abc1234", ReportSHA256: strings.Repeat("ab", 32)}, dist
}

func TestLayout(t *testing.T) {
	src, _ := source(t)
	for _, target := range Targets() {
		t.Run(target, func(t *testing.T) {
			arch, err := GOARCH(target)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), target)
			if _, err := Layout(dir, target, arch, src); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			var m Manifest
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m.Schema != ManifestSchema || m.Target != target || m.Version != "v1.0.0" || m.Commit != "abc1234" ||
				m.ConformanceReport != src.ReportSHA256 || len(m.Binaries) != 2 {
				t.Fatalf("manifest = %+v", m)
			}
			for _, bin := range m.Binaries {
				st, err := os.Stat(filepath.Join(dir, bin.Path))
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != 0o755 {
					t.Errorf("%s: mode %v, want 0755", bin.Path, st.Mode())
				}
				want, size, _ := SHA256(src.Binary(bin.Platform))
				if bin.SHA256 != want || bin.Size != size || bin.GOARCH != arch || bin.GOOS != "linux" ||
					bin.WSL2 != (bin.Path == "bin/confine-wsl2") {
					t.Errorf("binary entry %+v, want sha256 %s size %d arch %s", bin, want, size, arch)
				}
			}
		})
	}
}

func TestTargetNotInTable(t *testing.T) {
	if _, err := GOARCH("darwin-arm64"); err == nil ||
		err.Error() != `pack: target "darwin-arm64" is not one of alpine-arm64, alpine-x64, linux-arm64, linux-x64` {
		t.Fatalf("GOARCH(darwin-arm64) = %v", err)
	}
}

// TestMissingArtifactLeavesNothing: with the WSL2 launcher gone, Layout fails naming it, and the previous
// layout at dir is still there, whole; no temporary directory is left next to it.
func TestMissingArtifactLeavesNothing(t *testing.T) {
	src, dist := source(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "linux-x64")
	if _, err := Layout(dir, "linux-x64", "amd64", src); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err := os.Remove(filepath.Join(dist, "wsl2_amd64", "confine")); err != nil {
		t.Fatal(err)
	}
	src.Version = "v2.0.0"
	_, err := Layout(dir, "linux-x64", "amd64", src)
	if err == nil || !strings.Contains(err.Error(), "wsl2_amd64") || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Layout with a missing launcher = %v, want an error naming wsl2_amd64", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if string(before) != string(after) {
		t.Fatal("the failed Layout changed the previous layout")
	}
	if es, _ := os.ReadDir(parent); len(es) != 1 {
		t.Fatalf("left behind: %v", es)
	}
}

func TestNPMVersion(t *testing.T) {
	for stamp, want := range map[string]string{
		"v1.2.0": "1.2.0", "1.2.0-rc.1": "1.2.0-rc.1", "e49ce93": "0.0.0-dev.e49ce93",
		"e49ce93-dirty": "0.0.0-dev.e49ce93-dirty", "v1.2.0-3-gabc1234": "1.2.0-3-gabc1234",
		"v1.2.0+meta": "0.0.0-dev.v1-2-0-meta",
	} {
		if got := NPMVersion(stamp); got != want {
			t.Errorf("NPMVersion(%q) = %q, want %q", stamp, got, want)
		}
	}
}

// TestNPM: one platform package per architecture with os/cpu, and a root package whose
// optionalDependencies are exactly those packages at the same version.
func TestNPM(t *testing.T) {
	src, _ := source(t)
	out := t.TempDir()
	dirs, err := NPM(out, "../npm/confine", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 3 {
		t.Fatalf("NPM wrote %v, want two platform packages and the root", dirs)
	}
	read := func(dir string) map[string]any {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	want := map[string]any{}
	for _, arch := range []string{"x64", "arm64"} {
		m := read(filepath.Join(out, "confine-linux-"+arch))
		if m["name"] != "@confine-dev/confine-linux-"+arch || m["version"] != "1.0.0" ||
			m["os"].([]any)[0] != "linux" || m["cpu"].([]any)[0] != arch {
			t.Errorf("platform package %s: %v", arch, m)
		}
		if _, err := os.Stat(filepath.Join(out, "confine-linux-"+arch, "bin", "confine-wsl2")); err != nil {
			t.Error(err)
		}
		want[m["name"].(string)] = "1.0.0"
	}
	root := read(filepath.Join(out, "confine"))
	// npm publish --provenance checks repository.url against the publishing workflow's repository.
	for _, d := range []string{"confine-linux-x64", "confine-linux-arm64", "confine"} {
		m := read(filepath.Join(out, d))
		if r, _ := m["repository"].(map[string]any); r == nil || r["url"] != NPMRepository {
			t.Errorf("%s/package.json: repository %v, want url %s", d, m["repository"], NPMRepository)
		}
	}
	got, _ := json.Marshal(root["optionalDependencies"])
	w, _ := json.Marshal(want)
	if root["version"] != "1.0.0" || string(got) != string(w) {
		t.Fatalf("root package: version %v, optionalDependencies %s, want %s", root["version"], got, w)
	}
}
