package verify

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confine-dev/confine/release/internal/fixture"
	"github.com/confine-dev/confine/release/platforms"
)

const testVersion = "v9.8.7-3-gabc1234"

func platform(goarch string) platforms.Platform {
	return platforms.Platform{Name: "linux_" + goarch, GOOS: "linux", GOARCH: goarch, MaxBytes: 64 << 20}
}

// results maps check name to result, failing the test on a duplicate.
func results(t *testing.T, rs []Result) map[string]Result {
	t.Helper()
	m := map[string]Result{}
	for _, r := range rs {
		if _, dup := m[r.Check]; dup {
			t.Fatalf("check %s reported twice: %v", r.Check, rs)
		}
		m[r.Check] = r
		t.Log(r)
	}
	return m
}

func TestGoodBinaryPasses(t *testing.T) {
	host, other := fixture.Arches(t)
	for _, arch := range []string{host, other} {
		t.Run(arch, func(t *testing.T) {
			rs := Artifact(fixture.Build(t, fixture.Spec{GOARCH: arch, Version: testVersion}), platform(arch),
				Release{Version: testVersion, Commit: "abc1234def"})
			m := results(t, rs)
			if Failed(rs) || len(m) != 6 {
				t.Fatalf("a static, stripped, stamped %s binary failed or missed a check: %v", arch, rs)
			}
			ran := strings.Contains(m[CheckVersion].Detail, "`confine version` printed")
			if ran != (arch == host) {
				t.Fatalf("version check ran the binary = %v for %s on a %s host: %s", ran, arch, host, m[CheckVersion].Detail)
			}
		})
	}
}

// TestFailureModes: each bad input fails its own check, with its own message, and only that check.
func TestFailureModes(t *testing.T) {
	host, other := fixture.Arches(t)
	good := func(t *testing.T) string { return fixture.Build(t, fixture.Spec{GOARCH: host, Version: testVersion}) }
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T) string
		plat  platforms.Platform
		check string
		want  string
	}{
		{"dynamic (cgo)", func(t *testing.T) string {
			return fixture.Build(t, fixture.Spec{GOARCH: host, CGO: true, Version: testVersion})
		}, platform(host), CheckStatic, "has PT_INTERP"},
		{"unstripped", func(t *testing.T) string {
			return fixture.Build(t, fixture.Spec{GOARCH: host, Unstrip: true, Version: testVersion})
		}, platform(host), CheckStripped, "has .symtab (not stripped)"},
		{"wrong arch", func(t *testing.T) string {
			return fixture.Build(t, fixture.Spec{GOARCH: other, Version: testVersion})
		}, platform(host), CheckMachine, "want " + map[string]string{"amd64": "EM_X86_64", "arm64": "EM_AARCH64"}[host]},
		{"wrong version, run", func(t *testing.T) string {
			return fixture.Build(t, fixture.Spec{GOARCH: host, Version: "v0.0.1"})
		}, platform(host), CheckVersion, `printed "confine v0.0.1", want "confine ` + testVersion + `"`},
		{"wrong version, not run", func(t *testing.T) string {
			return fixture.Build(t, fixture.Spec{GOARCH: other, Version: "v0.0.1"})
		}, platform(other), CheckVersion, `stamp "` + testVersion + `" not found in the file`},
		{"over budget", good, platforms.Platform{Name: "linux_" + host, GOOS: "linux", GOARCH: host, MaxBytes: 1000},
			CheckSize, "over the budget of 1000"},
		{"truncated", func(t *testing.T) string {
			b, err := os.ReadFile(good(t))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "confine")
			if err := os.WriteFile(p, b[:len(b)/3], 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, platform(host), CheckMachine, "not a readable ELF file"},
		{"garbage", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "confine")
			if err := os.WriteFile(p, []byte(rand.Text()+rand.Text()), 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, platform(host), CheckMachine, "not a readable ELF file: elfcheck: bad magic number"},
		{"missing", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "confine")
		}, platform(host), CheckFile, "no such file or directory"},
		{"empty", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "confine")
			if err := os.WriteFile(p, nil, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, platform(host), CheckFile, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := Artifact(tc.make(t), tc.plat, Release{Version: testVersion})
			m := results(t, rs)
			if !Failed(rs) {
				t.Fatalf("verify passed %s", tc.name)
			}
			for _, r := range rs {
				if !r.OK && r.Check != tc.check {
					t.Errorf("check %s failed too, want only %s to fail: %s", r.Check, tc.check, r)
				}
			}
			r, ok := m[tc.check]
			if !ok || r.OK || !strings.Contains(r.Detail, tc.want) {
				t.Fatalf("check %s = %v, want a failure containing %q", tc.check, r, tc.want)
			}
		})
	}
}

func TestResultString(t *testing.T) {
	if r := (Result{CheckFile, false, "x"}).String(); r != "FAIL file     x" {
		t.Fatalf("Result.String = %q", r)
	}
}

func TestCommitMustBeNamed(t *testing.T) {
	host, _ := fixture.Arches(t)
	rs := Artifact(fixture.Build(t, fixture.Spec{GOARCH: host, Version: testVersion}), platform(host),
		Release{Version: testVersion, Commit: "fedcba9876"})
	r := results(t, rs)[CheckVersion]
	if r.OK || !strings.Contains(r.Detail, "does not name commit fedcba9") {
		t.Fatalf("version check = %v, want a commit mismatch", r)
	}
}
