//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// shmOpenEnv makes the test binary, run as the confined command, do what shm_open and shm_unlink do (glibc:
// open("/dev/shm/NAME", O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600), ftruncate, mmap shared, unlink) with
// NAME the variable's value, and say how it went.
const shmOpenEnv = "CONFINE_TEST_SHM_OPEN"

// shmOpenCommand is the command side of shmOpenEnv.
func shmOpenCommand(name string) error {
	path := "/dev/shm/" + name
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("shm_open: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 4096); err != nil {
		return fmt.Errorf("ftruncate: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	copy(mem, "shared")
	unix.Munmap(mem)
	if err := unix.Unlink(path); err != nil {
		return fmt.Errorf("shm_unlink: %w", err)
	}
	return nil
}

// posixIPCScript uses what Python's multiprocessing builds on POSIX shared memory and semaphores (sem_open and
// shm_open, in /dev/shm): a Lock, a Queue, a process Pool and a SharedMemory block.
const posixIPCScript = `
import multiprocessing, sys
from multiprocessing import shared_memory
def square(x): return x * x
if __name__ == "__main__":
    multiprocessing.set_start_method("fork")  # 3.14's default, forkserver, cannot find square in a -c script
    with multiprocessing.Lock():
        pass
    q = multiprocessing.Queue()
    q.put("queued")
    with multiprocessing.Pool(2) as pool:
        total = sum(pool.map(square, range(10)))
    shm = shared_memory.SharedMemory(create=True, size=64)
    shm.buf[:6] = b"shared"
    again = shared_memory.SharedMemory(name=shm.name)
    got = bytes(again.buf[:6]).decode()
    again.close(); shm.close(); shm.unlink()
    print("ok", total, q.get(timeout=10), got)
`

// POSIX shared memory and semaphores work in every mode (issue 28): in the mount layer's private /dev/shm, and
// without a layer in the host's, which is then granted; Python's multiprocessing (Lock, Queue, Pool,
// SharedMemory) and shm_open's own calls, as root and as nobody. Nothing is left in the host's /dev/shm.
func TestPosixShmInEveryMode(t *testing.T) {
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skip("this host has no /dev/shm directory")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	selfBytes, err := os.ReadFile(self)
	require.NoError(t, err)
	py := "/usr/bin/python3" // the system's, which nobody can run too (a pyenv shim under /root cannot)
	_, noPy := os.Stat(py)
	shmFI, _ := os.Stat("/dev/shm")
	for _, m := range hostModes() {
		t.Run(m.String(), func(t *testing.T) {
			// Without a mount layer the command gets the host's /dev/shm, and with it the host's permissions: where
			// nobody cannot create a file there even unconfined (a build chroot's plain directory), there is
			// nothing for confine to grant.
			if m.nobody && m.metadata != "mount-layer" && shmFI.Mode().Perm()&0o002 == 0 {
				t.Skipf("the host's /dev/shm (mode %v) is not writable by nobody, confined or not", shmFI.Mode())
			}
			exe, w := modeSandbox(t, m)
			cmd := filepath.Join(w, "cmd.test") // this test binary, where nobody can run it too
			require.NoError(t, os.WriteFile(cmd, selfBytes, 0o755))
			name := fmt.Sprintf("confine-shm-test-%d-%d", os.Getpid(), time.Now().UnixNano())
			t.Cleanup(func() { os.Remove("/dev/shm/" + name) })
			r := confineIn(t, m, exe, "--worktree", w, "--", "/usr/bin/env", shmOpenEnv+"="+name, cmd)
			require.Equal(t, 0, r.status, "%s: shm_open's calls: %s%s", m, r.stdout, r.stderr)
			require.Equal(t, "shm: ok\n", r.stdout)
			require.NoFileExists(t, "/dev/shm/"+name)
			if noPy != nil {
				t.Logf("SKIP python: needs %s for multiprocessing (%v)", py, noPy)
				return
			}
			before := listDir(t, "/dev/shm")
			r = confineIn(t, m, exe, "--worktree", w, "--", py, "-c", posixIPCScript)
			require.Equal(t, 0, r.status, "%s: multiprocessing: %s", m, r.stderr)
			require.Equal(t, "ok 285 queued shared\n", r.stdout)
			require.NotContains(t, r.stderr, "leaked")
			after := listDir(t, "/dev/shm")
			for _, n := range after {
				if !contains(before, n) && (strings.HasPrefix(n, "sem.") || strings.HasPrefix(n, "psm_")) {
					t.Errorf("%s: %s left in the host's /dev/shm", m, n)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
