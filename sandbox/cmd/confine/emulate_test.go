//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/seccomp"
)

// A hostMode reaches one of confine's metadata modes on this host, as root or as nobody: the mount layer as the
// host gives it, or the hosts without one, reproduced as conformance/internal/hostemu does (a seccomp filter on
// the thread that starts confine, inherited by it): "supervisor" denies the mount API with EACCES (Ubuntu 24.04's
// AppArmor userns restriction), "seccomp-deny" does too and holds a listener, so that confine gets EBUSY for its
// own (a confine under another supervisor).
type hostMode struct {
	metadata string // the report's metadata the mode must give
	nobody   bool   // run as nobody (root only)
}

func (m hostMode) String() string {
	if m.nobody {
		return m.metadata + "/nobody"
	}
	return m.metadata + "/" + map[bool]string{true: "root", false: "user"}[os.Geteuid() == 0]
}

// hostModes are every mode a run on this host can reach: each one as the test's own user and, for root, as nobody.
func hostModes() []hostMode {
	var modes []hostMode
	for _, m := range []string{"mount-layer", "supervisor", "seccomp-deny"} {
		modes = append(modes, hostMode{metadata: m})
		if os.Geteuid() == 0 {
			modes = append(modes, hostMode{metadata: m, nobody: true})
		}
	}
	return modes
}

// mountAPI is every system call that changes the mount table (hostemu.MountAPI).
var mountAPI = []uint32{unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_OPEN_TREE,
	unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_MOUNT_SETATTR, unix.SYS_OPEN_TREE_ATTR}

// noMountsProgram answers EACCES to the mount API of the native architecture and allows everything else.
func noMountsProgram(t *testing.T) []unix.SockFilter {
	arch := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]
	if arch == 0 {
		t.Skipf("no seccomp architecture known for %s", runtime.GOARCH)
	}
	n := len(mountAPI)
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: arch, Jt: 0, Jf: uint8(n + 1)},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
	}
	for i, nr := range mountAPI {
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr, Jt: uint8(n - i), Jf: 0})
	}
	return append(prog,
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)})
}

// startIn starts cmd in mode m (as nobody where m says), and returns a function that waits for it and then
// drops what the mode held (the listener).
func startIn(t *testing.T, m hostMode, cmd *exec.Cmd) func() error {
	t.Helper()
	if m.nobody {
		cmd.SysProcAttr = nobodyCred()
	}
	if m.metadata == "mount-layer" {
		require.NoError(t, cmd.Start())
		return cmd.Wait
	}
	prog := noMountsProgram(t)
	type started struct {
		listener int
		err      error
	}
	done := make(chan started)
	go func() {
		runtime.LockOSThread() // never unlocked: the filtered thread ends with this goroutine
		s := started{listener: -1}
		if s.err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); s.err == nil {
			if m.metadata == "seccomp-deny" {
				s.listener, s.err = seccomp.InstallListener(prog)
			} else {
				s.err = seccomp.Install(prog)
			}
		}
		if s.err == nil {
			s.err = cmd.Start() // forked from this thread: confine inherits its filter
		}
		done <- s
	}()
	s := <-done
	require.NoError(t, s.err, "starting confine under the %s emulation", m)
	return func() error {
		err := cmd.Wait()
		if s.listener >= 0 {
			unix.Close(s.listener)
		}
		return err
	}
}

// modeRun is one launch in a hostMode, with a report.
type modeRun struct {
	status         int
	stdout, stderr string
	metadata       string
	report         []byte
}

// confineIn runs confine args in mode m (exe: a launcher nobody can run, for nobody's modes) with a report on
// descriptor 3, and skips where the host does not give that mode (say, no user namespaces for nobody).
func confineIn(t *testing.T, m hostMode, exe string, args ...string) modeRun {
	t.Helper()
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(exe, append([]string{"--report-fd", "3"}, args...)...)
	cmd.Env = withoutTempVars(os.Environ())
	cmd.ExtraFiles = []*os.File{rf}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second // a process left holding an output pipe must not hang the test
	err = startIn(t, m, cmd)()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	r := modeRun{status: cmd.ProcessState.Sys().(syscall.WaitStatus).ExitStatus(), stdout: out.String(), stderr: errb.String()}
	r.report, _ = os.ReadFile(rf.Name())
	var rep struct{ Metadata string }
	require.NoError(t, json.Unmarshal(r.report, &rep), "%s: report %q, stderr %s", m, r.report, r.stderr)
	if r.metadata = rep.Metadata; r.metadata != m.metadata {
		t.Skipf("%s: this host gives metadata %q instead (as nobody: no user namespaces here?)", m, r.metadata)
	}
	return r
}
