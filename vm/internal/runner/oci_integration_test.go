//go:build vmintegration

// Kernels as OCI images end to end (tag vmintegration, run by `make vm-test`): a real registry (Debian's
// docker-registry) on loopback, two Debian kernels (one per arch) imported, pushed, pulled back and booted from
// their references next to the same kernels from their .debs, plus one kernel file packed with `vm kernel
// import-file`. Five TCG boots in one run, two at a time.
package runner

import (
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
	require.Len(t, recs, 5)
	for _, r := range recs {
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
