//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// modeSandbox is a launcher and a worktree for mode m: the test's own, or ones nobody can use.
func modeSandbox(t *testing.T, m hostMode) (exe, w string) {
	t.Helper()
	requireLandlock(t)
	if m.nobody {
		exe, w, _ = asNobodyAnyKernel(t)
		return exe, w
	}
	w, _ = sandbox(t)
	return bin, w
}

// withMarker lists the processes whose command line holds marker.
func withMarker(marker string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), marker) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// A background process that outlives the command is ended when the command exits, in every mode (issue 28): when
// confine returns, no process the command started is left, and none writes in the worktree any more. The command
// starts a writer that appends to a file every 10 ms for a minute, and exits 0.2 s later.
func TestBackgroundProcessesEndWithTheCommand(t *testing.T) {
	for _, m := range hostModes() {
		t.Run(m.String(), func(t *testing.T) {
			exe, w := modeSandbox(t, m)
			marker := fmt.Sprintf("confine-orphan-%d-%d", os.Getpid(), time.Now().UnixNano())
			log := filepath.Join(w, "log")
			// $0 is the marker: the background subshell keeps sh's command line, so /proc finds it. It holds none
			// of confine's output pipes (the caller would wait for them), so that a leftover shows as one.
			script := `cd "$1" && (i=0; while [ $i -lt 6000 ]; do echo x >> log; sleep 0.01; i=$((i+1)); done) >/dev/null 2>bg.err & sleep 0.2; echo started`
			r := confineIn(t, m, exe, "--worktree", w, "--", "/bin/sh", "-c", script, marker, w)
			require.Equal(t, 0, r.status, "%s: %s", m, r.stderr)
			require.Equal(t, "started\n", r.stdout)
			left := withMarker(marker)
			for _, p := range left { // end them, so that a failure leaves nothing running
				var pid int
				fmt.Sscanf(p, "%d:", &pid)
				if pid > 0 {
					syscallKill(pid)
				}
			}
			require.Empty(t, left, "%s: processes of the command still run after confine returned", m)
			fi, err := os.Stat(log)
			require.NoError(t, err, "the writer never ran")
			time.Sleep(300 * time.Millisecond)
			fi2, err := os.Stat(log)
			require.NoError(t, err)
			require.Equal(t, fi.Size(), fi2.Size(), "%s: the file grew after confine returned", m)
			bgErr, _ := os.ReadFile(filepath.Join(w, "bg.err"))
			require.Empty(t, string(bgErr), "%s: the writer's errors", m)
		})
	}
}

func syscallKill(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
