//go:build linux

package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// toolVars are the variables the profiles read: the tests set each one, to a value or to "" (unset for
// confine), so that the caller's own settings do not leak in.
var toolVars = []string{"npm_config_cache", "NPM_CONFIG_CACHE", "PIP_CACHE_DIR", "CARGO_HOME", "GOCACHE", "GOMODCACHE",
	"GOPATH", "GRADLE_USER_HOME", "MAVEN_USER_HOME", "YARN_CACHE_FOLDER", "YARN_GLOBAL_FOLDER", "npm_config_store_dir",
	"npm_config_cache_dir", "npm_config_state_dir", "PNPM_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
	"XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GOFLAGS", "GOENV"}

// profileEnv is an environment with HOME=home, every tool variable cleared, then set.
func profileEnv(home string, set ...string) []string {
	env := []string{"HOME=" + home}
	for _, v := range toolVars {
		env = append(env, v+"=")
	}
	return append(env, set...)
}

// runAs runs the launcher (exe) with env and a report on descriptor 3, as nobody when cred is set.
func runAs(t *testing.T, exe string, cred *syscall.SysProcAttr, dir string, env []string, args ...string) (run, map[string]any) {
	t.Helper()
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(exe, append([]string{"--report-fd", "3"}, args...)...)
	cmd.Env = append(withoutTempVars(os.Environ()), env...)
	cmd.ExtraFiles, cmd.SysProcAttr, cmd.Dir = []*os.File{rf}, cred, dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var rep map[string]any
	b, _ := os.ReadFile(rf.Name())
	if line, _, _ := strings.Cut(string(b), "\n"); line != "" {
		require.NoError(t, json.Unmarshal([]byte(line), &rep), "%s", b)
	}
	return run{status: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}, rep
}

// profileRules returns the report's rules granted by a profile: path -> reason.
func profileRules(rep map[string]any) map[string]string {
	out := map[string]string{}
	rules, _ := rep["rules"].([]any)
	for _, r := range rules {
		m := r.(map[string]any)
		if why, _ := m["reason"].(string); strings.HasPrefix(why, "profile ") {
			out[m["path"].(string)] = why
		}
	}
	return out
}

// who is the user the launcher runs as in a subtest: root (the test's own user) or nobody.
type who struct {
	name string
	exe  string
	cred *syscall.SysProcAttr
	w    string // worktree
	out  string // outside, beside it
}

// users returns this user's case and, when root, nobody's.
func users(t *testing.T) []who {
	t.Helper()
	requireLandlock(t)
	w, out := sandbox(t)
	us := []who{{name: "self", exe: bin, w: w, out: out}}
	if os.Geteuid() == 0 {
		exe, nw, nout := asNobody(t)
		require.NoError(t, os.Chown(nout, nobody, nobody))
		us = append(us, who{name: "nobody", exe: exe, cred: nobodyCred(), w: nw, out: nout})
	}
	return us
}

func TestProfilesGrantTheirToolsDirectories(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home := filepath.Join(u.out, "home")
			require.NoError(t, os.Mkdir(home, 0o755))
			chownTo(t, u, home)
			// From the defaults: each named profile's directories, created, granted, reported.
			want := map[string]string{
				home + "/.npm":                    "profile npm: default $HOME/.npm",
				home + "/.cache/pip":              "profile pip: default $HOME/.cache/pip",
				home + "/.cargo":                  "profile cargo: default $HOME/.cargo",
				home + "/.cache/go-build":         "profile go: default $HOME/.cache/go-build",
				home + "/go/pkg/mod":              "profile go: default $HOME/go/pkg/mod",
				home + "/go/pkg/sumdb":            "profile go: default $HOME/go/pkg/sumdb",
				home + "/.m2/repository":          "profile maven: default $HOME/.m2/repository",
				home + "/.m2/wrapper":             "profile maven: default $HOME/.m2/wrapper",
				home + "/.config/git":             "profile git-global: default $HOME/.config/git",
				home + "/.gradle/caches":          "profile gradle: default $HOME/.gradle/caches",
				home + "/.gradle/daemon":          "profile gradle: default $HOME/.gradle/daemon",
				home + "/.gradle/jdks":            "profile gradle: default $HOME/.gradle/jdks",
				home + "/.gradle/native":          "profile gradle: default $HOME/.gradle/native",
				home + "/.gradle/wrapper":         "profile gradle: default $HOME/.gradle/wrapper",
				home + "/.cache/yarn":             "profile yarn: default $HOME/.cache/yarn",
				home + "/.yarn/berry":             "profile yarn: default $HOME/.yarn/berry",
				home + "/.local/share/pnpm/store": "profile pnpm: default $HOME/.local/share/pnpm/store",
				home + "/.cache/pnpm":             "profile pnpm: default $HOME/.cache/pnpm",
				home + "/.local/state/pnpm":       "profile pnpm: default $HOME/.local/state/pnpm",
			}
			var dirs []string
			for d := range want {
				dirs = append(dirs, d)
			}
			touch := `for d; do echo x > "$d/probe" || exit 1; done`
			r, rep := runAs(t, u.exe, u.cred, u.w, profileEnv(home), append([]string{"--worktree", u.w,
				"--profile", "npm,pip,cargo,go", "--profile", "maven,git-global,gradle,yarn,pnpm", "--", "/bin/sh", "-c", touch, "sh"}, dirs...)...)
			require.Equal(t, 0, r.status, "stderr %s", r.stderr)
			require.Equal(t, want, profileRules(rep))
			require.FileExists(t, home+"/.config/git/config", "git-global makes the XDG file git config --global writes")

			// Without the profiles, the same writes fail at the kernel.
			for _, d := range dirs {
				r, _ = runAs(t, u.exe, u.cred, u.w, profileEnv(home), "--worktree", u.w, "--", "/bin/sh", "-c", touch, "sh", d)
				require.Equal(t, 1, r.status, d)
				requireKernelDenial(t, r.stderr)
			}

			// From the tools' variables: their directories, not the defaults; toolchains leaves out what is missing.
			c := filepath.Join(u.out, "c")
			for _, d := range []string{"npm", "gocache", "gopath"} {
				require.NoError(t, os.MkdirAll(filepath.Join(c, d), 0o755))
			}
			chownTo(t, u, c, c+"/npm", c+"/gocache", c+"/gopath")
			snap := snapshot(t, u.out, "c")
			r, rep = runAs(t, u.exe, u.cred, u.w, profileEnv(home+"-none", "npm_config_cache="+c+"/npm", "GOCACHE="+c+"/gocache",
				"GOPATH="+c+"/gopath:/elsewhere"), "--worktree", u.w, "--profile", "toolchains", "--", "/bin/sh", "-c",
				touch, "sh", c+"/npm", c+"/gocache")
			require.Equal(t, 0, r.status, "stderr %s", r.stderr)
			require.Equal(t, map[string]string{c + "/npm": "profile npm: npm_config_cache", c + "/gocache": "profile go: GOCACHE"},
				profileRules(rep))
			require.FileExists(t, c+"/gocache/probe")
			require.NoDirExists(t, c+"/gopath/pkg/mod", "toolchains creates nothing")
			warn := strings.Join(toStrings(rep["warnings"]), "\n")
			require.Contains(t, warn, "--profile toolchains: not granted, as they do not exist")
			require.Contains(t, warn, c+"/gopath/pkg/mod")
			require.Equal(t, snap, snapshot(t, u.out, "c"))
		})
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func chownTo(t *testing.T, u who, paths ...string) {
	t.Helper()
	if u.cred != nil {
		for _, p := range paths {
			require.NoError(t, os.Chown(p, nobody, nobody))
		}
	}
}

func TestProfileRefusals(t *testing.T) {
	w, out := sandbox(t)
	requireBin(t)
	home := filepath.Join(out, "home")
	require.NoError(t, os.Mkdir(home, 0o755))
	for _, c := range []struct {
		env  []string
		args string
		line string
	}{
		{[]string{"npm_config_cache=" + home}, "--profile npm", "confine: --profile npm: npm_config_cache=" + home + ": " + home + " is / or $HOME or above it"},
		{[]string{"GOMODCACHE=/"}, "--profile go", "confine: --profile go: GOMODCACHE=/: / is / or $HOME"},
		{[]string{"CARGO_HOME=/proc/self"}, "--profile toolchains", "confine: --profile cargo: CARGO_HOME=/proc/self: /proc/self is in /proc"},
		{[]string{"PIP_CACHE_DIR=/dev/shm/pip"}, "--profile pip", "confine: --profile pip: PIP_CACHE_DIR=/dev/shm/pip: /dev/shm/pip is in /dev"},
		{[]string{"GOCACHE=cache"}, "--profile go", "confine: --profile go: GOCACHE=cache: not an absolute path"},
		{nil, "--profile npx", `confine: --profile: unknown profile "npx"`},
		{nil, "--mode read-only --profile npm", "confine: --profile conflicts with --mode read-only"},
	} {
		args := append(strings.Fields(c.args), "--worktree", w, "--", "/bin/sh", "-c", "echo ran")
		if strings.Contains(c.args, "read-only") {
			args = append(strings.Fields(c.args), "--", "/bin/sh", "-c", "echo ran")
		}
		r := confine(t, "", profileEnv(home, c.env...), args...)
		require.Equal(t, 125, r.status, c.args)
		require.Empty(t, r.stdout)
		require.True(t, strings.HasPrefix(r.stderr, c.line), "got %q want prefix %q", r.stderr, c.line)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	}
	entries, err := os.ReadDir(home)
	require.NoError(t, err)
	require.Empty(t, entries, "a refusal creates nothing")
}

func TestConfigFile(t *testing.T) {
	w, out := sandbox(t)
	requireBin(t)
	home := filepath.Join(out, "home")
	require.NoError(t, os.Mkdir(home, 0o755))
	cfg := filepath.Join(out, "confine.conf")
	// The file gives a worktree the command line overrides, a profile, and --no-git.
	require.NoError(t, os.WriteFile(cfg, []byte("# confine flags\n--worktree /nonexistent\n\n  --profile=npm\n--no-git\n--mode workspace-write\n"), 0o644))
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(bin, "--config", cfg, "--worktree", w, "--profile", "go", "--report-fd", "3", "--", "/bin/sh", "-c",
		`echo x > "$HOME/.npm/f" && echo x > "$HOME/.cache/go-build/f" && echo ok`)
	cmd.Env = append(withoutTempVars(os.Environ()), profileEnv(home)...)
	cmd.ExtraFiles = []*os.File{rf}
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Equal(t, "ok\n", string(b))
	var rep map[string]any
	rb, _ := os.ReadFile(rf.Name())
	require.NoError(t, json.Unmarshal(rb, &rep))
	require.Equal(t, map[string]string{home + "/.npm": "profile npm: default $HOME/.npm",
		home + "/.cache/go-build": "profile go: default $HOME/.cache/go-build", home + "/go/pkg/mod": "profile go: default $HOME/go/pkg/mod",
		home + "/go/pkg/sumdb": "profile go: default $HOME/go/pkg/sumdb"},
		profileRules(rep))

	// A malformed file: 125, one line naming file:line, nothing runs.
	for content, want := range map[string]string{
		"--worktree " + w + "\n# ok\nprofile npm\n": cfg + ":3: expected --flag [value], got \"profile npm\"",
		"--frob\n":               cfg + ":1: unknown flag --frob",
		"--config /etc/passwd\n": cfg + ":1: --config cannot be given in a --config file",
		"--mode read-only\n--mode workspace-write\n": cfg + ":2: --mode given twice",
		"--allow relative\n":                         cfg + ":1: --allow: ",
	} {
		require.NoError(t, os.WriteFile(cfg, []byte(content), 0o644))
		r := confine(t, "", nil, "--config", cfg, "--worktree", w, "--", "/bin/sh", "-c", "echo ran")
		require.Equal(t, 125, r.status, content)
		require.Empty(t, r.stdout)
		require.True(t, strings.HasPrefix(r.stderr, "confine: --config "+want), "got %q want %q", r.stderr, want)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"))
	}
	r := confine(t, "", nil, "--config", filepath.Join(out, "missing"), "--worktree", w, "--", "true")
	require.Equal(t, 125, r.status)
	require.Contains(t, r.stderr, "no such file")
}

// toolTest is one acceptance case: a real tool run with its profile, then without.
type toolTest struct {
	tool         string
	version      string // the argument that prints its version: can nobody run it?
	profile      string
	prepare      func(t *testing.T, src, w string) // builds the local input (no network)
	argv         func(src, w string) []string
	env          []string
	failsWithout bool // the tool fails without its profile (pip instead runs without its cache)
	// freshHome: the run without the profile gets an empty HOME. The go command treats writes to an existing
	// build cache as best effort (seen here: go build succeeded with it read-only), but fails to create one.
	freshHome bool
}

func runToolTest(t *testing.T, tt toolTest) {
	path, err := exec.LookPath(tt.tool)
	if err != nil {
		t.Skipf("%s is not installed here (%v); make deps installs it", tt.tool, err)
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			if u.cred != nil {
				if !nobodyCanRun(path, tt.version) {
					t.Skipf("%s is not executable by nobody here (%s under a private home?)", tt.tool, path)
				}
			}
			home, src := filepath.Join(u.out, "home"), filepath.Join(u.out, "src")
			require.NoError(t, os.Mkdir(home, 0o755))
			require.NoError(t, os.Mkdir(src, 0o755))
			tt.prepare(t, src, u.w)
			if u.cred != nil {
				require.NoError(t, chownTree(u.out))
				require.NoError(t, chownTree(u.w))
			}
			env := profileEnv(home, tt.env...)
			// A first run makes the profile's directories (an expected change outside); then the outside is
			// snapshotted, and the tool may change only what the profile granted.
			r, rep := runAs(t, u.exe, u.cred, u.w, env, "--worktree", u.w, "--profile", tt.profile, "--", "true")
			require.Equal(t, 0, r.status, r.stderr)
			granted := profileRules(rep)
			require.NotEmpty(t, granted)
			var skip []string
			for p := range granted {
				rel, err := filepath.Rel(u.out, p)
				require.NoError(t, err)
				skip = append(skip, rel)
			}
			snap := snapshot(t, u.out, skip...)
			r, rep = runAs(t, u.exe, u.cred, u.w, env, append([]string{"--worktree", u.w, "--profile", tt.profile, "--"}, tt.argv(src, u.w)...)...)
			require.Equal(t, 0, r.status, "with --profile %s: stdout %s stderr %s", tt.profile, r.stdout, r.stderr)
			require.Equal(t, granted, profileRules(rep))
			require.Equal(t, snap, snapshot(t, u.out, skip...), "outside, only the granted directories change")

			// In a fresh worktree without the profile: the tool fails writing its directories (pip instead goes on
			// without its cache), and nothing outside changes, the caches included.
			w2 := filepath.Join(filepath.Dir(u.w), "worktree2")
			require.NoError(t, os.Mkdir(w2, 0o755))
			tt.prepare(t, t.TempDir(), w2)
			if u.cred != nil {
				require.NoError(t, chownTree(w2))
			}
			if tt.freshHome {
				home2 := filepath.Join(u.out, "home2")
				require.NoError(t, os.Mkdir(home2, 0o755))
				if u.cred != nil {
					require.NoError(t, os.Chown(home2, nobody, nobody))
				}
				env = profileEnv(home2, tt.env...)
			}
			full := snapshot(t, u.out)
			r, _ = runAs(t, u.exe, u.cred, w2, env, append([]string{"--worktree", w2, "--"}, tt.argv(src, w2)...)...)
			if tt.failsWithout {
				require.NotEqual(t, 0, r.status, "without --profile %s: stdout %s stderr %s", tt.profile, r.stdout, r.stderr)
				requireKernelDenialAnywhere(t, r.stdout+r.stderr)
			} else {
				require.Equal(t, 0, r.status, "without --profile %s: stdout %s stderr %s", tt.profile, r.stdout, r.stderr)
			}
			require.Equal(t, full, snapshot(t, u.out), "without the profile, nothing outside changes")
		})
	}
}

func chownTree(root string) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	})
}

// requireKernelDenialAnywhere: tools print errno names or strerror text.
func requireKernelDenialAnywhere(t *testing.T, out string) {
	t.Helper()
	for _, s := range []string{"EROFS", "EACCES", "Read-only file system", "Permission denied", "read-only file system", "permission denied"} {
		if strings.Contains(out, s) {
			return
		}
	}
	t.Fatalf("want EROFS or EACCES in the output, got %q", out)
}

// nobodyCanRun checks that nobody can run the tool: it may live under root's 0700 home (pyenv, rustup).
func nobodyCanRun(path, version string) bool {
	cmd := exec.Command(path, version)
	cmd.SysProcAttr = nobodyCred()
	cmd.Env = []string{"HOME=/nonexistent", "PATH=" + os.Getenv("PATH")}
	return cmd.Run() == nil
}

func TestNpmInstallOfALocalTarballWithTheNpmProfile(t *testing.T) {
	runToolTest(t, toolTest{tool: "npm", version: "--version", profile: "npm", failsWithout: true,
		env: []string{"npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false", "npm_config_offline=true"},
		prepare: func(t *testing.T, src, w string) {
			require.NoError(t, os.MkdirAll(src, 0o755))
			writeTarGz(t, filepath.Join(src, "demo-pkg-1.0.0.tgz"), map[string]string{
				"package/package.json": `{"name":"demo-pkg","version":"1.0.0","main":"index.js"}`,
				"package/index.js":     "module.exports = 42\n",
			})
			require.NoError(t, os.WriteFile(filepath.Join(w, "package.json"), []byte(`{"name":"proj","version":"1.0.0"}`), 0o644))
		},
		argv: func(src, w string) []string {
			return []string{"/bin/sh", "-c", `npm install "$0" && test -f node_modules/demo-pkg/index.js`, filepath.Join(src, "demo-pkg-1.0.0.tgz")}
		}})
}

func TestGoBuildOfASmallModuleWithTheGoProfile(t *testing.T) {
	runToolTest(t, toolTest{tool: "go", version: "version", profile: "go", failsWithout: true, freshHome: true,
		env: []string{"GOTOOLCHAIN=local", "GOPROXY=off", "GOTELEMETRY=off", "CGO_ENABLED=0"},
		prepare: func(t *testing.T, _, w string) {
			require.NoError(t, os.WriteFile(filepath.Join(w, "go.mod"), []byte("module example.com/demo\n\ngo 1.22\n"), 0o644))
			// The worktree's path is in the source: a second worktree's build misses the cache, so it must write it.
			require.NoError(t, os.WriteFile(filepath.Join(w, "main.go"), []byte("package main\n\nfunc main() { println(\""+w+"\") }\n"), 0o644))
		},
		argv: func(_, w string) []string {
			return []string{"/bin/sh", "-c", `go build -o demo . && ./demo`}
		}})
}

func TestPipInstallOfALocalWheelWithThePipProfile(t *testing.T) {
	// The system's python3 first (nobody can run it), then PATH's.
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		if py, err = exec.LookPath("python3"); err != nil {
			t.Skipf("python3 is not installed here (%v); make deps installs it", err)
		}
	}
	// The interpreter itself, not a shim (pyenv's rehashes its shims after pip install, outside the sandbox).
	exe, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	require.NoError(t, err)
	python := strings.TrimSpace(string(exe))
	if exec.Command(python, "-m", "pip", "--version").Run() != nil {
		t.Skip("python3 has no pip module here; make deps installs python3-pip")
	}
	runToolTest(t, toolTest{tool: python, version: "--version", profile: "pip", failsWithout: false,
		env: []string{"PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INDEX=1", "PIP_BREAK_SYSTEM_PACKAGES=1", "PIP_ROOT_USER_ACTION=ignore"},
		prepare: func(t *testing.T, src, _ string) {
			require.NoError(t, os.MkdirAll(src, 0o755))
			writeWheel(t, filepath.Join(src, "demo_whl-0.1-py3-none-any.whl"))
		},
		argv: func(src, w string) []string {
			return []string{"/bin/sh", "-c", `"$2" -m pip install --target "$1/site" "$0" && PYTHONPATH="$1/site" "$2" -c 'import demo_whl; assert demo_whl.X == 42'`,
				filepath.Join(src, "demo_whl-0.1-py3-none-any.whl"), w, python}
		}})
}

func writeTarGz(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
}

// writeWheel writes a pure-Python wheel (PEP 427) by hand: building one needs the wheel package, and no network.
func writeWheel(t *testing.T, path string) {
	t.Helper()
	files := [][2]string{
		{"demo_whl/__init__.py", "X = 42\n"},
		{"demo_whl-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-whl\nVersion: 0.1\n"},
		{"demo_whl-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: confine-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256([]byte(f[1]))
		record.WriteString(f[0] + ",sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]) + "," + itoa(len(f[1])) + "\n")
	}
	record.WriteString("demo_whl-0.1.dist-info/RECORD,,\n")
	files = append(files, [2]string{"demo_whl-0.1.dist-info/RECORD", record.String()})
	out, err := os.Create(path)
	require.NoError(t, err)
	defer out.Close()
	zw := zip.NewWriter(out)
	for _, f := range files {
		wr, err := zw.Create(f[0])
		require.NoError(t, err)
		_, err = wr.Write([]byte(f[1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
}

func itoa(n int) string { return strconv.Itoa(n) }

// A --config file beneath any root the command can write could be rewritten by one launch for the next (the
// attack review of stop 22 added --allow=/outside to a config in /tmp, and the next launch wrote outside). Each
// is refused, 125, before anything runs: beneath the worktree (also through a symlinked directory), beneath an
// --allow root the file itself names, in /tmp, and beneath a profile's directory; one outside every root runs.
func TestConfigBeneathAnyWritableRootIsRefused(t *testing.T) {
	w, out := sandbox(t)
	requireBin(t)
	home := filepath.Join(out, "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".npm"), 0o755))
	allowed := filepath.Join(out, "allowed")
	require.NoError(t, os.Mkdir(allowed, 0o755))
	require.NoError(t, os.Symlink(w, filepath.Join(out, "wtlink")))
	tmp, err := os.MkdirTemp("/tmp", "confine-cfg-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	write := func(path, content string) string {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return path
	}
	for _, c := range []struct{ path, content, args, beneath string }{
		{write(filepath.Join(w, "in-worktree.conf"), "--no-git\n"), "", "", w},
		{filepath.Join(out, "wtlink", "in-worktree.conf"), "", "", w},
		{write(filepath.Join(allowed, "in-allow.conf"), "--allow "+allowed+"\n"), "", "", allowed},
		{write(filepath.Join(tmp, "in-tmp.conf"), "--no-git\n"), "", "", "/tmp"},
		{write(filepath.Join(home, ".npm", "in-profile.conf"), "--no-git\n"), "", "--profile npm", filepath.Join(home, ".npm")},
	} {
		args := append([]string{"--config", c.path, "--worktree", w}, strings.Fields(c.args)...)
		r := confine(t, "", profileEnv(home), append(args, "--", "/bin/sh", "-c", "echo ran")...)
		require.Equal(t, 125, r.status, "%s: %s", c.path, r.stderr)
		require.Empty(t, r.stdout, c.path)
		require.Contains(t, r.stderr, " is beneath "+c.beneath, c.path)
		require.Contains(t, r.stderr, "which the command can write: keep it outside", c.path)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	}
	r := confine(t, "", nil, "--config", write(filepath.Join(out, "outside.conf"), "--no-git\n"), "--worktree", w, "--", "/bin/sh", "-c", "echo ran")
	require.Equal(t, 0, r.status, r.stderr)
	require.Equal(t, "ran\n", r.stdout)
}

// TestConfigShownBeneathAWritableRootIsRefused: a --config file outside every root by path, whose directory a
// bind mount shows beneath an --allow root, is refused (125, one line), since the command could rewrite it there;
// a bind mount of a sibling directory is not. The mounts are made in a mount namespace of their own
// (unshare -m, as root), which confine runs in.
func TestConfigShownBeneathAWritableRootIsRefused(t *testing.T) {
	w, out := sandbox(t)
	requireBin(t)
	unshare, err := exec.LookPath("unshare")
	if os.Geteuid() != 0 || err != nil {
		t.Skipf("skipped: needs root and unshare(1) to bind-mount in a mount namespace of its own (euid %d, unshare: %v)", os.Geteuid(), err)
	}
	cfgDir, sibling, allowed := filepath.Join(out, "etc"), filepath.Join(out, "other"), filepath.Join(out, "allowed")
	for _, d := range []string{cfgDir, sibling, filepath.Join(allowed, "alias")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	cfg := filepath.Join(cfgDir, "ci.conf")
	require.NoError(t, os.WriteFile(cfg, []byte("--no-git\n"), 0o644))
	for _, c := range []struct {
		source string
		status int
	}{{cfgDir, 125}, {out, 125}, {sibling, 0}} {
		script := `mount --make-rprivate / && mount --bind "$1" "$2" && shift 2 && exec "$@"`
		args := []string{"-m", "/bin/sh", "-c", script, "sh", c.source, filepath.Join(allowed, "alias"), bin,
			"--config", cfg, "--worktree", w, "--allow", allowed, "--", "/bin/sh", "-c", "echo ran"}
		cmd := exec.Command(unshare, args...)
		cmd.Env = withoutTempVars(os.Environ())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		status := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		require.Equal(t, c.status, status, "bind of %s: %s", c.source, stderr.String())
		if c.status == 125 {
			require.Empty(t, stdout.String(), c.source)
			require.Contains(t, stderr.String(), "--config "+cfg+" is shown beneath "+allowed+" at "+filepath.Join(allowed, "alias"))
			require.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
		} else {
			require.Equal(t, "ran\n", stdout.String(), stderr.String())
		}
	}
}
