package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confine-dev/confine/release/internal/fixture"
	"github.com/confine-dev/confine/release/platforms"
)

// confineRelease runs the CLI in-process from the repository root and returns its exit status, stdout
// and stderr.
func confineRelease(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	wd, _ := os.Getwd()
	if err := os.Chdir("../../.."); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	t.Logf("confine-release %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil, {"nope"}, {"verify"}, {"verify", "--version", "v1", "darwin_arm64=/bin/true"},
		{"verify", "--version", "v1", "no-equals-sign"}, {"package", "--version", "v1", "--out", "x", "--target", "darwin-arm64"},
		{"sections", "one"}, {"oci"}, {"oci", "push", "--version", "v1"},
	} {
		if code, _, _ := confineRelease(t, args...); code != exitUsage {
			t.Errorf("confine-release %q exited %d, want %d", args, code, exitUsage)
		}
	}
	_, _, stderr := confineRelease(t, "package", "--version", "v1", "--out", "x", "--target", "darwin-arm64")
	if !strings.Contains(stderr, `target "darwin-arm64" is not one of alpine-arm64, alpine-x64, linux-arm64, linux-x64`) {
		t.Errorf("stderr %q does not name the bad target", stderr)
	}
}

// TestMissingArtifact: verify of an empty dist fails every platform's file check (exit 1); package
// fails with exit 3 and creates nothing.
func TestMissingArtifact(t *testing.T) {
	dist := t.TempDir()
	code, stdout, _ := confineRelease(t, "verify", "--dist", dist, "--version", "v1")
	if code != exitFailed || strings.Count(stdout, "FAIL file") != 4 {
		t.Fatalf("verify of an empty dist: exit %d, stdout %q; want exit 1 and four FAIL file lines", code, stdout)
	}
	out := filepath.Join(t.TempDir(), "linux-x64")
	code, _, stderr := confineRelease(t, "package", "--dist", dist, "--version", "v1", "--target", "linux-x64", "--out", out)
	if code != exitError || !strings.Contains(stderr, "linux_amd64") {
		t.Fatalf("package with no artifacts: exit %d, stderr %q; want exit 3 naming linux_amd64", code, stderr)
	}
	if es, _ := os.ReadDir(filepath.Dir(out)); len(es) != 0 {
		t.Fatalf("package left %v behind", es)
	}
}

// TestSections: two builds that differ only in their version stamp differ in named ELF sections;
// a file compared with itself is identical.
func TestSections(t *testing.T) {
	host, _ := fixture.Arches(t)
	a := fixture.Build(t, fixture.Spec{GOARCH: host, Version: "v1.0.0"})
	b := fixture.Build(t, fixture.Spec{GOARCH: host, Version: "v1.0.1"})
	code, stdout, _ := confineRelease(t, "sections", a, b)
	if code != exitFailed || !strings.Contains(stdout, "differ: ") || !strings.Contains(stdout, "sections .") {
		t.Fatalf("sections of two stamps: exit %d, %q; want exit 1 naming sections", code, stdout)
	}
	if code, stdout, _ := confineRelease(t, "sections", a, a); code != exitOK || !strings.HasPrefix(stdout, "identical, sha256 ") {
		t.Fatalf("sections of a file with itself: exit %d, %q", code, stdout)
	}
}

// TestSizeTable: the artifact table gives each artifact's size, its change against the last release's
// record (named in the heading) and the budget; a platform the record lacks is "new".
func TestSizeTable(t *testing.T) {
	ps := []platforms.Platform{{Name: "linux_amd64", MaxBytes: 2621440}, {Name: "linux_arm64", MaxBytes: 2621440}}
	rows := map[string]*row{
		"linux_amd64": {platform: "linux_amd64", size: 2154622, sha256: "aa", reproducible: "yes", digest: "-"},
		"linux_arm64": {platform: "linux_arm64", size: 2097278, sha256: "bb", reproducible: "yes", digest: "-"},
	}
	last := platforms.Sizes{Version: "v0.9.0", Bytes: map[string]int64{"linux_amd64": 2093182}}
	got := sizeTable(ps, rows, last)
	if !strings.Contains(got, "change since v0.9.0") {
		t.Errorf("the heading does not name the last release:\n%s", got)
	}
	lines := strings.Split(got, "\n")
	for i, want := range []string{"linux_amd64 2154622 +61440 (+2.94%) 2621440", "linux_arm64 2097278 new 2621440"} {
		if f := strings.Join(strings.Fields(lines[i+1]), " "); !strings.HasPrefix(f, want) {
			t.Errorf("row %d is %q, want it to start %q", i+1, f, want)
		}
	}
}
