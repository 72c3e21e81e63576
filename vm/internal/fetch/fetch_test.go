package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildDeb makes a real .deb with dpkg-deb holding ./boot/vmlinuz-1.0-test with content.
func buildDeb(t *testing.T, content string) string {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dpkg-deb not found; make vm-deps installs it")
		}
		t.Skip("skipped: dpkg-deb not found (make vm-deps installs it)")
	}
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "boot"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "DEBIAN", "control"), []byte(
		"Package: linux-image-test\nVersion: 1.0\nArchitecture: amd64\nMaintainer: t <t@example.org>\nDescription: test\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "boot", "config-1.0-test"), []byte("CONFIG_X=y\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "boot", "vmlinuz-1.0-test"), []byte(content), 0o644))
	deb := filepath.Join(t.TempDir(), "linux-image-test_1.0_amd64.deb")
	out, err := exec.Command("dpkg-deb", "--root-owner-group", "-Zxz", "--build", root, deb).CombinedOutput()
	require.NoError(t, err, string(out))
	return deb
}

// fakeApt puts an apt-get on PATH that runs script (bash) and records its arguments.
func fakeApt(t *testing.T, script string) {
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "apt-get"), []byte("#!/bin/bash\n"+script), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
}

func aptPath(t *testing.T) string {
	p, err := exec.LookPath("apt-get")
	require.NoError(t, err)
	return p
}

func isVmlinuz(m string) bool { return strings.HasPrefix(m, "./boot/vmlinuz-") }

func TestExtractFromDownloadedDeb(t *testing.T) {
	deb := buildDeb(t, "KERNEL")
	fakeApt(t, fmt.Sprintf(`[[ " $* " == *" download "* ]] && cp %q . ; exit 0`, deb))
	c := &Cache{Root: t.TempDir(), Sources: []string{"deb http://example.invalid/debian sid main"}}
	ex, err := c.Extract(context.Background(), "linux-image-test", "1.0", "amd64", "vmlinuz", isVmlinuz)
	require.NoError(t, err)
	assert.Equal(t, "./boot/vmlinuz-1.0-test", ex.Member)
	b, err := os.ReadFile(ex.Path)
	require.NoError(t, err)
	assert.Equal(t, "KERNEL", string(b))
	sum := sha256.Sum256([]byte("KERNEL"))
	assert.Equal(t, hex.EncodeToString(sum[:]), ex.SHA256)
	src, err := os.ReadFile(filepath.Join(c.Root, "apt", "sources.list"))
	require.NoError(t, err)
	assert.Contains(t, string(src), "signed-by=/usr/share/keyrings/debian-archive-keyring.gpg")

	// A second call is served from the cache: an apt-get that fails proves it is not run.
	fakeApt(t, `exit 1`)
	again, err := c.Extract(context.Background(), "linux-image-test", "1.0", "amd64", "vmlinuz", isVmlinuz)
	require.NoError(t, err)
	assert.Equal(t, ex, again)
}

func TestExtractCorruptDeb(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "linux-image-test_1.0_amd64.deb")
	require.NoError(t, os.WriteFile(bad, []byte("!<arch>\ngarbage that is not a deb"), 0o644))
	fakeApt(t, fmt.Sprintf(`[[ " $* " == *" download "* ]] && cp %q . ; exit 0`, bad))
	c := &Cache{Root: t.TempDir(), Sources: []string{"deb http://example.invalid/debian sid main"}}
	_, err := c.Extract(context.Background(), "linux-image-test", "1.0", "amd64", "vmlinuz", isVmlinuz)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "linux-image-test=1.0 (amd64): corrupt package")
	_, statErr := os.Stat(filepath.Join(c.Root, "pkg", "linux-image-test_1.0_amd64", "vmlinuz.sha256"))
	assert.True(t, os.IsNotExist(statErr), "no cache entry for a failed extraction")
}

func TestExtractNoMember(t *testing.T) {
	deb := buildDeb(t, "KERNEL")
	fakeApt(t, fmt.Sprintf(`[[ " $* " == *" download "* ]] && cp %q . ; exit 0`, deb))
	c := &Cache{Root: t.TempDir(), Sources: []string{"deb http://example.invalid/debian sid main"}}
	_, err := c.Extract(context.Background(), "linux-image-test", "1.0", "amd64", "vmlinuz", func(string) bool { return false })
	assert.ErrorContains(t, err, "holds no matching file")
}

func TestPackageLeftTheArchive(t *testing.T) {
	// apt-get's real messages for a pinned version that is gone: absent from the lists, or still in stale lists
	// but 404 on the mirror. Either way the lists are refreshed once before giving up with an error naming it.
	for name, msg := range map[string]string{
		"not in lists": "E: Version '6.1.0-1' for 'linux-image-6.1.0-1-amd64' was not found",
		"no source":    "E: Can't find a source to download version '6.1.0-1' of 'linux-image-6.1.0-1-amd64:amd64'",
		"404 on mirror": "E: Failed to fetch http://deb.debian.org/debian/pool/main/l/linux/linux-image-6.1.0-1-amd64_6.1.0-1_amd64.deb" +
			"  404  Not Found [IP: 127.0.0.1 80]",
	} {
		t.Run(name, func(t *testing.T) {
			fakeApt(t, fmt.Sprintf(`[[ " $* " == *" download "* ]] && { echo download >> "$(dirname "$0")/downloads"; echo %q >&2; exit 100; }; echo update >> "$(dirname "$0")/updates"; exit 0`, msg))
			c := &Cache{Root: t.TempDir(), Sources: []string{"deb http://example.invalid/debian sid main"}}
			// Lists from an earlier run: the first download tries them without an update.
			require.NoError(t, c.update(context.Background(), false))
			c.updated = false
			_, err := c.Extract(context.Background(), "linux-image-6.1.0-1-amd64", "6.1.0-1", "amd64", "vmlinuz", isVmlinuz)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "fetch linux-image-6.1.0-1-amd64:amd64=6.1.0-1: ")
			if name != "404 on mirror" {
				assert.Contains(t, err.Error(), "not in the archive")
				assert.Contains(t, err.Error(), "update the pin in vm/kernels.json")
			}
			updates, _ := os.ReadFile(filepath.Join(filepath.Dir(aptPath(t)), "updates"))
			downloads, _ := os.ReadFile(filepath.Join(filepath.Dir(aptPath(t)), "downloads"))
			assert.Equal(t, "update\nupdate\n", string(updates), "possibly stale lists are refreshed once before giving up")
			assert.Equal(t, "download\ndownload\n", string(downloads))
		})
	}
}

func TestAptFailure(t *testing.T) {
	fakeApt(t, `echo "E: Failed to fetch http://example.invalid/debian/dists/sid/InRelease  Could not resolve host" >&2; exit 100`)
	c := &Cache{Root: t.TempDir(), Sources: []string{"deb http://example.invalid/debian sid main"}}
	_, err := c.Extract(context.Background(), "linux-image-x", "1", "arm64", "vmlinuz", isVmlinuz)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fetch linux-image-x=1: apt-get update")
	assert.Contains(t, err.Error(), "Could not resolve host")
}

func TestSeries(t *testing.T) {
	for pkg, want := range map[string][2]string{
		"linux-image-6.1.0-57-amd64":       {"linux-image-6.1.0-58-amd64", "linux-image-6.12.0-57-amd64"},
		"linux-image-6.12.117+deb13-amd64": {"linux-image-6.12.130+deb13-amd64", "linux-image-6.12.117+deb14-amd64"},
		"linux-binary-7.3.4+deb13-arm64":   {"linux-binary-7.3.11+deb13-arm64", "linux-binary-7.3.4+deb13-amd64"},
		"linux-image-5.10.0-32-arm64":      {"linux-image-5.10.0-40-arm64", "linux-image-5.10.0-40-arm64-unsigned"},
	} {
		re, ok := Series(pkg)
		require.True(t, ok, pkg)
		assert.True(t, re.MatchString(pkg), "%s matches its own series %s", pkg, re)
		assert.True(t, re.MatchString(want[0]), "%s is in the series of %s (%s)", want[0], pkg, re)
		assert.False(t, re.MatchString(want[1]), "%s is not in the series of %s (%s)", want[1], pkg, re)
	}
	_, ok := Series("busybox-static")
	assert.False(t, ok)
}

func TestExtractMembersDownloadsOnce(t *testing.T) {
	deb := buildDeb(t, "KERNEL")
	calls := filepath.Join(t.TempDir(), "calls")
	fakeApt(t, fmt.Sprintf(`[[ " $* " == *" download "* ]] && { echo download >> %q; cp %q . ; } ; exit 0`, calls, deb))
	c := &Cache{Root: t.TempDir(), Sources: []string{"deb http://example.invalid/debian sid main"}}
	files := map[string]string{"./boot/vmlinuz-1.0-test": "boot_vmlinuz", "./boot/config-1.0-test": "boot_config"}
	got, err := c.ExtractMembers(context.Background(), "linux-image-test", "1.0", "amd64", files)
	require.NoError(t, err)
	require.Len(t, got, 2)
	for member, want := range map[string]string{"./boot/vmlinuz-1.0-test": "KERNEL", "./boot/config-1.0-test": "CONFIG_X=y\n"} {
		b, err := os.ReadFile(got[member].Path)
		require.NoError(t, err)
		assert.Equal(t, want, string(b), member)
		assert.Equal(t, member, got[member].Member)
	}
	n, err := os.ReadFile(calls)
	require.NoError(t, err)
	assert.Equal(t, "download\n", string(n), "one download for both members")

	// Served from the cache: an apt-get that fails proves it is not run.
	fakeApt(t, `exit 1`)
	again, err := c.ExtractMembers(context.Background(), "linux-image-test", "1.0", "amd64", files)
	require.NoError(t, err)
	assert.Equal(t, got, again)
}

func TestExtractMembersNamesTheMissing(t *testing.T) {
	deb := buildDeb(t, "KERNEL")
	fakeApt(t, fmt.Sprintf(`[[ " $* " == *" download "* ]] && cp %q . ; exit 0`, deb))
	c := &Cache{Root: t.TempDir(), Sources: []string{"deb http://example.invalid/debian sid main"}}
	_, err := c.ExtractMembers(context.Background(), "linux-image-test", "1.0", "amd64",
		map[string]string{"./boot/vmlinuz-1.0-test": "boot_vmlinuz", "./usr/bin/nothere": "usr_bin_nothere"})
	assert.ErrorContains(t, err, "holds no ./usr/bin/nothere")
	_, statErr := os.Stat(filepath.Join(c.Root, "pkg", "linux-image-test_1.0_amd64", "boot_vmlinuz.sha256"))
	assert.True(t, os.IsNotExist(statErr), "nothing cached from a failed call")
}
