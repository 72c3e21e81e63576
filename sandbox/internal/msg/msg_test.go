package msg

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStrMatchesFmt(t *testing.T) {
	require.Equal(t, fmt.Sprintf("%s=%d %#x %#o %q %d %d", "a", -3, 255, 0o4755, "x\ny", int64(-9), uint64(7)),
		Str("a", "=", -3, " ", Hex(255), " ", Oct(0o4755), " ", Quoted("x\ny"), " ", int64(-9), " ", uint64(7)))
	require.Equal(t, "0x0 0", Str(Hex(0), " ", Oct(0)))
}

func TestErrWrapsEveryErrorPart(t *testing.T) {
	err := Err(fs.ErrNotExist, ": open /x: ", syscall.ELOOP)
	require.Equal(t, fmt.Errorf("%w: open /x: %w", fs.ErrNotExist, syscall.ELOOP).Error(), err.Error())
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorIs(t, err, syscall.ELOOP)
	var errno syscall.Errno
	require.True(t, errors.As(err, &errno))
	require.Equal(t, syscall.ELOOP, errno)
}

func TestErrWrapsNothingGivenAsText(t *testing.T) {
	err := Err("child: ", syscall.EPERM.Error())
	require.NotErrorIs(t, err, syscall.EPERM)
	require.Equal(t, "child: operation not permitted", err.Error())
}

func TestAnUnsupportedPartIsABug(t *testing.T) {
	require.Panics(t, func() { Str(1.5) })
}
