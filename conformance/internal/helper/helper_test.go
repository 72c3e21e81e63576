package helper

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
