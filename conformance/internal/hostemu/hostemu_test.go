package hostemu

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// childEnv guards the re-executed test binary: a process started with it set probes system calls (under the
// filter its parent set up through Main, as the runner does, or none) and prints one JSON object, call -> errno
// name ("" when the call succeeded), then the result of Check for the emulation childEnv names.
const childEnv = "HOSTEMU_TEST_PROBE"

const missing = "/nonexistent-hostemu-test"

// probe makes harmless calls whose errno tells a filter's answer from the kernel's.
func probe() map[string]string {
	out := map[string]string{}
	name := func(e syscall.Errno) string {
		if e == 0 {
			return ""
		}
		return unix.ErrnoName(e)
	}
	p, _ := unix.BytePtrFromString(missing)
	dot, _ := unix.BytePtrFromString(".")
	empty, _ := unix.BytePtrFromString("")
	call := func(k string, nr uintptr, a ...uintptr) {
		a = append(a, 0, 0, 0, 0, 0, 0)
		_, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		out[k] = name(e)
	}
	call("mount", unix.SYS_MOUNT, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(p)), 0, unix.MS_BIND)
	call("umount2", unix.SYS_UMOUNT2, uintptr(unsafe.Pointer(p)), 0)
	call("pivot_root", unix.SYS_PIVOT_ROOT, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(p)))
	call("open_tree", unix.SYS_OPEN_TREE, ^uintptr(0), uintptr(unsafe.Pointer(p)), 0)
	call("move_mount", unix.SYS_MOVE_MOUNT, ^uintptr(0), uintptr(unsafe.Pointer(empty)), ^uintptr(0), uintptr(unsafe.Pointer(empty)), 0)
	call("fsopen", unix.SYS_FSOPEN, 0, 0)
	call("fsconfig", unix.SYS_FSCONFIG, ^uintptr(0), 0, 0, 0, 0)
	call("fsmount", unix.SYS_FSMOUNT, ^uintptr(0), 0, 0)
	call("fspick", unix.SYS_FSPICK, ^uintptr(0), uintptr(unsafe.Pointer(p)), 0)
	call("mount_setattr", unix.SYS_MOUNT_SETATTR, ^uintptr(0), uintptr(unsafe.Pointer(dot)), 0, 0, 0)
	call("open_tree_attr", unix.SYS_OPEN_TREE_ATTR, ^uintptr(0), uintptr(unsafe.Pointer(p)), 0, 0, 0)
	call("setns", unix.SYS_SETNS, ^uintptr(0), 0)
	call("clone3", unix.SYS_CLONE3, 0, 0)
	call("pidfd_getfd", unix.SYS_PIDFD_GETFD, ^uintptr(0), 0, 0)
	call("kcmp", unix.SYS_KCMP, 0, 0, 0, 0, 0)
	call("io_uring_setup", unix.SYS_IO_URING_SETUP, 0, 0)
	call("unshare(CLONE_FS)", unix.SYS_UNSHARE, unix.CLONE_FS)
	// The landlock calls stay open in every emulation (Docker allows them, moby#43199): ABI version query.
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	out["landlock_create_ruleset"] = name(e)
	_ = r
	// A process in a new user namespace (allowed by ubuntu-userns-restricted): fork+exec of true with CLONE_NEWUSER,
	// and with a mount namespace too; and a plain fork+exec, which every emulation allows.
	for k, flags := range map[string]uintptr{"fork": 0, "clone(CLONE_NEWUSER)": unix.CLONE_NEWUSER,
		"clone(CLONE_NEWUSER|CLONE_NEWNS)": unix.CLONE_NEWUSER | unix.CLONE_NEWNS} {
		c := exec.Command("/proc/self/exe", "-test.run=^$")
		c.Env = []string{}
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
		if flags&unix.CLONE_NEWUSER != 0 {
			c.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
			c.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		}
		err := c.Run()
		out[k] = ""
		if err != nil {
			var en syscall.Errno
			if ok := asErrno(err, &en); ok {
				out[k] = unix.ErrnoName(en)
			} else {
				out[k] = err.Error()
			}
		}
	}
	return out
}

func asErrno(err error, e *syscall.Errno) bool {
	for err != nil {
		if x, ok := err.(syscall.Errno); ok {
			*e = x
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// TestProbeChild is the probing side: it runs only as a child of runUnder.
func TestProbeChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("the probe runs only under a filter, as a child of the other tests")
	}
	b, _ := json.Marshal(probe())
	os.Stdout.Write(append([]byte("PROBE "), append(b, '\n')...))
	if err := Check(os.Getenv(childEnv)); err != nil {
		os.Stdout.WriteString("CHECK " + err.Error() + "\n")
	} else {
		os.Stdout.WriteString("CHECK ok\n")
	}
}

// runUnder runs the probe under emulation name ("" for none) through Main (the test binary plays
// confine-conformance: its TestMain dispatches host-emulation), as uid, and Check(check) there.
func runUnder(t *testing.T, name, check string, uid int) (map[string]string, string) {
	t.Helper()
	self := exe(t, uid)
	argv := []string{self, "-test.run=^TestProbeChild$"}
	if name != "" {
		argv = Argv(self, name, argv)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), childEnv+"="+check, mainEnv+"=1")
	if uid != 0 {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
		c.Dir = "/"
	}
	out, err := c.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var got map[string]string
	check = ""
	for _, l := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(l, "PROBE "); ok {
			require.NoError(t, json.Unmarshal([]byte(s), &got))
		}
		if s, ok := strings.CutPrefix(l, "CHECK "); ok {
			check = s
		}
	}
	require.NotNil(t, got, "%s", out)
	return got, check
}

// mainEnv makes the test binary act as `confine-conformance host-emulation ...` (see TestMain).
const mainEnv = "HOSTEMU_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" && len(os.Args) > 1 && os.Args[1] == "host-emulation" {
		os.Exit(Main(os.Args[2:]))
	}
	rc := m.Run()
	if exeCleanup != "" {
		os.RemoveAll(exeCleanup)
	}
	os.Exit(rc)
}

var (
	exeOnce sync.Once
	exeCopy string
	exeErr  error
)

// exe is the test binary, or for another uid a copy of it that uid can execute (go test builds under a 0700
// directory). The copy is removed by TestMain.
func exe(t *testing.T, uid int) string {
	self, err := os.Executable()
	require.NoError(t, err)
	if uid == os.Geteuid() {
		return self
	}
	exeOnce.Do(func() {
		var dir string
		if dir, exeErr = os.MkdirTemp("", "hostemu-test-"); exeErr != nil {
			return
		}
		exeCleanup = dir
		var b []byte
		if b, exeErr = os.ReadFile(self); exeErr == nil {
			if exeErr = os.Chmod(dir, 0o755); exeErr == nil {
				exeCopy = filepath.Join(dir, "hostemu.test")
				exeErr = os.WriteFile(exeCopy, b, 0o755)
			}
		}
	})
	require.NoError(t, exeErr)
	return exeCopy
}

var exeCleanup string

func users(t *testing.T) []int {
	if os.Geteuid() == 0 {
		return []int{0, 65534}
	}
	t.Log("not root: the unprivileged run only")
	return []int{os.Geteuid()}
}

var mountCalls = []string{"mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
	"fspick", "mount_setattr", "open_tree_attr"}

func TestUbuntuUsernsRestricted(t *testing.T) {
	for _, uid := range users(t) {
		base, check0 := runUnder(t, "", UbuntuUsernsRestricted, uid)
		require.NotEqual(t, "ok", check0, "uid %d: Check passes without the filter", uid)
		got, check := runUnder(t, UbuntuUsernsRestricted, UbuntuUsernsRestricted, uid)
		require.Equal(t, "ok", check, "uid %d", uid)
		for _, c := range mountCalls {
			require.Equal(t, "EACCES", got[c], "uid %d: %s", uid, c)
			require.NotEqual(t, "EACCES", base[c], "uid %d: %s fails with EACCES without the filter too: the probe proves nothing", uid, c)
		}
		// Namespaces can still be made, exactly as without the filter (where the host allows them at all).
		for _, c := range []string{"fork", "clone(CLONE_NEWUSER)", "clone(CLONE_NEWUSER|CLONE_NEWNS)", "unshare(CLONE_FS)", "setns",
			"clone3", "pidfd_getfd", "landlock_create_ruleset"} {
			require.Equal(t, base[c], got[c], "uid %d: %s", uid, c)
		}
		t.Logf("uid %d: user namespace without the filter %q, under it %q", uid, base["clone(CLONE_NEWUSER)"], got["clone(CLONE_NEWUSER)"])
	}
}

func TestNoNamespaces(t *testing.T) {
	for _, uid := range users(t) {
		base, check0 := runUnder(t, "", NoNamespaces, uid)
		require.NotEqual(t, "ok", check0, "uid %d: Check passes without the filter", uid)
		got, check := runUnder(t, NoNamespaces, NoNamespaces, uid)
		require.Equal(t, "ok", check, "uid %d", uid)
		for _, c := range append(mountCalls, "setns", "pidfd_getfd", "kcmp", "io_uring_setup", "unshare(CLONE_FS)",
			"clone(CLONE_NEWUSER)", "clone(CLONE_NEWUSER|CLONE_NEWNS)") {
			require.Equal(t, "EPERM", got[c], "uid %d: %s", uid, c)
		}
		require.Equal(t, "ENOSYS", got["clone3"], "uid %d", uid)
		require.NotEqual(t, "ENOSYS", base["clone3"], "uid %d", uid)
		require.Equal(t, "", base["unshare(CLONE_FS)"], "uid %d: unshare(CLONE_FS) works without the filter", uid)
		require.Equal(t, "", got["fork"], "uid %d: a plain fork+exec", uid)
		require.Equal(t, base["landlock_create_ruleset"], got["landlock_create_ruleset"], "uid %d: Docker allows landlock", uid)
	}
}

func TestNestedSupervisor(t *testing.T) {
	for _, uid := range users(t) {
		base, check0 := runUnder(t, "", NestedSupervisor, uid)
		require.Contains(t, check0, "a second listener was granted", "uid %d: without the wrapper, Check must fail", uid)
		got, check := runUnder(t, NestedSupervisor, NestedSupervisor, uid)
		require.Equal(t, "ok", check, "uid %d: a second listener must be refused with EBUSY", uid)
		// The mount API is denied as confine's own filter denies it; nothing else changes: the filter only asks its
		// listener, which lets every call continue.
		for _, c := range mountCalls {
			require.Equal(t, "EPERM", got[c], "uid %d: %s", uid, c)
			delete(got, c)
			delete(base, c)
		}
		require.Equal(t, base, got, "uid %d", uid)
	}
}

// TestNestedSupervisorServes proves the held listener is live: mknodat (a FIFO) under the wrapper is sent to it
// and continues (the FIFO exists after; with no one answering, the call would never return), the wrapper mirrors
// the command's exit status, and the caller's descriptor 3 reaches the command (as --report-fd 3 must).
func TestNestedSupervisorServes(t *testing.T) {
	dir, err := os.MkdirTemp("", "hostemu-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	require.NoError(t, os.Chmod(dir, 0o777))
	for _, uid := range users(t) {
		self := exe(t, uid)
		fifo := fmt.Sprintf("%s/fifo-%d", dir, uid)
		c := exec.Command(self, "host-emulation", NestedSupervisor, "--", "/bin/sh", "-c", "mkfifo \"$0\" && echo reported >&3 && exit 7", fifo)
		c.Env = append(os.Environ(), mainEnv+"=1")
		r, w, err := os.Pipe()
		require.NoError(t, err)
		c.ExtraFiles = []*os.File{w}
		if uid != 0 {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
		}
		out, err := c.CombinedOutput()
		w.Close()
		fd3, _ := io.ReadAll(r)
		r.Close()
		require.Equal(t, "reported\n", string(fd3), "uid %d: descriptor 3", uid)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		require.Equal(t, 7, ee.ExitCode(), "%s", out)
		var st unix.Stat_t
		require.NoError(t, unix.Stat(fifo, &st), "uid %d", uid)
		require.Equal(t, uint32(unix.S_IFIFO), st.Mode&unix.S_IFMT)
	}
}

// TestKeyringDenialIsDocker: no-namespaces denies the keyring calls, as Docker's default profile does.
func TestKeyringDenialIsDocker(t *testing.T) {
	arch, err := NativeArch()
	require.NoError(t, err)
	p, err := Program(NoNamespaces, arch)
	require.NoError(t, err)
	for _, nr := range KeyringDenied {
		found := false
		for i, ins := range p {
			if ins.Code == unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K && ins.K == nr {
				found = p[i+1].K == errnoRet(unix.EPERM)
			}
		}
		require.True(t, found, "no-namespaces must answer keyring call %d with EPERM", nr)
	}
}

func TestProgramShape(t *testing.T) {
	for _, arch := range []uint32{unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64} {
		for _, n := range Names {
			p, err := Program(n, arch)
			require.NoError(t, err)
			for i, ins := range p {
				if ins.Code&0x07 == unix.BPF_JMP {
					require.Less(t, i+1+int(ins.Jt), len(p), "%s: instruction %d jt", n, i)
					require.Less(t, i+1+int(ins.Jf), len(p), "%s: instruction %d jf", n, i)
				}
			}
			require.Equal(t, uint16(unix.BPF_RET|unix.BPF_K), p[len(p)-1].Code, n)
			require.Equal(t, uint32(unix.SECCOMP_RET_ALLOW), p[len(p)-1].K, n)
		}
	}
	_, err := Program("bogus", unix.AUDIT_ARCH_X86_64)
	require.Error(t, err)
}
