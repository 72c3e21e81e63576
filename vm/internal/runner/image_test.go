package runner

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/vm"
	"github.com/confine-dev/confine/vm/internal/console"
	"github.com/confine-dev/confine/vm/internal/oci"
)

func TestReleaseOf(t *testing.T) {
	assert.Equal(t, "6.12.117+deb13-amd64", releaseOf("./boot/vmlinuz-6.12.117+deb13-amd64"))
	assert.Equal(t, "7.3.4+deb13-arm64", releaseOf("./usr/lib/modules/7.3.4+deb13-arm64/vmlinuz"))
}

func TestClassifySkip(t *testing.T) {
	unlabelled := Target{Kernel: vm.Kernel{ID: "lvh-6.6", Ref: "localhost:5000/lvh:6.6"}}
	res, msg := classify(unlabelled, &console.Result{Exit: 1, Landlock: "absent"})
	assert.Equal(t, Skip, res)
	assert.Contains(t, msg, "no Landlock expectation for this kernel (no labels, vm/KERNEL-IMAGE.md) and the kernel reports absent")
	res, _ = classify(unlabelled, &console.Result{Exit: 0, Landlock: "available", ABI: 4})
	assert.Equal(t, OK, res, "a kernel with Landlock is tested even without an expectation")
	res, _ = classify(unlabelled, &console.Result{Exit: -1, Error: "mount tmpfs on /tmp: EPERM"})
	assert.Equal(t, Infra, res, "a broken guest is not a skip")
	res, _ = classify(unlabelled, &console.Result{Exit: -1, TimedOut: true, Error: "guest timeout"})
	assert.Equal(t, Fail, res, "a hung payload is not a skip")
	b, err := Record{Kernel: "lvh-6.6", Result: Skip, Error: msg}.JUnit()
	require.NoError(t, err)
	assert.Contains(t, string(b), `skipped="1"`)
	assert.Contains(t, string(b), "<skipped message=")
}

// pushKernel packs a fake kernel for arch with meta into host/repo:tag.
func pushKernel(t *testing.T, ref string, meta oci.Meta) {
	b := make([]byte, 0x300)
	if meta.Arch == "amd64" {
		copy(b[0x202:], "HdrS")
	} else {
		copy(b[0x38:], "ARM\x64")
	}
	p := filepath.Join(t.TempDir(), "vmlinuz")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	img, err := oci.Build(p, meta)
	require.NoError(t, err)
	r, err := oci.ParseRef(ref)
	require.NoError(t, err)
	_, err = oci.Write(context.Background(), img, r)
	require.NoError(t, err)
}

func TestImageTargets(t *testing.T) {
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer s.Close()
	host := strings.TrimPrefix(s.URL, "http://")
	deb := oci.Meta{Arch: "arm64", Release: "7.3.4+deb13-arm64", Landlock: "available", ABI: 11,
		Source: oci.DebianSource("linux-binary-7.3.4+deb13-arm64", "7.3.4-1~bpo13+1")}
	pushKernel(t, host+"/k:7.3-arm64", deb)
	wsl := oci.Meta{Arch: "amd64", Release: "6.6.87.2-microsoft-standard-WSL2", Landlock: "available", ABI: 3, Source: "WSL2 kernel"}
	pushKernel(t, host+"/k:WSL2_6.6", wsl)
	root := t.TempDir()
	ctx := context.Background()

	tg, err := ImageTarget(ctx, root, host+"/k:7.3-arm64", "")
	require.NoError(t, err)
	assert.Equal(t, vm.Kernel{ID: "7.3-arm64", Arch: "arm64", Package: "linux-binary-7.3.4+deb13-arm64", Version: "7.3.4-1~bpo13+1",
		Ref: host + "/k:7.3-arm64", Landlock: "available", ABI: 11}, tg.Kernel)
	assert.True(t, strings.HasPrefix(tg.Digest, "sha256:"))
	assert.FileExists(t, tg.Image)

	tg, err = ImageTarget(ctx, root, host+"/k:WSL2_6.6", "amd64")
	require.NoError(t, err)
	assert.Equal(t, "wsl2-6.6", tg.ID, "tags become ids")
	assert.Empty(t, tg.Package)
	assert.Equal(t, 3, tg.ABI)
	byDigest, err := ImageTarget(ctx, root, host+"/k@"+tg.Digest, "amd64")
	require.NoError(t, err)
	assert.Equal(t, "k-"+strings.TrimPrefix(tg.Digest, "sha256:")[:12], byDigest.ID)

	// A manifest kernel given an image: the image must hold its package.
	m, err := vm.Load()
	require.NoError(t, err)
	ks, err := m.Select([]string{"7.3-arm64", "7.3-amd64"}, nil)
	require.NoError(t, err)
	arm := Target{Kernel: ks[1]}
	arm.Ref = host + "/k:7.3-arm64"
	require.NoError(t, pullKernel(ctx, root, &arm))
	assert.FileExists(t, arm.Image)
	amd := Target{Kernel: ks[0]}
	amd.Ref = host + "/k:7.3-arm64"
	assert.ErrorContains(t, pullKernel(ctx, root, &amd), "is for linux/arm64, want linux/amd64")
	wrong := Target{Kernel: ks[1]}
	wrong.Ref, wrong.Package = host+"/k:7.3-arm64", "linux-binary-7.0.13+deb13-arm64"
	assert.ErrorContains(t, pullKernel(ctx, root, &wrong), `holds "debian:linux-binary-7.3.4+deb13-arm64=7.3.4-1~bpo13+1", the manifest pins linux-binary-7.0.13+deb13-arm64=`)
}
