package snapshot

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestDiffSeesEveryKindOfChange(t *testing.T) {
	dir := t.TempDir()
	skip := filepath.Join(dir, "skip")
	require.NoError(t, os.MkdirAll(skip, 0o755))
	write := func(name, s string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644)) }
	for _, n := range []string{"content", "size", "mode", "mtime", "gone", "xattr"} {
		write(n, "abc")
	}
	require.NoError(t, os.Symlink("content", filepath.Join(dir, "link")))
	before, err := Take([]string{dir, filepath.Join(dir, "absent")}, []string{skip})
	require.NoError(t, err)

	write("content", "abd")
	write("size", "abcd")
	require.NoError(t, os.Chmod(filepath.Join(dir, "mode"), 0o600))
	require.NoError(t, os.Chtimes(filepath.Join(dir, "mtime"), time.Now(), time.Unix(1, 0)))
	require.NoError(t, os.Remove(filepath.Join(dir, "gone")))
	require.NoError(t, os.Remove(filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("size", filepath.Join(dir, "link")))
	write("new", "x")
	write("absent", "x")
	write("skip/ignored", "x")
	xattrOK := unix.Setxattr(filepath.Join(dir, "xattr"), "user.t", []byte("v"), 0) == nil

	after, err := Take([]string{dir, filepath.Join(dir, "absent")}, []string{skip})
	require.NoError(t, err)
	diff := Diff(before, after)
	joined := ""
	for _, d := range diff {
		joined += d + "\n"
	}
	for _, want := range []string{"content: changed", "size: changed", "mode 0644→0600", "mtime: changed mtime", "gone: removed",
		"link: changed", "symlink target", "new: created", "absent: created"} {
		assert.Contains(t, joined, want)
	}
	if xattrOK {
		assert.Contains(t, joined, "xattr: changed ctime, xattrs")
	} else {
		t.Log("no user xattrs on this file system: the xattr diff is not exercised")
	}
	assert.NotContains(t, joined, "ignored")
	assert.Empty(t, Diff(after, after))
}
