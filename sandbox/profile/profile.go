// Package profile maps toolchain profiles (--profile npm,go,...) to the directories each tool writes outside
// the worktree: its caches and stores, found from the tool's own environment variables where it has them, else
// from its documented defaults. Nothing runs the tools (that would cost a launch each) and no configuration
// file is read (go env -w, .npmrc, pip.conf, gradle.properties): a setting made only there is not seen, and the
// tool then fails with EROFS or EACCES, never gains a directory.
//
// Resolve is lexical and reads only the environment; Prepare touches the filesystem (creates missing
// directories, following no symlink). Both refuse, with the variable's name, a directory that is /, $HOME or
// above it (Prepare by identity too, so a bind mount of either is refused), or in /proc, /sys or /dev.
package profile

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/report"
)

// Toolchains is the profile that grants every other one but git-global (gitGlobal), which must be named.
const Toolchains = "toolchains"

// profiles: each profile's directories, each directory a list of candidates: the variable's value (XDG_*
// ignored unless absolute, as the XDG Base Directory spec says; GOPATH's first entry) plus sub, the first set
// one winning, HOME's last. Sources:
//   - npm: https://docs.npmjs.com/cli/v10/using-npm/config#cache (default ~/.npm; _cacache and _logs beneath);
//     npm reads npm_config_* case-insensitively.
//   - pip: https://pip.pypa.io/en/stable/topics/caching/ (Linux: $XDG_CACHE_HOME/pip, else ~/.cache/pip).
//   - cargo: https://doc.rust-lang.org/cargo/guide/cargo-home.html. cargo takes locks (.package-cache) and a
//     database (.global-cache) in CARGO_HOME itself, so all of it is granted, bin/ and config.toml included.
//   - go: go help cache, go help gopath, https://go.dev/ref/mod#module-cache, os.UserCacheDir; the checksum
//     database's cache is $GOPATH/pkg/sumdb whatever GOMODCACHE says (https://go.dev/ref/mod#checksum-database:
//     go get and go mod tidy fail without it on a fresh home). GOCACHE=off is
//     no build cache. Telemetry (os.UserConfigDir()/go/telemetry) is not granted: the go command goes on without.
//   - gradle: https://docs.gradle.org/current/userguide/directory_layout.html: the user home's caches, daemon
//     registry, JDKs, native libraries and wrapper distributions; not init.d or gradle.properties, which later
//     builds run and read.
//   - maven: https://maven.apache.org/settings.html (localRepository, ${user.home}/.m2/repository; a
//     -Dmaven.repo.local in MAVEN_OPTS is not read); the Maven Wrapper's MAVEN_USER_HOME (~/.m2)/wrapper.
//   - yarn: Yarn 1 https://classic.yarnpkg.com/en/docs/cli/cache (YARN_CACHE_FOLDER, ~/.cache/yarn); Yarn 2+
//     https://yarnpkg.com/configuration/yarnrc#globalFolder (YARN_GLOBAL_FOLDER, ~/.yarn/berry).
//   - pnpm: https://pnpm.io/npmrc#store-dir, #cache-dir, #state-dir. PNPM_HOME itself holds global binaries
//     (on PATH): only its store/ is granted.
//   - git-global: https://git-scm.com/docs/git-config#FILES. git writes a config file through FILE.lock in
//     the same directory, renamed over it, so a file alone cannot be granted: GIT_CONFIG_GLOBAL's directory,
//     else $XDG_CONFIG_HOME/git. ~/.gitconfig would need $HOME: see Prepare.
var profiles = []struct {
	name string
	dirs [][]cand
}{
	{"npm", [][]cand{{{"npm_config_cache", ""}, {"NPM_CONFIG_CACHE", ""}, {"HOME", "/.npm"}}}},
	{"pip", [][]cand{{{"PIP_CACHE_DIR", ""}, {"XDG_CACHE_HOME", "/pip"}, {"HOME", "/.cache/pip"}}}},
	{"cargo", [][]cand{{{"CARGO_HOME", ""}, {"HOME", "/.cargo"}}}},
	{"go", [][]cand{
		{{"GOCACHE", ""}, {"XDG_CACHE_HOME", "/go-build"}, {"HOME", "/.cache/go-build"}},
		{{"GOMODCACHE", ""}, {"GOPATH", "/pkg/mod"}, {"HOME", "/go/pkg/mod"}},
		{{"GOPATH", "/pkg/sumdb"}, {"HOME", "/go/pkg/sumdb"}},
	}},
	{"gradle", [][]cand{
		{{"GRADLE_USER_HOME", "/caches"}, {"HOME", "/.gradle/caches"}},
		{{"GRADLE_USER_HOME", "/daemon"}, {"HOME", "/.gradle/daemon"}},
		{{"GRADLE_USER_HOME", "/jdks"}, {"HOME", "/.gradle/jdks"}},
		{{"GRADLE_USER_HOME", "/native"}, {"HOME", "/.gradle/native"}},
		{{"GRADLE_USER_HOME", "/wrapper"}, {"HOME", "/.gradle/wrapper"}},
	}},
	{"maven", [][]cand{
		{{"HOME", "/.m2/repository"}},
		{{"MAVEN_USER_HOME", "/wrapper"}, {"HOME", "/.m2/wrapper"}},
	}},
	{"yarn", [][]cand{
		{{"YARN_CACHE_FOLDER", ""}, {"XDG_CACHE_HOME", "/yarn"}, {"HOME", "/.cache/yarn"}},
		{{"YARN_GLOBAL_FOLDER", ""}, {"HOME", "/.yarn/berry"}},
	}},
	{"pnpm", [][]cand{
		{{"npm_config_store_dir", ""}, {"PNPM_HOME", "/store"}, {"XDG_DATA_HOME", "/pnpm/store"}, {"HOME", "/.local/share/pnpm/store"}},
		{{"npm_config_cache_dir", ""}, {"XDG_CACHE_HOME", "/pnpm"}, {"HOME", "/.cache/pnpm"}},
		{{"npm_config_state_dir", ""}, {"XDG_STATE_HOME", "/pnpm"}, {"HOME", "/.local/state/pnpm"}},
	}},
	{gitGlobal, [][]cand{{{"GIT_CONFIG_GLOBAL", "/.."}, {"XDG_CONFIG_HOME", "/git"}, {"HOME", "/.config/git"}}}},
}

// cand is a candidate for a directory: the value of variable v, plus sub ("" or "/...").
type cand struct{ v, sub string }

// Grant is one directory a profile makes writable.
type Grant struct {
	Path     string // absolute and clean
	Reason   string // the report rule's reason: "profile npm: npm_config_cache", "profile go: default $HOME/go/pkg/mod"
	Explicit bool   // its profile was named, not only implied by toolchains: Prepare creates it if missing
	gitXDG   bool   // git-global's $XDG_CONFIG_HOME/git
	profile  string // the profile's name
	variable string // the variable it came from, and its value, for messages
	value    string
}

// gitGlobal is the profile that grants git's global configuration. That configuration names programs that every
// later git run executes, outside confine too (core.fsmonitor, core.pager, core.sshCommand, credential.helper,
// aliases, include.path): granting it lets the command plant code for the user's next unconfined git (the attack
// review of issue 25). So Toolchains leaves it out, and Prepare warns where it is named.
const gitGlobal = "git-global"

// gitGlobalWarning is Prepare's note for a git-global grant.
const gitGlobalWarning = "profile git-global: the command can write git's global config, which names programs " +
	"that later git runs outside confine execute (core.fsmonitor, core.pager, core.sshCommand, credential.helper, " +
	"aliases, include.path): name this profile only for commands you would let run code outside the sandbox"

// Names lists the profiles, comma-separated, Toolchains last.
const Names = "npm,pip,cargo,go,gradle,maven,yarn,pnpm,git-global," + Toolchains

// Known says whether name is a profile.
func Known(name string) bool {
	return name != "" && !strings.Contains(name, ",") && strings.Contains(","+Names+",", ","+name+",")
}

// Resolve returns the directories of the named profiles (Known names; Toolchains stands for every profile),
// in profile order, each once, read from getenv. The error is a bad-root *report.Refusal naming the profile
// and variable.
func Resolve(names []string, getenv func(string) string) ([]Grant, error) {
	all := slices.Contains(names, Toolchains)
	var out []Grant
	for _, p := range profiles {
		explicit := slices.Contains(names, p.name)
		if !explicit && (!all || p.name == gitGlobal) {
			continue
		}
		for _, cands := range p.dirs {
			g, err := pick(p.name, cands, getenv)
			if err != nil {
				return nil, err
			}
			if g.Path == "" || seen(out, g.Path) {
				continue
			}
			g.Explicit = explicit
			out = append(out, g)
		}
	}
	return out, nil
}

func seen(gs []Grant, path string) bool {
	for _, g := range gs {
		if g.Path == path {
			return true
		}
	}
	return false
}

// pick returns the first candidate that is set, checked; an empty Path when the tool has none (GOCACHE=off).
func pick(name string, cands []cand, getenv func(string) string) (Grant, error) {
	home := getenv("HOME")
	for _, c := range cands {
		val := getenv(c.v)
		if c.v == "GOPATH" {
			val, _, _ = strings.Cut(val, ":")
		}
		if val == "" || strings.HasPrefix(c.v, "XDG_") && !filepath.IsAbs(val) {
			continue
		}
		g := Grant{Path: filepath.Clean(val + c.sub), Reason: "profile " + name + ": " + c.v, profile: name, variable: c.v,
			value: val, gitXDG: name == gitGlobal && c.v != "GIT_CONFIG_GLOBAL"}
		switch {
		case c.v == "GOCACHE" && val == "off":
			return Grant{}, nil
		case c.v == "HOME":
			g.Reason = "profile " + name + ": default $HOME" + c.sub
		case c.sub != "":
			g.Reason = "profile " + name + ": $" + c.v + c.sub
		}
		if !filepath.IsAbs(val) {
			return Grant{}, refuse(g, "not an absolute path")
		}
		return g, check(g, home)
	}
	return Grant{}, report.Refuse(report.BadRoot, "--profile ", name, ": HOME is not set, and neither is ", cands[0].v)
}

// refuse says which profile, variable and value: "--profile npm: npm_config_cache=/root: why".
func refuse(g Grant, why string) error {
	prof, _, _ := strings.Cut(g.Reason, ": ")
	return report.Refuse(report.BadRoot, "--", prof, ": ", g.variable, "=", g.value, ": ", why)
}

// check refuses a directory that is /, $HOME or above it, or in a kernel tree.
func check(g Grant, home string) error {
	p := g.Path
	for _, t := range []string{"/proc", "/sys", "/dev"} {
		if p == t || strings.HasPrefix(p, t+"/") {
			return refuse(g, p+" is in "+t+", which holds kernel state, not files")
		}
	}
	if home = filepath.Clean(home); p == "/" || p == home || strings.HasPrefix(home, p+"/") {
		return refuse(g, p+" is / or $HOME or above it: a profile grants a tool's own directories only")
	}
	return nil
}

// Prepare makes grants usable, on the filesystem: a missing directory of an explicitly named profile is created
// (mode 0777 less the umask, as the tools themselves create it); a missing one only implied by toolchains is
// left out and named in one note. No symlink is followed, in creating or in checking: like every root (which
// confine opens without following any), a profile's directory must be named by its real path, so that a
// symlink a confined command planted (in the worktree, in /tmp, in a cache) cannot widen a later run. Each
// directory is checked before anything is created, and again by identity once it exists: it must not be /,
// $HOME or above it, under any name (a bind mount). For git-global, if ~/.gitconfig exists, notes say that git
// config --global will fail (git writes it through ~/.gitconfig.lock in $HOME); else, an explicit git-global
// creates an empty $XDG_CONFIG_HOME/git/config so that git config --global writes there. The error is a
// bad-root *report.Refusal.
func Prepare(grants []Grant, getenv func(string) string) (kept []Grant, notes []string, err error) {
	home := getenv("HOME")
	above := identities(home)
	var missing []string
	defer func() {
		if missing != nil && err == nil {
			notes = append(notes, "--profile toolchains: not granted, as they do not exist (name a profile to create its own): "+
				strings.Join(missing, " "))
		}
	}()
	for _, g := range grants {
		if err := check(g, home); err != nil {
			return nil, nil, err
		}
		fd, err := openNoFollow(g.Path)
		if err == unix.ENOENT && !g.Explicit {
			missing = append(missing, g.Path)
			continue
		}
		if err == unix.ENOENT {
			fd, err = mkdirAll(g.Path)
		}
		if err != nil {
			return nil, nil, refuse(g, g.Path+": "+noFollowError(err))
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return nil, nil, refuse(g, g.Path+": "+err.Error())
		}
		if above[[2]uint64{st.Dev, st.Ino}] {
			return nil, nil, refuse(g, g.Path+" is / or $HOME or above it, under another name: a profile grants a tool's own directories only")
		}
		p := g.Path
		if g.gitXDG {
			if h := getenv("HOME"); h != "" && unix.Access(h+"/.gitconfig", unix.F_OK) == nil {
				notes = append(notes, "profile git-global: ~/.gitconfig exists, and git writes it through ~/.gitconfig.lock in $HOME, which no "+
					"profile grants: git config --global fails (EROFS or EACCES); move it to "+p+"/config")
			} else if g.Explicit {
				if err := touchRegular(p + "/config"); err != nil {
					return nil, nil, refuse(g, "cannot create "+p+"/config: "+err.Error())
				}
			}
		}
		if !seen(kept, g.Path) {
			kept = append(kept, g)
			if g.profile == gitGlobal {
				notes = append(notes, gitGlobalWarning)
			}
		}
	}
	return kept, notes, nil
}

// touchRegular makes sure path is a regular file, creating it empty if it is missing. The directory is one a
// confined command may write, so an earlier run could have put anything there: the file is opened without
// following a symlink and without blocking (a FIFO with no reader is ENXIO, not a launch that hangs), never
// truncated, and anything but a regular file is an error.
func touchRegular(path string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o666)
	switch err {
	case nil:
	case unix.ELOOP:
		return errors.New("a symlink: profiles follow none")
	case unix.ENXIO:
		return errors.New("a FIFO, not a regular file")
	default:
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("not a regular file")
	}
	return nil
}

// identities are the device and inode of home, each of its ancestors and /, as they are now (none of them
// for an empty home but /).
func identities(home string) map[[2]uint64]bool {
	ids := map[[2]uint64]bool{}
	for p := filepath.Clean(home); ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if home != "" && filepath.IsAbs(p) && unix.Stat(p, &st) == nil {
			ids[[2]uint64{st.Dev, st.Ino}] = true
		}
		if p == "/" || p == "." || !filepath.IsAbs(p) {
			break
		}
	}
	var st unix.Stat_t
	if unix.Stat("/", &st) == nil {
		ids[[2]uint64{st.Dev, st.Ino}] = true
	}
	return ids
}

// openNoFollow opens the directory at the absolute, clean path as O_PATH, following no symlink on the way:
// openat2 RESOLVE_NO_SYMLINKS (5.6), or, where a seccomp filter answers openat2 with ENOSYS or EPERM (a confine
// inside confine: the outer one's filter does), one component at a time with O_NOFOLLOW (walk).
func openNoFollow(path string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err == unix.ENOSYS || err == unix.EPERM {
		return walk(path, false)
	}
	return fd, err
}

// noFollowError says what a failed openNoFollow or mkdirAll means.
func noFollowError(err error) string {
	if err == unix.ELOOP {
		return "a symlink on the way: name the directory by its real path (profiles, like every root, follow none)"
	}
	return err.Error()
}

// mkdirAll makes dir and its missing parents, mode 0777 less the umask, one component at a time relative to
// its parent's descriptor, following no symlink, and returns an O_PATH descriptor of dir (os.MkdirAll follows
// symlinks, and would link time formatting in, through os.FileInfo: about 100 KB).
func mkdirAll(dir string) (int, error) { return walk(dir, true) }

// walk opens the absolute, clean dir as O_PATH one component at a time, each relative to its parent's
// descriptor with O_NOFOLLOW (a symlink answers ELOOP), making each missing one first if mkdir.
func walk(dir string, mkdir bool) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(strings.Trim(dir, "/"), "/") {
		if mkdir {
			if err := unix.Mkdirat(fd, name, 0o777); err != nil && err != unix.EEXIST {
				unix.Close(fd)
				return -1, err
			}
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		var st unix.Stat_t
		if err == unix.ENOTDIR && unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP // a symlink, as openat2's RESOLVE_NO_SYMLINKS says it
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}
