package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no subcommand":   {nil, "usage:"},
		"unknown command": {[]string{"boot"}, `unknown command "boot"`},
		"unknown kernel":  {[]string{"run", "--kernels", "4.19-amd64", "--payload", "p", "--", "/x"}, `unknown kernel "4.19-amd64"`},
		"unknown arch":    {[]string{"run", "--arch", "s390x", "--payload", "p", "--", "/x"}, `unknown arch "s390x"`},
		"no payload":      {[]string{"run", "--", "/x"}, "--payload DIR and a guest command"},
		"no command":      {[]string{"run", "--payload", "p"}, "--payload DIR and a guest command"},
		"bad shard":       {[]string{"run", "--shard", "3/2", "--payload", "p", "--", "/x"}, "bad shard 3/2"},
		"shard syntax":    {[]string{"run", "--shard", "x", "--payload", "p", "--", "/x"}, "want i/n"},
		"kernel no arch":  {[]string{"run", "--kernel", "/boot/vmlinuz", "--payload", "p", "--", "/x"}, "needs exactly one --arch"},
		"bad accel":       {[]string{"run", "--accel", "hvf", "--payload", "p", "--", "/x"}, "--accel"},
	} {
		code, _, stderr := runCLI(tc.args...)
		assert.Equal(t, exitUsage, code, name)
		assert.Contains(t, stderr, tc.want, name)
	}
}

func TestSetupErrorExit(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "Image")
	b := make([]byte, 0x300)
	copy(b[0x38:], "ARM\x64")
	require.NoError(t, os.WriteFile(img, b, 0o644))
	code, _, stderr := runCLI("run", "--kernel", img, "--arch", "amd64", "--cache", t.TempDir(), "--results", t.TempDir(),
		"--payload", t.TempDir(), "--", "/bin/true")
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "is an arm64 kernel, not amd64")
}

func TestKernelsList(t *testing.T) {
	code, out, _ := runCLI("kernels")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "6.12-amd64-disabled")
	assert.Contains(t, out, "linux-binary-7.3.4+deb13-arm64")
}
