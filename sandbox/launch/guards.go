package launch

import (
	"errors"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/gitdir"
	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
)

// A MountGuard is a gitdir.Guard as a mount layer binds it: Rel, a clean relative path, beneath the writable root
// whose path is Root. The layer resolves Rel again in the namespace it builds, through the root's writable
// mount, following no symlink, and binds nothing but the file of identity Dev and Ino found there.
type MountGuard struct {
	Root, Rel string
	Pin, Dir  bool
	Dev, Ino  uint64
}

// mountGuards are the plan's guards beneath its writable directory roots, each under the nearest one; a guard
// beneath none is not writable, and needs no bind.
func (p *plan) mountGuards() []MountGuard {
	var out []MountGuard
	for _, g := range p.guards {
		if root := p.nearestRoot(g.Path); root != "" {
			out = append(out, MountGuard{Root: root, Rel: strings.TrimPrefix(g.Path, root+"/"), Pin: g.Pin, Dir: g.Dir,
				Dev: g.Dev, Ino: g.Ino})
		}
	}
	return out
}

// nearestRoot is the nearest writable directory root that path (absolute, clean) lies strictly beneath, whose
// mount the layer binds path's guard on; "" where none is.
func (p *plan) nearestRoot(path string) string {
	root := ""
	for _, r := range p.writable {
		if r.Kind == pathfd.Dir && len(r.Path) > len(root) && strings.HasPrefix(path, r.Path+"/") {
			root = r.Path
		}
	}
	return root
}

// bindGuards binds each guard of gs that lies beneath the writable root rootPath onto itself, in order (a Pin
// before what lies beneath it): root is a descriptor of that root's directory on the mount now visible there (the
// layer's writable clone, or bwrap's bind). A Pin's clone stays writable; any other is made read-only, with what
// is mounted beneath it (mount_setattr AT_RECURSIVE, 5.12; before it, remountReadOnly). open_tree and
// move_mount are 5.2. A guard whose path no longer leads, without a symlink, to the file found when the launch
// was planned is an error: the layer then refuses, and nothing runs.
func bindGuards(root int, rootPath string, gs []MountGuard) error {
	for _, g := range gs {
		if g.Root != rootPath {
			continue
		}
		if err := bindGuard(root, g); err != nil {
			return msg.Err(errGuard, ": ", rootPath, "/", g.Rel, ": ", err)
		}
	}
	return nil
}

// errGuard marks a guard that could not be bound: the launch is refused, never run with its git metadata
// writable (no fallback to a strategy without the layer).
var errGuard = errors.New("git metadata")

func bindGuard(root int, g MountGuard) error {
	fd, err := openUnder(root, g.Rel, nil)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	want := uint32(unix.S_IFREG)
	if g.Dir {
		want = unix.S_IFDIR
	}
	if st.Dev != g.Dev || st.Ino != g.Ino || st.Mode&unix.S_IFMT != want {
		return msg.Err("changed since the launch was planned (another process replaced it): not bound")
	}
	flags := unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH
	if g.Dir {
		flags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(fd, "", uint(flags))
	if err != nil {
		return msg.Err("open_tree: ", err)
	}
	defer unix.Close(tree)
	remount := false
	if !g.Pin {
		err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE,
			&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
		remount = errors.Is(err, unix.ENOSYS) // before 5.12 (bwrap's backend on 5.10): remount once attached
		if err != nil && !remount {
			return msg.Err("mount_setattr read-only: ", err)
		}
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return msg.Err("move_mount: ", err)
	}
	if remount {
		// mount(2) through /proc/self/fd: the mount just attached, not a path that could be replaced. The guard
		// is writable until then, before the command exists; a non-pinned directory guard (hooks/) has no mount
		// beneath it, so no recursion is needed.
		return remountReadOnly("/proc/self/fd/" + msg.Itoa(tree))
	}
	return nil
}

// openUnder opens rel (clean, relative) beneath the directory fd as O_PATH, one component at a time, following
// no symlink; a mount on a component is entered, as a path walk does. Where pinAt (nil: never) says so for a
// directory on the way (its path relative to fd; never rel itself), that directory is bound onto itself first
// and the walk goes on through the new mount (pin).
func openUnder(fd int, rel string, pinAt func(string) bool) (int, error) {
	cur, err := unix.Openat(fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	comps := strings.Split(rel, "/")
	for i, c := range comps {
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		if on := strings.Join(comps[:i+1], "/"); i < len(comps)-1 && pinAt != nil && pinAt(on) {
			if next, err = pin(next); err != nil {
				return -1, msg.Err("binding ", on, " onto itself: ", err)
			}
		}
		cur = next
	}
	return cur, nil
}

// gitGuarded is what the mount layer (metadata MountLayer: Landlock's layer, or bwrap's) holds of a
// repository's git metadata beneath the writable roots.
const gitGuarded = "the mount layer holds the repository's own git metadata beneath the writable roots: .git " +
	"(and each submodule git directory in .git/modules, and each worktree registration) is bound onto itself, so " +
	"it cannot be renamed, removed or replaced; config, config.worktree, commondir, a linked worktree's .git " +
	"file, gitdir and commondir, and hooks/ are read-only, placeholders standing for the missing ones; git's " +
	"other writes (index, HEAD, refs, objects, logs, locks) work"

// gitNoCheckout is how the channel git-metadata is closed: with a mount layer, where the worktree is no git
// checkout (probe, which has no worktree, says the same, with what a checkout changes).
const gitNoCheckout = "no git checkout at the worktree (a repository the command creates itself is its own: see " +
	"the threat model). In a checkout it is open even so, since its index stays writable (the report names why); " +
	"there " + gitGuarded

// gitReadOnly is how the channel git-metadata is closed in read-only mode (readOnlyHeld checked it), with or
// without a mount layer.
const gitReadOnly = "read-only mode: the worktree and its git directories lie in no writable root (a launch " +
	"where one does is refused), so the command can write none of their metadata"

// gitUnguarded is why the channel git-metadata is open without a mount layer.
const gitUnguarded = "no mount layer: Landlock's rule on the worktree covers .git too (rules only add), so the " +
	"command can write .git/config (core.fsmonitor), a hook or a commondir, which unconfined git later runs or " +
	"follows; a mount layer closes it (root, or a user where unprivileged user namespaces work)"

// gitChannel is the channel git-metadata for a strategy with metadata mechanism metadata, given the gaps that
// the plan's guards leave (gitdir.Guards; --no-git).
func gitChannel(metadata Metadata, gaps []string) report.Channel {
	switch {
	case metadata != MetadataMountLayer:
		return report.Channel{Status: report.Open, How: gitUnguarded}
	case len(gaps) > 0:
		return report.Channel{Status: report.Open, How: strings.Join(gaps, "; ") + ". What is held: " + gitGuarded}
	}
	return report.Channel{Status: report.Closed, How: gitNoCheckout}
}

// guardGit guards the git metadata of the repository at the worktree wt (found by Discover as res) where a mount
// layer is built: the guards, the placeholders made for them, and the gaps (package gitdir). Under --strict no
// placeholder is made: a checkout always has a gap (gitdir.GitlinkGap), so that launch is refused.
func (p *plan) guardGit(wt *pathfd.Root, res *gitdir.Result) error {
	guards, gaps, err := gitdir.Guards(wt, res, !p.strict, gitdir.GlobalConfigs(os.Getenv("HOME"), os.Getenv("XDG_CONFIG_HOME")))
	if err != nil {
		return report.Refuse(report.BadRoot, "git: ", err, " (--no-git skips git discovery)")
	}
	p.guards, p.gitGaps = guards, append(p.gitGaps, gaps...)
	for _, g := range guards {
		if g.Made {
			p.notes = append(p.notes, "git: made "+g.Path+", empty or naming its own directory, so that the mount "+
				"layer can hold it read-only; git reads it as if it were missing, and it stays")
		}
	}
	return nil
}

// guards encodes gs for a Handoff.
func (e *encoder) guards(gs []MountGuard) {
	e.num(uint64(len(gs)))
	for _, g := range gs {
		e.str(g.Root)
		e.str(g.Rel)
		e.num(uint64(flag(g.Pin) | flag(g.Dir)<<1))
		e.num(g.Dev)
		e.num(g.Ino)
	}
}

// guards decodes what encoder.guards wrote.
func (d *decoder) guards() []MountGuard {
	n := d.count()
	if n == 0 {
		return nil
	}
	gs := make([]MountGuard, n)
	for i := range gs {
		g := &gs[i]
		g.Root, g.Rel = d.str(), d.str()
		f := d.num()
		g.Pin, g.Dir, g.Dev, g.Ino = f&1 != 0, f&2 != 0, d.num(), d.num()
	}
	return gs
}

// bindBwrapGuards binds gs (bindGuards) over bwrap's read-write binds, in a bwrap child whose mounts
// sealBwrapLayer has checked: the root of each guard must be one of binds, opened by its path, following no
// symlink, and still the directory validated there. Where that root lies beneath another bind, the directories
// between are pinned first (openPinned), as the mount layer does. A failure is a refusal (nothing runs).
func bindBwrapGuards(binds []Bind, gs []MountGuard) error {
	paths := make([]string, len(binds))
	for i, b := range binds {
		paths[i] = b.Path
	}
	_, above := nesting(paths)
	done, pinned := map[string]bool{}, map[string]bool{}
	for _, g := range gs {
		if done[g.Root] {
			continue
		}
		done[g.Root] = true
		i := slices.IndexFunc(binds, func(b Bind) bool { return b.Path == g.Root })
		if i < 0 {
			return report.Refuse(report.BadRoot, "bwrap: ", g.Root, ": holds git metadata to guard, but bwrap was not asked to bind it")
		}
		outer := ""
		if above[i] >= 0 {
			outer = paths[above[i]]
		}
		if err := bindBwrapRoot(binds[i], outer, pinned, gs); err != nil {
			return report.Refuse(report.BadRoot, "bwrap: ", g.Root, ": ", err.Error())
		}
	}
	return nil
}

// bindBwrapRoot binds the guards of gs beneath the bind b, which lies beneath the bind outer ("": none).
func bindBwrapRoot(b Bind, outer string, pinned map[string]bool, gs []MountGuard) error {
	r, err := pathfd.Open(b.Path)
	if err != nil {
		return err
	}
	defer r.Close()
	var st unix.Stat_t
	if err := unix.Fstat(r.FD, &st); err != nil {
		return err
	}
	if r.Kind != pathfd.Dir || st.Dev != b.Dev || st.Ino != b.Ino {
		return errors.New("is not the directory bwrap was asked to bind")
	}
	root := r.FD
	if outer != "" {
		o, err := pathfd.Open(outer)
		if err != nil {
			return err
		}
		defer o.Close()
		// After the pins, b.Path shows a clone of b's bind (inside the pin): the guards go there, where it is seen.
		if root, err = openPinned(o.FD, outer, b.Path, r.FD, pinned); err != nil {
			return err
		}
		defer unix.Close(root)
	}
	return bindGuards(root, b.Path, gs)
}
