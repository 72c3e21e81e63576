package launch

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/gitdir"
	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
)

// openProtected holds each --protect path read-only, as the repository's own git metadata is (guards.go): a
// guard the mount layer binds onto itself, read-only, with what lies beneath it. Each is opened like a root, in
// the mount namespace whose root directory is root, following no symlink; it must exist (the layer binds what
// exists: a missing name cannot be held), be a directory or a regular file, and lie directly in one writable
// directory root (elsewhere it is read-only already, and the flag would only mislead; deeper, a rename of a
// directory above it would get around the bind; beneath a second root, that root's mount shows it unguarded).
// A refusal is bad-root.
func (p *plan) openProtected(root int, paths []string) error {
	for _, path := range paths {
		r, err := pathfd.OpenIn(root, path)
		if err != nil {
			hint := ""
			if unix.Access(path, unix.F_OK) == unix.ENOENT {
				hint = " (a missing path cannot be held: create it, or drop the flag)"
			}
			return report.Refuse(report.BadRoot, "--protect: ", err, hint)
		}
		p.roots = append(p.roots, r)
		if r.Kind != pathfd.Dir && r.Kind != pathfd.File {
			return report.Refuse(report.BadRoot, "--protect ", path, ": not a directory or a regular file")
		}
		var under []string // the writable directory roots path lies beneath
		for _, w := range p.writable {
			if path == w.Path {
				return report.Refuse(report.BadRoot, "--protect ", path, " is a writable root itself: --protect "+
					"holds a path beneath one (for a worktree the command may not write at all, use --mode read-only)")
			}
			if w.Kind == pathfd.Dir && strings.HasPrefix(path, w.Path+"/") {
				under = append(under, w.Path)
			}
		}
		switch {
		case len(under) == 0:
			return report.Refuse(report.BadRoot, "--protect ", path, " is not beneath a writable directory root (the "+
				"worktree, an --allow directory, /tmp, a profile's or git's directory): it is read-only already")
		case len(under) > 1:
			// The layer binds a guard on its nearest root's writable mount; the outer root's, mounted over it,
			// shows the same file unguarded (the attack review's route).
			return report.Refuse(report.BadRoot, "--protect ", path, " lies beneath two writable roots (",
				strings.Join(under, ", "), "): the outer one would show it writable; drop the outer root, or keep the worktree out of it")
		case filepath.Dir(path) != under[0]:
			// A bind holds the path, not the directories above it: renaming its parent and making the path again
			// would get around it (the attack review's route); the root itself cannot be renamed.
			return report.Refuse(report.BadRoot, "--protect ", path, " is not directly in ", under[0], ": the command "+
				"could rename a directory above it and make it again; protect ", topBeneath(path, under[0]), " instead")
		}
		var st unix.Stat_t
		if err := unix.Fstat(r.FD, &st); err != nil {
			return report.Refuse(report.BadRoot, "--protect ", path, ": ", err)
		}
		p.guards = append(p.guards, gitdir.Guard{Path: path, Dir: r.Kind == pathfd.Dir, Dev: st.Dev, Ino: st.Ino})
		p.protected = append(p.protected, path)
	}
	return nil
}

// topBeneath is the directory or file directly in root on the way to path (path lies beneath root).
func topBeneath(path, root string) string {
	rest, _, _ := strings.Cut(strings.TrimPrefix(path, root+"/"), "/")
	return root + "/" + rest
}

// protectRefusal refuses --protect where the strategy has no mount layer (why: the layer's error): without one
// no path beneath a writable root can be held read-only (Landlock's rules only add), and running the command
// with the path writable would confine less than was asked.
func protectRefusal(why string) error {
	return report.Refuse(report.ProtectUnavailable, msg.Str("--protect needs a mount layer to hold its paths "+
		"read-only, and none can be had here (", why, "): run without --protect, or where confine can make a mount "+
		"namespace (`confine probe` says metadata mount-layer there; on Ubuntu 24.04, install confine's AppArmor "+
		"profile; in a container, a seccomp profile that allows unshare)"))
}
