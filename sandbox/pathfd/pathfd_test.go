package pathfd

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenKinds(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for path, kind := range map[string]Kind{dir: Dir, file: File, "/dev/null": CharDev} {
		r, err := Open(path)
		require.NoError(t, err, path)
		require.Equal(t, kind, r.Kind, path)
		require.Equal(t, path, r.Path)
		require.NoError(t, r.Close())
	}
}

func TestOpenRefusesSymlinksAnywhere(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.Mkdir(real, 0o755))
	require.NoError(t, os.Symlink(real, filepath.Join(dir, "link")))
	_, err := Open(filepath.Join(dir, "link"))
	require.ErrorIs(t, err, ErrBadPath, "a final symlink")
	require.NoError(t, os.Mkdir(filepath.Join(real, "sub"), 0o755))
	_, err = Open(filepath.Join(dir, "link", "sub"))
	require.ErrorIs(t, err, ErrBadPath, "symlink in a middle component")
	require.Contains(t, err.Error(), "symlink")
}

func TestOpenNoFollowFallbackAgrees(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Symlink(dir, filepath.Join(dir, "link")))
	fd, err := openNoFollow(Here, dir)
	require.NoError(t, err)
	r, err := validate(Here, dir, dir, fd, false)
	require.NoError(t, err)
	require.Equal(t, Dir, r.Kind)
	r.Close()
	fd, err = openNoFollow(Here, filepath.Join(dir, "link"))
	require.NoError(t, err, "O_PATH|O_NOFOLLOW opens the link itself")
	_, err = validate(Here, filepath.Join(dir, "link"), filepath.Join(dir, "link"), fd, false)
	require.ErrorIs(t, err, ErrBadPath)
	_, err = openNoFollow(Here, filepath.Join(dir, "link", "x"))
	require.Error(t, err, "a middle symlink is not followed")
}

func TestOpenRefusesOddPaths(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, mkfifo(fifo))
	for _, p := range []string{"", "rel", "/", dir + "/", dir + "/./x", dir + "/../x", "/a\x00b",
		filepath.Join(dir, "missing"), fifo} {
		_, err := Open(p)
		require.ErrorIs(t, err, ErrBadPath, "%q", p)
	}
}

// A refusal says what to pass instead: the resolved path of a symlinked root, an absolute path for a relative one.
func TestRefusalsSayWhatToPass(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "sub"), 0o755))
	require.NoError(t, os.Symlink(real, filepath.Join(dir, "link")))
	_, err := Open(filepath.Join(dir, "link"))
	require.EqualError(t, err, "bad path: "+filepath.Join(dir, "link")+" is a symlink (pass the resolved path, "+real+")")
	_, err = Open(filepath.Join(dir, "link", "sub"))
	require.EqualError(t, err, "bad path: "+filepath.Join(dir, "link", "sub")+" has a symlink in its path (pass the resolved path, "+
		filepath.Join(real, "sub")+")")
	require.NoError(t, os.Remove(filepath.Join(real, "sub")))
	_, err = Open(filepath.Join(dir, "link", "sub"))
	require.EqualError(t, err, "bad path: "+filepath.Join(dir, "link", "sub")+" has a symlink in its path (pass the resolved path)",
		"nothing to resolve to: no path is named")
	require.EqualError(t, Check("wt"), `bad path: wt is not absolute; pass an absolute path, e.g. "$(realpath wt)"`)
}

// A unix socket is opened by OpenSocketIn alone, and OpenSocketIn opens nothing else.
func TestSocketsOnlyByOpenSocketIn(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	_, err = Open(sock)
	require.ErrorIs(t, err, ErrBadPath)
	r, err := OpenSocketIn(Here, sock)
	require.NoError(t, err)
	require.Equal(t, Socket, r.Kind)
	r.Close()
	_, err = OpenSocketIn(Here, dir)
	require.ErrorIs(t, err, ErrBadPath)
	require.NoError(t, os.Symlink(sock, filepath.Join(dir, "link")))
	_, err = OpenSocketIn(Here, filepath.Join(dir, "link"))
	require.ErrorIs(t, err, ErrBadPath, "no symlink is followed")
}
