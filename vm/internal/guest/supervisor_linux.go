package guest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/vm/internal/console"
	"github.com/confine-dev/confine/vm/internal/landlockabi"
)

// Main is the guest's PID 1. It never returns: whatever happens, it syncs and powers the VM off (the kernel runs
// with panic=-1 and QEMU with -no-reboot, so a failure to power off still ends QEMU).
func Main() {
	out := os.Stdout // the kernel opened /dev/console for init
	defer powerOff()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(out, "vm-init: panic: %v\n", r)
		}
	}()
	cfg, err := readConfig()
	if err != nil {
		fmt.Fprintf(out, "vm-init: %v\n", err)
		return
	}
	setupErr := setup(out)
	landlock, abi := landlockabi.Probe()
	var release string
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		release = unix.ByteSliceToString(uts.Release[:])
	}
	setupMounts := mountTable()
	runPasses(cfg, console.Result{Exit: -1, Landlock: landlock, ABI: abi, Release: release}, setupErr, out, func() {
		endStragglers()
		resetState(setupMounts, out)
	})
}

// runPasses runs cfg's passes one after the other, each reported whole (BEGIN, its output, RESULT: base with the
// pass's outcome) before the next starts, with between called after each that ran; END follows the last, for
// every pass, as the guest goes to power off. With setupErr set no pass runs, and each reports that error.
func runPasses(cfg Config, base console.Result, setupErr error, out io.Writer, between func()) {
	for _, p := range cfg.Passes {
		m := console.NewMarkers(p.Nonce)
		res := base
		out.Write(m.Begin())
		if setupErr == nil {
			run(cfg.Argv, p.Env, cfg.Timeout, m, out, &res)
		} else {
			res.Error = setupErr.Error()
			res.StdoutSHA256 = hex.EncodeToString(sha256.New().Sum(nil))
		}
		res.Uptime = uptime()
		out.Write(m.ResultLine(res))
		if setupErr == nil {
			between()
		}
	}
	for _, p := range cfg.Passes {
		out.Write(console.NewMarkers(p.Nonce).End())
	}
}

func readConfig() (Config, error) {
	var c Config
	b, err := os.ReadFile(ConfigPath)
	if err != nil {
		return c, fmt.Errorf("read run config: %w", err)
	}
	// The file is readable by every uid: once it is gone, an unprivileged process of a pass cannot learn the
	// other passes' nonces and print a record in one's name. Root in the guest still can, from PID 1's memory
	// (/proc/1/mem), as it could always forge its own pass's: vm/README.md, "One boot per kernel".
	if err := os.Remove(ConfigPath); err != nil {
		return c, fmt.Errorf("remove run config: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("parse %s: %w", ConfigPath, err)
	}
	if len(c.Passes) == 0 || len(c.Argv) == 0 || c.Timeout <= 0 {
		return c, fmt.Errorf("%s: passes, argv and timeout are required", ConfigPath)
	}
	for _, p := range c.Passes {
		if p.Nonce == "" {
			return c, fmt.Errorf("%s: a pass without a nonce", ConfigPath)
		}
	}
	return c, nil
}

type mount struct {
	source, target, fstype string
	flags                  uintptr
	data                   string
	optional               bool
}

var mounts = []mount{
	{"devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID, "mode=0755", false},
	{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, "", false},
	{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, "", false},
	{"securityfs", "/sys/kernel/security", "securityfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, "", false},
	{"tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777", false},
	{"devpts", "/dev/pts", "devpts", unix.MS_NOSUID | unix.MS_NOEXEC, "mode=0620,ptmxmode=0666", true},
	{"tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777", true},
}

// setup turns the initramfs into a real mount (pivot_root, which bwrap needs, refuses the rootfs itself: bind it
// onto /newroot, move that onto /, chroot), mounts the filesystems, sets the console to raw output (no \n -> \r\n,
// so payload bytes arrive unchanged) and installs the busybox applet links.
func setup(out io.Writer) error {
	if err := unix.Mount("/", "/newroot", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind / on /newroot: %w", err)
	}
	if err := unix.Chdir("/newroot"); err != nil {
		return fmt.Errorf("chdir /newroot: %w", err)
	}
	if err := unix.Mount(".", "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move /newroot to /: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	// The rootfs's root may be 1777 (a tmpfs): a root that only root may change, as on any host, so that the
	// launcher trusts the guest's /usr/bin/bwrap (it refuses one in a directory others can write).
	if err := unix.Chmod("/", 0o755); err != nil {
		return fmt.Errorf("chmod /: %w", err)
	}
	for _, m := range mounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil && !m.optional {
			return err
		}
		if err := unix.Mount(m.source, m.target, m.fstype, m.flags, m.data); err != nil {
			if m.optional {
				fmt.Fprintf(out, "vm-init: mount %s: %v (optional, continuing)\n", m.target, err)
				continue
			}
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err)
		}
	}
	// /var/tmp as on any host: root's, world-writable and sticky (the conformance runner keeps its scratch trees
	// there, outside /tmp, which confine always allows writing).
	if err := os.MkdirAll("/var/tmp", 0o755); err != nil {
		return err
	}
	if err := unix.Chmod("/var/tmp", 0o1777); err != nil {
		return fmt.Errorf("chmod /var/tmp: %w", err)
	}
	if t, err := unix.IoctlGetTermios(1, unix.TCGETS); err == nil {
		t.Oflag &^= unix.OPOST
		if err := unix.IoctlSetTermios(1, unix.TCSETS, t); err != nil {
			return fmt.Errorf("console raw output: %w", err)
		}
	}
	if msg, err := exec.Command("/bin/busybox", "--install", "-s", "/bin").CombinedOutput(); err != nil {
		return fmt.Errorf("busybox --install: %v: %s", err, strings.TrimSpace(string(msg)))
	}
	return nil
}

// run starts the payload (argv, with env added) in its own process group with stdout on a pipe, relays each stdout
// line as a console output record, and kills the whole group at the timeout or once the payload has exited.
func run(argv, env []string, timeout time.Duration, m console.Markers, out io.Writer, res *console.Result) {
	sum := sha256.New()
	defer func() { res.StdoutSHA256 = hex.EncodeToString(sum.Sum(nil)) }()
	r, w, err := os.Pipe()
	if err != nil {
		res.Error = fmt.Sprintf("pipe: %v", err)
		return
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/tmp"
	cmd.Env = append([]string{"PATH=/bin:/sbin:/usr/bin:/usr/sbin", "HOME=/root", "TERM=dumb"}, env...)
	cmd.Stdout = w
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		w.Close()
		r.Close()
		res.Error = fmt.Sprintf("start %s: %v", argv[0], err)
		return
	}
	w.Close()
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				line = []byte(strings.TrimSuffix(string(line), "\n"))
				sum.Write(line)
				sum.Write([]byte{'\n'})
				res.Lines++
				out.Write(m.Output(line))
			}
			if err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		res.TimedOut = true
		unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		werr = <-done
	}
	res.Seconds = time.Since(start).Seconds()
	// Stragglers in the payload's group would hold the pipe open: end them, then drain what they wrote.
	unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	select {
	case <-relayed:
	case <-time.After(5 * time.Second):
		r.Close()
		<-relayed
		res.Error = "payload stdout still open 5s after exit (a process outside its group holds it)"
	}
	res.Exit = cmd.ProcessState.ExitCode()
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = unix.SignalName(ws.Signal())
		}
	} else if werr != nil {
		res.Error = werr.Error()
	}
	if res.TimedOut {
		res.Error = fmt.Sprintf("guest timeout: payload killed after %s", timeout)
	}
}

// endStragglers kills every process but this one (kill(-1), as PID 1) and reaps them, so that the next pass starts
// in a guest where no process of an earlier pass runs: one that left the payload's process group (a daemon, a
// new session) would otherwise outlive its pass. It waits at most 5 s for them to die.
func endStragglers() {
	unix.Kill(-1, unix.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		switch {
		case err == unix.ECHILD:
			return
		case err == nil && pid == 0:
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// scratchDirs are emptied between passes (resetState): where the payload's cases make their trees.
var scratchDirs = []string{"/tmp", "/var/tmp"}

// mountTable returns the mounts of /proc/self/mountinfo, in mount order: each one's id (field 1) and mount point
// (field 5).
func mountTable() [][2]string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out [][2]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) > 4 {
			out = append(out, [2]string{f[0], f[4]})
		}
	}
	return out
}

// resetState puts back, after a pass, what the guest had before the first: it detaches every mount made since
// (by mount id, newest first, so one stacked on a kept mount point goes too) and empties the scratch directories,
// so that a pass that ended mid-case leaves no read-only mount or planted tree for the next to find. What it
// cannot undo it prints. What is global by design (a loaded module, the simulated WSL interop's binfmt_misc entry,
// which registering again leaves as it is) stays.
func resetState(keep [][2]string, out io.Writer) {
	kept := map[string]bool{}
	for _, m := range keep {
		kept[m[0]] = true
	}
	now := mountTable()
	for i := len(now) - 1; i >= 0; i-- {
		if !kept[now[i][0]] {
			if err := unix.Unmount(now[i][1], unix.MNT_DETACH); err != nil {
				fmt.Fprintf(out, "vm-init: between passes: umount %s: %v\n", now[i][1], err)
			}
		}
	}
	for _, d := range scratchDirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil {
				fmt.Fprintf(out, "vm-init: between passes: %v\n", err)
			}
		}
	}
}

func uptime() float64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	var up float64
	fmt.Sscanf(string(b), "%f", &up)
	return up
}

func powerOff() {
	unix.Sync()
	unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	for { // reboot failed: exiting would panic the kernel, which panic=-1 turns into a QEMU exit anyway
		time.Sleep(time.Hour)
	}
}
