package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/vm/internal/runner"
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

func TestKernelUsageErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no subcommand":  {[]string{"kernel"}, "usage:"},
		"unknown":        {[]string{"kernel", "push"}, `unknown subcommand "push"`},
		"deb syntax":     {[]string{"kernel", "import-deb", "linux-image-x", "--arch", "amd64", "--to", "oci-layout:/tmp/x"}, "want PKG=VERSION"},
		"deb no arch":    {[]string{"kernel", "import-deb", "a=1", "--to", "oci-layout:/tmp/x"}, "--arch amd64 or arm64 is required"},
		"deb no to":      {[]string{"kernel", "import-deb", "a=1", "--arch", "amd64"}, "--to REF is required"},
		"file no expect": {[]string{"kernel", "import-file", "vmlinuz", "--arch", "amd64", "--release", "r", "--to", "oci-layout:/tmp/x"}, "--release and --expect-abi are required"},
		"file bad abi":   {[]string{"kernel", "import-file", "vmlinuz", "--arch", "amd64", "--release", "r", "--expect-abi", "0", "--to", "oci-layout:/tmp/x"}, "want an ABI number >= 1"},
		"to digest":      {[]string{"kernel", "import-file", "vmlinuz", "--arch", "amd64", "--release", "r", "--expect-abi", "3", "--to", "oci-layout:/tmp/x@sha256:00"}, "bad digest"},
		"pull two":       {[]string{"kernel", "pull", "a/b", "c/d"}, "want exactly one REF"},
		"pull arch":      {[]string{"kernel", "pull", "--arch", "s390x", "a/b"}, `--arch "s390x"`},
	} {
		code, _, stderr := runCLI(tc.args...)
		assert.Equal(t, exitUsage, code, name)
		assert.Contains(t, stderr, tc.want, name)
	}
}

// import-file into an OCI layout, pull it back, and hand it to run (which stops at the payload check).
func TestImportFilePullRun(t *testing.T) {
	dir := t.TempDir()
	kernel := filepath.Join(dir, "bzImage")
	b := make([]byte, 0x300)
	copy(b[0x202:], "HdrS")
	require.NoError(t, os.WriteFile(kernel, b, 0o644))
	ref := "oci-layout:" + filepath.Join(dir, "layout") + ":wsl2"
	cache := t.TempDir()
	args := []string{"kernel", "import-file", kernel, "--arch", "amd64", "--release", "6.6.87.2-microsoft-standard-WSL2", "--expect-abi", "3", "--source", "WSL2", "--to", ref}
	code, out1, stderr := runCLI(args...)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}\t`, out1)
	code, out2, _ := runCLI(args...)
	require.Equal(t, 0, code)
	assert.Equal(t, out1, out2, "re-importing gives the same digest")

	code, out, stderr := runCLI("kernel", "pull", "--cache", cache, ref)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "linux/amd64")
	assert.Contains(t, out, "expected landlock 3")
	code, _, stderr = runCLI("kernel", "pull", "--cache", cache, "--arch", "arm64", ref)
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "is for linux/amd64, want linux/arm64")

	code, _, stderr = runCLI("run", "--kernels", ref, "--cache", cache, "--results", t.TempDir(), "--payload", filepath.Join(dir, "none"), "--", "/x")
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "payload: ")
	code, _, stderr = runCLI("run", "--kernels", ref+","+ref, "--cache", cache, "--payload", "p", "--", "/x")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `kernel id "wsl2" given twice`)
	code, _, stderr = runCLI("run", "--kernels", "oci-layout:"+filepath.Join(dir, "nope"), "--cache", cache, "--payload", "p", "--", "/x")
	assert.Equal(t, exitSetup, code)
	assert.Contains(t, stderr, "no OCI layout at")
}

// moduleDeb makes a .deb holding member (relative, e.g. lib/modules/REL/kernel/fs/binfmt_misc.ko.xz), or only a
// vmlinuz when member is "".
func moduleDeb(t *testing.T, member string) string {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dpkg-deb not found; make vm-deps installs it")
		}
		t.Skip("skipped: dpkg-deb not found (make vm-deps installs it)")
	}
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "DEBIAN", "control"), []byte(
		"Package: linux-image-test\nVersion: 1.0\nArchitecture: amd64\nMaintainer: t <t@example.org>\nDescription: test\n"), 0o644))
	files := map[string]string{"boot/vmlinuz-1.0-test": "KERNEL"}
	if member != "" {
		files[member] = "MODULE"
	}
	for f, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte(content), 0o644))
	}
	deb := filepath.Join(t.TempDir(), "linux-image-test_1.0_amd64.deb")
	out, err := exec.Command("dpkg-deb", "--root-owner-group", "-Zxz", "--build", root, deb).CombinedOutput()
	require.NoError(t, err, string(out))
	return deb
}

// The payload's binfmt_misc modules are fetched on a fresh machine, before any `vm run` has written the private
// apt configuration (issue 27: the old script passed CACHE/apt/sources.list to apt-get before anything had
// written it, and every module was "not fetchable"). The fake apt-get fails a download, as the real one does,
// unless the sources.list it is given exists and an update ran.
func TestFetchModuleOnAFreshCache(t *testing.T) {
	debs := map[string]string{
		"6.1":  moduleDeb(t, "lib/modules/6.1.0-57-amd64/kernel/fs/binfmt_misc.ko.xz"),
		"6.19": moduleDeb(t, ""), // built in from 6.19 on: no module in the package
	}
	bin := t.TempDir()
	script := fmt.Sprintf(`#!/bin/bash
src= lists=
for a in "$@"; do case $a in Dir::Etc::sourcelist=*) src=${a#*=};; Dir::State::Lists=*) lists=${a#*=};; esac; done
case " $* " in
*" update "*) [ -s "$src" ] || { echo "E: no sources in $src" >&2; exit 100; }; touch "$lists/updated-by-fake"; exit 0;;
*" download "*)
  [ -s "$src" ] && [ -e "$lists/updated-by-fake" ] || { echo "E: Unable to locate package (no lists: $src)" >&2; exit 100; }
  echo download >> %[1]q/downloads
  case " $* " in *linux-binary-6.19*) cp %[2]q . ;; *) cp %[3]q . ;; esac; exit 0;;
esac
exit 1
`, bin, debs["6.19"], debs["6.1"])
	require.NoError(t, os.WriteFile(filepath.Join(bin, "apt-get"), []byte(script), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	cache := filepath.Join(t.TempDir(), "fresh") // does not exist yet: nothing has run here

	code, out, stderr := runCLI("fetch", "--module", "binfmt_misc", "--kernels", "6.1-amd64,6.19-amd64", "--cache", cache)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	f := strings.Split(lines[0], "\t")
	require.Len(t, f, 5, lines[0])
	assert.Equal(t, []string{"6.1-amd64", "amd64"}, f[:2])
	assert.Equal(t, "./lib/modules/6.1.0-57-amd64/kernel/fs/binfmt_misc.ko.xz", f[4])
	b, err := os.ReadFile(f[3])
	require.NoError(t, err)
	assert.Equal(t, "MODULE", string(b))
	assert.Equal(t, "6.19-amd64\tamd64\tbuilt-in", lines[1])

	// Both answers are cached: no download on the second call.
	require.NoError(t, os.Remove(filepath.Join(bin, "downloads")))
	code, again, stderr := runCLI("fetch", "--module", "binfmt_misc", "--kernels", "6.1-amd64,6.19-amd64", "--cache", cache)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, out, again)
	assert.NoFileExists(t, filepath.Join(bin, "downloads"))
	// The kernels came out of the same downloads: fetching them (as vm run does) downloads nothing.
	code, _, stderr = runCLI("fetch", "--kernels", "6.1-amd64,6.19-amd64", "--cache", cache)
	require.Equal(t, 0, code, stderr)
	assert.NoFileExists(t, filepath.Join(bin, "downloads"))

	code, _, stderr = runCLI("fetch", "--module", "../x", "--cache", cache)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "want a module name")
}

func TestModuleMatch(t *testing.T) {
	m := runner.ModuleWant("binfmt_misc").Match
	for member, want := range map[string]bool{
		"./lib/modules/6.1.0-57-amd64/kernel/fs/binfmt_misc.ko":              true,
		"./usr/lib/modules/6.12.117+deb13-arm64/kernel/fs/binfmt_misc.ko.xz": true,
		"./lib/modules/6.1/kernel/fs/binfmt_misc.ko.zst":                     true,
		"./lib/modules/6.1/kernel/fs/binfmt_misc.kox":                        false,
		"./lib/modules/6.1/kernel/fs/not_binfmt_misc.ko":                     false,
		"./boot/binfmt_misc.ko":                                              false,
	} {
		assert.Equal(t, want, m(member), member)
	}
}
