package helper

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMainReportsEachErrno(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	ops, _ := json.Marshal([]Op{{Op: "create", Path: f, Arg: "hi"}, {Op: "create", Path: f}, {Op: "read", Path: f},
		{Op: "rmdir", Path: f}, {Op: "unlink", Path: filepath.Join(dir, "none")}, {Op: "rename", Path: f, Path2: f + "2"}})
	var out, errOut bytes.Buffer
	require.Equal(t, 0, Main([]string{string(ops)}, &out, &errOut), errOut.String())
	var res []Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.Len(t, res, 6)
	assert.True(t, res[0].OK)
	assert.Equal(t, "EEXIST", res[1].Errno)
	assert.Equal(t, "hi", res[2].Data)
	assert.Equal(t, "ENOTDIR", res[3].Errno)
	assert.Equal(t, "ENOENT", res[4].Errno)
	assert.True(t, res[5].OK)
	_, err := os.Stat(f + "2")
	assert.NoError(t, err)
}

func TestMainRejectsBadInput(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, Main(nil, &out, &errOut))
	assert.Equal(t, 2, Main([]string{"not json"}, &out, &errOut))
	assert.Equal(t, 2, Main([]string{`[{"op":"format-disk"}]`}, &out, &errOut))
	assert.Contains(t, errOut.String(), "unknown op")
}

func TestUnescapeMountinfo(t *testing.T) {
	assert.Equal(t, "/var/tmp/a b\tc\\d", unescapeMountinfo(`/var/tmp/a\040b\011c\134d`))
	assert.Equal(t, `/x\04`, unescapeMountinfo(`/x\04`), "a cut escape stays as it is")
	assert.Equal(t, "/", unescapeMountinfo("/"))
}

// The mount holding a file is found by its mount id: a file of this test's directory is on the mount
// /proc/self/mountinfo gives for that directory, whatever the path's prefix says.
func TestMountPoint(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	mp, err := mountPoint(f)
	require.NoError(t, err)
	assert.True(t, mp == "/" || dir == mp || strings.HasPrefix(dir, mp+"/"), "mount point %q of %q", mp, dir)
	_, err = mountPoint(filepath.Join(dir, "none"))
	assert.Error(t, err)
}
