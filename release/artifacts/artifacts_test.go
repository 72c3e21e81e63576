// Package artifacts holds the checks on what confine ships: the launcher built for every release
// platform (static, stripped, right machine) and a repository that tracks no ELF file.
package artifacts

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/confine-dev/confine/release/elfcheck"
	"github.com/confine-dev/confine/release/platforms"
)

// binary returns where the launcher for platform name is: under bazel test, the //:confine_<name>
// runfile (a data dependency); else $CONFINE_DIST/<name>/confine when CONFINE_DIST is set
// (`make build` fills dist/bin). "" when neither applies.
func binary(name string) string {
	if os.Getenv("TEST_SRCDIR") != "" {
		return "../../confine_" + name
	}
	if d := os.Getenv("CONFINE_DIST"); d != "" {
		return filepath.Join(d, name, "confine")
	}
	return ""
}

// TestReleaseBinaries checks the launcher of every platform in platforms/platforms.json with elfcheck:
// right ELF machine, ET_EXEC, no PT_INTERP/PT_DYNAMIC, no .symtab, no DWARF; and its size budget. `make bazel-test` runs it
// under -c fastbuild and -c opt.
func TestReleaseBinaries(t *testing.T) {
	ps, paths := load(t)
	last, err := platforms.LoadSizes("../../platforms/sizes.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			if err := elfcheck.Check(paths[p.Name], p.GOARCH); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(paths[p.Name])
			if err != nil {
				t.Fatal(err)
			}
			// The size budget `confine-release verify` holds a release to, checked here too, so that `make test`
			// catches a change that crosses it (one did: a page of text added by a merge, seen only at release).
			if st.Size() > p.MaxBytes {
				t.Fatalf("%s: %d bytes, over the budget of %d (platforms/platforms.json max_bytes)", p.Name, st.Size(), p.MaxBytes)
			}
			t.Logf("%s: %s, %d bytes (%s since %s; budget %d), ok", p.Name, paths[p.Name], st.Size(),
				last.Change(p.Name, st.Size()), last.Commit, p.MaxBytes)
		})
	}
}

// load reads platforms/platforms.json and returns the launcher path of every platform, skipping the test
// (with the reason) when there are no artifacts to check.
func load(t *testing.T) ([]platforms.Platform, map[string]string) {
	t.Helper()
	ps, err := platforms.Load("../../platforms/platforms.json")
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, p := range ps {
		if paths[p.Name] = binary(p.Name); paths[p.Name] == "" {
			t.Skip("skipped: no artifacts; run under `tools/bazel test //release/artifacts:artifacts_test` " +
				"or set CONFINE_DIST=dist/bin after `make build`")
		}
	}
	return ps, paths
}

// linuxOf returns the plain Linux platform with the architecture of p.
func linuxOf(t *testing.T, ps []platforms.Platform, p platforms.Platform) platforms.Platform {
	t.Helper()
	for _, q := range ps {
		if !q.WSL2 && q.GOOS == p.GOOS && q.GOARCH == p.GOARCH {
			return q
		}
	}
	t.Fatalf("%s: no plain Linux platform for %s/%s in platforms.json", p.Name, p.GOOS, p.GOARCH)
	return platforms.Platform{}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWSL2DiffersOnlyByTag checks that each WSL2 launcher differs from the Linux launcher of its
// architecture (the //platforms:wsl2 constraint did select the Go tag wsl2), and, under bazel test, that it
// is byte-identical to that Linux launcher built with the tag wsl2 (//release/artifacts:
// confine_<linux platform>_tag_wsl2): the WSL2 platform changes the artifact through the tag and nothing
// else.
func TestWSL2DiffersOnlyByTag(t *testing.T) {
	ps, paths := load(t)
	n := 0
	for _, p := range ps {
		if !p.WSL2 {
			continue
		}
		n++
		t.Run(p.Name, func(t *testing.T) {
			l := linuxOf(t, ps, p)
			wsl, lin := read(t, paths[p.Name]), read(t, paths[l.Name])
			if bytes.Equal(wsl, lin) {
				t.Fatalf("%s and %s are identical: the WSL2 platform did not select the Go tag wsl2", p.Name, l.Name)
			}
			if os.Getenv("TEST_SRCDIR") == "" {
				t.Skipf("skipped the reference comparison: confine_%s_tag_wsl2 is a Bazel output (bazel test)", l.Name)
			}
			if ref := read(t, "confine_"+l.Name+"_tag_wsl2"); !bytes.Equal(wsl, ref) {
				t.Fatalf("%s differs from %s built with the tag wsl2: the WSL2 platform changes more than the tag", p.Name, l.Name)
			}
		})
	}
	if n == 0 {
		t.Fatal("platforms.json has no WSL2 platform")
	}
}

// TestWSL2TagBehaviour runs `confine probe --json` from each launcher of this machine's architecture: on a
// kernel that is not WSL's, the Linux launcher reports wsl 0 and the WSL2 launcher, built to treat every
// non-WSL1 kernel as WSL2, reports wsl 2. The other architectures are skipped (they do not run here).
func TestWSL2TagBehaviour(t *testing.T) {
	ps, paths := load(t)
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var rel []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	if strings.Contains(strings.ToLower(string(rel)), "microsoft") {
		t.Skipf("skipped: this kernel (%s) is WSL's, where both launchers report WSL", rel)
	}
	for _, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			if p.GOARCH != runtime.GOARCH {
				t.Skipf("skipped: a %s launcher does not run on this %s machine", p.GOARCH, runtime.GOARCH)
			}
			out, err := exec.Command(paths[p.Name], "probe", "--json").Output()
			if err != nil {
				t.Fatalf("%s probe --json: %v (stdout %q)", p.Name, err, out)
			}
			var probe struct {
				WSL *int `json:"wsl"`
			}
			if err := json.Unmarshal(out, &probe); err != nil || probe.WSL == nil {
				t.Fatalf("%s probe --json: no wsl field (%v) in %s", p.Name, err, out)
			}
			want := 0
			if p.WSL2 {
				want = 2
			}
			if *probe.WSL != want {
				t.Fatalf("%s probe --json on kernel %s: wsl = %d, want %d", p.Name, rel, *probe.WSL, want)
			}
		})
	}
}

// TestVersionStamped runs `confine version` from each launcher of this machine's architecture: Bazel links
// the version from tools/workspace_status.sh (git describe) into sandbox/internal/cli.Version, so the
// output must be "confine <version>" and not the unstamped "confine dev".
func TestVersionStamped(t *testing.T) {
	ps, paths := load(t)
	for _, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			if p.GOARCH != runtime.GOARCH {
				t.Skipf("skipped: a %s launcher does not run on this %s machine", p.GOARCH, runtime.GOARCH)
			}
			out, err := exec.Command(paths[p.Name], "version").Output()
			if err != nil {
				t.Fatalf("%s version: %v", p.Name, err)
			}
			f := strings.Fields(string(out))
			if len(f) != 2 || f[0] != "confine" || f[1] == "dev" || f[1] == "" {
				t.Fatalf("%s version = %q, want \"confine <stamped version>\"", p.Name, out)
			}
			t.Logf("%s: %s", p.Name, strings.TrimSpace(string(out)))
		})
	}
}

// trackedELF lists the files git tracks in the work tree at root whose first bytes are the ELF magic.
func trackedELF(t *testing.T, git, root string) []string {
	t.Helper()
	out, err := exec.Command(git, "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	var elfs []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		fh, err := os.Open(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree but still in the index
		}
		b := make([]byte, 4)
		n, _ := fh.Read(b)
		fh.Close()
		if n == 4 && bytes.Equal(b, []byte("\x7fELF")) {
			elfs = append(elfs, f)
		}
	}
	return elfs
}

func gitOrSkip(t *testing.T) string {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skipf("skipped: no git on PATH (%v)", err)
	}
	return git
}

// TestNoELFTracked fails when git tracks an ELF file anywhere in this repository: every shipped binary
// is built from source (`make build`), never committed.
func TestNoELFTracked(t *testing.T) {
	git := gitOrSkip(t)
	top, err := exec.Command(git, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("skipped: not in a git work tree (%v); under bazel test the sandbox has no .git", err)
	}
	if elfs := trackedELF(t, git, strings.TrimSpace(string(top))); len(elfs) > 0 {
		t.Fatalf("git tracks ELF files %q: build them instead (make build); never commit binaries", elfs)
	}
}

// TestTrackedELFDetected shows that the check above can fail: in a scratch repository, a committed
// ELF file is found and a text file is not.
func TestTrackedELFDetected(t *testing.T) {
	git := gitOrSkip(t)
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command(git, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	run("init", "-q")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"bin/tool": "\x7fELF\x02\x01\x01", "README": "text\n", "tiny": "\x7f"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "untracked"), []byte("\x7fELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "bin/tool", "README", "tiny")
	if got := trackedELF(t, git, dir); len(got) != 1 || got[0] != "bin/tool" {
		t.Fatalf("trackedELF = %q, want [bin/tool]", got)
	}
}
