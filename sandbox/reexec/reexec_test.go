package reexec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/sandbox/internal/cli"
	"github.com/confine-dev/confine/sandbox/report"
)

// TestMain makes this test binary a launcher too: Probe starts it again for the mount layer's probe.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

// The --config fixtures, each with the Policy that says the same.
var fixtures = map[string]Policy{
	"agent.conf": {Worktree: "/var/tmp/reexec-fixture/wt", Allow: []string{"/var/tmp/reexec-fixture/cache"},
		Profiles: []string{"npm,go"}, Strict: true},
	"every-flag.conf": {Worktree: "/var/tmp/reexec-fixture/wt",
		Allow:       []string{"/var/tmp/reexec-fixture/a", "/var/tmp/reexec-fixture/b"},
		AllowSocket: []string{"/var/tmp/reexec-fixture/agent.sock"}, Profiles: []string{"pip", "cargo"},
		Protect: []string{"/var/tmp/reexec-fixture/wt/.vscode", "/var/tmp/reexec-fixture/wt/.envrc"},
		Mode:    "workspace-write", Backend: "landlock", TTY: true, Strict: true, NoGit: true, AllowInterop: true},
	"read-only.conf": {Mode: "read-only", Backend: "bwrap"},
}

// TestPolicyArgsMatchConfigFiles feeds each --config fixture to the CLI's parser, and its Policy's Args to the
// same parser, and compares the Configs and profiles: the launcher Command starts parses exactly that.
func TestPolicyArgsMatchConfigFiles(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // the profiles' defaults (bazel test sets no HOME)
	files, err := filepath.Glob("testdata/*.conf")
	require.NoError(t, err)
	require.Len(t, files, len(fixtures))
	for _, f := range files {
		p, ok := fixtures[filepath.Base(f)]
		require.True(t, ok, "no Policy for %s", f)
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		copied := filepath.Join(t.TempDir(), filepath.Base(f)) // a regular file: bazel's runfiles are symlinks
		require.NoError(t, os.WriteFile(copied, data, 0o644))
		fromFile, fileProfiles, err := cli.ParseProfiles([]string{"--config", copied, "--", "true"})
		require.NoError(t, err, f)
		fromFile.ConfigFile = ""
		fromPolicy, policyProfiles, err := cli.ParseProfiles(append(p.Args(), "--", "true"))
		require.NoError(t, err, f)
		require.Equal(t, fromFile, fromPolicy, f)
		require.Equal(t, fileProfiles, policyProfiles, f)
	}
}

// TestPolicyArgsCoverEveryField sets each field of Policy alone and checks that the parsed result changes:
// a field Args forgot would parse as the zero Policy.
func TestPolicyArgsCoverEveryField(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	base := Policy{Worktree: "/w"}
	zeroCfg, zeroProfiles, err := cli.ParseProfiles(append(base.Args(), "--", "true"))
	require.NoError(t, err)
	values := map[string]any{"Worktree": "/v", "Allow": []string{"/a"}, "AllowSocket": []string{"/s"}, "Protect": []string{"/w/p"},
		"Profiles": []string{"npm"}, "Mode": "read-only", "Backend": "bwrap"}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		f := typ.Field(i)
		p := base
		v := reflect.ValueOf(&p).Elem().Field(i)
		if f.Type.Kind() == reflect.Bool {
			v.SetBool(true)
		} else {
			require.Contains(t, values, f.Name, "a value for field %s", f.Name)
			v.Set(reflect.ValueOf(values[f.Name]))
		}
		cfg, profiles, err := cli.ParseProfiles(append(p.Args(), "--", "true"))
		require.NoError(t, err, f.Name)
		require.False(t, reflect.DeepEqual(cfg, zeroCfg) && reflect.DeepEqual(profiles, zeroProfiles),
			"field %s changed nothing the launcher parses", f.Name)
	}
}

// TestPolicyArgsPassBadValuesOn: an empty list entry reaches the CLI, which refuses it, rather than vanishing.
func TestPolicyArgsPassBadValuesOn(t *testing.T) {
	_, _, err := cli.ParseProfiles(append(Policy{Worktree: "/w", Allow: []string{""}}.Args(), "--", "true"))
	require.ErrorContains(t, err, "--allow needs a non-empty value")
	_, _, err = cli.ParseProfiles(append(Policy{Worktree: "w"}.Args(), "--", "true"))
	require.Equal(t, report.BadRoot, report.ReasonOf(err))
}

func TestClassify(t *testing.T) {
	execRep := `{"schema":"confine.report/v1","outcome":"exec","mode":"workspace-write","channels":{"tty":{"status":"open","how":"x"}}}` + "\n"
	refused := `{"schema":"confine.report/v1","outcome":"refused","reason":"bad-root","mode":"workspace-write"}` + "\n"
	notFound := `{"schema":"confine.report/v1","outcome":"refused","reason":"command-not-found","mode":"workspace-write"}` + "\n"
	execFailed := `{"schema":"confine.exec-failed/v1","outcome":"exec-failed","reason":"wrong-arch","status":126}` + "\n"
	for _, c := range []struct {
		name    string
		code    int
		sig     syscall.Signal
		records string
		kind    Kind
		reason  report.Reason
		err     string
	}{
		{"ran, exit 0", 0, 0, execRep, OK, "", ""},
		{"ran, exit 3", 3, 0, execRep, Failed, "", ""},
		{"ran, exit 125 of its own", 125, 0, execRep, Failed, "", ""},
		{"ran, killed", -1, syscall.SIGKILL, execRep, Failed, "", ""},
		{"refused", 125, 0, refused, Refused, report.BadRoot, ""},
		{"not found before the report", 127, 0, notFound, ExecFailed, report.CommandNotFound, ""},
		{"execve failed after the report", 126, 0, execRep + execFailed, ExecFailed, report.WrongArch, ""},
		{"125 and no report", 125, 0, "", Refused, "unknown", ""},
		{"0 and no report", 0, 0, "", "", "", "wrote no report"},
		{"refusal record but exit 0", 0, 0, refused, "", "", "wrote no report"},
		{"not confine's", 0, 0, `{"schema":"other/v1"}` + "\n", "", "", "schema other/v1"},
		{"three records", 0, 0, execRep + execFailed + execFailed, "", "", "more than two"},
	} {
		r, err := classify(c.code, c.sig, []byte(c.records))
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.Equal(t, c.kind, r.Kind, c.name)
		require.Equal(t, c.reason, r.Reason, c.name)
		require.Equal(t, c.code, r.ExitCode, c.name)
		require.Equal(t, c.sig, r.Signal, c.name)
	}
	r, err := classify(0, 0, []byte(execRep))
	require.NoError(t, err)
	require.Equal(t, "open", r.Report.Channels["tty"].Status)
}

// TestProbeIsAskedOnce: Probe keeps its verdict for the process.
func TestProbeIsAskedOnce(t *testing.T) {
	a, b := Probe(), Probe()
	require.Equal(t, 1, probes)
	require.Equal(t, a, b)
	require.Equal(t, report.ProbeSchema, a.Schema)
}

// TestCommandRefusesAnExecutableACommandCouldReplace: the rule, for files made here (outside /tmp, which is
// writable to every confined command), and for this test binary, which go test built in /tmp.
func TestCommandRefusesAnExecutableACommandCouldReplace(t *testing.T) {
	mainCalled = false
	_, err := Policy{Worktree: "/w"}.Command("true")
	require.ErrorContains(t, err, "Main was not called")
	require.PanicsWithError(t, errNoMain.Error(), func() { Probe() })
	mainCalled = true
	// A policy the launcher would refuse is its refusal, before the trust check compares any root.
	_, err = Policy{Worktree: "wt"}.Command("true")
	require.Equal(t, report.BadRoot, report.ReasonOf(err))
	require.ErrorContains(t, err, "not absolute")
	_, err = Policy{Worktree: "/w", Profiles: []string{"nope"}}.Command("true")
	require.Equal(t, report.Usage, report.ReasonOf(err))
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	if within(exe, "/tmp") {
		cmd, err := Policy{Worktree: "/w"}.Command("true")
		require.NoError(t, err)
		_, err = cmd.Run()
		require.ErrorIs(t, err, ErrUntrusted)
		require.ErrorContains(t, err, "go build -o")
	} else {
		t.Logf("this test binary is not in /tmp (%s): the go test case is left to the files below", exe)
	}
	base := outsideDir(t, "reexec-trust")
	file := func(rel string, mode os.FileMode) string {
		p := filepath.Join(base, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), mode))
		require.NoError(t, os.Chmod(p, mode)) // past the umask
		return p
	}
	good := file("bin/agent", 0o755)
	require.NoError(t, trusted(good, Policy{Worktree: filepath.Join(base, "wt")}, nil))
	inWT := file("wt/node_modules/agent", 0o755)
	loose := file("loose/agent", 0o775)
	linked := file("linked/agent", 0o755)
	require.NoError(t, os.Link(linked, filepath.Join(base, "linked", "again")))
	t.Setenv("npm_config_cache", filepath.Join(base, "npmcache"))
	npx := file("npmcache/_npx/agent", 0o755)
	for _, c := range []struct {
		exe  string
		p    Policy
		want string
	}{
		{inWT, Policy{Worktree: filepath.Join(base, "wt")}, "lies beneath " + filepath.Join(base, "wt") + ", which a confined command can write"},
		{inWT, Policy{Worktree: "/elsewhere", Allow: []string{filepath.Join(base, "wt/node_modules")}}, "which a confined command can write"},
		{loose, Policy{Worktree: "/w"}, "writable by group or others (mode 775)"},
		{linked, Policy{Worktree: "/w"}, "other hard links"},
		{npx, Policy{Worktree: "/w"}, "which a confine profile grants"},
	} {
		err := trusted(c.exe, c.p, nil)
		require.ErrorIs(t, err, ErrUntrusted, c.exe)
		require.ErrorContains(t, err, c.want, c.exe)
		require.False(t, strings.Contains(err.Error(), "\n"))
	}
	// The launcher's environment (exec.Cmd's Env) names profile directories too (attack review).
	require.NoError(t, trusted(good, Policy{Worktree: "/w"}, nil))
	err = trusted(good, Policy{Worktree: "/w"}, []string{"GOCACHE=" + filepath.Join(base, "bin")})
	require.ErrorIs(t, err, ErrUntrusted)
	require.ErrorContains(t, err, "which a confine profile grants")
	require.True(t, errors.Is(untrusted("x", "y"), ErrUntrusted))
}

// BenchmarkTrusted is the trust check Command makes before each launch, for a file outside /tmp.
func BenchmarkTrusted(b *testing.B) {
	exe := "/usr/bin/env"
	for b.Loop() {
		if err := trusted(exe, Policy{Worktree: "/var/tmp"}, nil); err != nil && !errors.Is(err, ErrUntrusted) {
			b.Fatal(err)
		}
	}
}

// TestCommandRunsOutput runs a command through Output and CombinedOutput. go test builds this binary in /tmp,
// which Command refuses: scripts/examples-test.sh builds it outside and runs it as root and as nobody.
func TestCommandRunsOutput(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	if within(exe, "/tmp") {
		t.Skipf("this test binary is in /tmp (%s), where Command refuses it: make examples-test runs this test", exe)
	}
	if p := Probe(); p.AutoBackend == "none" {
		t.Skipf("nothing can confine on this host: %s", p.AutoReason)
	}
	wt := outsideDir(t, "reexec-run")
	cmd, err := Policy{Worktree: wt}.Command("sh", "-c", "echo out; echo err >&2")
	require.NoError(t, err)
	out, r, err := cmd.Output()
	require.NoError(t, err)
	require.Equal(t, OK, r.Kind)
	require.Equal(t, "out\n", string(out))
	require.Equal(t, report.Schema, r.Report.Schema)
	cmd, err = Policy{Worktree: wt}.Command("sh", "-c", "echo out; echo err >&2; exit 3")
	require.NoError(t, err)
	out, r, err = cmd.CombinedOutput()
	require.NoError(t, err)
	require.Equal(t, Failed, r.Kind)
	require.Equal(t, 3, r.ExitCode)
	require.Equal(t, "out\nerr\n", string(out))
}

// outsideDir is a fresh directory under /var/tmp, mode 0755: outside /tmp, which every confined command can write.
func outsideDir(t *testing.T, name string) string {
	dir, err := os.MkdirTemp("/var/tmp", name)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	return dir
}
