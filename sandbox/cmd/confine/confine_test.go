//go:build linux

package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/landlock"
)

// These tests run the real, statically built launcher on the host kernel, as a user would.

// bin is the launcher under test: $CONFINE_BIN (a prebuilt artifact, e.g. Bazel's), else built here with
// the go command. noBin says why there is none; every test then skips with that reason.
var bin, noBin string

func TestMain(m *testing.M) {
	if name, ok := os.LookupEnv(shmOpenEnv); ok { // the confined command: shm_open's calls
		if err := shmOpenCommand(name); err != nil {
			fmt.Println("shm:", err)
			os.Exit(1)
		}
		fmt.Println("shm: ok")
		os.Exit(0)
	}
	if _, ok := os.LookupEnv(mkdirTempEnv); ok { // the confined command: Go's os.MkdirTemp in $TMPDIR
		dir, err := os.MkdirTemp("", "confine-go")
		if err != nil {
			fmt.Println("go:", err)
			os.Exit(1)
		}
		fmt.Println("go: ok")
		os.RemoveAll(dir)
		os.Exit(0)
	}
	if bin = os.Getenv("CONFINE_BIN"); bin != "" {
		if abs, err := filepath.Abs(bin); err == nil { // Bazel passes a relative path; tests change directory
			bin = abs
		}
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "confine-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "confine")
	if _, err := exec.LookPath("go"); err != nil {
		noBin = "no $CONFINE_BIN and no go command to build confine with"
	} else {
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building confine: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func requireLandlock(t *testing.T) int {
	t.Helper()
	requireBin(t)
	// landlock.Query, not launch.Probe: Probe starts /proc/self/exe, which here is this test binary.
	st, err := landlock.Query(landlock.Host{})
	if err != nil || st.ABI < 1 {
		t.Skipf("needs Landlock on the host kernel: %s (%v)", st.State, err)
	}
	return st.ABI
}

func requireBin(t *testing.T) {
	t.Helper()
	if noBin != "" {
		t.Skip(noBin)
	}
}

type run struct {
	status         int
	signal         syscall.Signal
	stdout, stderr string
}

// sandbox makes a worktree and an outside directory beside it (not under /tmp, which is writable by default).
func sandbox(t *testing.T) (worktree, outside string) {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "confine-it")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	worktree, outside = filepath.Join(base, "worktree"), filepath.Join(base, "outside")
	require.NoError(t, os.Mkdir(worktree, 0o755))
	require.NoError(t, os.Mkdir(outside, 0o755))
	return worktree, outside
}

func confine(t *testing.T, stdin string, env []string, args ...string) run {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(withoutTempVars(os.Environ()), env...) // no warning line about the caller's own TMPDIR
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	r := run{status: ws.ExitStatus(), stdout: out.String(), stderr: errb.String()}
	if ws.Signaled() {
		r.signal = ws.Signal()
	}
	return r
}

// requireKernelDenial checks that the shell saw the kernel refuse: EACCES from Landlock, or EROFS from the
// mount layer, which answers first for everything outside the writable roots.
func requireKernelDenial(t *testing.T, stderr string) {
	t.Helper()
	require.True(t, strings.Contains(stderr, "Permission denied") || strings.Contains(stderr, "Read-only file system"),
		"want EACCES or EROFS, got %q", stderr)
}

// metadataMode runs the launcher with a report and returns how metadata is protected here.
func metadataMode(t *testing.T, worktree string) string {
	t.Helper()
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(bin, "--worktree", worktree, "--report-fd", "3", "--", "true")
	cmd.ExtraFiles = []*os.File{rf}
	require.NoError(t, cmd.Run())
	var rep struct{ Metadata string }
	b, _ := os.ReadFile(rf.Name())
	require.NoError(t, json.Unmarshal(b, &rep), "%s", b)
	return rep.Metadata
}

func sh(worktree, script string) []string {
	return []string{"--worktree", worktree, "--", "/bin/sh", "-c", script}
}

func TestWriteOutsideIsDeniedAndInsideWorks(t *testing.T) {
	requireLandlock(t)
	w, out := sandbox(t)
	r := confine(t, "", []string{"HOME=" + out}, sh(w, `echo x > "$HOME/outside"`)...)
	require.NotEqual(t, 0, r.status)
	requireKernelDenial(t, r.stderr)
	require.NoFileExists(t, filepath.Join(out, "outside"))

	r = confine(t, "", []string{"HOME=" + w}, sh(w, `echo x > "$HOME/inside"`)...)
	require.Equal(t, 0, r.status, r.stderr)
	require.FileExists(t, filepath.Join(w, "inside"))
}

func TestRemoveOutsideFailsAtTheKernel(t *testing.T) {
	requireLandlock(t)
	w, out := sandbox(t)
	victim := filepath.Join(out, "tree", "victim")
	require.NoError(t, os.MkdirAll(filepath.Dir(victim), 0o755))
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o644))
	// The path is assembled at run time and reached through cd, so no string check could see it.
	r := confine(t, "", []string{"P1=" + filepath.Dir(out), "P2=" + filepath.Base(out)},
		sh(w, `cd "$P1" && cd "$P2" && rm -fr tree; rm -fr "$P1/$P2/tree"`)...)
	require.NotEqual(t, 0, r.status)
	requireKernelDenial(t, r.stderr)
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "keep", string(b))
}

func TestDevNullWorksAndOtherDevNodesDoNot(t *testing.T) {
	requireLandlock(t)
	w, _ := sandbox(t)
	r := confine(t, "", nil, sh(w, `echo a > /dev/null && echo b >> /dev/null && : > /dev/null && echo ok`)...)
	require.Equal(t, 0, r.status, r.stderr)
	require.Equal(t, "ok\n", r.stdout)
	name := fmt.Sprintf("/dev/confine-test-%d", os.Getpid())
	r = confine(t, "", nil, sh(w, "echo x > "+name)...)
	require.NotEqual(t, 0, r.status)
	require.NoFileExists(t, name)
	if _, err := os.Stat("/dev/shm"); err == nil {
		r = confine(t, "", nil, sh(w, "echo x > /dev/shm/confine-test")...)
		require.NoFileExists(t, "/dev/shm/confine-test", "the host's /dev/shm is never written (a private "+
			"tmpfs covers it with the mount layer; it stays read-only without): %s", r.stderr)
	}
}

func TestDevNullMetadataIsUntouchable(t *testing.T) {
	requireLandlock(t)
	w, _ := sandbox(t)
	var before syscall.Stat_t
	require.NoError(t, syscall.Stat("/dev/null", &before))
	r := confine(t, "", nil, sh(w, "chmod 600 /dev/null; touch /dev/null; rm -f /dev/null; mknod /dev/null c 1 5")...)
	require.NotEqual(t, 0, r.status)
	var after syscall.Stat_t
	require.NoError(t, syscall.Stat("/dev/null", &after))
	require.Equal(t, before.Mode, after.Mode)
	require.Equal(t, before.Rdev, after.Rdev)
	require.Equal(t, before.Ino, after.Ino, "/dev/null was replaced")
}

func TestSymlinkInsideTheWorktreeGrantsNothing(t *testing.T) {
	requireLandlock(t)
	w, out := sandbox(t)
	require.NoError(t, os.Symlink(out, filepath.Join(w, "escape")))
	r := confine(t, "", []string{"W=" + w}, sh(w, `cd "$W" && { echo x > escape/file; mkdir escape/dir; ln -s x escape/sym; }`)...)
	require.NotEqual(t, 0, r.status)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Empty(t, entries, "something landed outside through the symlink")
}

func TestMetadataOutsideIsUnchanged(t *testing.T) {
	requireLandlock(t)
	w, out := sandbox(t)
	f := filepath.Join(out, "f")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	var before syscall.Stat_t
	require.NoError(t, syscall.Stat(f, &before))
	r := confine(t, "", nil, sh(w, fmt.Sprintf(`chmod 600 %[1]s; touch -d 2001-01-01 %[1]s; ln %[1]s hard; mv %[1]s .; truncate -s0 %[1]s`, f))...)
	require.NotEqual(t, 0, r.status)
	var after syscall.Stat_t
	require.NoError(t, syscall.Stat(f, &after))
	require.Equal(t, before, after, "mode, owner, size, times or link count changed outside")
}

func TestCrossDirectoryRenameInsideFollowsTheABI(t *testing.T) {
	abi := requireLandlock(t)
	w, _ := sandbox(t)
	r := confine(t, "", []string{"W=" + w}, sh(w, `cd "$W" && mkdir a b && echo x > a/f && ln a/f a/g && ln a/g b/g`)...)
	if abi >= 2 {
		require.Equal(t, 0, r.status, r.stderr)
		require.FileExists(t, filepath.Join(w, "b", "g"))
	} else {
		require.NotEqual(t, 0, r.status, "ABI 1 denies cross-directory rename with EXDEV")
		require.FileExists(t, filepath.Join(w, "a", "g"), "a rename inside one directory still works")
	}
}

func TestReadOnlyMode(t *testing.T) {
	requireLandlock(t)
	w, _ := sandbox(t)
	r := confine(t, "", nil, "--worktree", w, "--mode", "read-only", "--", "/bin/sh", "-c",
		`cat /etc/hostname >/dev/null && echo x > /tmp/confine-ro-$$ && rm /tmp/confine-ro-$$ && echo x > `+w+`/f`)
	require.NotEqual(t, 0, r.status)
	requireKernelDenial(t, r.stderr)
	require.NoFileExists(t, filepath.Join(w, "f"))
}

func TestExitStatusSignalsAndStdioPassThrough(t *testing.T) {
	requireLandlock(t)
	w, _ := sandbox(t)
	for _, code := range []int{0, 1, 2, 42, 124, 125, 126, 127, 128, 255} {
		r := confine(t, "", nil, sh(w, fmt.Sprintf("exit %d", code))...)
		require.Equal(t, code, r.status, "exit %d", code)
	}
	r := confine(t, "", nil, sh(w, "kill -TERM $$")...)
	require.Equal(t, syscall.SIGTERM, r.signal, "the command's own signal death")
	r = confine(t, "", nil, sh(w, "kill -KILL $$")...)
	require.Equal(t, syscall.SIGKILL, r.signal)
	r = confine(t, "hello stdin", nil, sh(w, "cat; echo err >&2")...)
	require.Equal(t, "hello stdin", r.stdout)
	require.Equal(t, "err\n", r.stderr)
}

func TestNotFoundAndNotExecutable(t *testing.T) {
	requireLandlock(t)
	w, _ := sandbox(t)
	r := confine(t, "", nil, "--worktree", w, "--", "confine-no-such-command")
	require.Equal(t, 127, r.status)
	require.Equal(t, "confine: confine-no-such-command: command not found\n", r.stderr)
	r = confine(t, "", nil, "--worktree", w, "--", "/etc/hostname")
	require.Equal(t, 126, r.status, r.stderr)
	r = confine(t, "", []string{"PATH=/nonexistent:/usr/bin:/bin"}, "--worktree", w, "--", "true")
	require.Equal(t, 0, r.status, "PATH lookup: %s", r.stderr)
}

func TestDescriptorsAreNotInherited(t *testing.T) {
	requireLandlock(t)
	w, out := sandbox(t)
	leak, err := os.Create(filepath.Join(out, "leak"))
	require.NoError(t, err)
	defer leak.Close()
	cmd := exec.Command(bin, sh(w, `echo escaped >&3`)...)
	cmd.ExtraFiles = []*os.File{leak} // fd 3, open for writing outside the worktree
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.Error(t, cmd.Run())
	b, err := os.ReadFile(leak.Name())
	require.NoError(t, err)
	require.Empty(t, b, "an inherited descriptor let the command write outside")
	require.Contains(t, errb.String(), "3")
}

func TestReportOnDescriptor(t *testing.T) {
	abi := requireLandlock(t)
	w, _ := sandbox(t)
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(bin, "--worktree", w, "--report-fd", "3", "--", "/bin/sh", "-c", "echo hi >&3 2>/dev/null; true")
	cmd.ExtraFiles = []*os.File{rf}
	require.NoError(t, cmd.Run())
	b, err := os.ReadFile(rf.Name())
	require.NoError(t, err)
	var rep struct {
		Schema, Outcome string
		ABI             int
		Rules           []struct{ Path, Type string }
	}
	require.NoError(t, json.Unmarshal(b, &rep), "%s", b)
	require.Equal(t, "confine.report/v1", rep.Schema)
	require.Equal(t, "exec", rep.Outcome)
	require.Equal(t, abi, rep.ABI)
	require.Equal(t, w, rep.Rules[0].Path)
	require.Equal(t, 1, strings.Count(string(b), "\n"), "one line, and nothing from the command: the "+
		"report descriptor is closed before exec")
}

func TestMetadataInsideWorksWithTheMountLayer(t *testing.T) {
	requireLandlock(t)
	w, out := sandbox(t)
	if m := metadataMode(t, w); m != "mount-layer" {
		t.Skipf("the mount layer is not available here (metadata: %s): chmod and touch are denied everywhere", m)
	}
	require.NoError(t, os.WriteFile(filepath.Join(out, "f"), []byte("x"), 0o644))
	r := confine(t, "", []string{"W=" + w, "HOME=" + w, "GIT_CONFIG_NOSYSTEM=1"}, sh(w, `cd "$W" && set -e
echo '#!/bin/sh' > s.sh && chmod +x s.sh && ./s.sh
touch -d 2001-01-01 s.sh
mkdir src && echo a > src/a && tar cf t.tar src && mkdir x && tar xf t.tar -C x
git init -q repo && cd repo && echo x > x && git add x
git -c user.email=a@b -c user.name=n commit -qm init && git checkout -qb topic && echo ok`)...)
	require.Equal(t, 0, r.status, r.stderr)
	require.Equal(t, "ok\n", r.stdout)
	r = confine(t, "", nil, sh(w, "chmod 600 "+filepath.Join(out, "f"))...)
	require.NotEqual(t, 0, r.status)
	require.Contains(t, r.stderr, "Read-only file system")
}

func TestRelativePathsFromAWorkingDirectoryInsideTheWorktree(t *testing.T) {
	requireLandlock(t)
	w, _ := sandbox(t)
	cmd := exec.Command(bin, sh(w, "mkdir d && echo x > d/f && chmod +x d/f && cat d/f")...)
	cmd.Dir = w // the caller's working directory is the worktree, as an agent's usually is
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "x\n", string(out))
}

func TestSignalsReachTheLayeredCommand(t *testing.T) {
	requireLandlock(t)
	w, _ := sandbox(t)
	cmd := exec.Command(bin, sh(w, `trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done`)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line := make([]byte, 6)
	_, err = io.ReadFull(stdout, line)
	require.NoError(t, err)
	require.Equal(t, "ready\n", string(line), "the trap is set")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM), "signal the launcher, as a caller would")
	err = cmd.Wait()
	require.Equal(t, 7, cmd.ProcessState.ExitCode(), "the command's trap ran: %v", err)
}

func TestInternalLayerVariableIsRefused(t *testing.T) {
	requireBin(t)
	w, _ := sandbox(t)
	r := confine(t, "", []string{"CONFINE_INTERNAL_MOUNT_LAYER=mnt:[1]:3"}, sh(w, "echo ran")...)
	require.Equal(t, 125, r.status)
	require.Empty(t, r.stdout)
}

func TestTTYAllowsNewPseudoTerminals(t *testing.T) {
	requireLandlock(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 to call openpty(3)")
	}
	w, _ := sandbox(t)
	openpty := []string{py, "-c", "import os; os.openpty(); print('ok')"}
	r := confine(t, "", nil, append([]string{"--worktree", w, "--tty", "--"}, openpty...)...)
	require.Equal(t, 0, r.status, r.stderr)
	require.Equal(t, "ok\n", r.stdout)
	r = confine(t, "", nil, append([]string{"--worktree", w, "--"}, openpty...)...)
	require.NotEqual(t, 0, r.status, "without --tty, /dev/ptmx is not writable")
	require.Contains(t, r.stderr, "PermissionError")
}

// As root the mount layer is built in place, and the command runs as confine's child, so that confine can end
// what the command leaves behind (issue 28): the command's parent is the pid the caller started.
func TestRootRunsTheCommandAsItsChild(t *testing.T) {
	requireLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("as root the mount layer is built in place; this run is not root")
	}
	w, _ := sandbox(t)
	cmd := exec.Command(bin, sh(w, `echo $PPID $$`)...)
	out, err := cmd.Output()
	require.NoError(t, err)
	f := strings.Fields(string(out))
	require.Len(t, f, 2, "%q", out)
	require.Equal(t, fmt.Sprint(cmd.Process.Pid), f[0], "the command's parent is confine")
	require.NotEqual(t, fmt.Sprint(cmd.Process.Pid), f[1])
}

const nobody = 65534

// asNobody prepares a run of the launcher as nobody where Landlock is (asNobodyAnyKernel), or skips.
func asNobody(t *testing.T) (exe, w, out string) {
	t.Helper()
	requireLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the launcher as another user; as non-root every test here is that case")
	}
	return asNobodyAnyKernel(t)
}

func nobodyCred() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
}

func TestUnprivilegedUserGetsTheLayerInAChild(t *testing.T) {
	exe, w, out := asNobody(t)
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(exe, "--worktree", w, "--report-fd", "3", "--", "/bin/sh", "-c",
		`cd "$0" && echo x > f && chmod +x f && touch f && id -u && echo $$; echo y > "$1"`, w, filepath.Join(out, "f"))
	cmd.SysProcAttr = nobodyCred()
	cmd.ExtraFiles = []*os.File{rf}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var rep struct{ Metadata string }
	rb, _ := os.ReadFile(rf.Name())
	require.NoError(t, json.Unmarshal(rb, &rep), "report %q, stderr %s", rb, stderr.String())
	if rep.Metadata != "mount-layer" {
		t.Skipf("user namespaces are not available to nobody here (metadata: %s): %s", rep.Metadata, rb)
	}
	require.Error(t, err, "the write outside must fail")
	lines := strings.Fields(stdout.String())
	require.Len(t, lines, 2, "stdout %q, stderr %q", stdout.String(), stderr.String())
	require.Equal(t, "65534", lines[0], "the command keeps the caller's uid inside its user namespace")
	require.NotEqual(t, fmt.Sprint(cmd.Process.Pid), lines[1], "a non-root command runs in a child")
	require.Contains(t, stderr.String(), "Read-only file system")
	require.NoFileExists(t, filepath.Join(out, "f"))
}

func TestRootCannotUndoTheMountLayerOrMakeDevices(t *testing.T) {
	requireLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("root's capabilities are the question; this run is not root")
	}
	w, out := sandbox(t)
	victim := filepath.Join(out, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("x"), 0o600))
	r := confine(t, "", []string{"W=" + w, "OUT=" + out, "V=" + victim}, sh(w, `
		mount -o remount,bind,rw "$OUT" 2>/dev/null && echo REMOUNTED
		mount --make-private / 2>/dev/null && echo PRIVATE
		mknod "$W/disk" b 8 0 2>/dev/null && echo MKNOD
		chmod 777 "$V" 2>/dev/null && echo CHMOD
		grep CapBnd /proc/self/status`)...)
	require.NotContains(t, r.stdout, "REMOUNTED")
	require.NotContains(t, r.stdout, "PRIVATE")
	require.NotContains(t, r.stdout, "MKNOD")
	require.NotContains(t, r.stdout, "CHMOD")
	var bnd uint64
	_, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(r.stdout, "CapBnd:")), "%x", &bnd)
	require.NoError(t, err, "stdout %q", r.stdout)
	for name, c := range map[string]uint{"SYS_ADMIN": 21, "SYS_MODULE": 16, "SYS_RAWIO": 17, "MKNOD": 27,
		"DAC_READ_SEARCH": 2, "SYS_PTRACE": 19, "BPF": 39, "KILL": 5} {
		require.Zero(t, bnd&(1<<c), "root's command keeps CAP_%s (bounding %#x)", name, bnd)
	}
	st, err := os.Stat(victim)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func TestKernelTreesAndNonDirectoriesAreNotWorktrees(t *testing.T) {
	requireBin(t)
	w, _ := sandbox(t)
	file := filepath.Join(w, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, args := range [][]string{{"--worktree", "/proc"}, {"--worktree", "/dev"}, {"--worktree", "/sys/kernel"},
		{"--worktree", file}, {"--worktree", w, "--allow", "/dev/shm"}, {"--worktree", w, "--allow", "/proc/self"}} {
		r := confine(t, "", nil, append(args, "--", "/bin/sh", "-c", "echo ran")...)
		require.Equal(t, 125, r.status, "%v: %s", args, r.stderr)
		require.Empty(t, r.stdout, "%v ran", args)
	}
}

func TestCommandNotFoundIsReported(t *testing.T) {
	requireLandlock(t)
	w, _ := sandbox(t)
	for _, name := range []string{"confine-no-such-command", "/nonexistent/confine-cmd"} {
		rf, err := os.CreateTemp(t.TempDir(), "report")
		require.NoError(t, err)
		cmd := exec.Command(bin, "--worktree", w, "--report-fd", "3", "--", name)
		cmd.ExtraFiles = []*os.File{rf}
		cmd.Run()
		require.Equal(t, 127, cmd.ProcessState.ExitCode(), name)
		var rep struct{ Outcome, Reason string }
		b, _ := os.ReadFile(rf.Name())
		require.NoError(t, json.Unmarshal(b, &rep), "%s", b)
		require.Equal(t, "refused", rep.Outcome, name)
		require.Equal(t, "command-not-found", rep.Reason, name)
	}
}

func TestUnprivilegedCrashSignalIsMirrored(t *testing.T) {
	exe, w, _ := asNobody(t)
	cmd := exec.Command(exe, "--worktree", w, "--", "/bin/sh", "-c", `grep CapInh /proc/self/status; kill -SEGV $$`)
	cmd.SysProcAttr = nobodyCred()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.Error(t, cmd.Run())
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled(), "confine exited %d instead of dying by the signal; stderr %q", ws.ExitStatus(),
		stderr.String())
	require.Equal(t, syscall.SIGSEGV, ws.Signal())
	require.Empty(t, stderr.String(), "no Go traceback")
	require.Equal(t, "CapInh:\t0000000000000000\n", stdout.String(), "the layer's CAP_SYS_ADMIN is not inheritable")
}

// A directory on descriptors 0 to 2 would let the command change files beneath it, relative to the descriptor,
// on a mount confine does not make read-only: confine refuses it, and nothing runs.
func TestADirectoryOnStdioIsRefused(t *testing.T) {
	requireBin(t)
	w, out := sandbox(t)
	victim := filepath.Join(out, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("x"), 0o644))
	for fd := 0; fd <= 2; fd++ {
		dir, err := os.Open(out)
		require.NoError(t, err)
		rf, err := os.CreateTemp(t.TempDir(), "report")
		require.NoError(t, err)
		cmd := exec.Command(bin, "--worktree", w, "--report-fd", "3", "--", "/bin/sh", "-c", "chmod 777 victim; echo ran")
		cmd.Dir = out
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, &stderr
		switch fd {
		case 0:
			cmd.Stdin = dir
		case 1:
			cmd.Stdout = dir
		case 2:
			cmd.Stderr = dir
		}
		cmd.ExtraFiles = []*os.File{rf}
		cmd.Run()
		dir.Close()
		require.Equal(t, 125, cmd.ProcessState.ExitCode(), "fd %d: %s", fd, stderr.String())
		var rep struct{ Outcome, Reason string }
		b, _ := os.ReadFile(rf.Name())
		require.NoError(t, json.Unmarshal(b, &rep), "fd %d: %s", fd, b)
		require.Equal(t, "bad-stdio", rep.Reason, "fd %d", fd)
		fi, err := os.Stat(victim)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "fd %d: the command ran", fd)
	}
}

// foreignBinary builds a tiny Go program for the other architecture (arm64 on amd64, amd64 elsewhere) into
// dir, and returns its path and its machine as uname -m names it. It skips where no go command can build it.
func foreignBinary(t *testing.T, dir string) (path, machine string) {
	t.Helper()
	goarch, machine := "arm64", "aarch64"
	if runtime.GOARCH == "arm64" {
		goarch, machine = "amd64", "x86_64"
	}
	gobin, err := exec.LookPath("go")
	if err != nil && os.Getenv(foreignEnv) == "" {
		t.Skip("needs the go command (or $" + foreignEnv + ") for a " + goarch + " binary")
	}
	src := filepath.Join(dir, "foreign-src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"ran\") }\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module foreign\n\ngo 1.22\n"), 0o644))
	path = filepath.Join(dir, "foreign-"+goarch)
	if pre := os.Getenv(foreignEnv); pre != "" { // built beforehand (scripts/sandbox-test-nobody.sh)
		path = pre
	} else {
		build := exec.Command(gobin, "build", "-o", path, ".")
		build.Dir = src
		build.Env = append(os.Environ(), "GOARCH="+goarch, "CGO_ENABLED=0", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "GOARCH=%s go build: %s", goarch, out)
		require.NoError(t, os.Chmod(path, 0o755)) // for nobody too
	}
	if err := exec.Command(path).Run(); err == nil {
		t.Skipf("this host runs %s binaries (binfmt_misc, qemu-user): no exec failure to classify", goarch)
	}
	return path, machine
}

// missingInterpreterELF copies /bin/true into dir with its PT_INTERP path pointing nowhere, and returns the
// copy's path and the missing interpreter. It skips where /bin/true has no PT_INTERP (a static build).
func missingInterpreterELF(t *testing.T, dir string) (path, interp string) {
	t.Helper()
	f, err := elf.Open("/bin/true")
	require.NoError(t, err)
	defer f.Close()
	var ph *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			ph = p
		}
	}
	if ph == nil {
		t.Skip("/bin/true has no PT_INTERP here")
	}
	b, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	interp = "/nonexistent/ld.so"
	require.Greater(t, int(ph.Filesz), len(interp), "PT_INTERP too short to patch")
	field := b[ph.Off : ph.Off+ph.Filesz]
	copy(field, make([]byte, len(field)))
	copy(field, interp)
	path = filepath.Join(dir, "true-no-interp")
	require.NoError(t, os.WriteFile(path, b, 0o755))
	return path, interp
}

type execFailedRecord struct {
	Schema, Outcome, Reason, Error, Errno, Machine, Host, Interpreter string
	Status                                                            int
	Command                                                           []string
}

// runExecFailure runs exe (confine) on cmd with a report on fd 3, as cred's user (nil: this one), and returns
// the exit status, stderr, the report's first record and the exec-failed record after it.
func runExecFailure(t *testing.T, exe, w string, cred *syscall.SysProcAttr, cmdPath string) (int, string, map[string]any, execFailedRecord) {
	t.Helper()
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	cmd := exec.Command(exe, "--worktree", w, "--report-fd", "3", "--", cmdPath)
	cmd.Env = withoutTempVars(os.Environ())
	cmd.SysProcAttr = cred
	cmd.ExtraFiles = []*os.File{rf}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	require.Empty(t, stdout.String(), "the command ran")
	b, err := os.ReadFile(rf.Name())
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 2, "the report, then the exec-failed record: %s", b)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rep), "%s", lines[0])
	var rec execFailedRecord
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec), "%s", lines[1])
	return cmd.ProcessState.ExitCode(), stderr.String(), rep, rec
}

// An execve that fails after the report said "exec" is explained by a second record on the report's
// descriptor and one line on stderr: an ELF for another machine, an ELF whose interpreter is missing, a script
// whose #! interpreter is missing. As root (in place) and as nobody (in the layered child).
func TestExecFailuresAreRecorded(t *testing.T) {
	requireLandlock(t)
	w, out := sandbox(t)
	require.NoError(t, os.Chmod(filepath.Dir(w), 0o755))
	require.NoError(t, os.Chmod(out, 0o755))
	foreign, machine := foreignBinary(t, out)
	noInterp, interp := missingInterpreterELF(t, out)
	script := filepath.Join(out, "script")
	require.NoError(t, os.WriteFile(script, []byte("#!/nonexistent/sh -e\necho ran\n"), 0o755))
	var u unix.Utsname
	require.NoError(t, unix.Uname(&u))
	host := unix.ByteSliceToString(u.Machine[:])

	type user struct {
		name string
		exe  string
		cred *syscall.SysProcAttr
	}
	users := []user{{"self", bin, nil}}
	if os.Geteuid() == 0 {
		exe, _, _ := asNobody(t)
		require.NoError(t, os.Chown(w, nobody, nobody))
		users = append(users, user{"nobody", exe, nobodyCred()})
	}
	for _, u := range users {
		status, stderr, rep, rec := runExecFailure(t, u.exe, w, u.cred, foreign)
		require.Equal(t, "exec", rep["outcome"], u.name)
		require.Equal(t, 126, status, "%s: %s", u.name, stderr)
		require.Equal(t, execFailedRecord{Schema: "confine.exec-failed/v1", Outcome: "exec-failed", Reason: "wrong-arch",
			Error: foreign + ": ELF " + machine + " on " + host + " (exec format error)", Errno: "ENOEXEC", Status: 126,
			Command: []string{foreign}, Machine: machine, Host: host}, rec, u.name)
		require.Equal(t, "confine: "+rec.Error+"\n", stderr, u.name)

		status, stderr, _, rec = runExecFailure(t, u.exe, w, u.cred, noInterp)
		require.Equal(t, 127, status, "%s: %s", u.name, stderr)
		require.Equal(t, "interpreter-missing", rec.Reason, "%s: %+v", u.name, rec)
		require.Equal(t, interp, rec.Interpreter, u.name)
		require.Equal(t, "ENOENT", rec.Errno, u.name)
		require.Equal(t, "confine: "+noInterp+": ELF interpreter "+interp+" is missing (no such file or directory)\n", stderr, u.name)

		status, stderr, _, rec = runExecFailure(t, u.exe, w, u.cred, script)
		require.Equal(t, 127, status, "%s: %s", u.name, stderr)
		require.Equal(t, "interpreter-missing", rec.Reason, "%s: %+v", u.name, rec)
		require.Equal(t, "/nonexistent/sh", rec.Interpreter, u.name)
		require.Equal(t, "confine: "+script+": #! interpreter /nonexistent/sh is missing (no such file or directory)\n", stderr, u.name)
	}
}

// foreignEnv names a prebuilt binary of the other architecture (the tiny program foreignBinary builds), so that
// a run as nobody need not build Go's runtime for it from a cold cache.
const foreignEnv = "CONFINE_TEST_FOREIGN_BIN"

// multiprocessingScript takes a multiprocessing.Lock (a POSIX semaphore in /dev/shm) and runs a process pool,
// then leaves a file in /dev/shm, and prints what the command saw there.
const multiprocessingScript = `
import concurrent.futures, multiprocessing, os
def square(x): return x * x
if __name__ == "__main__":
    multiprocessing.set_start_method("fork")  # 3.14's default, forkserver, cannot find square in a -c script
    with multiprocessing.Lock():
        pass
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        print(sum(pool.map(square, range(10))))
    open("/dev/shm/confine-mark", "w").write("x")
    print(sorted(os.listdir("/dev/shm")))
`

// With the mount layer, /dev/shm is a private tmpfs: Python's multiprocessing locks and process pools work, as
// root (in place) and as nobody (in the layered child), and the host's /dev/shm is unchanged.
func TestPrivateDevShmForMultiprocessing(t *testing.T) {
	requireLandlock(t)
	py := "/usr/bin/python3" // the system's, which nobody can run too (a pyenv shim under /root cannot)
	if _, err := os.Stat(py); err != nil {
		t.Skip("needs /usr/bin/python3 for multiprocessing")
	}
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skip("this host has no /dev/shm directory")
	}
	hostBefore := listDir(t, "/dev/shm")
	w, _ := sandbox(t)
	if m := metadataMode(t, w); m != "mount-layer" {
		t.Skipf("the mount layer is not available here (metadata: %s): /dev/shm stays the host's, read-only", m)
	}
	args := []string{"--worktree", w, "--", py, "-c", multiprocessingScript}
	r := confine(t, "", nil, args...)
	require.Equal(t, 0, r.status, r.stderr)
	require.Equal(t, "285\n['confine-mark']\n", r.stdout, "the command sees its own, empty /dev/shm")
	if os.Geteuid() == 0 {
		exe, wn, _ := asNobody(t)
		probe := exec.Command(exe, "probe", "--json")
		probe.SysProcAttr = nobodyCred()
		pj, err := probe.Output()
		require.NoError(t, err)
		var p struct{ Metadata string }
		require.NoError(t, json.Unmarshal(pj, &p), "%s", pj)
		if p.Metadata != "mount-layer" {
			// A chroot (Bazel's test sandbox) forbids unprivileged user namespaces: nobody falls back.
			t.Logf("as nobody: no mount layer here (metadata: %s), so no private /dev/shm to test", p.Metadata)
		} else {
			cmd := exec.Command(exe, "--worktree", wn, "--", py, "-c", multiprocessingScript)
			cmd.SysProcAttr = nobodyCred()
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "as nobody: %s", out)
			require.Equal(t, "285\n['confine-mark']\n", string(out), "as nobody")
		}
	}
	require.Equal(t, hostBefore, listDir(t, "/dev/shm"), "the host's /dev/shm changed")
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// mkdirTempEnv makes the test binary, run as the confined command, call os.MkdirTemp("", ...) and say how it went.
const mkdirTempEnv = "CONFINE_TEST_MKDIRTEMP"

// A temporary-directory variable that points outside the writable set is named in the report's warnings and
// on one stderr line, and mktemp, Python's tempfile and Go's os.MkdirTemp then fail there (the kernel denies);
// pointed inside, all three work and nothing is said. As root and as nobody.
func TestTempDirOutsideTheWritableSetIsWarned(t *testing.T) {
	requireLandlock(t)
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("needs /usr/bin/python3 for tempfile")
	}
	w, out := sandbox(t)
	base := filepath.Dir(w)
	require.NoError(t, os.Chmod(base, 0o755))
	require.NoError(t, os.Chmod(out, 0o777))
	self := filepath.Join(base, "confine.test") // a copy nobody can execute, as the Go command
	b, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(self, b, 0o755))
	script := `mktemp -d >/dev/null && echo "mktemp: ok" || echo "mktemp: failed"
"$1" -c 'import os, tempfile; d = tempfile.mkdtemp(); print("python: ok" if d.startswith(os.environ["TMPDIR"] + "/") else "python: elsewhere")' || echo "python: failed"
` + mkdirTempEnv + `=1 "$2"`

	type user struct {
		name   string
		exe, w string
		cred   *syscall.SysProcAttr
	}
	users := []user{{"self", bin, w, nil}}
	if os.Geteuid() == 0 {
		exe, wn, _ := asNobody(t)
		users = append(users, user{"nobody", exe, wn, nobodyCred()})
	}
	for _, u := range users {
		for _, tc := range []struct {
			tmpdir string
			inside bool
		}{{out, false}, {filepath.Join(u.w, "tmp"), true}} {
			if tc.inside {
				require.NoError(t, os.MkdirAll(tc.tmpdir, 0o777))
				require.NoError(t, os.Chmod(tc.tmpdir, 0o777))
			}
			rf, err := os.CreateTemp(t.TempDir(), "report")
			require.NoError(t, err)
			cmd := exec.Command(u.exe, "--worktree", u.w, "--report-fd", "3", "--", "/bin/sh", "-c", script, "sh", py, self)
			cmd.Env = append(withoutTempVars(os.Environ()), "TMPDIR="+tc.tmpdir)
			cmd.SysProcAttr = u.cred
			cmd.ExtraFiles = []*os.File{rf}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			var rep struct{ Warnings []string }
			rb, _ := os.ReadFile(rf.Name())
			require.NoError(t, json.Unmarshal(rb, &rep), "%s: %s", u.name, rb)
			warning := "TMPDIR=" + tc.tmpdir + ": outside the writable set"
			if tc.inside {
				require.Equal(t, "mktemp: ok\npython: ok\ngo: ok\n", stdout.String(), "%s: %s", u.name, stderr.String())
				require.Empty(t, stderr.String(), u.name)
				require.NotContains(t, strings.Join(rep.Warnings, "\n"), "TMPDIR", u.name)
				continue
			}
			// Python's tempfile falls back to the next candidate it can write (/tmp); mktemp and Go's os.MkdirTemp fail.
			require.True(t, strings.HasPrefix(stdout.String(), "mktemp: failed\npython: elsewhere\ngo: "), "%s: %q %s", u.name, stdout.String(), stderr.String())
			require.Contains(t, stdout.String(), "go: mkdir "+tc.tmpdir+"/confine-go", u.name)
			require.Contains(t, strings.Join(rep.Warnings, "\n"), warning, u.name)
			lines := strings.Split(stderr.String(), "\n")
			require.True(t, strings.HasPrefix(lines[0], "confine: warning: "+warning), "%s: %q", u.name, stderr.String())
			require.Equal(t, 1, strings.Count(stderr.String(), "confine: "), "%s: one line from confine: %q", u.name, stderr.String())
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			require.Empty(t, entries, "%s: a temporary directory was made outside", u.name)
		}
	}
}

// withoutTempVars is env without the temporary-directory variables confine warns about.
func withoutTempVars(env []string) []string {
	var out []string
	for _, kv := range env {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "TMPDIR", "TMP", "TEMP", "GOTMPDIR", "XDG_RUNTIME_DIR":
		default:
			out = append(out, kv)
		}
	}
	return out
}

// A confine inside confine runs, as root and as nobody, and is at least as confined as the outer one: Landlock
// domains and seccomp filters stack, so an inner --allow of a directory the outer does not grant writes
// nothing there, and a narrower inner worktree takes writes away. (Inside, the mount layer cannot be built
// again: the inner one supervises metadata changes itself, under the outer one's domain, and says why.)
func TestNestedConfineIsAtLeastAsConfined(t *testing.T) {
	requireLandlock(t)
	w, out := sandbox(t)
	base := filepath.Dir(w)
	require.NoError(t, os.Chmod(base, 0o755))
	require.NoError(t, os.Chmod(out, 0o777))
	inner := filepath.Join(base, "confine-inner")
	b, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(inner, b, 0o755))
	script := `"$0" --worktree "$1/sub" --allow "$2" --report-fd 3 -- /bin/sh -c '
		echo sub > "$0/sub/f" && echo sub-ok
		echo w > "$0/f" 2>/dev/null && echo w-written
		echo out > "$1/f" 2>/dev/null && echo out-written
		true' "$1" "$2" 3>"$1/inner-report"`

	type user struct {
		name   string
		exe, w string
		cred   *syscall.SysProcAttr
	}
	users := []user{{"self", bin, w, nil}}
	if os.Geteuid() == 0 {
		exe, wn, _ := asNobody(t)
		users = append(users, user{"nobody", exe, wn, nobodyCred()})
	}
	for _, u := range users {
		require.NoError(t, os.Mkdir(filepath.Join(u.w, "sub"), 0o777))
		require.NoError(t, os.Chmod(filepath.Join(u.w, "sub"), 0o777))
		cmd := exec.Command(u.exe, "--worktree", u.w, "--", "/bin/sh", "-c", script, inner, u.w, out)
		cmd.Env = withoutTempVars(os.Environ())
		cmd.SysProcAttr = u.cred
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "%s: %s", u.name, stderr.String())
		require.Equal(t, "sub-ok\n", stdout.String(), "%s: only the inner worktree is writable: %s", u.name, stderr.String())
		var rep struct {
			Outcome, Metadata string
			Warnings          []string
		}
		rb, err := os.ReadFile(filepath.Join(u.w, "inner-report"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(rb, &rep), "%s: %s", u.name, rb)
		require.Equal(t, "exec", rep.Outcome, u.name)
		// The layer cannot be built again inside: the inner one supervises, or denies metadata where the outer one
		// already supervises (one listener per filter chain), as in a build sandbox without user namespaces.
		require.Contains(t, []string{"supervisor", "seccomp-deny"}, rep.Metadata, "%s: the inner one built a mount layer", u.name)
		require.Contains(t, strings.Join(rep.Warnings, "\n"), "mount layer unavailable", u.name)
		require.NoFileExists(t, filepath.Join(out, "f"), "%s: the inner --allow opened what the outer denies", u.name)
		require.NoFileExists(t, filepath.Join(u.w, "f"), u.name)
	}
}

// The nested agent's recipe: an inner confine with a profile, under an outer one whose filter answers openat2
// with ENOSYS; the profile's directories are opened without it, one component at a time, and still no symlink
// is followed.
func TestNestedConfineWithAProfile(t *testing.T) {
	requireLandlock(t)
	w, out := sandbox(t)
	home := filepath.Join(filepath.Dir(w), "home")
	require.NoError(t, os.Mkdir(home, 0o755))
	r := confine(t, "", []string{"HOME=" + home}, "--worktree", w, "--profile", "npm", "--", bin, "--worktree", w,
		"--profile", "npm", "--", "/bin/sh", "-c", `echo x > "$HOME/.npm/f" && echo npm-ok; echo y > "$0/f"`, out)
	require.Equal(t, "npm-ok\n", r.stdout, "stderr %q", r.stderr)
	requireKernelDenial(t, r.stderr)
	require.NoFileExists(t, filepath.Join(out, "f"))
}
