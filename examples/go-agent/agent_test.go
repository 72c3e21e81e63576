package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// agent returns the agent under test, built into a directory outside /tmp (every confined command can write
// /tmp, so reexec refuses an executable there): GO_AGENT_OUT where it is set (scripts/examples-test.sh sets it,
// and the run as nobody finds the agents the run as root built there), else a fresh one. A mutant is the agent
// with reexec.Main replaced by a launcher that confines nothing (mutantOverlay).
func agent(t *testing.T, mutant bool) string {
	dir, name := os.Getenv("GO_AGENT_OUT"), "go-agent"
	if mutant {
		name = "go-agent-mutant"
	}
	if dir == "" {
		dir = outsideDir(t, "go-agent-bin")
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command to build the agent with (%v): bazel test runs without one; make examples-test runs this", err)
	}
	args := []string{"build", "-trimpath", "-o", bin}
	if mutant {
		args = append(args, "-overlay", mutantOverlay(t, dir))
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// mutantOverlay writes main.go with a launcher ahead of reexec.Main() that writes a forged report and runs
// the command unconfined, and returns a go build -overlay file for it.
func mutantOverlay(t *testing.T, dir string) string {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	mutant := strings.Replace(string(src), "\treexec.Main()", "\tmutantMain() // takes the launcher's part\n\treexec.Main()", 1)
	require.NotEqual(t, string(src), mutant)
	mutant += `
func mutantMain() {
	if len(os.Args) < 2 || os.Args[1] != reexec.Entry {
		return
	}
	for i, a := range os.Args {
		if a == "--" {
			os.NewFile(3, "report").WriteString("{\"schema\":\"confine.report/v1\",\"outcome\":\"exec\",\"backend\":\"landlock\"}\n")
			path, _ := exec.LookPath(os.Args[i+1])
			syscall.Exec(path, os.Args[i+1:], os.Environ())
		}
	}
	os.Exit(125)
}
`
	mutant = strings.Replace(mutant, "\t\"os\"\n", "\t\"os\"\n\t\"os/exec\"\n\t\"syscall\"\n", 1)
	file := filepath.Join(dir, "mutant-main.go")
	require.NoError(t, os.WriteFile(file, []byte(mutant), 0o644))
	abs, err := filepath.Abs("main.go")
	require.NoError(t, err)
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: file}})
	ov := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(ov, overlay, 0o644))
	return ov
}

// outsideDir is a fresh directory under /var/tmp, mode 0755: outside every root a confined command may write.
func outsideDir(t *testing.T, name string) string {
	dir, err := os.MkdirTemp("/var/tmp", name)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// result is the agent's last line, decoded.
type result struct {
	Kind, Reason, Backend, Metadata string
	Exit, Signal                    int
}

// run runs bin with args and returns its result line, its whole output, and its exit status.
func run(t *testing.T, bin string, args ...string) (result, string, int) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	var r result
	if i := strings.LastIndex(string(out), "go-agent: {"); i >= 0 {
		require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(string(out[i+len("go-agent: "):]))), &r), "%s", out)
	}
	return r, string(out), status
}

// skipWithoutConfinement skips where this host has no backend at all (the agent's probe says so).
func skipWithoutConfinement(t *testing.T, bin string) {
	out, err := exec.Command(bin, "probe").Output()
	require.NoError(t, err)
	var p struct{ AutoBackend, AutoReason string }
	require.NoError(t, json.Unmarshal(out, &p))
	if p.AutoBackend == "none" {
		t.Skipf("nothing can confine on this host: %s", p.AutoReason)
	}
}

// writes runs the agent on a script that writes one file inside the worktree and one outside, and returns the
// line the test prints: "CONFINE inside=yes outside=no" when the agent confined it.
func writes(t *testing.T, bin string) (string, result) {
	base := outsideDir(t, "go-agent")
	wt, outside := filepath.Join(base, "wt"), filepath.Join(base, "outside")
	for _, d := range []string{wt, outside} {
		require.NoError(t, os.Mkdir(d, 0o777))
		require.NoError(t, os.Chmod(d, 0o777)) // the agent may run as another user than the test's files
	}
	r, out, _ := run(t, bin, wt, fmt.Sprintf("echo x >%q; echo x >%q; exit 0", filepath.Join(wt, "inside"),
		filepath.Join(outside, "outside")))
	t.Logf("agent: %s", out)
	yes := func(p string) string {
		if _, err := os.Stat(p); err == nil {
			return "yes"
		}
		return "no"
	}
	return "CONFINE inside=" + yes(filepath.Join(wt, "inside")) + " outside=" + yes(filepath.Join(outside, "outside")), r
}

func TestAgentConfinesWrites(t *testing.T) {
	bin := agent(t, false)
	skipWithoutConfinement(t, bin)
	line, r := writes(t, bin)
	fmt.Println(line)
	fmt.Printf("CONFINE backend=%s metadata=%s\n", r.Backend, r.Metadata)
	require.Equal(t, "CONFINE inside=yes outside=no", line, "result %+v", r)
	require.Equal(t, "ok", r.Kind) // the script's exit 0: the failed write outside is the shell's to report
	require.NotEmpty(t, r.Backend)
	require.NotEmpty(t, r.Metadata)
}

// TestAgentCatchesAMutant: an agent whose launcher confines nothing, yet forges an ok report, is caught by
// what TestAgentConfinesWrites asserts (the file outside exists).
func TestAgentCatchesAMutant(t *testing.T) {
	bin := agent(t, true)
	line, r := writes(t, bin)
	require.Equal(t, "ok", r.Kind)
	require.Equal(t, "CONFINE inside=yes outside=yes", line)
}

// TestAgentRefusalRunsNothing: a refused launch (the worktree is missing) is told apart and writes nothing.
func TestAgentRefusalRunsNothing(t *testing.T) {
	bin := agent(t, false)
	skipWithoutConfinement(t, bin)
	base := outsideDir(t, "go-agent")
	mark := filepath.Join(base, "ran")
	r, out, status := run(t, bin, filepath.Join(base, "missing"), "touch "+mark)
	require.Equal(t, "refused", r.Kind, out)
	require.Equal(t, "bad-root", r.Reason, out)
	require.Equal(t, 125, status)
	require.NoFileExists(t, mark)
}

// TestAgentResultIgnoresStderr: the result is decided from the exit status and the report, so a command that
// exits 125 is the same failure whether its stderr is empty or full of confine's own words.
func TestAgentResultIgnoresStderr(t *testing.T) {
	bin := agent(t, false)
	skipWithoutConfinement(t, bin)
	wt := outsideDir(t, "go-agent")
	quiet, _, _ := run(t, bin, wt, "exit 125")
	loud, out, _ := run(t, bin, wt, `echo "confine: --worktree: bad-root: refused; nothing ran" >&2; exit 125`)
	require.Contains(t, out, "confine: --worktree")
	require.Equal(t, result{Kind: "failed", Exit: 125, Backend: quiet.Backend, Metadata: quiet.Metadata}, quiet)
	require.Equal(t, quiet, loud)
}

// TestAgentRefusesToRunFromTmp: a copy of the agent in /tmp (where go run builds) is not re-executed.
func TestAgentRefusesToRunFromTmp(t *testing.T) {
	bin := agent(t, false)
	dir, err := os.MkdirTemp("/tmp", "go-agent")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	copyBin := filepath.Join(dir, "go-agent")
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(copyBin, data, 0o755))
	mark := filepath.Join(outsideDir(t, "go-agent"), "ran")
	_, out, status := run(t, copyBin, dir, "touch "+mark)
	require.Equal(t, 2, status, out)
	require.Contains(t, out, "it lies beneath /tmp")
	require.Contains(t, out, "go build -o")
	require.NoFileExists(t, mark)
}

// TestAgentRefusesABindMountedWorktree: the agent inside the worktree, started through a bind mount that shows
// the worktree at a second path, or through an overlay whose upper layer is in the worktree, is refused as
// beneath the worktree (unshare -m as root, -Urm otherwise).
func TestAgentRefusesABindMountedWorktree(t *testing.T) {
	bin := agent(t, false)
	flag := "-m"
	if os.Getuid() != 0 {
		flag = "-Urm"
	}
	if err := exec.Command("unshare", flag, "true").Run(); err != nil {
		t.Skipf("unshare %s is not allowed here (%v): no mount namespace for the bind mount", flag, err)
	}
	base := outsideDir(t, "go-agent")
	wt, alias := filepath.Join(base, "wt"), filepath.Join(base, "alias")
	require.NoError(t, os.MkdirAll(filepath.Join(wt, "bin"), 0o755))
	require.NoError(t, os.Mkdir(alias, 0o755))
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(wt, "bin", "go-agent"), data, 0o755))
	// And an overlay whose upper layer is in the worktree (attack review): a device of its own.
	for _, d := range []string{"wt/up", "low", "work", "ov"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(wt, "up", "go-agent"), data, 0o755))
	mark := filepath.Join(base, "ran")
	out, err := exec.Command("unshare", flag, "--propagation", "private", "sh", "-c",
		`mount --bind "$1" "$2" || exit 99; "$2/bin/go-agent" "$1" "touch $3"; echo "bind: exit $?"
		mount -t overlay overlay -o "lowerdir=$4/low,upperdir=$1/up,workdir=$4/work" "$4/ov" || exit 99
		"$4/ov/go-agent" "$1" "touch $3"; echo "overlay: exit $?"`, "sh", wt, alias, mark, base).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, 2, strings.Count(string(out), "under another name (a bind mount, an overlay or a loop device)"), "%s", out)
	require.Contains(t, string(out), "bind: exit 2")
	require.Contains(t, string(out), "overlay: exit 2")
	require.NoFileExists(t, mark)
}
