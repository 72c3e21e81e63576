package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// paths maps each granted path to its reason.
func paths(t *testing.T, names string, getenv func(string) string) map[string]string {
	t.Helper()
	gs, err := Resolve(strings.Split(names, ","), getenv)
	require.NoError(t, err)
	out := map[string]string{}
	for _, g := range gs {
		out[g.Path] = g.Reason
	}
	return out
}

func TestDefaults(t *testing.T) {
	got := paths(t, "toolchains", env("HOME", "/h"))
	require.Equal(t, map[string]string{
		"/h/.npm":                    "profile npm: default $HOME/.npm",
		"/h/.cache/pip":              "profile pip: default $HOME/.cache/pip",
		"/h/.cargo":                  "profile cargo: default $HOME/.cargo",
		"/h/.cache/go-build":         "profile go: default $HOME/.cache/go-build",
		"/h/go/pkg/mod":              "profile go: default $HOME/go/pkg/mod",
		"/h/go/pkg/sumdb":            "profile go: default $HOME/go/pkg/sumdb",
		"/h/.gradle/caches":          "profile gradle: default $HOME/.gradle/caches",
		"/h/.gradle/daemon":          "profile gradle: default $HOME/.gradle/daemon",
		"/h/.gradle/jdks":            "profile gradle: default $HOME/.gradle/jdks",
		"/h/.gradle/native":          "profile gradle: default $HOME/.gradle/native",
		"/h/.gradle/wrapper":         "profile gradle: default $HOME/.gradle/wrapper",
		"/h/.m2/repository":          "profile maven: default $HOME/.m2/repository",
		"/h/.m2/wrapper":             "profile maven: default $HOME/.m2/wrapper",
		"/h/.cache/yarn":             "profile yarn: default $HOME/.cache/yarn",
		"/h/.yarn/berry":             "profile yarn: default $HOME/.yarn/berry",
		"/h/.local/share/pnpm/store": "profile pnpm: default $HOME/.local/share/pnpm/store",
		"/h/.cache/pnpm":             "profile pnpm: default $HOME/.cache/pnpm",
		"/h/.local/state/pnpm":       "profile pnpm: default $HOME/.local/state/pnpm",
	}, got, "toolchains: every profile but git-global")
	require.Equal(t, map[string]string{"/h/.config/git": "profile git-global: default $HOME/.config/git"},
		paths(t, "git-global", env("HOME", "/h")), "git-global only when named")
}

func TestFromEnvironment(t *testing.T) {
	e := env("HOME", "/h", "npm_config_cache", "/c/npm", "PIP_CACHE_DIR", "/c/pip/", "CARGO_HOME", "/c/cargo",
		"GOCACHE", "/c/gocache", "GOPATH", "/c/gopath:/other", "GRADLE_USER_HOME", "/c/gradle",
		"MAVEN_USER_HOME", "/c/m2", "YARN_CACHE_FOLDER", "/c/yarn", "YARN_GLOBAL_FOLDER", "/c/berry",
		"PNPM_HOME", "/c/pnpm", "XDG_CACHE_HOME", "/x/cache", "XDG_STATE_HOME", "/x/state",
		"GIT_CONFIG_GLOBAL", "/c/git/gitconfig")
	got := paths(t, "toolchains,git-global", e)
	want := map[string]string{
		"/c/npm":              "profile npm: npm_config_cache",
		"/c/pip":              "profile pip: PIP_CACHE_DIR",
		"/c/cargo":            "profile cargo: CARGO_HOME",
		"/c/gocache":          "profile go: GOCACHE",
		"/c/gopath/pkg/mod":   "profile go: $GOPATH/pkg/mod",
		"/c/gopath/pkg/sumdb": "profile go: $GOPATH/pkg/sumdb",
		"/c/gradle/caches":    "profile gradle: $GRADLE_USER_HOME/caches",
		"/c/gradle/daemon":    "profile gradle: $GRADLE_USER_HOME/daemon",
		"/c/gradle/jdks":      "profile gradle: $GRADLE_USER_HOME/jdks",
		"/c/gradle/native":    "profile gradle: $GRADLE_USER_HOME/native",
		"/c/gradle/wrapper":   "profile gradle: $GRADLE_USER_HOME/wrapper",
		"/h/.m2/repository":   "profile maven: default $HOME/.m2/repository",
		"/c/m2/wrapper":       "profile maven: $MAVEN_USER_HOME/wrapper",
		"/c/yarn":             "profile yarn: YARN_CACHE_FOLDER",
		"/c/berry":            "profile yarn: YARN_GLOBAL_FOLDER",
		"/c/pnpm/store":       "profile pnpm: $PNPM_HOME/store",
		"/x/cache/pnpm":       "profile pnpm: $XDG_CACHE_HOME/pnpm",
		"/x/state/pnpm":       "profile pnpm: $XDG_STATE_HOME/pnpm",
		"/c/git":              "profile git-global: $GIT_CONFIG_GLOBAL/..",
	}
	require.Equal(t, want, got)

	// The tools' own variables win over XDG, XDG over HOME; a relative XDG value is ignored (XDG spec).
	got = paths(t, "go,pip,git-global", env("HOME", "/h", "XDG_CACHE_HOME", "/x", "XDG_CONFIG_HOME", "/xc",
		"GOMODCACHE", "/m"))
	require.Equal(t, map[string]string{"/x/go-build": "profile go: $XDG_CACHE_HOME/go-build",
		"/m": "profile go: GOMODCACHE", "/h/go/pkg/sumdb": "profile go: default $HOME/go/pkg/sumdb", "/x/pip": "profile pip: $XDG_CACHE_HOME/pip",
		"/xc/git": "profile git-global: $XDG_CONFIG_HOME/git"}, got)
	got = paths(t, "pip", env("HOME", "/h", "XDG_CACHE_HOME", "rel"))
	require.Equal(t, map[string]string{"/h/.cache/pip": "profile pip: default $HOME/.cache/pip"}, got)
	// npm reads its variables case-insensitively; GOCACHE=off is no build cache.
	require.Contains(t, paths(t, "npm", env("NPM_CONFIG_CACHE", "/N")), "/N")
	require.Equal(t, map[string]string{"/h/go/pkg/mod": "profile go: default $HOME/go/pkg/mod", "/h/go/pkg/sumdb": "profile go: default $HOME/go/pkg/sumdb"},
		paths(t, "go", env("HOME", "/h", "GOCACHE", "off")))
}

func TestRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		profiles string
		env      []string
		msg      string
	}{
		"variable is HOME":          {"npm", []string{"HOME", "/h", "npm_config_cache", "/h"}, "--profile npm: npm_config_cache=/h: /h is / or $HOME"},
		"variable above HOME":       {"cargo", []string{"HOME", "/h/u", "CARGO_HOME", "/h"}, "--profile cargo: CARGO_HOME=/h: "},
		"variable is /":             {"pip", []string{"HOME", "/h", "PIP_CACHE_DIR", "/"}, "PIP_CACHE_DIR=/: / is / or $HOME"},
		"unclean root":              {"go", []string{"HOME", "/h", "GOCACHE", "/x/.."}, "GOCACHE=/x/..: / is /"},
		"in /proc":                  {"go", []string{"HOME", "/h", "GOMODCACHE", "/proc/self/cwd"}, "GOMODCACHE=/proc/self/cwd: /proc/self/cwd is in /proc"},
		"in /sys":                   {"yarn", []string{"HOME", "/h", "YARN_CACHE_FOLDER", "/sys/fs"}, "is in /sys"},
		"in /dev":                   {"npm", []string{"HOME", "/h", "npm_config_cache", "/dev/shm/npm"}, "is in /dev"},
		"relative":                  {"go", []string{"HOME", "/h", "GOCACHE", "cache"}, "--profile go: GOCACHE=cache: not an absolute path"},
		"relative GOPATH":           {"go", []string{"HOME", "/h", "GOPATH", "gp"}, "GOPATH=gp: not an absolute path"},
		"relative HOME":             {"npm", []string{"HOME", "h"}, "--profile npm: HOME=h: not an absolute path"},
		"no HOME":                   {"npm", nil, "--profile npm: HOME is not set, and neither is npm_config_cache"},
		"git config global in HOME": {"git-global", []string{"HOME", "/h", "GIT_CONFIG_GLOBAL", "/h/.gitconfig"}, "GIT_CONFIG_GLOBAL=/h/.gitconfig: /h is / or $HOME"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Resolve(strings.Split(c.profiles, ","), env(c.env...))
			require.Error(t, err)
			require.Contains(t, err.Error(), c.msg)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestKnown(t *testing.T) {
	for _, n := range strings.Split(Names, ",") {
		require.True(t, Known(n), n)
	}
	require.False(t, Known("npm,go"))
	require.False(t, Known(""))
	var lines []string
	for _, p := range profiles {
		lines = append(lines, p.name)
	}
	require.Equal(t, strings.Join(lines, ",")+",toolchains", Names, "Names lists the table's profiles")
}

func TestPrepare(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	home := filepath.Join(base, "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cache"), 0o755))
	e := env("HOME", home)

	// Named: created, mode 0777 less the umask. Implied by toolchains only: left out, in one note.
	gs, err := Resolve([]string{"npm", "toolchains"}, e)
	require.NoError(t, err)
	kept, notes, err := Prepare(gs, e)
	require.NoError(t, err)
	require.Len(t, kept, 1)
	require.Equal(t, filepath.Join(home, ".npm"), kept[0].Path)
	require.DirExists(t, kept[0].Path)
	require.NoDirExists(t, filepath.Join(home, ".cargo"))
	require.Len(t, notes, 1)
	require.Contains(t, notes[0], filepath.Join(home, ".cargo"))
	require.Contains(t, notes[0], filepath.Join(home, ".cache/go-build"))

	// No symlink is followed, to a directory outside (as a confined command could plant one in a cache or the
	// worktree for a later run) or to $HOME; nothing is created through one.
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.Mkdir(outside, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(home, ".cache/pip")))
	gs, err = Resolve([]string{"pip"}, e)
	require.NoError(t, err)
	_, _, err = Prepare(gs, e)
	require.ErrorContains(t, err, "--profile pip: HOME="+home+": "+filepath.Join(home, ".cache/pip")+": a symlink on the way")
	gs, err = Resolve([]string{"go"}, env("HOME", home, "GOCACHE", filepath.Join(home, ".cache/pip/made/by/prepare")))
	require.NoError(t, err)
	_, _, err = Prepare(gs, e)
	require.ErrorContains(t, err, "a symlink on the way")
	require.NoDirExists(t, filepath.Join(outside, "made"), "a directory was made through the symlink")
	require.NoError(t, os.Symlink(home, filepath.Join(home, ".cargo")))
	gs, err = Resolve([]string{"cargo"}, e)
	require.NoError(t, err)
	_, _, err = Prepare(gs, e)
	require.ErrorContains(t, err, "a symlink on the way")

	// $HOME or / under another name (here a bind mount, where the test may mount) is refused by identity.
	if alias := filepath.Join(base, "alias"); os.Mkdir(alias, 0o755) == nil && unix.Mount(home, alias, "", unix.MS_BIND, "") == nil {
		t.Cleanup(func() { unix.Unmount(alias, unix.MNT_DETACH) })
		gs, err = Resolve([]string{"npm"}, env("HOME", home, "npm_config_cache", alias))
		require.NoError(t, err)
		_, _, err = Prepare(gs, e)
		require.ErrorContains(t, err, "is / or $HOME or above it, under another name")
	} else {
		t.Log("no bind mount here (not root): the identity check of $HOME is left to the root run")
	}

	// A directory that cannot be made is a refusal naming it.
	require.NoError(t, os.WriteFile(filepath.Join(base, "file"), nil, 0o644))
	gs, err = Resolve([]string{"go"}, env("HOME", home, "GOCACHE", filepath.Join(base, "file/cache")))
	require.NoError(t, err)
	_, _, err = Prepare(gs, e)
	require.ErrorContains(t, err, "--profile go: GOCACHE="+filepath.Join(base, "file/cache")+": "+filepath.Join(base, "file/cache")+": not a directory")

	// git-global: without ~/.gitconfig, the XDG config file is made so that git config --global writes
	// there; with it, a note says git config --global fails.
	gs, err = Resolve([]string{"git-global"}, e)
	require.NoError(t, err)
	kept, notes, err = Prepare(gs, e)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(home, ".config/git/config"))
	require.Equal(t, []string{gitGlobalWarning}, notes, "git-global grants what later git runs outside execute")
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), nil, 0o644))
	_, notes, err = Prepare(gs, e)
	require.NoError(t, err)
	require.Len(t, notes, 2)
	require.Contains(t, notes[0], "~/.gitconfig exists")
	require.Equal(t, "profile git-global: default $HOME/.config/git", kept[0].Reason)
}

// Issue 25, route 5: git-global's config file lies in a directory the command may write, so an earlier run
// could have replaced it. A FIFO there (which blocked the next launch in open(2)), a symlink or a directory is
// a refusal that names it, and nothing blocks; a regular file is kept as it is.
func TestGitGlobalConfigMustBeARegularFile(t *testing.T) {
	for name, plant := range map[string]func(path string) error{
		"fifo":    func(p string) error { return unix.Mkfifo(p, 0o644) },
		"symlink": func(p string) error { return os.Symlink("/etc/passwd", p) },
		"dir":     func(p string) error { return os.Mkdir(p, 0o755) },
		"regular": func(p string) error { return os.WriteFile(p, []byte("[user]\n"), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			e := env("HOME", home, "XDG_CONFIG_HOME", home+"/xc")
			require.NoError(t, os.MkdirAll(home+"/xc/git", 0o755))
			require.NoError(t, plant(home+"/xc/git/config"))
			gs, err := Resolve([]string{"git-global"}, e)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { _, _, err := Prepare(gs, e); done <- err }()
			select {
			case err = <-done:
			case <-time.After(time.Minute): // a hang is the bug; the bound only keeps the suite from hanging with it
				t.Fatal("Prepare blocked on " + name)
			}
			if name == "regular" {
				require.NoError(t, err)
				b, _ := os.ReadFile(home + "/xc/git/config")
				require.Equal(t, "[user]\n", string(b), "not truncated")
				return
			}
			require.ErrorContains(t, err, "cannot create "+home+"/xc/git/config: ")
		})
	}
}
