package runner

import (
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/vm"
	"github.com/confine-dev/confine/vm/internal/console"
	"github.com/confine-dev/confine/vm/internal/fetch"
)

func TestClassify(t *testing.T) {
	avail := Target{Kernel: vm.Kernel{ID: "6.12-amd64", Landlock: "available", ABI: 6}}
	custom := Target{Kernel: vm.Kernel{ID: "custom-amd64"}}
	for name, tc := range map[string]struct {
		t      Target
		r      console.Result
		result string
		msg    string
	}{
		"ok":              {avail, console.Result{Exit: 0, Landlock: "available", ABI: 6}, OK, ""},
		"payload failed":  {avail, console.Result{Exit: 3, Landlock: "available", ABI: 6}, Fail, "payload exited with status 3"},
		"signal":          {avail, console.Result{Exit: -1, Signal: "SIGSEGV", Landlock: "available", ABI: 6}, Fail, "payload killed by SIGSEGV"},
		"guest timeout":   {avail, console.Result{Exit: -1, TimedOut: true, Error: "guest timeout: payload killed after 3s"}, Fail, "guest timeout: payload killed after 3s"},
		"supervisor":      {avail, console.Result{Exit: -1, Error: "mount tmpfs on /tmp: EPERM"}, Infra, "guest supervisor: mount tmpfs on /tmp: EPERM"},
		"abi differs":     {avail, console.Result{Exit: 0, Landlock: "available", ABI: 7}, Fail, "Landlock: kernel reports 7, manifest expects 6"},
		"state differs":   {avail, console.Result{Exit: 0, Landlock: "disabled"}, Fail, "Landlock: kernel reports disabled, manifest expects 6"},
		"custom no check": {custom, console.Result{Exit: 0, Landlock: "available", ABI: 9}, OK, ""},
	} {
		res, msg := classify(tc.t, &tc.r)
		assert.Equal(t, tc.result, res, name)
		assert.Contains(t, msg, tc.msg, name)
	}
}

func TestJUnit(t *testing.T) {
	for result, want := range map[string]string{OK: "", Fail: "failure", Infra: "error"} {
		r := Record{Kernel: "6.12-amd64", Arch: "amd64", Result: result, Seconds: 4.2, Error: "boom", ConsoleTail: []string{"last <line>"}}
		b, err := r.JUnit()
		require.NoError(t, err)
		var s junitSuites
		require.NoError(t, xml.Unmarshal(b, &s), string(b))
		require.Len(t, s.Suites, 1)
		c := s.Suites[0].Cases[0]
		assert.Equal(t, "6.12-amd64", c.Name)
		assert.Equal(t, "4.200", c.Time)
		switch want {
		case "":
			assert.Nil(t, c.Failure)
			assert.Nil(t, c.Error)
		case "failure":
			require.NotNil(t, c.Failure)
			assert.Equal(t, 1, s.Suites[0].Failures)
		case "error":
			require.NotNil(t, c.Error)
			assert.Contains(t, c.Error.Text, "last <line>")
			assert.Equal(t, 1, s.Suites[0].Errors)
		}
	}
}

func TestIsKernelImage(t *testing.T) {
	for m, want := range map[string]bool{
		"./boot/vmlinuz-6.12.117+deb13-amd64":         true,
		"./usr/lib/modules/7.3.4+deb13-amd64/vmlinuz": true,
		"./boot/config-6.12.117+deb13-amd64":          false,
		"./usr/lib/modules/7.3.4/kernel/vmlinuz":      false,
		"./boot/System.map-6.12":                      false,
	} {
		assert.Equal(t, want, isKernelImage(m), m)
	}
}

// fakeQEMUs puts QEMU binaries on PATH that record that they ran.
func fakeQEMUs(t *testing.T) string {
	dir := t.TempDir()
	for _, b := range []string{"qemu-system-x86_64", "qemu-system-aarch64"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\ntouch \"$(dirname \"$0\")/ran\"\n"), 0o755))
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	return filepath.Join(dir, "ran")
}

// Bad input is refused before any VM boots.
func TestSetupErrorsBeforeBoot(t *testing.T) {
	ran := fakeQEMUs(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "bzImage")
	b := make([]byte, 0x300)
	copy(b[0x202:], "HdrS")
	require.NoError(t, os.WriteFile(img, b, 0o644))
	payload := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(payload, "tool"), []byte("#!/bin/sh\n"), 0o755))
	base := Options{
		Targets: []Target{{Kernel: vm.Kernel{ID: "custom-amd64", Arch: "amd64"}, Image: img}},
		Payload: payload, Argv: []string{"/payload/tool"}, Results: t.TempDir(),
		Cache: &fetch.Cache{Root: t.TempDir()},
	}
	for name, tc := range map[string]struct {
		mod  func(o *Options)
		want string
	}{
		"wrong-arch kernel":  {func(o *Options) { o.Targets[0].Arch = "arm64" }, "is an amd64 kernel, not arm64"},
		"missing payload":    {func(o *Options) { o.Payload = filepath.Join(dir, "none") }, "no such file"},
		"cmd not in payload": {func(o *Options) { o.Argv = []string{"/payload/nope"} }, "not in payload"},
		"relative cmd":       {func(o *Options) { o.Argv = []string{"tool"} }, "absolute path"},
		"no init binary":     {func(o *Options) { o.InitDir = dir }, "no guest init for amd64"},
	} {
		o := base
		o.Targets = append([]Target(nil), base.Targets...)
		tc.mod(&o)
		_, err := Run(context.Background(), o)
		var se *SetupError
		require.ErrorAs(t, err, &se, name)
		assert.ErrorContains(t, err, tc.want, name)
	}
	assert.NoFileExists(t, ran, "no QEMU may start when an input is bad")
}

// TestBoots: entries of one kernel image and command line that differ in abi_cap or host_emulation share a boot
// (in target order); another cmdline or arch boots apart; with cached times the longest boot starts first.
func TestBoots(t *testing.T) {
	k := func(id, arch, sha, cmdline string) Target {
		return Target{Kernel: vm.Kernel{ID: id, Arch: arch, Cmdline: cmdline}, ImageSHA256: sha}
	}
	o := Options{Targets: []Target{
		k("6.12-amd64", "amd64", "a", ""),
		k("6.12-amd64-nouserns", "amd64", "a", "sysctl.user.max_user_namespaces=0"),
		k("7.3-amd64", "amd64", "b", ""),
		k("7.3-amd64-abi5", "amd64", "b", ""),
		k("7.3-amd64-no-namespaces", "amd64", "b", ""),
		k("7.3-arm64", "arm64", "c", ""),
	}}
	names := func(bs []boot) (out [][]string) {
		for _, b := range bs {
			var ids []string
			for _, i := range b.targets {
				ids = append(ids, o.Targets[i].ID)
			}
			out = append(out, append([]string{b.name + ":"}, ids...))
		}
		return out
	}
	assert.Equal(t, [][]string{
		{"7.3-amd64:", "7.3-amd64", "7.3-amd64-abi5", "7.3-amd64-no-namespaces"},
		{"6.12-amd64:", "6.12-amd64"},
		{"6.12-amd64-nouserns:", "6.12-amd64-nouserns"},
		{"7.3-arm64:", "7.3-arm64"},
	}, names(o.boots(nil)), "no cached times: the most passes first, then the targets' order")
	// 7.3-amd64's passes: 100 + the mean of the known times (120, for abi5) + 10 = 230 s; 7.3-arm64 300 s.
	got := names(o.boots(map[string]float64{"7.3-amd64": 100, "7.3-amd64-no-namespaces": 10, "7.3-arm64": 300, "6.12-amd64": 90, "6.12-amd64-nouserns": 100}))
	assert.Equal(t, []string{"7.3-arm64:", "7.3-amd64:", "6.12-amd64-nouserns:", "6.12-amd64:"},
		[]string{got[0][0], got[1][0], got[2][0], got[3][0]}, "longest expected first")
}
