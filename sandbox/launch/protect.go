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
// exists: a missing name cannot be held), be a directory or a regular file, and lie directly in the nearest
// writable directory root above it (beneath none it is read-only already, and the flag would only mislead;
// deeper, a rename of a directory above it would get around the bind). A refusal is bad-root.
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
		for _, w := range p.writable {
			if path == w.Path {
				return report.Refuse(report.BadRoot, "--protect ", path, " is a writable root itself: --protect "+
					"holds a path beneath one (for a worktree the command may not write at all, use --mode read-only)")
			}
		}
		switch nearest := p.nearestRoot(path); {
		case nearest == "":
			return report.Refuse(report.BadRoot, "--protect ", path, " is not beneath a writable directory root (the "+
				"worktree, an --allow directory, /tmp, a profile's or git's directory): it is read-only already")
		case filepath.Dir(path) != nearest:
			// A bind holds the path, not the directories above it: renaming its parent and making the path again
			// would get around it (the attack review's route); the root itself, a mount point, cannot be renamed.
			return report.Refuse(report.BadRoot, "--protect ", path, " is not directly in ", nearest, ": the command "+
				"could rename a directory above it and make it again; protect ", topBeneath(path, nearest), " instead")
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
