package supervisor

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestParseCreds: the credential lines of a /proc/TID/status, and what is refused.
func TestParseCreds(t *testing.T) {
	status := "Name:\tsh\nUid:\t0\t65534\t0\t65533\nGid:\t5\t6\t7\t8\nGroups:\t4 24 \nCapEff:\t00000000000404cb\n"
	c, ok := parseCreds(status)
	require.True(t, ok)
	assert.Equal(t, creds{ruid: 0, euid: 65534, fsuid: 65533, rgid: 5, egid: 6, fsgid: 8, groups: []int{4, 24}, capEff: 0x404cb}, c)

	none, ok := parseCreds("Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t\nCapEff:\t0000000000000000\n")
	require.True(t, ok)
	assert.Empty(t, none.groups)

	for name, bad := range map[string]string{
		"no CapEff":      "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n",
		"three uids":     "Uid:\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t0\n",
		"a bad group":    "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\tx\nCapEff:\t0\n",
		"a bad cap mask": "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\tzz\n",
	} {
		_, ok := parseCreds(bad)
		assert.False(t, ok, name)
	}
	assert.True(t, c.sameIDs(c))
	assert.False(t, c.equal(creds{}))
}

// TestAssume: as root, a locked thread takes on another uid, gid, groups and fewer capabilities, reads them
// back from its own /proc/thread-self/status, is refused what that uid may not do, and takes its own back.
func TestAssume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can take on other credentials")
	}
	f, err := os.Create(t.TempDir() + "/root-file")
	require.NoError(t, err)
	defer f.Close()
	fd := int(f.Fd())
	done, skipped := make(chan struct{}), make(chan string, 1)
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: should a step fail, the thread ends with the goroutine
		ours, err := credsOf(0)
		require.NoError(t, err)
		other := creds{ruid: 65534, euid: 65534, fsuid: 65534, rgid: 65534, egid: 65534, fsgid: 65534, groups: []int{65534}, capEff: 0}
		errno := assume(ours, other)
		if errno == unix.EINVAL {
			skipped <- "uid or gid 65534 is not mapped in this user namespace (setresuid: EINVAL)"
			assert.Zero(t, assume(other, ours)) // what changed before the refusal is taken back
			return
		}
		require.Zero(t, errno)
		got, err := credsOf(0)
		require.NoError(t, err)
		assert.True(t, got.equal(other), "after assume: %+v", got)
		assert.Equal(t, unix.EPERM, unix.Fchmod(fd, 0o666), "fchmod of root's file as 65534")
		gidOnly := other // from one caller's to another's that differs in its gids alone: the uids stay 65534
		gidOnly.rgid, gidOnly.egid, gidOnly.fsgid = 1, 1, 1
		require.Zero(t, assume(other, gidOnly))
		got, err = credsOf(0)
		require.NoError(t, err)
		assert.True(t, got.equal(gidOnly), "after a change of gids alone: %+v", got)
		require.Zero(t, assume(gidOnly, ours))
		back, err := credsOf(0)
		require.NoError(t, err)
		assert.True(t, back.equal(ours), "after restore: %+v, want %+v", back, ours)
		assert.NoError(t, unix.Fchmod(fd, 0o666), "fchmod of root's file as root again")
	}()
	<-done
	select {
	case why := <-skipped:
		t.Skip(why)
	default:
	}
}

// TestInNS: capabilities count only for a caller in our user namespace. A process in a user namespace of its
// own holds every capability there, and may show any set in CapEff: they count for none (the attack review's
// route: drop capabilities, unshare(CLONE_NEWUSER), trim CapEff to the launch's set, chown).
func TestInNS(t *testing.T) {
	ns, err := userNSOf(0)
	require.NoError(t, err)
	s := &Supervisor{userNS: ns}
	c := creds{capEff: 0xb} // CHOWN, DAC_OVERRIDE, FOWNER
	assert.Equal(t, c, s.inNS(os.Getpid(), c), "ours")
	assert.Equal(t, creds{}, s.inNS(os.Getpid(), creds{}), "none held")

	cmd := exec.Command("sleep", "5")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	if err := cmd.Start(); err != nil {
		t.Skipf("no user namespace can be made here: %v", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	assert.Zero(t, s.inNS(cmd.Process.Pid, c).capEff, "a caller in a user namespace of its own")
	assert.Zero(t, s.inNS(1<<30, c).capEff, "a caller whose namespace cannot be read")
}
