//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The bwrap backend, chosen here with --backend bwrap (auto takes it only where Landlock is unusable, which the
// VM matrix's 5.10 and lsm-disabled kernels prove).

// systemBwrap is the bwrap confine finds without CONFINE_BWRAP (the first regular file named bwrap in /usr/bin,
// /bin, /usr/local/bin: bwrapDirs in sandbox/launch/bwrap.go), or "" where there is none. CONFINE_BWRAP set in
// the test's own environment would change what confine runs: the tests then stop (requireBwrap).
func systemBwrap() string {
	for _, dir := range []string{"/usr/bin", "/bin", "/usr/local/bin"} {
		if st, err := os.Stat(dir + "/bwrap"); err == nil && st.Mode().IsRegular() {
			return dir + "/bwrap"
		}
	}
	return ""
}

// requireBwrapPath is the system's bwrap, or "false" (a fake that fails) where it is not installed.
func requireBwrapPath() string {
	if path := systemBwrap(); path != "" {
		return path
	}
	return "false"
}

// requireBwrap returns the system's bwrap, or skips: make deps installs bubblewrap.
func requireBwrap(t *testing.T) string {
	t.Helper()
	requireBin(t)
	if _, set := os.LookupEnv("CONFINE_BWRAP"); set {
		t.Fatal("CONFINE_BWRAP is set in the test's environment: unset it, the tests name their own bwrap")
	}
	path := systemBwrap()
	if path == "" {
		t.Skip("bwrap is not installed in /usr/bin, /bin or /usr/local/bin (make deps installs bubblewrap): the bwrap backend cannot be run")
	}
	return path
}

type bwrapReport struct {
	Outcome, Backend, Bwrap, Metadata, Reason, Error string
	Warnings                                         []string
}

// runBwrap runs the launcher (exe, as cred if set) with --backend bwrap and a report, with env added.
func runBwrap(t *testing.T, exe string, cred *syscall.SysProcAttr, env []string, w string, argv ...string) (run, bwrapReport) {
	t.Helper()
	rf, err := os.CreateTemp(t.TempDir(), "report")
	require.NoError(t, err)
	require.NoError(t, rf.Chmod(0o666))
	cmd := exec.Command(exe, append([]string{"--worktree", w, "--backend", "bwrap", "--report-fd", "3", "--"}, argv...)...)
	cmd.Env = append(withoutTempVars(os.Environ()), env...)
	cmd.ExtraFiles = []*os.File{rf}
	cmd.SysProcAttr = cred
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	r := run{status: ws.ExitStatus(), stdout: out.String(), stderr: errb.String()}
	var rep bwrapReport
	b, _ := os.ReadFile(rf.Name())
	require.NoError(t, json.Unmarshal(b, &rep), "report %q, stderr %q", b, r.stderr)
	return r, rep
}

func TestBwrapBackendConfinesWrites(t *testing.T) {
	requireBwrap(t)
	type who struct {
		name string
		exe  func(t *testing.T) (exe, w, out string)
		cred *syscall.SysProcAttr
	}
	users := []who{{"caller", func(t *testing.T) (string, string, string) {
		w, out := sandbox(t)
		return bin, w, out
	}, nil}}
	if os.Geteuid() == 0 {
		users = append(users, who{"nobody", func(t *testing.T) (string, string, string) {
			exe, w, out := asNobodyAnyKernel(t)
			return exe, w, out
		}, nobodyCred()})
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			exe, w, out := u.exe(t)
			script := `cd "$0" && echo in > f && chmod +x f && touch f && mkdir d && mv f d/g && cat d/g &&
				echo t > /tmp/confine-bwrap-$$ && rm /tmp/confine-bwrap-$$ && echo n > /dev/null && echo s > /dev/shm/s &&
				echo $$ && { echo x > "$1/f"; echo "write outside: $?"; }`
			r, rep := runBwrap(t, exe, u.cred, nil, w, "/bin/sh", "-c", script, w, out)
			require.Equal(t, 0, r.status, "stderr %q", r.stderr)
			f := strings.Fields(r.stdout)
			require.Len(t, f, 5, "stdout %q", r.stdout)
			require.Equal(t, []string{"in", "write", "outside:", "2"}, []string{f[0], f[2], f[3], f[4]}, "inside works, the write outside fails")
			pid, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			require.True(t, pid > 1 && pid < 64, "a fresh PID namespace, whose init (1) is the bwrap child and whose next PIDs its threads: %d", pid)
			require.Contains(t, r.stderr, "Read-only file system", "bwrap's denial is EROFS")
			require.NoFileExists(t, filepath.Join(out, "f"))
			require.Equal(t, "exec", rep.Outcome)
			require.Equal(t, "bwrap", rep.Backend)
			require.Equal(t, systemBwrap(), rep.Bwrap, "the report names the bwrap that ran")
			require.Equal(t, "mount-layer", rep.Metadata)
			require.Contains(t, strings.Join(rep.Warnings, "\n"), "backend bwrap")
		})
	}
}

// asNobodyAnyKernel is asNobody without the Landlock requirement (the bwrap backend needs none): a worktree
// nobody owns, the outside directory beside it, and a copy of the launcher nobody can execute (bin's directory
// is root's). Only root can call it.
func asNobodyAnyKernel(t *testing.T) (exe, w, out string) {
	t.Helper()
	w, out = sandbox(t)
	require.NoError(t, os.Chown(w, nobody, nobody))
	require.NoError(t, os.Chmod(filepath.Dir(w), 0o755))
	exe = filepath.Join(filepath.Dir(w), "confine")
	b, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, b, 0o755))
	return exe, w, out
}

// As root, bwrap keeps nearly every capability (CAP_SYS_ADMIN among them, enough to remount / read-write):
// the bwrap child cuts them to root's set before the command runs.
func TestBwrapRootCannotRemount(t *testing.T) {
	requireBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: bwrap keeps capabilities for root only")
	}
	w, out := sandbox(t)
	r, _ := runBwrap(t, bin, nil, nil, w, "/bin/sh", "-c",
		`grep CapBnd /proc/self/status; mount -o remount,rw / ; echo "remount: $?"; echo x > "$0/f"; echo "write: $?"`, out)
	require.Equal(t, 0, r.status, r.stderr)
	// CHOWN DAC_OVERRIDE FOWNER SETGID SETUID NET_BIND_SERVICE SYS_CHROOT (rootCaps in sandbox/launch/caps.go).
	require.Contains(t, r.stdout, "CapBnd:\t00000000000404cb\n")
	require.NotContains(t, r.stdout, "remount: 0")
	require.NotContains(t, r.stdout, "write: 0")
	require.NoFileExists(t, filepath.Join(out, "f"))
}

// With bwrap absent, failing, or not doing what it was asked, nothing runs: exit 125, backend-unavailable, and
// one line that says why.
func TestBwrapFailuresRunNothing(t *testing.T) {
	requireBin(t)
	w, out := sandbox(t)
	fakes := map[string]string{
		"exits-1": "echo 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2; exit 1",
		// Runs the command without any namespace: the bwrap child sees it is not one.
		"ignores-its-arguments": `while [ "$1" != "--" ]; do shift; done; shift; exec "$@"`,
		// New namespaces, but no read-only root: the bwrap child checks / itself.
		"no-read-only-root": `while [ "$1" != "--" ]; do shift; done; shift; exec unshare -r -m -p -f --mount-proc "$@"`,
		// The real bwrap, asked for one more writable path (the attack review's wrapper): the bwrap child checks
		// every mount, not only /.
		"binds-more": "#!/bin/bash\nargs=(); while [ \"$1\" != -- ]; do args+=(\"$1\"); shift; done\n" +
			"exec " + requireBwrapPath() + ` "${args[@]}" --bind /var /var "$@"`,
	}
	// A command could write a "bwrap" into the worktree (CONFINE_BWRAP could name it; $PATH is not consulted):
	// the next launch must not trust it, whatever it does.
	planted := filepath.Join(w, "bin")
	require.NoError(t, os.Mkdir(planted, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(planted, "bwrap"), []byte("#!/bin/sh\n"+fakes["ignores-its-arguments"]+"\n"), 0o755))
	want := map[string]string{
		"exits-1":                    "user namespaces cannot be created here",
		"ignores-its-arguments":      "not a layered child of confine",
		"no-read-only-root":          "bwrap left / (",
		"binds-more":                 "bwrap left /var (",
		"absent":                     "/absent/bwrap: no such file or directory",
		"relative":                   "CONFINE_BWRAP=bwrap is not an absolute path",
		"empty":                      "CONFINE_BWRAP is empty",
		"planted-in-a-writable-root": "beneath the writable " + w,
	}
	named := map[string]string{"relative": "bwrap", "empty": "", "planted-in-a-writable-root": filepath.Join(planted, "bwrap")}
	sentinel := filepath.Join(out, "ran")
	for name, why := range want {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(filepath.Dir(w), name) // not under /tmp, which is writable: see planted-in-a-writable-root
			require.NoError(t, os.Mkdir(dir, 0o755))
			if _, fake := fakes[name]; fake && os.Geteuid() != 0 {
				why = "not owned by root" // a user's fake is refused before it runs: a confined command could have written it
			}
			if body, ok := fakes[name]; ok {
				if !strings.HasPrefix(body, "#!") {
					body = "#!/bin/sh\n" + body
				}
				require.NoError(t, os.WriteFile(filepath.Join(dir, "bwrap"), []byte(body+"\n"), 0o755))
			}
			switch {
			case os.Geteuid() != 0 && fakes[name] != "":
				// refused for its owner before it runs (want says so): nothing more is needed
			case name == "no-read-only-root":
				if out, err := exec.Command("unshare", "-r", "-m", "-p", "-f", "true").CombinedOutput(); err != nil {
					t.Skipf("needs util-linux's unshare with user namespaces to play a bwrap without a read-only root: %v %s", err, out)
				}
			case name == "binds-more":
				if requireBwrapPath() == "false" {
					t.Skip("bwrap is not installed here (make deps installs bubblewrap): the wrapper has none to call")
				}
			}
			bwrap, ok := named[name]
			if !ok {
				bwrap = filepath.Join(dir, "bwrap") // absent: there is none
			}
			r, rep := runBwrap(t, bin, nil, []string{"CONFINE_BWRAP=" + bwrap}, w, "/bin/sh", "-c", `echo ran > "$0"`, sentinel)
			require.Equal(t, 125, r.status, "stdout %q stderr %q", r.stdout, r.stderr)
			require.NoFileExists(t, sentinel)
			require.Equal(t, "refused", rep.Outcome)
			require.Equal(t, "backend-unavailable", rep.Reason)
			require.Contains(t, rep.Error, why)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			require.True(t, strings.HasPrefix(r.stderr, "confine: "), r.stderr)
		})
	}
}

// Issue 9: a root caller's $PATH may name a directory that an earlier run of root could write (a worktree's
// .venv/bin). A bwrap planted there is root's, in directories root owns, so checkBwrap would pass it: confine
// must never look there. The planted bwrap leaves a mark and then runs the real one, so a launcher that took it
// would succeed, and only the mark tells.
func TestBwrapIsNeverTakenFromPath(t *testing.T) {
	requireBin(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to plant a root-owned bwrap (a user's own is refused as not owned by root; the root run covers nobody too)")
	}
	if _, set := os.LookupEnv("CONFINE_BWRAP"); set {
		t.Fatal("CONFINE_BWRAP is set in the test's environment: unset it, this test is about the lookup without it")
	}
	sys := systemBwrap()
	users := []struct {
		name string
		exe  func(t *testing.T) (exe, w string)
		cred *syscall.SysProcAttr
	}{
		{"root", func(t *testing.T) (string, string) { w, _ := sandbox(t); return bin, w }, nil},
		{"nobody", func(t *testing.T) (string, string) { exe, w, _ := asNobodyAnyKernel(t); return exe, w }, nobodyCred()},
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			exe, w := u.exe(t)
			base := filepath.Dir(w)                   // in /var/tmp, root's (sticky): not beneath any writable root
			require.NoError(t, os.Chmod(base, 0o755)) // as a virtualenv's parent would be
			venv := filepath.Join(base, "venv", "bin")
			require.NoError(t, os.MkdirAll(venv, 0o755))
			marks := filepath.Join(base, "marks")
			require.NoError(t, os.Mkdir(marks, 0o755))
			require.NoError(t, os.Chmod(marks, 0o777)) // the planted bwrap runs as the caller, root or nobody
			mark := filepath.Join(marks, "planted-bwrap-ran")
			then := "exec " + requireBwrapPath() + ` "$@"`
			require.NoError(t, os.WriteFile(filepath.Join(venv, "bwrap"), []byte("#!/bin/sh\necho ran > "+mark+"\n"+then+"\n"), 0o755))
			require.NoError(t, os.Chmod(filepath.Join(venv, "bwrap"), 0o755))

			r, rep := runBwrap(t, exe, u.cred, []string{"PATH=" + venv + ":/usr/bin:/bin"}, w, "/bin/sh", "-c", "echo inside")
			require.NoFileExists(t, mark, "confine ran the bwrap planted first on $PATH")
			if sys == "" {
				require.Equal(t, 125, r.status, "no system bwrap: refused; stderr %q", r.stderr)
				require.Contains(t, rep.Error, "bwrap is not installed")
				return
			}
			require.Equal(t, 0, r.status, "stderr %q", r.stderr)
			require.Equal(t, "inside\n", r.stdout)
			require.Equal(t, sys, rep.Bwrap, "the report names the system's bwrap")
		})
	}
}

// A harness cancels a run by signalling confine's process group, often right after it started it. Under the
// bwrap backend such a signal must end the command (or keep it from starting), never be lost while bwrap
// starts: the second attack review saw 4 to 13 commands of 50 run to completion after that signal, when the
// signals were ignored while bwrap started. Whenever the signal comes, the command's "done" must not be written.
func TestBwrapSignalEarlyInTheStartEndsTheCommand(t *testing.T) {
	requireBwrap(t)
	w, _ := sandbox(t)
	for i := 0; i < 30; i++ {
		done := filepath.Join(w, "done-"+strconv.Itoa(i))
		cmd := exec.Command(bin, "--worktree", w, "--backend", "bwrap", "--", "/bin/sh", "-c", "sleep 1; echo > "+done)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(i%10) * time.Millisecond) // into confine's start, at another point each time
		require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM), "signal its process group, as a harness would")
		cmd.Wait()
		require.NoFileExists(t, done, "attempt %d: the command ran to the end after confine's group was signalled (exit %d)",
			i, cmd.ProcessState.ExitCode())
	}
}

func TestBwrapSignalsAndExitStatus(t *testing.T) {
	requireBwrap(t)
	w, _ := sandbox(t)
	cmd := exec.Command(bin, "--worktree", w, "--backend", "bwrap", "--", "/bin/sh", "-c",
		`trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line := make([]byte, 6)
	_, err = io.ReadFull(stdout, line)
	require.NoError(t, err)
	require.Equal(t, "ready\n", string(line))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM), "signal the launcher, as a caller would")
	cmd.Wait()
	require.Equal(t, 7, cmd.ProcessState.ExitCode(), "the command's trap ran: the signal reached it past bwrap")

	r := confine(t, "", nil, "--worktree", w, "--backend", "bwrap", "--", "/bin/sh", "-c", "kill -KILL $$")
	require.Equal(t, syscall.SIGKILL, r.signal, "confine dies as its command did")
	r = confine(t, "", nil, "--worktree", w, "--backend", "bwrap", "--", "/nonexistent/command")
	require.Equal(t, 127, r.status, r.stderr)
	require.Contains(t, r.stderr, "no such file")
}

// The attack review's routes under the bwrap backend: the host's device nodes keep their mode, owner and times
// (bwrap binds them read-write; the bwrap child makes them read-only, and writing to them still works), /proc/sys
// cannot be written (a new /proc would be, for root), and no mount still receives the host's mounts.
func TestBwrapDevicesSysctlsAndPropagationStayShut(t *testing.T) {
	requireBwrap(t)
	check := func(t *testing.T, exe string, cred *syscall.SysProcAttr, w string) {
		var before, after syscall.Stat_t
		require.NoError(t, syscall.Stat("/dev/full", &before))
		r, _ := runBwrap(t, exe, cred, nil, w, "/bin/sh", "-c", `echo x > /dev/null && echo write-ok
			chmod 600 /dev/full; touch /dev/full /dev/null; echo h > /proc/sys/kernel/domainname
			echo "propagating: $(grep -c -e ' shared:' -e ' master:' /proc/self/mountinfo)"`)
		require.Contains(t, r.stdout, "write-ok\n")
		require.Contains(t, r.stdout, "propagating: 0\n")
		require.NotContains(t, r.stderr, "confine:")
		require.NoError(t, syscall.Stat("/dev/full", &after))
		require.Equal(t, before.Mode, after.Mode)
		require.Equal(t, before.Mtim, after.Mtim, "the host's /dev/full keeps its times")
		require.Equal(t, before.Ctim, after.Ctim, "nothing changed the host's /dev/full")
		domain, err := os.ReadFile("/proc/sys/kernel/domainname")
		require.NoError(t, err)
		require.NotEqual(t, "h\n", string(domain))
	}
	t.Run("caller", func(t *testing.T) {
		w, _ := sandbox(t)
		check(t, bin, nil, w)
	})
	if os.Geteuid() == 0 {
		t.Run("nobody", func(t *testing.T) {
			exe, w, _ := asNobodyAnyKernel(t)
			check(t, exe, nobodyCred(), w)
		})
	}
}
