package suite

// The deputy family (issue 25): where confine acts FOR the command, with rights the command does not have, or
// trusts a file the command could have written on an earlier run. Each case builds the route's precondition
// outside confine (a process in another mount namespace, a device node, a planted git pointer, a FIFO), runs
// the command as an attacker would, and checks the outside state afterwards, on top of the invariant snapshot:
//
//   - supervisor-proc-root, -cwd, -fd: the metadata supervisor (the fallback without a mount layer, issue 15)
//     must not resolve a path through another process's /proc/PID/{root,cwd,fd} into that process's mount
//     namespace, where an outside directory is mounted beneath the worktree.
//   - device-node, device-node-fallback: a block device node inside the worktree is no door to its backing
//     store; where no mount layer marks the worktree nodev, the report must say so (channel device-nodes).
//   - git-pointer, git-pointer-fallback: a registration one run plants in a writable root named …/worktrees
//     must not widen the next run to the objects, refs and logs of that root's parent.
//   - profile-fifo, profile-fifo-fallback: a FIFO one run plants as $XDG_CONFIG_HOME/git/config must not hang
//     the next launch under --profile git-global.
//   - signal-dropped-uid, metadata-dropped-uid, and their -fallback: the supervisor, which sends the command's
//     signals below ABI 6 and makes its metadata changes without a mount layer, must not lend a root command
//     that changed its uid root's right to signal, chmod, chown or touch.
//
// Route 3 of the issue (the npm API runs whatever launcher it finds) is release/npm's node tests. Route 6
// (signals below ABI 6 without a mount layer) is side-channels/signals-kill-fallback, -pidfd-fallback and
// -sigio-fallback, and the default variants under a host emulation: judged against channel signals there.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/helper"
	"github.com/confine-dev/confine/conformance/internal/snapshot"
)

var deputyCases = append(append(append(append(
	[]Case{procCase("root"), procCase("cwd"), procCase("fd")},
	deviceCases()...), gitPointerCases()...), profileFIFOCases()...), append(credCases(), movedDirCase())...)

// dOpts tune one deputy launch.
type dOpts struct {
	env   []string      // the command's environment (the runner's when nil), plus Config.Env
	bound time.Duration // how long the launch may take (Config.Timeout when 0)
	// unblock, when set, is called once the bound has passed, to let a blocked launch go on (it then has
	// Config.Timeout more); else the launch is killed at the bound.
	unblock func()
}

// dRun is scRun with whether the launch outlived its bound.
type dRun struct {
	scRun
	hung bool
}

// deputyConfine runs `confine --report-fd 3 FLAGS -- ARGV` as scMode.confine does (the fallback through
// no-namespaces), in its own process group, with a bound of its own: a launch that outlives it is reported hung
// (dRun.hung), unblocked or killed, and never holds the suite up longer than the bound plus Config.Timeout.
func deputyConfine(t *T, m scMode, flags, argv []string, o dOpts) dRun {
	if !m.fallback && t.cfg.ForceBackend != "" && !contains(flags, "--backend") {
		flags = append(append([]string{}, flags...), "--backend", t.cfg.ForceBackend)
	}
	args := append(append(append([]string{"--report-fd", "3"}, flags...), "--"), argv...)
	path := t.cfg.Confine
	if m.fallback {
		path, args = t.cfg.Self, append([]string{"no-namespaces", "--", t.cfg.Confine}, args...)
	}
	bound := o.bound
	if bound == 0 || bound > t.cfg.Timeout {
		bound = t.cfg.Timeout
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = t.Base
	if o.env != nil {
		cmd.Env = append(append([]string(nil), o.env...), t.cfg.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	rp, wp, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	cmd.ExtraFiles = []*os.File{wp}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	wp.Close()
	var report bytes.Buffer
	read := make(chan struct{})
	go func() { report.ReadFrom(rp); rp.Close(); close(read) }()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	kill := func() { unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	var r dRun
	parent := t.ctx.Done()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	var werr error
wait:
	for {
		select {
		case werr = <-waited:
			break wait
		case <-parent:
			kill()
			<-waited
			t.Fatalf("confine: killed at the case's bound (%s)", t.cfg.CaseTimeout)
		case <-timer.C:
			if r.hung {
				kill()
				werr = <-waited
				t.Errorf("confine %s: still running %s after it was unblocked; killed", strings.Join(args, " "), t.cfg.Timeout)
				break wait
			}
			r.hung = true
			t.Logf("%s: the launch is still running after %s", m.name(), bound)
			if o.unblock == nil {
				kill()
				werr = <-waited
				break wait
			}
			o.unblock()
			timer.Reset(t.cfg.Timeout)
		}
	}
	<-read
	t.progress.Store(time.Now().UnixNano())
	t.done.Add(1)
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		t.Fatalf("wait %s: %v", path, werr)
	}
	r.scRun = newScRun(t, cmd.ProcessState, stdout.String(), stderr.String(), report.String())
	outcome := "no report"
	if r.rep != nil {
		outcome = strings.Join(strings.Fields(r.rep.Outcome+" "+r.rep.Reason), " ") + ", metadata " + r.rep.Metadata
	}
	t.Logf("%s: exit %d signal %d hung %v (%s); command results %s; stderr %q", m.name(), r.exit, r.signal, r.hung,
		outcome, resultsText(r.results), r.stderr)
	return r
}

// modeVariants returns c in two variants, as side-channels' routes do: as confine picks its mode (c.ID; the mount
// layer where a namespace can be had) and where no namespace can be had (c.ID-fallback, its title extended by
// fallbackTitle, its rows replaced by fallbackRow). Both end with rows and the row for kernels without Landlock,
// and need what needsFallback says.
func modeVariants(c Case, fallbackTitle string, fallbackRow Expect, rows []Expect, run func(t *T, m scMode)) []Case {
	var out []Case
	for _, m := range []scMode{{}, {fallback: true}} {
		v := c
		if m.fallback {
			v.ID, v.Title, v.Expect = c.ID+"-fallback", c.Title+fallbackTitle, []Expect{fallbackRow}
		}
		v.Expect = append(append(append([]Expect{}, v.Expect...), rows...), noLandlockRowFor(m.fallback))
		v.Needs = needsFallback(m.fallback)
		v.Run = func(t *T) { run(t, m) }
		out = append(out, v)
	}
	return out
}

// refusal reports whether r is confine's refusal, failing the case unless it is a well-formed one: exit 125, a
// report with outcome refused, and one line on stderr.
func refusal(t *T, r dRun) bool {
	if r.rep == nil || r.rep.Outcome != "refused" {
		return false
	}
	if r.exit != 125 {
		t.Errorf("refused (%s), but exit %d, want 125", r.rep.Reason, r.exit)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || lines[0] == "" {
		t.Errorf("refused (%s), with %d lines on stderr, want one: %q", r.rep.Reason, len(lines), r.stderr)
	}
	return true
}

// ------------------------------------------------------------------------------------------------------------
// Route 1: the supervisor follows /proc/PID/{root,cwd,fd} into another mount namespace.

// procCase is the supervisor route through /proc/VICTIM/<via>.
func procCase(via string) Case {
	what := map[string]string{
		"root": "/proc/VICTIM/root/WT/mnt (the victim's root, then the worktree's path in its namespace)",
		"cwd":  "/proc/VICTIM/cwd (the victim's working directory, the mounted volume)",
		"fd":   "/proc/VICTIM/fd/4 (a descriptor the victim holds on the mounted volume)",
	}[via]
	return Case{
		ID:    "deputy/supervisor-proc-" + via,
		Title: "the supervisor does not follow /proc/PID/" + via + " of another process into its mount namespace",
		Rationale: "Issue 25, route 1: without a mount layer the supervisor makes mode, owner, time and xattr changes " +
			"for the command, resolving the path with its own rights. A path through another process's /proc/PID/" +
			via + " lands in that process's mount namespace, where the ancestry walk climbs `..` to a directory with " +
			"the worktree's device and inode. The runner starts a victim in a mount namespace of its own (as a user, " +
			"in a user namespace too, as a rootless container would be) that bind-mounts an outside directory (the " +
			"volume, outside /tmp and the writable set, snapshotted) onto WT/mnt and waits; the command, in the " +
			"fallback (no namespace can be made, so the supervisor), chmods, chowns, sets the times and a user " +
			"xattr of the volume's file and of the volume itself through " + what + ". The command itself gets " +
			"EACCES on such a path (Landlock scopes ptrace); only the supervisor could follow it. The volume must " +
			"be unchanged.",
		Expect: []Expect{{"ABI ≥ 1, fallback", "every change fails (ELOOP: the supervisor follows no magic link; or EACCES, EPERM); the volume's mode, owner, times and xattrs are unchanged"},
			{"a host that denies the runner a mount namespace or a bind mount (host emulations)", "SKIP, saying so"},
			fallbackOnly},
		Needs: Needs{Landlock: true},
		Setup: func(t *T) {
			vol := t.Base + "/volume"
			t.Mkdir(vol+"/sub", t.WT+"/mnt", t.Base+"/victim")
			t.WriteFile(vol+"/file.txt", "outside volume\n", 0o640)
			_ = unix.Setxattr(vol+"/file.txt", "user.conformance", []byte("original"), 0)
			if err := os.Chmod(vol, 0o755); err != nil {
				t.Fatalf("fixture: %v", err)
			}
			t.Unwatch(t.Base + "/victim") // the victim's readiness file
		},
		Run: func(t *T) { procAttack(t, via) },
	}
}

func procAttack(t *T, via string) {
	vol, mnt := t.Base+"/volume", t.WT+"/mnt"
	pid, stop := startMountVictim(t, vol, mnt)
	defer stop()
	base := map[string]string{
		"root": fmt.Sprintf("/proc/%d/root%s", pid, mnt),
		"cwd":  fmt.Sprintf("/proc/%d/cwd", pid),
		"fd":   fmt.Sprintf("/proc/%d/fd/4", pid),
	}[via]
	// The route exists: from the runner, the path leads to the outside volume's file.
	var viaSt, volSt unix.Stat_t
	if err := unix.Stat(base+"/file.txt", &viaSt); err != nil {
		t.Fatalf("the runner cannot reach %s/file.txt: %v", base, err)
	}
	if err := unix.Stat(vol+"/file.txt", &volSt); err != nil {
		t.Fatalf("stat: %v", err)
	}
	if viaSt.Dev != volSt.Dev || viaSt.Ino != volSt.Ino {
		t.Fatalf("%s/file.txt is not the volume's file (dev %d ino %d, want %d %d): the victim's mount did not take", base, viaSt.Dev, viaSt.Ino, volSt.Dev, volSt.Ino)
	}
	before, err := snapshot.Take([]string{vol}, nil)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	var ops []helper.Op
	for _, p := range []string{base + "/file.txt", base} {
		ops = append(ops, op("chmod", p), op("chown", p), op("utimes", p), opArg("setxattr", p, "changed-by-the-supervisor"))
	}
	r := deputyConfine(t, scMode{fallback: true}, t.Flags(), t.HelperArgv(ops...), dOpts{})
	if r.rep == nil || r.rep.Outcome != "exec" {
		t.Fatalf("confine did not run the command: exit %d, report %q, stderr %q", r.exit, r.raw, r.stderr)
	}
	if !contains(fallbackMetadata, r.rep.Metadata) {
		t.Errorf("report.metadata %q, want supervisor or seccomp-deny (the case could not take the namespaces away)", r.rep.Metadata)
	}
	if r.results == nil {
		t.Fatalf("the command printed no results (exit %d, stdout %q)", r.exit, r.stdout)
	}
	// A chmod that got through may have left the volume untraversable for a user runner: say so, then give the
	// runner its way back in, so that this snapshot and the invariant's can read (and report) the rest.
	var vst unix.Stat_t
	if err := unix.Lstat(vol, &vst); err == nil && vst.Mode&0o7777 != 0o755 {
		t.Errorf("metadata %s: the outside volume's mode is %04o after the command, was 0755 (through %s; command results %s)",
			r.rep.Metadata, vst.Mode&0o7777, base, resultsText(r.results))
		os.Chmod(vol, 0o755)
	}
	after, err := snapshot.Take([]string{vol}, nil)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if d := snapshot.Diff(before, after); len(d) > 0 {
		t.Errorf("metadata %s: the outside volume changed through %s: %s (command results %s)", r.rep.Metadata, base,
			strings.Join(d, "; "), resultsText(r.results))
		return
	}
	for _, x := range r.results {
		if x.OK { // the invariant snapshot checks everything else outside the writable set
			t.Logf("%s %s succeeded, yet the volume is unchanged", x.Op, x.Path)
		}
	}
	t.Logf("metadata %s: every change through %s failed (%s); the volume is unchanged", r.rep.Metadata, base, resultsText(r.results))
}

// startMountVictim starts, outside confine, a process in a new mount namespace (as a user, in a new user
// namespace too, mapping the runner's uid and gid to 0 in it: a rootless container) that bind-mounts vol onto mnt
// there, makes the mount its working directory, holds it open as descriptor 4 and waits until stop. The mount
// is private to its namespace (Go marks / MS_REC|MS_PRIVATE after unshare(CLONE_NEWNS)): the runner's own view
// of mnt is unchanged. It skips the case, saying why, where the host gives the runner no such namespace or
// mount. Needs /bin/sh with mount and cat (busybox in the VM guest).
func startMountVictim(t *T, vol, mnt string) (pid int, stop func()) {
	ready := t.Base + "/victim/ready"
	for _, tool := range []string{"/bin/sh", "mount", "cat"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the victim needs %s: %v", tool, err)
		}
	}
	script := `mount -o bind "$1" "$2" && cd "$2" && exec 4<. && : > "$3" && exec cat`
	cmd := exec.Command("/bin/sh", "-c", script, "victim", vol, mnt, ready)
	attr := &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Setpgid: true}
	who := "root, a mount namespace (unshare -m)"
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		who = fmt.Sprintf("uid %d, a user and mount namespace (unshare -Urm)", uid)
	}
	cmd.SysProcAttr = attr
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = pr, &stderr
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		t.Skipf("the host gives the runner no victim as %s: %v", who, err)
	}
	pr.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() {
		pw.Close() // cat reads EOF and exits
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
			<-exited
		}
	}
	deadline := time.Now().Add(t.cfg.Timeout / 2)
	for !Exists(ready) {
		select {
		case <-exited:
			stop()
			t.Skipf("the victim (%s) could not bind-mount the volume: %s", who, strings.TrimSpace(stderr.String()))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the victim never became ready (stderr %q)", stderr.String())
		}
	}
	t.Logf("victim pid %d (%s) holds %s mounted on %s", cmd.Process.Pid, who, vol, mnt)
	return cmd.Process.Pid, stop
}

// ------------------------------------------------------------------------------------------------------------
// Route 2: a block device node inside the worktree.

// openDevice is the device-node route's reviewed outcome without a mount layer (issue 25: reported, not closed).
const openDevice = "SKIP \"open and reported\": the write reaches the backing file and channel device-nodes is open " +
	"(no nodev mount); a report that calls it closed, or lacks it, FAILs"

func deviceCases() []Case {
	return modeVariants(Case{
		ID: "deputy/device-node", Title: "a block device node inside the worktree is no door to its backing store",
		Rationale: "Issue 25, route 2: sandbox/README.md says the writable clones are mounted nodev in every mode, " +
			"but without a mount layer there are no clones. A block device node already inside the worktree (made " +
			"by root: the command cannot make one) then opens for writing, and what is written lands in the " +
			"device's backing store, outside the sandbox. The runner attaches a loop device to a file outside the " +
			"writable set (outside /tmp, snapshotted), makes its node inside the worktree and checks that it can " +
			"open it itself (the control: not a nodev filesystem); the command opens the node for writing and " +
			"writes; the runner flushes the device and reads the backing file. A character device of a harmless " +
			"kind is no substitute: without loop devices the case skips. Judged against channel device-nodes: " +
			"found open and reported open is a SKIP \"open and reported\"; found open and reported closed, or not " +
			"reported at all, is a FAIL; found closed passes, with or without the channel.",
		Expect: []Expect{{"ABI ≥ 1, root, mount layer", "the open fails (EACCES: the writable clones are nodev); the backing file unchanged"},
			{"ABI ≥ 1, root, no mount layer (host emulations)", openDevice}},
		Setup: func(t *T) {
			t.WriteFile(t.Base+"/backing.img", strings.Repeat("outside backing store\n", 3000), 0o600)
			// The case reads the backing file itself and judges what it finds against the channel: found
			// open and reported open is a reviewed outcome (SKIP), which the invariant would turn into a FAIL.
			t.Mkdir(t.Base + "/nodes")
			t.Unwatch(t.Base+"/backing.img", t.Base+"/nodes") // nodes: the runner's own device nodes, where /dev has none
		},
	}, ", where no namespace can be had (no nodev mount)", Expect{"ABI ≥ 1, root, fallback", openDevice},
		[]Expect{{"unprivileged", "SKIP: only root can make the node (CAP_MKNOD) and open a loop device"},
			{"no loop driver, and no loop.ko for the kernel in the payload (the VM's 6.19 and 7.x)", "SKIP, saying so"}},
		deviceAttack)
}

// loopInfo64 is struct loop_info64 (include/uapi/linux/loop.h), 232 bytes; only lo_flags is set here.
type loopInfo64 struct {
	Device, Inode, Rdevice, Offset, SizeLimit  uint64
	Number, EncryptType, EncryptKeySize, Flags uint32
	FileName, CryptName                        [64]byte
	EncryptKey                                 [32]byte
	Init                                       [2]uint64
}

// attachLoop attaches a free loop device to backing (opened read-write) with LO_FLAGS_AUTOCLEAR, so that it
// detaches once the last descriptor closes, the runner's included if it dies. Where the kernel has no loop
// driver yet (Debian builds it as a module, CONFIG_BLK_DEV_LOOP=m, and the VM guest has no /lib/modules), it
// loads loop.ko from the payload (modulesDir/<uname -r>/loop.ko, which scripts/payload-binfmt-modules.sh puts
// there beside binfmt_misc.ko). nodes is a directory for device nodes of its own where /dev has none. It
// returns the device's number and a descriptor of it, or why there is none.
func attachLoop(backing, modulesDir, nodes string) (dev uint64, fd int, why string) {
	ctl, err := openDev("/dev/loop-control", nodes+"/loop-control", unix.S_IFCHR, unix.Mkdev(10, 237)) // LOOP_CTRL_MINOR
	if err == unix.ENODEV || err == unix.ENXIO {
		var u unix.Utsname
		unix.Uname(&u)
		ko := filepath.Join(modulesDir, unix.ByteSliceToString(u.Release[:]), "loop.ko")
		f, ferr := os.Open(ko)
		if ferr != nil {
			return 0, -1, "no loop devices here: the loop driver is not loaded, and the payload has no " + ko
		}
		if lerr := unix.FinitModule(int(f.Fd()), "", 0); lerr != nil && lerr != unix.EEXIST {
			f.Close()
			return 0, -1, "no loop devices here: finit_module " + ko + ": " + lerr.Error()
		}
		f.Close()
		ctl, err = openDev("/dev/loop-control", nodes+"/loop-control", unix.S_IFCHR, unix.Mkdev(10, 237))
	}
	if err != nil {
		return 0, -1, "no loop devices here: /dev/loop-control: " + err.Error()
	}
	defer unix.Close(ctl)
	bfd, err := unix.Open(backing, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, -1, "backing file: " + err.Error()
	}
	defer unix.Close(bfd)
	for try := 0; try < 5; try++ {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return 0, -1, "LOOP_CTL_GET_FREE: " + err.Error()
		}
		fd, err = openDev("/dev/loop"+strconv.Itoa(n), nodes+"/loop"+strconv.Itoa(n), unix.S_IFBLK, unix.Mkdev(7, uint32(n)))
		if err != nil {
			return 0, -1, fmt.Sprintf("/dev/loop%d: %v", n, err)
		}
		if err := unix.IoctlSetInt(fd, unix.LOOP_SET_FD, bfd); err != nil {
			unix.Close(fd)
			if err == unix.EBUSY { // taken by someone else since GET_FREE
				continue
			}
			return 0, -1, "LOOP_SET_FD: " + err.Error()
		}
		info := loopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.LOOP_SET_STATUS64, uintptr(unsafe.Pointer(&info))); e != 0 {
			unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0)
			unix.Close(fd)
			return 0, -1, "LOOP_SET_STATUS64: " + e.Error()
		}
		return unix.Mkdev(7, uint32(n)), fd, ""
	}
	return 0, -1, "no free loop device after 5 tries"
}

// openDev opens path read-write; where it does not exist (a /dev without the node, or no devtmpfs), it makes
// the node itself at own (kind S_IFCHR or S_IFBLK, number dev) and opens that: ENODEV or ENXIO then say that
// the kernel has no such device.
func openDev(path, own string, kind uint32, dev uint64) (int, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != unix.ENOENT {
		return fd, err
	}
	if err := unix.Mknod(own, kind|0o600, int(dev)); err != nil && err != unix.EEXIST {
		return -1, err
	}
	return unix.Open(own, unix.O_RDWR|unix.O_CLOEXEC, 0)
}

func deviceAttack(t *T, m scMode) {
	if os.Geteuid() != 0 {
		t.Skipf("needs root: only root can make the node (CAP_MKNOD) and attach a loop device; the route is a node root made")
	}
	backing, node := t.Base+"/backing.img", t.WT+"/blockdev"
	dev, lfd, why := attachLoop(backing, filepath.Join(filepath.Dir(t.cfg.Self), "modules"), t.Base+"/nodes")
	if why != "" {
		t.Skipf("%s (a character device of a harmless kind is no substitute for a block device over an outside file)", why)
	}
	defer func() {
		unix.IoctlSetInt(lfd, unix.LOOP_CLR_FD, 0)
		unix.Close(lfd)
	}()
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(dev)); err != nil {
		t.Fatalf("mknod %s b %d %d: %v", node, unix.Major(dev), unix.Minor(dev), err)
	}
	// The control: the node opens for writing without confine here (not a nodev filesystem).
	cfd, err := unix.Open(node, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("the node cannot be opened for writing even without confine (%v): the scratch filesystem is nodev here, so the route does not exist", err)
	}
	unix.Close(cfd)
	const payload = "written through the device node by the command"
	r := deputyConfine(t, m, t.Flags(), t.HelperArgv(opArg("write", node, payload)), dOpts{})
	if r.rep == nil || r.rep.Outcome != "exec" {
		t.Fatalf("confine did not run the command: exit %d, report %q, stderr %q", r.exit, r.raw, r.stderr)
	}
	if m.fallback && !contains(fallbackMetadata, r.rep.Metadata) {
		t.Errorf("fallback: report.metadata %q, want supervisor or seccomp-deny", r.rep.Metadata)
	}
	if len(r.results) != 1 {
		t.Fatalf("the command printed no result (exit %d, stdout %q)", r.exit, r.stdout)
	}
	// The command's write sits in the device's page cache until flushed (the runner's descriptor keeps the
	// device open, so the command's close did not flush it): flush it to the backing file, then read that.
	if err := unix.Fsync(lfd); err != nil {
		t.Errorf("fsync the loop device: %v", err)
	}
	b := make([]byte, len(payload))
	f, err := os.Open(backing)
	if err != nil {
		t.Fatalf("open the backing file: %v", err)
	}
	n, _ := f.Read(b)
	f.Close()
	open := string(b[:n]) == payload
	judgeOptional(t, r.scRun, "device-nodes", open, fmt.Sprintf("metadata %s: the command's open and write: %s; the backing file (outside) starts %q",
		r.rep.Metadata, resultsText(r.results), b[:n]))
}

// judgeOptional is judge for a channel the report contract may not name: a route found closed passes whether
// the report has the channel or not; found open, the channel must be reported open (SKIP "open and reported"),
// and a report without it fails, as one that calls it closed does.
func judgeOptional(t *T, r scRun, channel string, open bool, evidence string) {
	if r.rep != nil {
		if _, ok := r.rep.Channels[channel]; !ok && !open {
			t.Logf("channel %s is not in the report; this route found it closed: %s", channel, evidence)
			return
		}
	}
	judge(t, r, channel, open, evidence)
}

// ------------------------------------------------------------------------------------------------------------
// Route 4: a git registration planted in a writable root named …/worktrees.

func gitPointerCases() []Case {
	return modeVariants(Case{
		ID: "deputy/git-pointer", Title: "a registration planted in a writable …/worktrees root does not widen the next run",
		Rationale: "Issue 25, route 4: linked-worktree discovery checks the layout by its names: WT/.git names " +
			"<common>/worktrees/<name>, whose commondir names <common> and whose gitdir names WT/.git. When a " +
			"writable root is itself named …/worktrees (here --allow OUT/worktrees, where OUT has objects/, refs/ " +
			"and logs/ like a git directory, outside the worktree and /tmp), one run can plant " +
			"OUT/worktrees/evil/{commondir, gitdir, HEAD} and rewrite WT/.git to point there; the next run with " +
			"the same flags would then grant OUT/objects, OUT/refs and OUT/logs. The second run must refuse " +
			"(exit 125) or its writes there must fail; OUT's other directories are snapshotted.",
		Expect: []Expect{{"ABI ≥ 1", "the second run is refused (exit 125) or every write into objects/, refs/ and logs/ fails; they are unchanged"}},
		Setup: func(t *T) {
			out := t.Base + "/gitout"
			t.Mkdir(out+"/objects/info", out+"/refs/heads", out+"/logs/refs", out+"/worktrees")
			t.WriteFile(out+"/HEAD", "ref: refs/heads/main\n", 0o644)
			t.WriteFile(out+"/config", "[core]\n\trepositoryformatversion = 0\n", 0o644)
			t.Unwatch(out + "/worktrees") // the --allow root
		},
	}, ", without the mount layer", Expect{"ABI ≥ 1, fallback", "the same"}, nil, gitPointerAttack)
}

func gitPointerAttack(t *T, m scMode) {
	out := t.Base + "/gitout"
	reg := out + "/worktrees/evil"
	flags := t.Flags("--allow", out+"/worktrees")
	r1 := deputyConfine(t, m, flags, t.HelperArgv(op("mkdir", reg),
		opArg("create", reg+"/commondir", "../..\n"), opArg("create", reg+"/gitdir", t.WT+"/.git\n"),
		opArg("create", reg+"/HEAD", "ref: refs/heads/main\n"), opArg("create", t.WT+"/.git", "gitdir: "+reg+"\n")), dOpts{})
	switch {
	case refusal(t, r1):
		t.Logf("run 1 refused (%s: %s): nothing planted", r1.rep.Reason, r1.rep.Error)
	case r1.rep == nil || r1.rep.Outcome != "exec" || len(r1.results) != 5:
		t.Fatalf("run 1: confine did not run the command: exit %d, report %q, stderr %q", r1.exit, r1.raw, r1.stderr)
	default:
		t.WantOK("run 1 plants the registration", r1.results...)
	}
	targets := []string{out + "/objects/planted", out + "/refs/heads/planted", out + "/logs/planted"}
	var ops []helper.Op
	for _, p := range targets {
		ops = append(ops, opArg("create", p, "planted by run 2"))
	}
	r2 := deputyConfine(t, m, flags, t.HelperArgv(ops...), dOpts{})
	if refusal(t, r2) {
		t.Logf("run 2 refused: %s: %s", r2.rep.Reason, r2.rep.Error)
	} else {
		if r2.rep == nil || r2.rep.Outcome != "exec" || len(r2.results) != len(ops) {
			t.Fatalf("run 2: neither refused nor ran the command: exit %d, report %q, stderr %q", r2.exit, r2.raw, r2.stderr)
		}
		t.WantDenied("run 2 writes in "+out+" through the planted pointer", denied, r2.results...)
	}
	for _, p := range targets {
		if Exists(p) {
			t.Errorf("%s exists after run 2", p)
		}
	}
}

// ------------------------------------------------------------------------------------------------------------
// Route 5: a FIFO planted where --profile git-global opens a file.

func profileFIFOCases() []Case {
	return modeVariants(Case{
		ID: "deputy/profile-fifo", Title: "a FIFO planted as $XDG_CONFIG_HOME/git/config does not hang the next launch",
		Rationale: "Issue 25, route 5: under --profile git-global confine prepares $XDG_CONFIG_HOME/git/config " +
			"before it runs anything, and that directory is the command's to write. One run replaces the file with " +
			"a FIFO; a launcher that opens it for writing, blocking, then hangs every later launch before any " +
			"command runs: a denial of service that outlives the command. The runner (HOME without a .gitconfig, " +
			"XDG_CONFIG_HOME outside the worktree and /tmp, GIT_CONFIG_GLOBAL unset) launches twice with the " +
			"profile; the second launch has a bound of its own (" + fifoBound.String() + ", or the run's timeout " +
			"if shorter). A hang is a FAIL: the runner then opens the FIFO for reading, to let the launch go on, " +
			"so the suite itself never hangs.",
		Expect: []Expect{{"ABI ≥ 1", "the second launch finishes within its bound: refused with one line (exit 125), or runs"}},
		Setup: func(t *T) {
			t.Mkdir(t.Base+"/home", t.Base+"/xdg/git")
			t.Unwatch(t.Base + "/xdg/git") // the profile's grant
		},
	}, ", without the mount layer", Expect{"ABI ≥ 1, fallback", "the same"}, nil, profileFIFOAttack)
}

// fifoBound is how long the launch after the planted FIFO may take: a launch takes milliseconds on a host and
// seconds in a loaded TCG guest.
const fifoBound = 30 * time.Second

func profileFIFOAttack(t *T, m scMode) {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "HOME" && k != "XDG_CONFIG_HOME" && k != "GIT_CONFIG_GLOBAL" {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+t.Base+"/home", "XDG_CONFIG_HOME="+t.Base+"/xdg")
	config := t.Base + "/xdg/git/config"
	flags := t.Flags("--profile", "git-global")
	r1 := deputyConfine(t, m, flags, t.HelperArgv(op("unlink", config), op("mkfifo", config)), dOpts{env: env})
	if r1.rep == nil || r1.rep.Outcome != "exec" || len(r1.results) != 2 {
		t.Fatalf("run 1: confine did not run the command: exit %d, report %q, stderr %q", r1.exit, r1.raw, r1.stderr)
	}
	var st unix.Stat_t
	if err := unix.Lstat(config, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Fatalf("run 1 could not plant the FIFO (%s; lstat %v): the route needs the profile's directory writable", resultsText(r1.results), err)
	}
	unblocked := false
	r2 := deputyConfine(t, m, flags, t.HelperArgv(op("pid", "")), dOpts{env: env, bound: fifoBound, unblock: func() {
		// A reader lets a writer's blocking open return; the launch then goes on to its end.
		if fd, err := unix.Open(config, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unblocked = true
			go func() { time.Sleep(5 * time.Second); unix.Close(fd) }()
		}
	}})
	if r2.hung {
		t.Errorf("the launch after the planted FIFO did not finish within %s (unblocked by a reader: %v; then exit %d, stderr %q)",
			min(fifoBound, t.cfg.Timeout), unblocked, r2.exit, firstLine(r2.stderr))
		return
	}
	if refusal(t, r2) {
		t.Logf("refused in time: %s: %s", r2.rep.Reason, firstLine(r2.stderr))
		return
	}
	if r2.rep == nil || r2.rep.Outcome != "exec" || r2.exit != 0 {
		t.Errorf("the launch after the planted FIFO neither refused nor ran: exit %d, report %q, stderr %q", r2.exit, r2.raw, r2.stderr)
		return
	}
	t.Logf("ran in time (exit 0)")
}

// ------------------------------------------------------------------------------------------------------------
// The signal supervisor (issue 25, route 6) sends with its own credentials.

// credCases are the cases of a root command that drops its uid, then signals a child or changes a file it no
// longer may.
func credCases() []Case {
	signal := modeVariants(Case{
		ID:    "deputy/signal-dropped-uid",
		Title: "a root command that changed its uid cannot signal what the kernel would refuse it",
		Rationale: "Below ABI 6 without a mount layer, confine's supervisor sends the command's signals (issue 25, " +
			"route 6), and the kernel checks the sender's credentials, which are the supervisor's: as root it " +
			"could signal, for a command that dropped to another uid, a process the kernel refuses that command " +
			"(kernel/signal.c, kill_ok_by_cred: a uid in common, or CAP_KILL). The command, as root, starts a " +
			"child, changes every uid to 65534 and sends the child SIGTERM. Unconfined (the control) kill fails " +
			"with EPERM and the child lives; under confine it must be the same. Root only: only root can change " +
			"its uid.",
		Expect: []Expect{{"ABI ≥ 1, root", "kill fails with EPERM and the child lives, as unconfined"}},
	}, ", where no namespace can be had (below ABI 6, the supervisor sends it)",
		Expect{"ABI ≥ 1, root, fallback", "the same: the supervisor sends with the caller's uids and without CAP_KILL"},
		[]Expect{{"unprivileged", "SKIP: only root can change its uid"}},
		signalDroppedAttack)
	metadata := modeVariants(Case{
		ID:    "deputy/metadata-dropped-uid",
		Title: "a root command that changed its uid cannot chmod a root file in the worktree",
		Rationale: "Without a mount layer, confine's supervisor makes the command's metadata changes (chmod, " +
			"chown, utimes, xattrs) beneath the writable roots, and the kernel checks the supervisor's " +
			"credentials: as root it changed, for a command that had dropped to uid 65534, a root file that the " +
			"kernel refuses that command (inode_owner_or_capable: the owner, or CAP_FOWNER). The runner makes a " +
			"root file of mode 0644 in the worktree; the command, as root, opens it, and a child of it changes every " +
			"uid to 65534 and fchmods it 0666; then the command fchmods it 0640 itself. Unconfined (the control, " +
			"on a file outside) the child gets EPERM and the command succeeds; under confine it must be the same, " +
			"and the mode must end 0640. Root only.",
		Expect: []Expect{{"ABI ≥ 1, root", "the dropped child's fchmod fails with EPERM; the command's own then succeeds (mode 0640), as unconfined"},
			{"ABI ≥ 1, root, seccomp-deny (a listener held above confine)", "both fchmods fail with EPERM, as every metadata call there (the documented limitation); the mode stays 0644"}},
		Setup: func(t *T) {
			t.WriteFile(t.WT+"/rootfile", "root's\n", 0o644)
			t.WriteFile(t.Base+"/control-rootfile", "root's\n", 0o644)
			t.Unwatch(t.Base + "/control-rootfile") // the control's own file, which the unconfined control changes
		},
	}, ", where no namespace can be had (the supervisor makes the change)",
		Expect{"ABI ≥ 1, root, fallback", "the same: the supervisor makes the change with the caller's credentials"},
		[]Expect{{"unprivileged", "SKIP: only root can change its uid"}},
		metadataDroppedAttack)
	return append(signal, metadata...)
}

func metadataDroppedAttack(t *T, m scMode) {
	if os.Geteuid() != 0 {
		t.Skipf("needs root: only root can change its uid")
	}
	chmod := func(path string) helper.Op {
		return helper.Op{Op: "fchmod-dropped", Path: path, Path2: "65534", Arg: "640"}
	}
	if ctl := t.Control(chmod(t.Base + "/control-rootfile"))[0]; !ctl.OK || ctl.Data != "child:EPERM" {
		t.Skipf("the control differs: unconfined, a child dropped to 65534 gets %s on root's file, and root then ok=%v %s", ctl.Data, ctl.OK, ctl.Errno)
	}
	r := deputyConfine(t, m, t.Flags(), t.HelperArgv(chmod(t.WT+"/rootfile")), dOpts{})
	m.ran(t, r.scRun)
	got := r.results[0]
	var st unix.Stat_t
	if err := unix.Stat(t.WT+"/rootfile", &st); err != nil {
		t.Fatalf("stat the root file after: %v", err)
	}
	mode := st.Mode & 0o7777
	switch {
	case got.Data == "no-setuid":
		t.Skipf("%s: the command cannot change its uid here, so there is no route", r.rep.Metadata)
	case r.rep.Metadata == "seccomp-deny":
		// No supervisor: seccomp denies every metadata call, root's own included (README, limitations).
		if got.Data != "child:EPERM" || got.OK || got.Errno != "EPERM" || mode != 0o644 {
			t.Errorf("seccomp-deny: the dropped child got %s, the root command ok=%v %s, and the mode is %#o; want child:EPERM, then EPERM (every metadata call is denied there), 0644",
				got.Data, got.OK, got.Errno, mode)
		} else {
			t.Logf("seccomp-deny: EPERM for the dropped child and for the command, and the mode unchanged: no supervisor acts for anyone")
		}
	case got.Data != "child:EPERM" || !got.OK || mode != 0o640:
		t.Errorf("%s: a child dropped to uid 65534 got %s on fchmod 0666 of root's file in the worktree, the root command then ok=%v %s on fchmod 0640, and the mode is %#o; unconfined: child:EPERM, then ok, 0640",
			r.rep.Metadata, got.Data, got.OK, got.Errno, mode)
	default:
		t.Logf("%s: EPERM for the dropped child, and root's own change after it works, as unconfined", r.rep.Metadata)
	}
}

func signalDroppedAttack(t *T, m scMode) {
	if os.Geteuid() != 0 {
		t.Skipf("needs root: only root can change its uid")
	}
	op := helper.Op{Op: "kill-dropped", Path: "65534", Arg: strconv.Itoa(int(unix.SIGTERM))}
	if ctl := t.Control(op)[0]; ctl.OK || ctl.Errno != "EPERM" || ctl.Data != "alive" {
		t.Skipf("the control differs: unconfined, kill after setresuid(65534) gives ok=%v %s, and the child is %q", ctl.OK, ctl.Errno, ctl.Data)
	}
	r := deputyConfine(t, m, t.Flags(), t.HelperArgv(op), dOpts{})
	m.ran(t, r.scRun)
	got := r.results[0]
	switch {
	case got.Data == "no-setuid":
		t.Skipf("%s: the command cannot change its uid here (setresuid: %s), so there is no route", r.rep.Metadata, got.Errno)
	case got.OK || got.Errno != "EPERM" || got.Data != "alive":
		t.Errorf("%s: after dropping to uid 65534, the command's SIGTERM to its root-owned child gave ok=%v %s, and the child is %q; unconfined: EPERM, alive",
			r.rep.Metadata, got.OK, got.Errno, got.Data)
	default:
		t.Logf("%s: EPERM, and the child lives, as unconfined", r.rep.Metadata)
	}
}

// movedDirCase is issue 43's finding 1: a directory the supervisor once found beneath the worktree, moved out by
// a process outside while the command runs (the caller's own `mv dist ~/releases/`), is outside from then on.
func movedDirCase() Case {
	return Case{
		ID:    "deputy/supervisor-moved-dir",
		Title: "a directory moved out of the worktree during the run takes no more metadata changes from the command",
		Rationale: "Without a mount layer the supervisor makes mode, owner, time and xattr changes for the command, " +
			"after checking that the file lies beneath a writable root. A launcher that remembers directories it once " +
			"found inside keeps trusting one that a process outside (the caller moving a build output away) moved out " +
			"during the run. The command, in the fallback, works in WT/d (its working directory), chmods it and a file " +
			"in it, and waits; the runner moves d out of the worktree (outside /tmp and the writable set) and lets it " +
			"go on: its chmod and utime of the directory and the file must then fail.",
		Expect: []Expect{{"ABI ≥ 1, fallback", "the changes after the move fail (EPERM, EACCES); the moved directory's and file's mode and times are unchanged"},
			fallbackOnly},
		Needs: Needs{Landlock: true, Shell: true},
		Setup: func(t *T) {
			t.Mkdir(t.WT+"/d", t.Base+"/away")
			t.WriteFile(t.WT+"/d/f", "inside\n", 0o644)
			t.Unwatch(t.Base + "/away") // where the runner's own move puts d; Run checks it
		},
		Run: func(t *T) {
			moved := t.Base + "/away/d"
			script := `chmod 0750 .; chmod 0640 f; : > "$WT/ready"; i=0; ` +
				`while [ ! -e "$WT/go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; ` +
				`chmod 0700 . && echo "chmod dir: changed"; chmod 0600 f && echo "chmod file: changed"; ` +
				`touch -d @0 . f && echo "utime: changed"; true`
			done := make(chan error, 1)
			r := t.Confine(t.Flags(), []string{"/bin/sh", "-c", script}, Opts{Dir: t.WT + "/d", NoNamespaces: true,
				Env: append(os.Environ(), "WT="+t.WT), Started: func(int) {
					go func() {
						for i := 0; i < 400 && !Exists(t.WT+"/ready"); i++ {
							time.Sleep(50 * time.Millisecond)
						}
						err := os.Rename(t.WT+"/d", moved)
						os.WriteFile(t.WT+"/go", nil, 0o644)
						done <- err
					}()
				}})
			if err := <-done; err != nil {
				t.Fatalf("moving d out: %v", err)
			}
			t.WantFallback(r)
			if r.Exit != 0 {
				t.Fatalf("the command: exit %d: %s", r.Exit, firstLine(r.Stderr))
			}
			for _, p := range []struct {
				path string
				mode uint32
			}{{moved, 0o750}, {moved + "/f", 0o640}} {
				var st unix.Stat_t
				if err := unix.Lstat(p.path, &st); err != nil {
					t.Fatalf("stat: %v", err)
				}
				if r.Report.MountLayer() || r.Report.Metadata == "supervisor" {
					if st.Mode&0o7777 != p.mode {
						t.Errorf("metadata %s: %s has mode %04o after the move, want %04o (stdout %q)", r.Report.Metadata,
							p.path, st.Mode&0o7777, p.mode, r.Stdout)
					}
				}
				if st.Mtim.Sec == 0 {
					t.Errorf("metadata %s: %s got the command's utime after the move (stdout %q)", r.Report.Metadata, p.path, r.Stdout)
				}
			}
			if strings.Contains(r.Stdout, "changed") {
				t.Errorf("metadata %s: a change after the move succeeded: %q", r.Report.Metadata, r.Stdout)
			}
			t.Logf("metadata %s: after the move every change failed: %s", r.Report.Metadata, firstLine(r.Stderr))
		},
	}
}
