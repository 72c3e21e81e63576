package verify

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/confine-dev/confine/release/platforms"
)

const testVersion = "v9.8.7-3-gabc1234"

// fixture is how a test binary is built.
type fixture struct {
	goarch  string
	cgo     bool   // link against libc dynamically (import "C")
	unstrip bool   // keep .symtab and DWARF
	version string // the stamp printed by `<bin> version`
}

// build compiles a tiny stand-in for confine (it prints "confine <version>" for `version`) with the go
// command, as the release build does (-trimpath, static, -s -w) unless f says otherwise. Under bazel
// test there is no go command: the test skips, saying so; `make release-test` runs it.
func build(t *testing.T, f fixture) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: needs the go command to build its ELF inputs (not in bazel test's sandbox); `make release-test` runs it")
	}
	if f.cgo {
		if _, err := exec.LookPath("gcc"); err != nil {
			t.Skip("skipped: needs gcc to build a cgo (dynamically linked) binary")
		}
	}
	dir := t.TempDir()
	src := "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nvar version = \"dev\"\n\n" +
		"func main() {\n\tif len(os.Args) > 1 && os.Args[1] == \"version\" {\n\t\tfmt.Println(\"confine \" + version)\n\t}\n}\n"
	if f.cgo {
		src = strings.Replace(src, "import (\n", "// #include <stdlib.h>\nimport \"C\"\n\nimport (\n", 1) +
			"\nfunc init() { C.free(nil) }\n"
	}
	for name, body := range map[string]string{"main.go": src, "go.mod": "module fixture\n\ngo 1.25\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ldflags := "-X main.version=" + f.version
	if !f.unstrip {
		ldflags += " -s -w -buildid="
	}
	out := filepath.Join(dir, "confine")
	cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags="+ldflags, "-o", out, ".")
	cmd.Dir = dir
	cgo := "0"
	if f.cgo {
		cgo = "1"
	}
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+f.goarch, "CGO_ENABLED="+cgo, "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fixture %+v: %v\n%s", f, err, b)
	}
	return out
}

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

// hostArch is a GOARCH verify can run; other is the one it cannot.
func arches(t *testing.T) (host, other string) {
	switch runtime.GOARCH {
	case "amd64":
		return "amd64", "arm64"
	case "arm64":
		return "arm64", "amd64"
	}
	t.Skipf("skipped: host architecture %s is not one confine ships", runtime.GOARCH)
	return "", ""
}

func TestGoodBinaryPasses(t *testing.T) {
	host, other := arches(t)
	for _, arch := range []string{host, other} {
		t.Run(arch, func(t *testing.T) {
			rs := Artifact(build(t, fixture{goarch: arch, version: testVersion}), platform(arch),
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
	host, other := arches(t)
	good := func(t *testing.T) string { return build(t, fixture{goarch: host, version: testVersion}) }
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T) string
		plat  platforms.Platform
		check string
		want  string
	}{
		{"dynamic (cgo)", func(t *testing.T) string {
			return build(t, fixture{goarch: host, cgo: true, version: testVersion})
		}, platform(host), CheckStatic, "has PT_INTERP"},
		{"unstripped", func(t *testing.T) string {
			return build(t, fixture{goarch: host, unstrip: true, version: testVersion})
		}, platform(host), CheckStripped, "has .symtab (not stripped)"},
		{"wrong arch", func(t *testing.T) string {
			return build(t, fixture{goarch: other, version: testVersion})
		}, platform(host), CheckMachine, "want " + map[string]string{"amd64": "EM_X86_64", "arm64": "EM_AARCH64"}[host]},
		{"wrong version, run", func(t *testing.T) string {
			return build(t, fixture{goarch: host, version: "v0.0.1"})
		}, platform(host), CheckVersion, `printed "confine v0.0.1", want "confine ` + testVersion + `"`},
		{"wrong version, not run", func(t *testing.T) string {
			return build(t, fixture{goarch: other, version: "v0.0.1"})
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
	host, _ := arches(t)
	rs := Artifact(build(t, fixture{goarch: host, version: testVersion}), platform(host),
		Release{Version: testVersion, Commit: "fedcba9876"})
	r := results(t, rs)[CheckVersion]
	if r.OK || !strings.Contains(r.Detail, "does not name commit fedcba9") {
		t.Fatalf("version check = %v, want a commit mismatch", r)
	}
}
