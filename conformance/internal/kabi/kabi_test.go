package kabi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteRights(t *testing.T) {
	abi1 := []string{"MAKE_BLOCK", "MAKE_CHAR", "MAKE_DIR", "MAKE_FIFO", "MAKE_REG", "MAKE_SOCK", "MAKE_SYM", "REMOVE_DIR", "REMOVE_FILE", "WRITE_FILE"}
	assert.Empty(t, WriteRights(0))
	assert.Equal(t, abi1, WriteRights(1))
	assert.Len(t, WriteRights(2), 11)
	assert.Contains(t, WriteRights(2), "REFER")
	assert.Len(t, WriteRights(3), 12)
	assert.Equal(t, WriteRights(3), WriteRights(4))
	assert.Len(t, WriteRights(5), 13)
	assert.Equal(t, WriteRights(5), WriteRights(8))
	assert.Len(t, WriteRights(9), 14)
	assert.Contains(t, WriteRights(9), "RESOLVE_UNIX")
	assert.Equal(t, WriteRights(9), WriteRights(11))
	for _, r := range []string{"READ_FILE", "READ_DIR", "EXECUTE"} {
		assert.NotContains(t, WriteRights(11), r)
		assert.False(t, IsWriteRight(r))
	}
	assert.True(t, IsFileRight("WRITE_FILE"))
	assert.True(t, IsFileRight("TRUNCATE"))
	assert.False(t, IsFileRight("MAKE_REG"))
	assert.False(t, IsFileRight("REFER"))
	assert.Equal(t, 5, MinABI("IOCTL_DEV"))
	assert.Equal(t, 9, MinABI("RESOLVE_UNIX"))
}

func TestQuery(t *testing.T) {
	k, err := Query()
	require.NoError(t, err)
	switch k.State {
	case Available:
		assert.Positive(t, k.ABI)
		assert.Empty(t, k.Errno)
	case Absent:
		assert.Equal(t, "ENOSYS", k.Errno)
	case Disabled:
		assert.Equal(t, "EOPNOTSUPP", k.Errno)
	default:
		t.Fatalf("status %q", k.State)
	}
	t.Logf("this kernel: %+v", k)
}
