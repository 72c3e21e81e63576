package qemu

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCmdlineAmd64(t *testing.T) {
	bin, args, err := Spec{Arch: "amd64", Accel: TCG, Kernel: "/k", Initrd: "/i", Extra: "lsm=lockdown,yama"}.Cmdline()
	require.NoError(t, err)
	assert.Equal(t, "qemu-system-x86_64", bin)
	line := strings.Join(args, " ")
	for _, want := range []string{"-M q35", "-accel tcg", "-cpu max", "-nodefaults", "-no-reboot", "-serial mon:stdio", "-kernel /k", "-initrd /i", "-smp 1", "-m 512"} {
		assert.Contains(t, line, want)
	}
	kargs := args[len(args)-1]
	assert.Equal(t, "-append", args[len(args)-2])
	assert.Contains(t, kargs, "console=ttyS0")
	assert.Contains(t, kargs, "panic=-1")
	assert.True(t, strings.HasSuffix(kargs, "lsm=lockdown,yama"), "extras come last so they win: %s", kargs)
}

func TestCmdlineArm64(t *testing.T) {
	bin, args, err := Spec{Arch: "arm64", Accel: TCG, Kernel: "/k", Initrd: "/i"}.Cmdline()
	require.NoError(t, err)
	assert.Equal(t, "qemu-system-aarch64", bin)
	line := strings.Join(args, " ")
	assert.Contains(t, line, "-M virt -accel tcg -cpu max,pauth-impdef=on")
	assert.Contains(t, args[len(args)-1], "console=ttyAMA0")

	_, args, err = Spec{Arch: "arm64", Accel: KVM, Kernel: "/k", Initrd: "/i"}.Cmdline()
	require.NoError(t, err)
	assert.Contains(t, strings.Join(args, " "), "-M virt,gic-version=max -accel kvm -cpu host")
}

func TestCmdlineRejects(t *testing.T) {
	_, _, err := Spec{Arch: "riscv64", Accel: TCG}.Cmdline()
	assert.ErrorContains(t, err, "unsupported guest arch")
	_, _, err = Spec{Arch: "amd64", Accel: "hvf"}.Cmdline()
	assert.ErrorContains(t, err, "unknown accelerator")
}

// fakeQEMU puts a qemu-system-x86_64 shell script on PATH.
func fakeQEMU(t *testing.T, script string) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "qemu-system-x86_64"), []byte("#!/bin/sh\n"+script), 0o755))
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
}

var spec = Spec{Arch: "amd64", Accel: TCG, Kernel: "/k", Initrd: "/i"}

func TestBootCopiesConsole(t *testing.T) {
	fakeQEMU(t, `echo line1; printf 'line2'; exit 0`)
	var out bytes.Buffer
	require.NoError(t, Boot(context.Background(), spec, Limits{Deadline: 10 * time.Second, Silence: 5 * time.Second}, &out))
	assert.Equal(t, "line1\nline2", out.String())
}

func TestBootWatchdog(t *testing.T) {
	fakeQEMU(t, `echo booted; exec sleep 30`)
	var out bytes.Buffer
	start := time.Now()
	err := Boot(context.Background(), spec, Limits{Deadline: 20 * time.Second, Silence: 500 * time.Millisecond}, &out)
	var he *HangError
	require.ErrorAs(t, err, &he)
	assert.ErrorIs(t, err, ErrSilent)
	assert.Less(t, time.Since(start), 15*time.Second, "killed by the watchdog, not the deadline")
	assert.Equal(t, "booted\n", out.String())
}

func TestBootDeadline(t *testing.T) {
	fakeQEMU(t, `while :; do echo tick; sleep 0.1; done`) // never silent, never done
	err := Boot(context.Background(), spec, Limits{Deadline: 1 * time.Second, Silence: 5 * time.Second}, &bytes.Buffer{})
	assert.ErrorIs(t, err, ErrDeadline)
	assert.EqualError(t, err, "host deadline exceeded for 1s: QEMU killed")
}

func TestBootExitStatus(t *testing.T) {
	fakeQEMU(t, `echo "qemu-system-x86_64: -accel kvm: failed to initialize kvm" >&2; exit 1`)
	err := Boot(context.Background(), spec, Limits{Deadline: 5 * time.Second}, &bytes.Buffer{})
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 1, ee.Code)
	assert.Contains(t, ee.Stderr, "failed to initialize kvm")
}

func TestBootCancel(t *testing.T) {
	fakeQEMU(t, `exec sleep 30`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := Boot(ctx, spec, Limits{Deadline: 20 * time.Second}, &bytes.Buffer{})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestBootMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Boot(context.Background(), spec, Limits{Deadline: time.Second}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "qemu-system-x86_64 not found (make vm-deps installs QEMU)")
}
