package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
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

// gateWorld writes four fake launchers (any bytes: package and npm copy, they do not run them) and a
// small gate world (one kernel per architecture, one case) into a temporary directory. The report passes
// the gate for those launchers unless edit changes it. It returns the dist directory, the gate flags and
// the report's path.
func gateWorld(t *testing.T, edit func(m map[string]any)) (dist string, gateFlags []string, report string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, body []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sums := map[string]string{}
	for _, pl := range []string{"linux_amd64", "linux_arm64", "wsl2_amd64", "wsl2_arm64"} {
		body := []byte("launcher " + pl + "\n")
		write(filepath.Join("dist", pl, "confine"), body)
		sums[pl] = fmt.Sprintf("%x", sha256.Sum256(body))
	}
	exp := []byte("schema: confine.conformance.expected/v1\nrules: []\n")
	gateFlags = []string{
		"--expect", write("expected.yaml", exp),
		"--kernels", write("kernels.json", []byte(`{"kernels":[{"id":"6.1-amd64","arch":"amd64"},{"id":"7.3-arm64","arch":"arm64"}]}`)),
		"--cases", write("CASES.md", []byte("# cases\n\n### `boundary/write-inside`\ntext\n")),
	}
	m := map[string]any{
		"schema":          "confine.matrix/v1",
		"expected_sha256": fmt.Sprintf("%x", sha256.Sum256(exp)),
		"kernels": []any{
			map[string]any{"id": "6.1-amd64", "arch": "x86_64", "run_result": "ok", "confine_sha256": sums["linux_amd64"]},
			map[string]any{"id": "7.3-arm64", "arch": "aarch64", "run_result": "ok", "confine_sha256": sums["linux_arm64"]},
		},
		"results": []any{
			map[string]any{"kernel_id": "6.1-amd64", "case": "boundary/write-inside", "outcome": "PASS", "expected": "PASS"},
			map[string]any{"kernel_id": "7.3-arm64", "case": "boundary/write-inside", "outcome": "PASS", "expected": "PASS"},
		},
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "dist"), gateFlags, write("matrix.json", b)
}

// npmRootTemplate writes a minimal root package template (package.json only) and returns its folder.
func npmRootTemplate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"@confine-dev/confine"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReportIsGated: package and npm with --report run the gate. A report it passes is recorded (its
// sha256 in every manifest); one it fails (a regression, another launcher, a missing kernel) is refused
// with one line naming the report and the problem count, exit 1, and no layout is written.
func TestReportIsGated(t *testing.T) {
	commands := map[string]func(out string) []string{
		"package": func(out string) []string { return []string{"package", "--target", "linux-x64", "--out", out} },
		"npm":     func(out string) []string { return []string{"npm", "--root", npmRootTemplate(t), "--out", out} },
	}
	for name, args := range commands {
		t.Run(name+"/passes", func(t *testing.T) {
			dist, gf, report := gateWorld(t, nil)
			out := filepath.Join(t.TempDir(), "out")
			a := append(append(args(out), "--dist", dist, "--version", "v1.2.3", "--report", report), gf...)
			code, stdout, stderr := confineRelease(t, a...)
			if code != exitOK {
				t.Fatalf("a report the gate passes: exit %d, stderr %q", code, stderr)
			}
			raw, _ := os.ReadFile(report)
			want := fmt.Sprintf("%x", sha256.Sum256(raw))
			manifests, _ := filepath.Glob(filepath.Join(out, "*manifest.json"))
			more, _ := filepath.Glob(filepath.Join(out, "*", "manifest.json"))
			manifests = append(manifests, more...)
			if len(manifests) == 0 {
				t.Fatalf("no manifest.json under %s; stdout %q", out, stdout)
			}
			for _, mf := range manifests {
				var m struct {
					Report string `json:"conformance_report_sha256"`
				}
				b, _ := os.ReadFile(mf)
				if err := json.Unmarshal(b, &m); err != nil || m.Report != want {
					t.Errorf("%s records report %q (%v), want the gated report's sha256 %s", mf, m.Report, err, want)
				}
			}
		})
		for planted, edit := range map[string]func(m map[string]any){
			"regression": func(m map[string]any) {
				m["results"].([]any)[0].(map[string]any)["outcome"] = "FAIL"
			},
			"another launcher": func(m map[string]any) {
				m["kernels"].([]any)[1].(map[string]any)["confine_sha256"] = strings.Repeat("0", 64)
			},
			"two kernels missing (a smoke report)": func(m map[string]any) {
				m["kernels"], m["results"] = []any{}, []any{}
			},
		} {
			t.Run(name+"/"+planted, func(t *testing.T) {
				dist, gf, report := gateWorld(t, edit)
				out := filepath.Join(t.TempDir(), "out")
				a := append(append(args(out), "--dist", dist, "--version", "v1.2.3", "--report", report), gf...)
				code, stdout, stderr := confineRelease(t, a...)
				if code != exitFailed {
					t.Fatalf("a report the gate fails: exit %d, want %d; stderr %q", code, exitFailed, stderr)
				}
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				if len(lines) != 1 || !strings.Contains(lines[0], "refusing --report "+report) ||
					!strings.Contains(lines[0], "problems in it") {
					t.Errorf("stderr %q: want one line refusing the report", stderr)
				}
				if stdout != "" {
					t.Errorf("stdout %q: a refused report prints nothing else", stdout)
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("%s exists after the report was refused (%v)", out, err)
				}
			})
		}
	}
}

// TestNoReportIsNotGated: without --report the manifest records no report and package says so.
func TestNoReportIsNotGated(t *testing.T) {
	dist, _, _ := gateWorld(t, nil)
	out := filepath.Join(t.TempDir(), "linux-x64")
	code, stdout, _ := confineRelease(t, "package", "--target", "linux-x64", "--out", out, "--dist", dist, "--version", "v1")
	if code != exitOK || !strings.Contains(stdout, "none (not gated)") {
		t.Fatalf("package without --report: exit %d, stdout %q", code, stdout)
	}
	b, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if !strings.Contains(string(b), `"conformance_report_sha256": ""`) {
		t.Errorf("manifest %s records a report", b)
	}
}
