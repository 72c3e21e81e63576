// Package artifacts holds the checks on what confine ships: the launcher built for every release
// platform (static, stripped, right machine) and a repository that tracks no ELF file.
package artifacts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// right ELF machine, ET_EXEC, no PT_INTERP/PT_DYNAMIC, no .symtab, no DWARF. `make bazel-test` runs it
// under -c fastbuild and -c opt.
func TestReleaseBinaries(t *testing.T) {
	ps, err := platforms.Load("../../platforms/platforms.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			path := binary(p.Name)
			if path == "" {
				t.Skip("skipped: no artifacts; run under `tools/bazel test //release/artifacts:artifacts_test` " +
					"or set CONFINE_DIST=dist/bin after `make build`")
			}
			if err := elfcheck.Check(path, p.GOARCH); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s, %d bytes, ok", p.Name, path, st.Size())
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
