package launch

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// cloneExecPy makes a clone child whose exit signal is 0 (not SIGCHLD; clone flags 0, which waitid without
// __WALL does not report), then execs argv[1:] in the parent: the `job & exec confine` shape with such a child.
// The clone number is the syscall's on amd64 (56) and arm64 (220); the child closes its output (so the
// helper's output ends with the parent) and sleeps 10 s, then exits.
const cloneExecPy = `
import ctypes, os, sys, time
nr = {"amd64": 56, "arm64": 220}[sys.argv[1]]
libc = ctypes.CDLL(None, use_errno=True)
pid = libc.syscall(nr, 0, 0, 0, 0, 0)
if pid == 0:
    os.close(1); os.close(2)
    time.sleep(10)
    os._exit(0)
if pid < 0:
    sys.exit("clone: errno %d" % ctypes.get_errno())
os.execv(sys.argv[2], sys.argv[2:])
`

// TestChildrenRefusalSeesCloneChild: a process whose only child is a clone child with exit signal 0 is refused
// (issue 43, finding 4): before __WALL the waitid returned ECHILD and the launch went on.
func TestChildrenRefusalSeesCloneChild(t *testing.T) {
	if os.Getenv("CONFINE_TEST_CLONE_CHILD") == "1" {
		if err := childrenRefusal(); err == nil {
			os.Stdout.WriteString("NOT REFUSED\n")
		} else {
			os.Stdout.WriteString("REFUSED\n")
		}
		return
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("skipped: needs python3 to make a clone child with exit signal 0 before an exec")
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("skipped: clone syscall number known for amd64 and arm64 only, not " + runtime.GOARCH)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", cloneExecPy, runtime.GOARCH, self, "-test.run=^TestChildrenRefusalSeesCloneChild$")
	cmd.Env = append(os.Environ(), "CONFINE_TEST_CLONE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "REFUSED") || strings.Contains(string(out), "NOT REFUSED") {
		t.Fatalf("a clone child with exit signal 0 was not seen: %s", out)
	}
}
