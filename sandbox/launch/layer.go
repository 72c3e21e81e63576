package launch

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/pathfd"
)

// The mount layer closes what Landlock has no right for (mode, owner, timestamps, xattrs, inode flags,
// truncate before ABI 3) with read-only mounts instead of a blanket seccomp denial, so that those operations
// keep working inside the writable roots. In a fresh mount namespace, it clones each writable root's mount tree
// (open_tree, 5.2) through the root's validated O_PATH descriptor, makes every mount read-only (mount_setattr
// AT_RECURSIVE, 5.12) and attaches the writable clones back onto the same descriptors (move_mount, 5.2); then
// the Landlock ruleset is built and the command executed as usual.
//
// As root, the launcher unshares a mount namespace on its locked thread, builds all this in place and starts the
// command from that thread as its child. Any other user needs a new user namespace too, which a multi-threaded Go
// process cannot enter, so a layered child is started in fresh user and mount namespaces and handed the plan
// (child.go). If the layer cannot be built, the launcher falls back to the supervisor, then the seccomp denial.

// Metadata says how metadata changes outside the writable set are stopped.
type Metadata string

// The three ways, in the order the launcher tries them.
const (
	MetadataMountLayer Metadata = "mount-layer"  // every mount outside the writable roots is read-only
	MetadataSupervisor Metadata = "supervisor"   // confine makes each change itself, beneath the writable roots only
	MetadataSeccomp    Metadata = "seccomp-deny" // metadata system calls are denied everywhere, inside too
)

// ErrLayerUnavailable says the mount layer could not be built here (no user namespaces, no /proc, a kernel
// without mount_setattr, ...). The caller falls back to MetadataSupervisor.
var ErrLayerUnavailable = errors.New("mount layer unavailable")

// ErrSupervisorUnavailable says the supervisor could not be had (a seccomp listener exists already, as under
// another confine's supervisor: EBUSY; or the command's memory could not be read). The caller falls back to
// MetadataSeccomp.
var ErrSupervisorUnavailable = errors.New("supervisor unavailable")

// Private says which private mounts the layer adds on top of the read-only tree.
type Private struct {
	Devpts bool // a new devpts instance on /dev/pts (--tty)
	Shm    int  // an O_PATH descriptor of /dev/shm, which gets a new tmpfs; or -1
	// Terminal is an O_PATH descriptor of the caller's terminal (Facts.Terminal), bound over /dev/tty; or -1.
	Terminal int
	// Interop closes WSL2's Windows interop (wsl.go): an empty read-only tmpfs over /run/WSL, and the Windows
	// drive mounts outside the writable roots noexec.
	Interop bool
	// Guards are the repository's own git metadata, bound onto itself over the writable clones (guards.go).
	Guards []MountGuard
}

// Mounted are O_PATH descriptors of the roots of the private mounts the layer made (-1 where none): the
// Landlock rules go on them, since a rule on the covered directory would not match (Landlock's walk skips
// hidden mount points).
type Mounted struct{ Devpts, Shm int }

// buildMountLayer makes every mount in this (fresh) mount namespace read-only, except the trees of roots,
// which get writable clones of their own, then adds the private mounts priv asks for. It uses the roots'
// descriptors and never opens a path, but for the private devpts instance it mounts on /dev/pts.
// committed says whether mounts were already changed when it failed: a caller that goes on in this namespace
// must then refuse rather than fall back.
func buildMountLayer(roots []*pathfd.Root, priv Private) (m Mounted, committed bool, err error) {
	m = Mounted{Devpts: -1, Shm: -1}
	if committed, err = buildReadOnly(roots, priv.Guards, priv.Interop); err != nil {
		return m, committed, err
	}
	if priv.Shm >= 0 {
		if m.Shm, err = mountShm(priv.Shm); err != nil {
			return m, true, err
		}
	}
	if priv.Terminal >= 0 {
		bindTerminal(priv.Terminal)
	}
	if priv.Devpts {
		if m.Devpts, err = mountDevpts(); err != nil {
			if m.Shm >= 0 {
				unix.Close(m.Shm)
			}
			return Mounted{Devpts: -1, Shm: -1}, true, err
		}
	}
	return m, true, nil
}

// mountShm mounts a new tmpfs (mode 1777, nosuid, nodev; fsopen and fsmount, 5.2) on the directory at, the
// caller's O_PATH descriptor of /dev/shm, so that POSIX shared memory and semaphores (shm_open, sem_open:
// glibc puts them in /dev/shm; Python's multiprocessing locks are these) work, and stay the sandbox's own: the
// host's /dev/shm stays read-only beneath it, and the tmpfs goes with the mount namespace. It returns the
// fsmount descriptor, an O_PATH descriptor of the new mount's root, for the Landlock rule.
func mountShm(at int) (int, error) {
	return mountTmpfs("1777", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, at, shmRoot)
}

// mountTmpfs mounts a new tmpfs of mode and mount attributes attrs (fsopen and fsmount, 5.2) on at, an O_PATH
// descriptor of the directory path, or, with at AT_FDCWD, on path by name, and returns the fsmount descriptor.
func mountTmpfs(mode string, attrs, at int, path string) (int, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, msg.Err("fsopen tmpfs: ", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "mode", mode); err != nil {
		return -1, msg.Err("fsconfig tmpfs mode: ", err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, msg.Err("fsconfig tmpfs create: ", err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return -1, msg.Err("fsmount tmpfs: ", err)
	}
	to := "." // the directory at itself, or, with AT_FDCWD, path
	if at == unix.AT_FDCWD {
		to = path
	}
	if err := unix.MoveMount(mnt, "", at, to, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		unix.Close(mnt)
		return -1, msg.Err("move_mount tmpfs onto ", path, ": ", err)
	}
	return mnt, nil
}

// bindTerminal binds the terminal node at fd (an O_PATH descriptor in this mount namespace) over /dev/tty
// (open_tree and move_mount, 5.2), so that /dev/tty is the caller's terminal and no other, whatever terminal the
// command later controls: its rule is on that node, whose inode the bind shows. A failure leaves /dev/tty as it
// was, unwritable as before; nothing else depends on it, so it does not fail the layer.
func bindTerminal(fd int) {
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return
	}
	defer unix.Close(tree)
	unix.MoveMount(tree, "", unix.AT_FDCWD, "/dev/tty", unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// mountDevpts mounts a new devpts instance (newinstance, 2.6.29; fsopen and fsmount, 5.2) over /dev/pts, so
// that the command reaches the caller's terminal only through the descriptors and /dev/tty it was given, and
// every pty it opens is new. /dev/ptmx finds the instance as its sibling "pts" (path_pts, fs/devpts/inode.c),
// so it needs no bind mount. It returns an O_PATH descriptor of the instance's root, for the Landlock rule: a
// rule on the covered /dev/pts would not match, since Landlock's walk skips hidden mount points.
func mountDevpts() (int, error) {
	fs, err := unix.Fsopen("devpts", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, msg.Err("fsopen devpts: ", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetFlag(fs, "newinstance"); err != nil {
		return -1, msg.Err("fsconfig devpts newinstance: ", err)
	}
	for _, kv := range [][2]string{{"ptmxmode", "0666"}, {"mode", "0620"}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return -1, msg.Err("fsconfig devpts ", kv[0], ": ", err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, msg.Err("fsconfig devpts create: ", err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, msg.Err("fsmount devpts: ", err)
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", unix.AT_FDCWD, "/dev/pts", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return -1, msg.Err("move_mount devpts onto /dev/pts: ", err)
	}
	r, err := pathfd.OpenIn(pathfd.Here, "/dev/pts")
	if err != nil {
		return -1, err
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(r.FD, &st); err != nil || st.Type != unix.DEVPTS_SUPER_MAGIC {
		r.Close()
		return -1, errors.New("/dev/pts is not the new devpts instance")
	}
	return r.FD, nil
}

// buildReadOnly is the read-only part of buildMountLayer, with the guards of git metadata bound over the
// writable clones; with drivesNoexec (WSL2 interop, wsl.go), the Windows drive mounts outside the roots are made
// noexec too, and /run/WSL is hidden.
func buildReadOnly(roots []*pathfd.Root, guards []MountGuard, drivesNoexec bool) (committed bool, err error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return false, msg.Err("mount --make-rprivate /: ", err)
	}
	trees := make([]int, 0, len(roots))
	defer func() {
		for _, t := range trees {
			unix.Close(t)
		}
	}()
	for _, r := range roots {
		tree, err := unix.OpenTree(r.FD, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
		if err != nil {
			return false, msg.Err("open_tree ", r.Path, ": ", err)
		}
		trees = append(trees, tree)
		// No device node and no set-user-ID program inside a writable root works as one.
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE,
			&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOSUID}); err != nil {
			return false, msg.Err("mount_setattr ", r.Path, " nodev,nosuid: ", err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return false, msg.Err("mount_setattr / read-only: ", err)
	}
	if drivesNoexec { // before the clones are attached: a writable root on a drive keeps exec
		if err := noexecDrives(); err != nil {
			return true, err
		}
	}
	paths := make([]string, len(roots))
	for i, r := range roots {
		paths[i] = r.Path
	}
	order, above := nesting(paths)
	pinned := map[string]bool{}
	for _, i := range order {
		r := roots[i]
		at := r.FD
		if a := above[i]; a >= 0 {
			// r lies beneath the writable root a, whose clone now covers r's directory: attach r's clone on
			// that clone, where it is seen, not on the covered mount r.FD is on (there its guards would be
			// hidden, and a's writable clone would show r's git metadata unguarded).
			if at, err = openPinned(trees[a], paths[a], r.Path, r.FD, pinned); err != nil {
				return true, msg.Err(errRootChanged, " ", r.Path, ": reopening it through the writable clone of ", paths[a], ": ", err)
			}
		}
		err := unix.MoveMount(trees[i], "", at, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		if at != r.FD {
			unix.Close(at)
		}
		if err != nil {
			return true, msg.Err("move_mount onto ", r.Path, ": ", err)
		}
		// The clone's tree descriptor is now the root of the mount visible at r.Path.
		if err := bindGuards(trees[i], r.Path, guards); err != nil {
			return true, err
		}
	}
	if drivesNoexec { // WSL2 interop: after the clones, so that it lands on the mount visible there
		if err := hideInterop(); err != nil {
			return true, err
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err != nil || st.Flags&unix.ST_RDONLY == 0 {
		return true, msg.Err("/ is still writable after mount_setattr (statfs: ", err.Error(), ")")
	}
	// The working directory still points into the mount it was entered on, which is now read-only and, for a
	// writable root, covered by its clone.
	if err := reenterWD(); err != nil {
		return true, err
	}
	// The CAP_SYS_ADMIN that built the layer (ambient, and so also inheritable) must not reach the command.
	return true, trimInheritable([2]uint32{})
}

// reenterWD enters the working directory again by name, to land on the mount now visible there: the one it
// was entered on may since be covered (by a root's clone, a pin or a guard).
// It must find the same directory (device and inode) there, else another process replaced it: errRootChanged.
func reenterWD() error {
	wd, err := unix.Getwd()
	if err != nil {
		return nil // not reachable by name from this root: nothing covers it
	}
	var before, after unix.Stat_t
	if err := unix.Stat(".", &before); err != nil {
		return msg.Err("the working directory ", wd, ": ", err)
	}
	if err := unix.Chdir(wd); err != nil {
		return msg.Err("re-entering the working directory ", wd, ": ", err)
	}
	if err := unix.Stat(".", &after); err != nil || after.Dev != before.Dev || after.Ino != before.Ino {
		return msg.Err(errRootChanged, ": the working directory ", wd, " is no longer the directory it was (another process replaced it)")
	}
	return nil
}

// checkWD checks that the working directory is want (Dev and Ino; both 0: not known, nothing checked): the
// directory confine was started in, which bwrap enters again by name (and, where it cannot, enters $HOME
// instead), so another process that swapped the name meanwhile would have the command start elsewhere.
func checkWD(want Bind) error {
	if want.Dev == 0 && want.Ino == 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Stat(".", &st); err != nil || st.Dev != want.Dev || st.Ino != want.Ino {
		wd, _ := unix.Getwd()
		return msg.Err("the working directory ", wd, " is not the one confine was started in (another process "+
			"replaced it by name, or bwrap could not enter it)")
	}
	return nil
}

// nesting orders the writable roots at paths (canonical, absolute) for attaching their clones: each root after
// every root above it, which has the shorter path. above[i] is the index of the nearest root that paths[i] lies
// strictly beneath, or -1. A worktree in /tmp, or one whose parent is granted with --allow, lies beneath
// another root.
func nesting(paths []string) (order, above []int) {
	order, above = make([]int, len(paths)), make([]int, len(paths))
	for i, p := range paths {
		order[i], above[i] = i, -1
		for j, q := range paths {
			if p != q && beneath(p, q) && (above[i] < 0 || len(q) > len(paths[above[i]])) {
				above[i] = j
			}
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return len(paths[order[a]]) < len(paths[order[b]]) })
	return order, above
}

// errRootChanged marks a writable root beneath another that is no longer the directory the launch opened
// (another process replaced it, or a directory on the way): the launch is refused (refuses).
var errRootChanged = errors.New("writable root")

// refuses says whether a failure to build the layer must refuse the launch rather than fall back to a strategy
// without the layer: a guard (errGuard) or a nested root (errRootChanged) is no longer what the launch planned.
func refuses(err error) bool { return errors.Is(err, errGuard) || errors.Is(err, errRootChanged) }

// openPinned opens path, which lies beneath the writable root from (fd: a descriptor of from's directory on the
// mount seen there), one component at a time, following no symlink, and returns it only if it is the file want
// (an O_PATH descriptor) is: same device and inode. Each directory strictly between from and path is bound onto
// itself first, writable, with what is mounted beneath it (pin), unless pinned (absolute paths, updated) says it
// was already: a mount point cannot be renamed (EBUSY), so the command cannot move path's parent away through
// from and make a new path, with a .git of its own, where unconfined tools look for the worktree.
func openPinned(fd int, from, path string, want int, pinned map[string]bool) (int, error) {
	cur, err := openUnder(fd, strings.TrimPrefix(strings.TrimPrefix(path, from), "/"), func(rel string) bool {
		at := filepath.Join(from, rel)
		first := !pinned[at]
		pinned[at] = true
		return first
	})
	if err != nil {
		return -1, err
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(cur, &a); err != nil {
		unix.Close(cur)
		return -1, err
	}
	if err := unix.Fstat(want, &b); err != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		unix.Close(cur)
		return -1, errors.New("not the file opened when the launch was planned (another process replaced it)")
	}
	return cur, nil
}

// pin binds the directory fd (O_PATH, which it closes) onto itself, writable, with what is mounted beneath it
// (open_tree AT_RECURSIVE and move_mount, 5.2), and returns a descriptor of the new mount's root.
func pin(fd int) (int, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return -1, errors.New("not a directory")
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return -1, err
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		unix.Close(tree)
		return -1, err
	}
	return tree, nil
}

// needsWritableMount says whether a root needs a writable mount: directories and regular files do. Device
// nodes and the devpts tree do not, since writing to a device modifies no filesystem; they stay on read-only
// mounts, so their modes and owners (the terminal's, /dev/null's) stay as they are even for root. A file
// bind mount of /dev/ptmx would also break its lookup of the sibling pts directory (path_pts, fs/namei.c).
func needsWritableMount(r *pathfd.Root) bool {
	switch r.Kind {
	case pathfd.File:
		return true
	case pathfd.Dir:
		var st unix.Statfs_t
		return unix.Fstatfs(r.FD, &st) == nil && st.Type != unix.DEVPTS_SUPER_MAGIC
	}
	return false
}

// layerNamespaces are the namespaces of the mount layer: mount, and IPC (System V IPC and POSIX message queues
// live in the IPC namespace, so the command's are its own). Where they cannot be had, seccomp denies both.
const layerNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWIPC

// unshareMountNS is Host.UnshareMountNS: descriptors of the thread's mount namespace (/proc/thread-self/ns/mnt),
// root directory and working directory are kept, and back setns(2)es to the namespace, then returns to that root
// (fchdir and chroot(".")) and working directory, and closes all three. setns into a mount namespace moves root
// and working directory to the namespace's root (setns(2)), which for a confine started in a chroot (Bazel's
// test chroot, a build root) is another tree. unshare(CLONE_NEWNS) gave the thread an fs_struct of its own,
// which setns into a mount namespace needs (EINVAL for one shared with other threads). Where back is never
// called (the layer was built), the descriptors are close-on-exec.
func unshareMountNS() (back func() error, err error) {
	var fds [3]int
	for i, p := range []string{"/proc/thread-self/ns/mnt", "/", "."} {
		flags := unix.O_PATH | unix.O_CLOEXEC
		if i == 0 {
			flags = unix.O_RDONLY | unix.O_CLOEXEC
		}
		if fds[i], err = unix.Open(p, flags, 0); err != nil {
			closeAll(fds[:i]...)
			return nil, err
		}
	}
	if err := unix.Unshare(layerNamespaces); err != nil {
		closeAll(fds[:]...)
		return nil, err
	}
	home, root, cwd := fds[0], fds[1], fds[2]
	return func() error {
		defer closeAll(fds[:]...)
		if err := unix.Setns(home, unix.CLONE_NEWNS); err != nil {
			return err
		}
		if err := unix.Fchdir(root); err != nil {
			return err
		}
		if err := unix.Chroot("."); err != nil {
			return err
		}
		return unix.Fchdir(cwd)
	}, nil
}

// layerAttr puts a child in new mount and IPC namespaces (and, with pidNS, a new PID namespace, whose init it
// becomes), and, unless we are root, a new user namespace in which it
// keeps our uid and gid and has CAP_SYS_ADMIN as an ambient capability (a non-root uid loses its capabilities
// at execve otherwise). It dies with its parent.
func layerAttr(pidNS bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Cloneflags: layerNamespaces, Pdeathsig: unix.SIGKILL}
	if pidNS {
		attr.Cloneflags |= unix.CLONE_NEWPID
	}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		attr.Cloneflags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return attr
}

// probeEnv marks the process layerAvailable starts, so that it can never start another: /proc/self/exe need
// not be confine (a test binary calling Probe is not), and a binary that probed again would fork without end.
const probeEnv = "CONFINE_INTERNAL_LAYER_PROBE"

// layerAvailable starts this binary again in the layer's namespaces (with pidNS, a new PID namespace too), where it tries the layer's first mount
// call (LayerProbe). The usual reasons the layer is missing: user namespaces cannot be created (a container's
// seccomp profile, a sysctl), or they can, but mounts are denied in them (Ubuntu 24.04's AppArmor restriction
// answers EACCES).
func layerAvailable(pidNS bool) error {
	if os.Getenv(probeEnv) != "" {
		return msg.Err(ErrLayerUnavailable, ": already inside a layer probe")
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return msg.Err(ErrLayerUnavailable, ": ", err.Error())
	}
	defer unix.Close(null)
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"confine", "version"}, &syscall.ProcAttr{
		Env: append(os.Environ(), probeEnv+"=1"), Files: []uintptr{uintptr(null), uintptr(null), uintptr(null)},
		Sys: layerAttr(pidNS)})
	if err != nil {
		return msg.Err(ErrLayerUnavailable, ": ", err.Error())
	}
	var ws syscall.WaitStatus
	if err := wait(pid, &ws); err != nil {
		return msg.Err(ErrLayerUnavailable, ": the probe in new namespaces: ", err.Error())
	}
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return nil
	case ws.Exited() && ws.ExitStatus() < probeFailed:
		return msg.Err(ErrLayerUnavailable, ": open_tree in new namespaces: ", unix.Errno(ws.ExitStatus()).Error())
	}
	return msg.Err(ErrLayerUnavailable, ": the probe in new namespaces: wait status ", msg.Hex(ws))
}

// probeFailed is the probe's exit status when it is not one: an errno is below it.
const probeFailed = 200

// IsLayerProbe says whether this process is layerAvailable's probe.
func IsLayerProbe() bool {
	return os.Getenv(probeEnv) != "" && len(os.Args) == 2 && os.Args[1] == "version"
}

// LayerProbe is the probe's whole life: clone the root's mount tree (open_tree OPEN_TREE_CLONE|AT_RECURSIVE,
// 5.2), the layer's first mount call, and exit 0, or with the errno it failed with.
func LayerProbe() int {
	// Recursive: in a user namespace's mount namespace the mounts beneath / are locked to it, and cloning / alone
	// would answer EINVAL where the layer itself works (it clones whole trees).
	fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		if e, ok := err.(unix.Errno); ok && e > 0 && int(e) < probeFailed {
			return int(e)
		}
		return probeFailed
	}
	unix.Close(fd)
	return 0
}
