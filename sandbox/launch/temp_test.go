package launch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/sandbox/landlock"
)

func TestTempOutsideNamesEachVariableOutsideTheWritableDirectories(t *testing.T) {
	rules := []landlock.Rule{{Path: "/work/w", Dir: true}, {Path: "/tmp", Dir: true}, {Path: "/dev/null"}}
	require.Empty(t, tempOutside([]string{"TMPDIR=/tmp", "TMP=/work/w/t", "GOTMPDIR=/tmp/go", "TEMP=", "HOME=/root"}, rules))
	w := tempOutside([]string{"TMPDIR=/var/tmp", "XDG_RUNTIME_DIR=/run/user/0", "TMP=/work/wx", "PATH=/x"}, rules)
	require.Equal(t, "TMPDIR=/var/tmp, XDG_RUNTIME_DIR=/run/user/0, TMP=/work/wx: outside the writable set, so "+
		"temporary files made there fail (EROFS or EACCES); point it at /tmp or inside the worktree", w)
	require.NotEmpty(t, tempOutside([]string{"TMPDIR=/dev/null/x"}, rules), "a file rule is no directory")
}
