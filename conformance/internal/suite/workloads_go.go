package suite

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// goProject is a stdlib-only module: a command that prints its library's answer, and the library's tests (two
// subtests, and one that writes in t.TempDir).
var goProject = map[string]string{
	"go.mod": "module example.invalid/wl\n\ngo 1.21\n",
	"main.go": `package main

import (
	"fmt"

	"example.invalid/wl/lib"
)

func main() { fmt.Println("wl says", lib.Answer(6, 7)) }
`,
	"lib/lib.go": `// Package lib multiplies.
package lib

// Answer is a times b.
func Answer(a, b int) int { return a * b }
`,
	"lib/lib_test.go": `package lib

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAnswer(t *testing.T) {
	for _, c := range []struct{ a, b, want int }{{6, 7, 42}, {0, 9, 0}} {
		t.Run("", func(t *testing.T) {
			if got := Answer(c.a, c.b); got != c.want {
				t.Fatalf("Answer(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
			}
		})
	}
}

func TestTempDir(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}
`,
}

// goVerdict is one line of go test -v's verdicts, without its time.
var goVerdict = regexp.MustCompile(`^\s*(--- (PASS|FAIL|SKIP): \S+|ok\s+\S+|FAIL\s+\S+|PASS|FAIL)`)

var goWorkload = workload{
	name:  "go-build-test",
	title: "go build and go test of a module: the binary runs and the test verdicts match the unconfined run",
	rationale: "Go's build cache, its temporary work directories, the test binaries it links and runs, and the " +
		"`go vet` pass of `go test` are what an agent runs most. The module is stdlib-only (GOPROXY=off, " +
		"GOTOOLCHAIN=local: nothing is fetched), HOME is in the project, so GOCACHE ($HOME/.cache/go-build) and " +
		"GOPATH are too and `--profile go` (which grants the user's own) is not needed; each confined run starts " +
		"with a copy of the control's build cache, as a developer's machine has one (the standard library is not " +
		"rebuilt; the module is). The script runs " +
		"`go build -o bin/wl .`, the binary, and `go test -count=1 -v ./...`; the outcome is the binary's output " +
		"(run again by the runner, unconfined), and every test verdict line.",
	effect: "bin/wl prints `wl says 42`; 4 test verdicts PASS, `ok` for lib",
	tools:  []string{"go"},
	project: func(t *T, dir string) {
		writeTree(t, dir, goProject)
		// A source file of its own in each copy, so that the module is compiled again, not found in the copied cache.
		t.WriteFile(dir+"/lib/where.go", fmt.Sprintf("package lib\n\nvar where = %q\n", dir), 0o644)
	},
	warm: func(t *T, control, dir string) {
		copyTree(t, control+"/.home/.cache/go-build", dir+"/.home/.cache/go-build")
	},
	script: "go build -o bin/wl . && ./bin/wl && go test -count=1 -v ./...",
	env: func(t *T, dir string) []string {
		return wlEnv(dir, "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off")
	},
	observe: func(t *T, dir string, r Run) ([]string, error) {
		out := t.Unconfined([]string{dir + "/bin/wl"}, Opts{Dir: dir})
		if out.Exit != 0 {
			return nil, fmt.Errorf("bin/wl does not run (exit %d): %s", out.Exit, firstLine(out.Stderr))
		}
		if st, err := os.Stat(dir + "/bin/wl"); err != nil || st.Mode().Perm()&0o111 == 0 {
			return nil, fmt.Errorf("bin/wl is not executable: %v", err)
		}
		var verdicts []string
		for _, l := range strings.Split(r.Stdout, "\n") {
			if m := goVerdict.FindString(l); m != "" {
				verdicts = append(verdicts, strings.Join(strings.Fields(m), " "))
			}
		}
		sort.Strings(verdicts)
		if !contains(verdicts, "ok example.invalid/wl/lib") {
			return nil, fmt.Errorf("go test did not say ok for lib: %q", verdicts)
		}
		return append([]string{"bin/wl: " + strings.TrimSpace(out.Stdout)}, verdicts...), nil
	},
}
