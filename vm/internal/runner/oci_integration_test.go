//go:build vmintegration

// Kernels as OCI images end to end (tag vmintegration, run by `make vm-test`): a real registry (Debian's
// docker-registry) on loopback, two Debian kernels (one per arch) imported, pushed, pulled back and booted from
// their references next to the same kernels from their .debs, plus one kernel file packed with `vm kernel
// import-file`, and another project's unlabelled image of a kernel without Landlock (a skip). Six TCG boots in one
// run, two at a time.
package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/vm"
	"github.com/confine-dev/confine/vm/internal/fetch"
	"github.com/confine-dev/confine/vm/internal/oci"
)

// dockerRegistry starts /usr/bin/docker-registry on a free loopback port with its storage in a temporary
// directory, waits until it answers /v2/, and stops it when the test ends. It returns host:port.
func dockerRegistry(t *testing.T) string {
	const bin = "/usr/bin/docker-registry"
	_, err := os.Stat(bin)
	require.NoError(t, err, "Debian's docker-registry package is needed (make vm-deps installs it)")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	dir := t.TempDir()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"+
		"storage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o644))
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	// Poll until the registry answers or exits; a registry that does neither ends at go test's -timeout.
	for ; ; time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("docker-registry exited: %v: %s", err, logs.String())
		default:
		}
		if resp, err := http.Get("http://" + addr + "/v2/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
	}
}

// buildBoth builds the guest init for both arches into dir/bin and the probe payload into dir/payload/<arch>.
func buildBoth(t *testing.T) (initDir, payload string) {
	dir := t.TempDir()
	for _, arch := range vm.Arches {
		for _, b := range []struct{ pkg, out string }{
			{"../../cmd/vm", filepath.Join(dir, "bin", "vm-linux-"+arch)},
			{"../../cmd/abiprobe", filepath.Join(dir, "payload", arch, "abiprobe")},
		} {
			cmd := exec.Command("go", "build", "-trimpath", "-o", b.out, b.pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "go build %s: %s", b.pkg, out)
		}
	}
	return filepath.Join(dir, "bin"), filepath.Join(dir, "payload", "{arch}")
}

// pushUnlabelled pushes the kernel at path as an image of the common layout with no labels: ./boot/vmlinuz-REL
// and a symlink ./boot/vmlinuz to it.
func pushUnlabelled(t *testing.T, path, arch, ref string) {
	kernel, err := os.ReadFile(path)
	require.NoError(t, err)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "./boot/", Mode: 0o755}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "./boot/vmlinuz-5.10", Mode: 0o644, Size: int64(len(kernel))}))
	_, err = tw.Write(kernel)
	require.NoError(t, err)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "./boot/vmlinuz", Linkname: "vmlinuz-5.10"}))
	require.NoError(t, tw.Close())
	layer, err := tarball.LayerFromReader(&buf)
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	cf.OS, cf.Architecture = "linux", arch
	img, err = mutate.ConfigFile(img, cf)
	require.NoError(t, err)
	r, err := oci.ParseRef(ref)
	require.NoError(t, err)
	_, err = oci.Write(context.Background(), img, r)
	require.NoError(t, err)
}

func TestIntegrationOCI(t *testing.T) {
	ctx := context.Background()
	m, err := vm.Load()
	require.NoError(t, err)
	ks, err := m.Select([]string{"7.3-amd64", "7.3-arm64"}, nil)
	require.NoError(t, err)
	host := dockerRegistry(t)
	cache := &fetch.Cache{Root: fetch.DefaultRoot(), Sources: m.AptSources, Log: t.Logf}

	var targets []Target
	var refs []string
	for _, k := range ks {
		ex, meta, err := DebianKernel(ctx, cache, m, k.Package, k.Version, k.Arch)
		require.NoError(t, err)
		assert.Equal(t, oci.Meta{Arch: k.Arch, Release: strings.TrimPrefix(k.Package, "linux-binary-"), Landlock: k.Landlock,
			ABI: k.ABI, Source: oci.DebianSource(k.Package, k.Version)}, meta)
		img, err := oci.Build(ex.Path, meta)
		require.NoError(t, err)
		ref, err := oci.ParseRef(host + "/confine/kernel:oci-" + k.ID)
		require.NoError(t, err)
		dig, err := oci.Write(ctx, img, ref)
		require.NoError(t, err)
		again, err := oci.Build(ex.Path, meta)
		require.NoError(t, err)
		dig2, err := oci.Write(ctx, again, ref)
		require.NoError(t, err)
		assert.Equal(t, dig, dig2, "re-importing %s gives the same digest", k.ID)
		t.Logf("%s: %s=%s -> %s (%s)", k.ID, k.Package, k.Version, ref, dig)

		// A pull into an empty cache brings back the .deb's kernel byte for byte.
		fresh, err := oci.Pull(ctx, t.TempDir(), ref, k.Arch)
		require.NoError(t, err)
		assert.Equal(t, dig, fresh.Digest)
		assert.Equal(t, ex.SHA256, fresh.SHA256)
		targets = append(targets, Target{Kernel: k})
		refs = append(refs, ref.Raw)
	}

	// A user's kernel file (here the arm64 .deb's image) packed by the CLI's import-file joins by reference. The
	// guest init built for the host's arch is the vm CLI itself.
	initDir, payload := buildBoth(t)
	arm := targets[1]
	ex, err := FetchKernel(ctx, cache, arm.Kernel)
	require.NoError(t, err)
	fileRef := host + "/confine/kernel:file-arm64"
	cmd := exec.Command(filepath.Join(initDir, "vm-linux-"+runtime.GOARCH), "kernel", "import-file", ex.Path, "--arch", "arm64",
		"--release", "7.3.4+deb13-arm64", "--expect-abi", fmt.Sprint(arm.ABI), "--source", "file (integration test)", "--to", fileRef)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "vm kernel import-file: %s", out)
	t.Logf("import-file: %s", out)
	refs = append(refs, fileRef)

	// Another project's image: the common layout (/boot/vmlinuz a symlink to the versioned file), no labels, and a
	// kernel without Landlock (Debian's 5.10). It boots, and its result is a skip with the reason.
	old, err := m.Select([]string{"5.10-arm64"}, nil)
	require.NoError(t, err)
	oldEx, err := FetchKernel(ctx, cache, old[0])
	require.NoError(t, err)
	foreignRef := host + "/other/kernel:5.10-unlabelled"
	pushUnlabelled(t, oldEx.Path, "arm64", foreignRef)
	refs = append(refs, foreignRef)

	for _, r := range refs {
		tg, err := ImageTarget(ctx, cache.Root, r, "")
		require.NoError(t, err)
		targets = append(targets, tg)
	}
	o := Options{
		Targets: targets, Payload: payload, Argv: []string{"/payload/abiprobe"}, Jobs: 2, Accel: "auto",
		Results: t.TempDir(), InitDir: initDir, Cache: cache, Busybox: m.Busybox, Progress: testWriter{t},
	}
	recs, err := Run(ctx, o)
	require.NoError(t, err)
	require.Len(t, recs, 6)
	foreign := recs[5]
	assert.Equal(t, Skip, foreign.Result, foreign.Error)
	assert.Contains(t, foreign.Error, "no Landlock expectation for this kernel (no labels, vm/KERNEL-IMAGE.md) and the kernel reports absent")
	assert.Equal(t, "5.10.0-32-arm64", foreign.Release)
	for _, r := range recs[:5] {
		require.Equal(t, OK, r.Result, "%s: %s\n%s", r.Kernel, r.Error, strings.Join(r.ConsoleTail, "\n"))
	}
	for i, deb := range recs[:2] {
		img := recs[2+i]
		assert.Equal(t, "oci-"+deb.Kernel, img.Kernel)
		assert.Equal(t, refs[i], img.ImageRef)
		assert.True(t, strings.HasPrefix(img.ImageDigest, "sha256:"))
		assert.Empty(t, deb.ImageRef)
		// The same kernel, the same expectation, the same outcome.
		for name, pair := range map[string][2]any{
			"package": {deb.Package, img.Package}, "version": {deb.Version, img.Version},
			"image_sha256": {deb.ImageSHA256, img.ImageSHA256}, "release": {deb.Release, img.Release},
			"arch": {deb.Arch, img.Arch}, "expected": {vm.RenderABI(deb.ExpectedLandlock, deb.ExpectedABI), vm.RenderABI(img.ExpectedLandlock, img.ExpectedABI)},
			"landlock": {deb.Landlock, img.Landlock}, "abi": {deb.ABI, img.ABI}, "exit": {deb.Exit, img.Exit},
		} {
			assert.Equal(t, pair[0], pair[1], "%s: %s differs between the .deb and the image", deb.Kernel, name)
		}
	}
	file := recs[4]
	assert.Equal(t, "file-arm64", file.Kernel)
	assert.Equal(t, "7.3.4+deb13-arm64", file.Release)
	assert.Equal(t, arm.ABI, file.ABI)
}
