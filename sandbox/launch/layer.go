package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/pathfd"
)

// The mount layer closes what Landlock has no right for (mode, owner, timestamps, xattrs, inode flags,
// truncate before ABI 3) with read-only mounts instead of a blanket seccomp denial, so that those operations
// keep working inside the writable roots. In a fresh mount namespace, it clones each writable root's mount tree
// (open_tree, 5.2), makes every mount read-only (mount_setattr AT_RECURSIVE, 5.12) and attaches the writable
// clones back onto the roots through their O_PATH descriptors (move_mount, 5.2); then the Landlock ruleset is
// built and the command executed as usual.
//
// As root, the launcher unshares a mount namespace on its locked thread and does all this in place: the command
// keeps the launcher's PID. Any other user needs a new user namespace too, which a multi-threaded Go process
// cannot enter, so the launcher starts itself again as a child in fresh user and mount namespaces; the parent
// only forwards signals and mirrors the exit status. If the layer cannot be built, the child says so on a sync
// pipe before anything runs, and the launcher falls back to the seccomp denial, which is stricter, never weaker.

// Metadata says how metadata changes outside the writable set are stopped.
type Metadata string

// The two ways.
const (
	MetadataMountLayer Metadata = "mount-layer"  // every mount outside the writable roots is read-only
	MetadataSeccomp    Metadata = "seccomp-deny" // metadata system calls are denied everywhere, inside too
)

// layerEnv carries "<parent mount namespace>:<sync fd>" to the child. The child acts on it only when its own
// mount namespace differs from that one and that one is its parent's, so setting it by hand does nothing but
// refuse.
const layerEnv = "CONFINE_INTERNAL_MOUNT_LAYER"

// ErrLayerUnavailable says the mount layer could not be built here (no user namespaces, no /proc, a kernel
// without mount_setattr, ...). The caller falls back to MetadataSeccomp.
var ErrLayerUnavailable = errors.New("mount layer unavailable")

// ChildExit is the wait status of the layered child: the caller exits the same way.
type ChildExit struct{ Status syscall.WaitStatus }

func (c *ChildExit) Error() string { return "child " + strconv.Itoa(int(c.Status)) }

// layerChild reports whether this process is the layered child, and its sync descriptor.
func layerChild() (bool, int, error) {
	v, ok := os.LookupEnv(layerEnv)
	if !ok {
		return false, -1, nil
	}
	os.Unsetenv(layerEnv)              // the command never sees it
	i := strings.LastIndexByte(v, ':') // the namespace itself reads "mnt:[4026531832]"
	if i < 0 {
		i = len(v)
	}
	parentNS, fdText := v[:i], strings.TrimPrefix(v[i:], ":")
	fd, err := strconv.Atoi(fdText)
	own, _ := os.Readlink("/proc/self/ns/mnt")
	ppidNS, _ := os.Readlink("/proc/" + strconv.Itoa(os.Getppid()) + "/ns/mnt")
	// As root the parent's namespace is readable and must be the one named: a forged variable in the host's
	// namespace must never lead to remounting it read-only. A non-root child sits in a new user namespace and
	// cannot read its parent's; a non-root process that forged the variable could not mount anything anyway.
	parentOK := ppidNS == parentNS || (os.Geteuid() != 0 && ppidNS == "")
	if err != nil || fd < 3 || own == "" || own == parentNS || !parentOK {
		return false, -1, fmt.Errorf("%s is set, but this is not a layered child of confine", layerEnv)
	}
	return true, fd, nil
}

// buildMountLayer makes every mount in this (fresh) mount namespace read-only, except the writable roots,
// which get writable clones of their own trees. Roots that cannot be opened are skipped: the plan that
// follows refuses or warns about them. committed says whether mounts were already changed when it failed: a
// caller that goes on in this namespace must then refuse rather than fall back.
func buildMountLayer(roots []string) (committed bool, err error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return false, fmt.Errorf("mount --make-rprivate /: %w", err)
	}
	type clone struct {
		root *pathfd.Root
		tree int
	}
	var clones []clone
	defer func() {
		for _, c := range clones {
			c.root.Close()
			unix.Close(c.tree)
		}
	}()
	for _, path := range roots {
		r, err := pathfd.Open(path)
		if err != nil {
			continue
		}
		if !needsWritableMount(r) {
			r.Close()
			continue
		}
		tree, err := unix.OpenTree(r.FD, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
		if err != nil {
			r.Close()
			return false, fmt.Errorf("open_tree %s: %w", path, err)
		}
		clones = append(clones, clone{r, tree})
		// No device node and no set-user-ID program inside a writable root works as one.
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE,
			&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOSUID}); err != nil {
			return false, fmt.Errorf("mount_setattr %s nodev,nosuid: %w", path, err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return false, fmt.Errorf("mount_setattr / read-only: %w", err)
	}
	for _, c := range clones {
		if err := unix.MoveMount(c.tree, "", c.root.FD, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return true, fmt.Errorf("move_mount onto %s: %w", c.root.Path, err)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err != nil || st.Flags&unix.ST_RDONLY == 0 {
		return true, fmt.Errorf("/ is still writable after mount_setattr (statfs: %v)", err)
	}
	// The working directory still points into the mount it was entered on, which is now read-only and, for a
	// writable root, covered by its clone: enter it again by name to land on the mount now visible there.
	if wd, err := os.Getwd(); err == nil {
		if err := os.Chdir(wd); err != nil {
			return true, fmt.Errorf("re-entering the working directory %s: %w", wd, err)
		}
	}
	// The CAP_SYS_ADMIN that built the layer (ambient, and so also inheritable) must not reach the command.
	return true, trimInheritable([2]uint32{})
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

// failLayer tells the parent on the sync descriptor why the layer could not be built, and exits: nothing ran.
func failLayer(syncFD int, err error) {
	unix.Write(syncFD, []byte(err.Error()))
	os.Exit(ExitRefused)
}

// forwarded are the signals the parent passes on to the child. Job-control stops are left to the terminal,
// which sends them to the whole foreground process group, child included.
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGWINCH, unix.SIGALRM, unix.SIGCONT}

// layerAttr puts a child in a new mount namespace, and, unless we are root, a new user namespace in which it
// keeps our uid and gid and has CAP_SYS_ADMIN as an ambient capability (a non-root uid loses its capabilities
// at execve otherwise). It dies with its parent.
func layerAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS, Pdeathsig: unix.SIGKILL}
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

// layerAvailable starts `/proc/self/exe version` in the layer's namespaces: the usual reason the layer is
// missing is that user namespaces cannot be created (a container, a sysctl, an AppArmor policy).
func layerAvailable() error {
	if os.Getenv(probeEnv) != "" {
		return fmt.Errorf("%w: already inside a layer probe", ErrLayerUnavailable)
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"confine", "version"}, SysProcAttr: layerAttr(),
		Env: append(os.Environ(), probeEnv+"=1")}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %v", ErrLayerUnavailable, err)
	}
	return nil
}

// runLayered starts this binary again with the same arguments in new namespaces, passes it the report
// descriptor, forwards signals and waits. It returns ErrLayerUnavailable (wrapped) when the child could not
// be started or could not build the layer; nothing ran then.
func runLayered(reportFD int) (syscall.WaitStatus, error) {
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrLayerUnavailable, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	syncFD := 3
	var extra []*os.File
	if reportFD >= 3 {
		// A duplicate goes to the child: an *os.File closes its descriptor when collected, and ours must
		// stay open for the report in case of a fallback.
		dup, err := unix.FcntlInt(uintptr(reportFD), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			w.Close()
			return 0, fmt.Errorf("duplicating --report-fd: %w", err)
		}
		report := os.NewFile(uintptr(dup), "report")
		defer report.Close()
		syncFD = reportFD + 1
		extra = make([]*os.File, syncFD-3+1)
		extra[reportFD-3] = report
	} else {
		extra = make([]*os.File, 1)
	}
	extra[syncFD-3] = w
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: os.Args, Env: append(os.Environ(), fmt.Sprintf("%s=%s:%d", layerEnv, ns, syncFD)),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, ExtraFiles: extra, SysProcAttr: layerAttr()}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	ran := false
	defer func() {
		signal.Stop(sigs)
		if ran {
			return
		}
		// A signal caught before anything ran (on the way to a fallback) is delivered again, to us, with its
		// default action back in place.
		for {
			select {
			case s := <-sigs:
				unix.Kill(unix.Getpid(), s.(syscall.Signal))
			default:
				return
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		w.Close()
		return 0, fmt.Errorf("%w: starting the layered child: %v", ErrLayerUnavailable, err)
	}
	w.Close()
	msg, _ := io.ReadAll(r) // EOF once the command is executed (the descriptor is close-on-exec there)
	if len(msg) > 0 {
		cmd.Wait()
		return 0, fmt.Errorf("%w: %s", ErrLayerUnavailable, msg)
	}
	ran = true
	if reportFD >= 3 {
		unix.Close(reportFD) // the child has written the report; a reader sees EOF when the command closes it
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	cmd.Wait()
	close(done)
	return cmd.ProcessState.Sys().(syscall.WaitStatus), nil
}
