package nsdeny

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// childEnv guards the re-executed test binary: only a process started by TestFilter with it set installs the
// filter, and that process starts no further test binary.
const childEnv = "NSDENY_TEST_CHILD"

func TestFilter(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		require.NoError(t, Install())
		require.ErrorIs(t, unix.Unshare(unix.CLONE_NEWNS), unix.EPERM, "unshare(CLONE_NEWNS)")
		require.ErrorIs(t, unix.Unshare(unix.CLONE_NEWUSER), unix.EPERM, "unshare(CLONE_NEWUSER)")
		_, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
		require.Equal(t, unix.ENOSYS, errno, "clone3")
		ns := exec.Command("/proc/self/exe", "-test.run=^$") // a plain fork+exec still works...
		ns.Env = []string{}
		require.NoError(t, ns.Run())
		ns = exec.Command("/proc/self/exe", "-test.run=^$") // ...one into a new mount namespace does not
		ns.Env = []string{}
		ns.SysProcAttr = &unix.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}
		require.ErrorIs(t, ns.Run(), unix.EPERM)
		return
	}
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, "-test.run=^TestFilter$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestFilter")
}

func TestProgramShape(t *testing.T) {
	p := Program(unix.AUDIT_ARCH_X86_64)
	// Every jump lands inside the program, and the program ends in returns.
	for i, ins := range p {
		if ins.Code&0x07 == unix.BPF_JMP {
			require.Less(t, i+1+int(ins.Jt), len(p), "instruction %d jt", i)
			require.Less(t, i+1+int(ins.Jf), len(p), "instruction %d jf", i)
		}
	}
	require.Equal(t, uint16(unix.BPF_RET|unix.BPF_K), p[len(p)-1].Code)
}
