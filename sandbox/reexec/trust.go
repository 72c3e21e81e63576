package reexec

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/launch"
	"github.com/confine-dev/confine/sandbox/profile"
)

// ErrUntrusted is wrapped by Command's error when this executable lies where a confined command could have
// replaced it: the next start of the program would then run the command's code unconfined.
var ErrUntrusted = errors.New("reexec: untrusted executable")

// alwaysWritable are the directories every confined command may write, whatever its roots (sandbox/README.md).
var alwaysWritable = []string{"/tmp", "/dev/shm"}

// trustedSelf checks the running executable against p, the rule the npm package's trustedLauncher applies
// (issues 25 and 43): its path (/proc/self/exe, the file running now) and every directory on the way lie
// beneath none of p's roots, /tmp, /dev/shm and the directories a profile may grant (profile.Candidates), by
// path or under another name (the directories' identities, the mounts' roots and overlays' layers in
// mountinfo); it is a regular file with one link, and it and every directory on the way are owned by root or
// this user and writable by no one else (a sticky directory above it may be, as /tmp is).
//
// env is the launcher's environment (exec.Cmd's Env; nil: this process's), from which it resolves the
// profiles' directories: the candidates of both environments are tested, since either may name them.
func trustedSelf(p Policy, env []string) error {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return untrusted("/proc/self/exe", "its path cannot be read ("+err.Error()+"; is /proc mounted?)")
	}
	var running, named unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &running); err != nil {
		return untrusted(exe, err.Error())
	}
	if err := unix.Lstat(exe, &named); err != nil || named.Dev != running.Dev || named.Ino != running.Ino {
		return untrusted(exe, "the file at its path is no longer the one running (replaced or deleted since it started)")
	}
	return trusted(exe, p, env)
}

// trusted is trustedSelf's rule for the executable at exe (absolute, without symlinks).
func trusted(exe string, p Policy, env []string) error {
	var grants []string
	for _, dir := range append(append(alwaysWritable, p.Worktree), p.Allow...) {
		grants = append(grants, realOr(dir))
	}
	byProfile := len(grants)
	candidates := profile.Candidates(os.Getenv)
	if env != nil {
		candidates = append(candidates, profile.Candidates(lookup(env))...)
	}
	for _, dir := range candidates {
		grants = append(grants, realOr(dir))
	}
	why := func(i int, dir string) string {
		switch {
		case dir == "/tmp":
			return "/tmp, which every confined command can write (go run and go test build there: build with " +
				"go build -o, or set GOTMPDIR, to a directory no confined command can write)"
		case i >= byProfile:
			return dir + ", which a confine profile grants (a run with --profile can write it)"
		}
		return dir + ", which a confined command can write"
	}
	for i, dir := range grants {
		if dir != "" && within(exe, dir) {
			return untrusted(exe, "it lies beneath "+why(i, dir))
		}
	}
	ids := map[[2]uint64]bool{}
	for d := filepath.Dir(exe); ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return untrusted(exe, err.Error())
		}
		ids[[2]uint64{st.Dev, st.Ino}] = true
		if d == "/" {
			break
		}
	}
	if i := launch.ShownBeneath(exe, ids, grants); i >= 0 {
		return untrusted(exe, "it lies beneath "+grants[i]+" under another name (a bind mount, an overlay or a loop device): "+why(i, grants[i]))
	}
	uid := uint32(os.Getuid())
	for d := exe; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return untrusted(exe, err.Error())
		}
		if d == exe && st.Nlink > 1 {
			return untrusted(exe, "it has other hard links, and another name could lie beneath a writable root")
		}
		what := "its directory " + d
		if d == exe {
			what = "it"
		}
		if st.Uid != 0 && st.Uid != uid {
			return untrusted(exe, what+" is owned by uid "+strconv.Itoa(int(st.Uid))+", neither root nor this user")
		}
		sticky := st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0
		if st.Mode&0o022 != 0 && !(sticky && d != exe) {
			return untrusted(exe, what+" is writable by group or others (mode "+strconv.FormatUint(uint64(st.Mode&0o7777), 8)+")")
		}
		if d == exe && st.Mode&unix.S_IFMT != unix.S_IFREG {
			return untrusted(exe, "it is not a regular file")
		}
		if d == "/" {
			return nil
		}
	}
}

// lookup is os.Getenv over env ("NAME=value" entries; the last one of a name wins, as exec.Cmd passes them on).
func lookup(env []string) func(string) string {
	return func(name string) string {
		v := ""
		for _, e := range env {
			if n, val, ok := strings.Cut(e, "="); ok && n == name {
				v = val
			}
		}
		return v
	}
}

func untrusted(exe, why string) error {
	return &trustError{exe: exe, why: why}
}

type trustError struct{ exe, why string }

func (e *trustError) Error() string {
	return "reexec: refusing to re-execute " + e.exe + " as the launcher: " + e.why
}

func (e *trustError) Unwrap() error { return ErrUntrusted }

// realOr is dir with its symlinks resolved where it exists, else dir cleaned ("" for ""; a root that does not
// exist makes the launcher refuse).
func realOr(dir string) string {
	if dir == "" {
		return ""
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return filepath.Clean(dir)
}

// within says whether p is dir or beneath it (both absolute and clean).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
