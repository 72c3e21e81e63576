package launch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// bwrap's messages for the classic failures (bubblewrap.c), as users report them.
func TestBwrapWhyNamesTheClassicFailures(t *testing.T) {
	for said, want := range map[string]string{
		"bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.\n": "user namespaces cannot be created here",
		"bwrap: Creating new namespace failed: Operation not permitted\n":                                                           "user namespaces cannot be created here",
		"bwrap: setting up uid map: Permission denied\n":                                                                            "AppArmor",
		"bwrap: Failed to make / slave: Permission denied\n":                                                                        "mounts are denied",
		"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n":                                                       "mounts are denied",
		"bwrap: Can't bind mount /oldroot/x on /newroot/x: No such file or directory\n":                                             "No such file or directory",
		"":                       "it printed nothing",
		"bwrap: something new\n": "bwrap: something new",
	} {
		got := bwrapWhy(said)
		require.Contains(t, got, want, "%q", said)
	}
}

// bwrap runs before any sandbox: nothing in its environment may make the dynamic loader take code from
// elsewhere. The command's environment travels in the Handoff, unchanged.
func TestBwrapEnvDropsLoaderVariables(t *testing.T) {
	env := []string{"PATH=/usr/bin", "LD_PRELOAD=/w/evil.so", "LD_LIBRARY_PATH=/w", "LD_AUDIT=/w/a.so",
		"GCONV_PATH=/w", "GLIBC_TUNABLES=x", "HOME=/home/u", "MALLOC_CHECK_=3"}
	require.Equal(t, []string{"PATH=/usr/bin", "HOME=/home/u"}, bwrapEnv(env))
}
