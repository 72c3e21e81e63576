package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeKernel returns bytes preflight.KernelImage accepts as a kernel for arch, with tag mixed in to vary them.
func fakeKernel(arch, tag string) []byte {
	b := make([]byte, 0x300+len(tag))
	if arch == "amd64" {
		copy(b[0x202:], "HdrS")
	} else {
		copy(b[0x38:], "ARM\x64")
	}
	copy(b[0x300:], tag)
	return b
}

func writeKernel(t *testing.T, arch, tag string) string {
	p := filepath.Join(t.TempDir(), "vmlinuz-"+arch)
	require.NoError(t, os.WriteFile(p, fakeKernel(arch, tag), 0o644))
	return p
}

var meta73 = Meta{Arch: "arm64", Release: "7.3.4+deb13-arm64", Landlock: "available", ABI: 11,
	Source: DebianSource("linux-binary-7.3.4+deb13-arm64", "7.3.4-1~bpo13+1")}

// startRegistry serves go-containerregistry's in-memory registry, through wrap when given, and returns its host.
func startRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func mustRef(t *testing.T, s string) Ref {
	r, err := ParseRef(s)
	require.NoError(t, err)
	return r
}

// assertCacheClean checks that root/oci holds no entry and no staging directory.
func assertCacheClean(t *testing.T, root string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(root, "oci"))
	assert.Empty(t, ents, "nothing half-written stays in the cache")
}

func TestBuildReproducible(t *testing.T) {
	k := writeKernel(t, "arm64", "a")
	a, err := Build(k, meta73)
	require.NoError(t, err)
	b, err := Build(k, meta73)
	require.NoError(t, err)
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	assert.Equal(t, da, db, "same kernel and meta, same digest")

	other := meta73
	other.ABI = 10
	c, err := Build(k, other)
	require.NoError(t, err)
	dc, err := c.Digest()
	require.NoError(t, err)
	assert.NotEqual(t, da, dc, "the labels are part of the image")

	m, err := a.Manifest()
	require.NoError(t, err)
	assert.Equal(t, types.OCIManifestSchema1, m.MediaType)
	assert.Equal(t, "11", m.Annotations[LabelABI])
	cf, err := a.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "linux/arm64", cf.Platform().String())
	assert.Equal(t, meta73.Release, cf.Config.Labels[LabelRelease])
}

func TestBuildRejects(t *testing.T) {
	k := writeKernel(t, "amd64", "a")
	_, err := Build(k, Meta{Arch: "amd64", Release: "r", Landlock: "available", ABI: 0, Source: "x"})
	assert.ErrorContains(t, err, "want an ABI number >= 1")
	_, err = Build(k, Meta{Arch: "arm64", Release: "r", Landlock: "absent", Source: "x"})
	assert.ErrorContains(t, err, "is an amd64 kernel, not arm64")
	_, err = Build(k, Meta{Arch: "riscv64", Release: "r", Landlock: "absent", Source: "x"})
	assert.ErrorContains(t, err, `arch "riscv64"`)
}

func TestParseExpectation(t *testing.T) {
	for in, want := range map[string]struct {
		state string
		abi   int
	}{"3": {"available", 3}, "absent": {"absent", 0}, "disabled": {"disabled", 0}} {
		s, n, err := ParseExpectation(in)
		require.NoError(t, err, in)
		assert.Equal(t, want.state, s, in)
		assert.Equal(t, want.abi, n, in)
	}
	for _, bad := range []string{"0", "-1", "yes", ""} {
		_, _, err := ParseExpectation(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseRef(t *testing.T) {
	r := mustRef(t, "127.0.0.1:5000/confine/kernel:7.3-arm64")
	assert.Equal(t, "7.3-arm64", r.Tag)
	assert.Equal(t, "http", r.Repo.Scheme(), "loopback is insecure")
	r = mustRef(t, "ghcr.io/x/kernel@sha256:"+strings.Repeat("a", 64))
	assert.Equal(t, "", r.Tag)
	assert.Equal(t, "https", r.Repo.Scheme())
	r = mustRef(t, "ghcr.io/x/kernel")
	assert.Equal(t, "latest", r.Tag)
	r = mustRef(t, "oci-layout:/tmp/a:b/dir:v1@sha256:"+strings.Repeat("b", 64))
	assert.Equal(t, "/tmp/a:b/dir", r.Layout)
	assert.Equal(t, "v1", r.Tag)
	assert.Equal(t, strings.Repeat("b", 64), r.Digest.Hex)
	_, err := ParseRef("ghcr.io/x/kernel@sha256:short")
	assert.ErrorContains(t, err, "bad digest")
	assert.True(t, IsRef("oci-layout:k"))
	assert.True(t, IsRef("localhost:5000/k"))
	assert.False(t, IsRef("7.3-arm64"))
}

func TestRoundTripRegistry(t *testing.T) {
	host := startRegistry(t, nil)
	k := writeKernel(t, "arm64", "a")
	img, err := Build(k, meta73)
	require.NoError(t, err)
	ctx := context.Background()
	dig, err := Write(ctx, img, mustRef(t, host+"/confine/kernel:7.3-arm64"))
	require.NoError(t, err)

	root := t.TempDir()
	got, err := Pull(ctx, root, mustRef(t, host+"/confine/kernel:7.3-arm64"), "arm64")
	require.NoError(t, err)
	assert.Equal(t, dig, got.Digest)
	assert.Equal(t, meta73, got.Meta)
	assert.Equal(t, filepath.Join(root, "oci", "sha256-"+dig.Hex, "vmlinuz"), got.Path)
	want, err := fileSHA256(k)
	require.NoError(t, err)
	assert.Equal(t, want, got.SHA256)
	b, err := os.ReadFile(got.Path)
	require.NoError(t, err)
	assert.Equal(t, fakeKernel("arm64", "a"), b)

	// By digest, from the cache: a closed registry is never asked.
	again, err := Pull(ctx, root, mustRef(t, "127.0.0.1:1/confine/kernel@"+dig.String()), "arm64")
	require.NoError(t, err)
	assert.Equal(t, got.Path, again.Path)

	// A tag pinned to its current digest pulls; pinned to another, it names the move.
	_, err = Pull(ctx, t.TempDir(), mustRef(t, host+"/confine/kernel:7.3-arm64@"+dig.String()), "arm64")
	require.NoError(t, err)
	img2, err := Build(writeKernel(t, "arm64", "b"), meta73)
	require.NoError(t, err)
	_, err = Write(ctx, img2, mustRef(t, host+"/confine/kernel:7.3-arm64"))
	require.NoError(t, err)
	fresh := t.TempDir()
	_, err = Pull(ctx, fresh, mustRef(t, host+"/confine/kernel:7.3-arm64@"+dig.String()), "arm64")
	assert.ErrorContains(t, err, `tag "7.3-arm64" moved: it now names sha256:`)
	assertCacheClean(t, fresh)

	// The image is arm64: asking for amd64 is an error, from the registry and from the cache.
	_, err = Pull(ctx, fresh, mustRef(t, host+"/confine/kernel@"+dig.String()), "amd64")
	assert.ErrorContains(t, err, "is for linux/arm64, want linux/amd64")
	_, err = Pull(ctx, root, mustRef(t, host+"/confine/kernel@"+dig.String()), "amd64")
	assert.ErrorContains(t, err, "is for linux/arm64, want linux/amd64")
}

func TestRoundTripLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	ctx := context.Background()
	imgA, err := Build(writeKernel(t, "arm64", "a"), meta73)
	require.NoError(t, err)
	m64 := Meta{Arch: "amd64", Release: "6.6.87.2-microsoft-standard-WSL2", Landlock: "available", ABI: 3, Source: "WSL2 kernel"}
	imgB, err := Build(writeKernel(t, "amd64", "b"), m64)
	require.NoError(t, err)
	da, err := Write(ctx, imgA, mustRef(t, "oci-layout:"+dir+":a"))
	require.NoError(t, err)
	_, err = Write(ctx, imgB, mustRef(t, "oci-layout:"+dir+":b"))
	require.NoError(t, err)
	_, err = Write(ctx, imgA, mustRef(t, "oci-layout:"+dir+":a"))
	require.NoError(t, err, "re-writing a tag replaces it")

	root := t.TempDir()
	got, err := Pull(ctx, root, mustRef(t, "oci-layout:"+dir+":a"), "")
	require.NoError(t, err)
	assert.Equal(t, da, got.Digest)
	assert.Equal(t, meta73, got.Meta)
	got, err = Pull(ctx, root, mustRef(t, "oci-layout:"+dir+":b"), "amd64")
	require.NoError(t, err)
	assert.Equal(t, m64, got.Meta)
	_, err = Pull(ctx, root, mustRef(t, "oci-layout:"+dir+":c"), "amd64")
	assert.ErrorContains(t, err, "not found in OCI layout")

	// A config edited in place (say, to claim another ABI) no longer matches the manifest.
	cfgDigest, err := imgB.ConfigName()
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "blobs", "sha256", cfgDigest.Hex)
	b, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgPath, bytes.Replace(b, []byte(`"3"`), []byte(`"9"`), 1), 0o644))
	fresh := t.TempDir()
	_, err = Pull(ctx, fresh, mustRef(t, "oci-layout:"+dir+":b"), "amd64")
	assert.ErrorContains(t, err, "config does not match its digest "+cfgDigest.String())
	assertCacheClean(t, fresh)
}

// rawImage builds a one-layer image for linux/arch holding files (name -> content; content "->x" is a symlink to
// x), with no labels.
func rawImage(t *testing.T, arch string, files map[string]string) v1.Image {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for n, c := range files {
		if target, ok := strings.CutPrefix(c, "->"); ok {
			require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: n, Linkname: target}))
			continue
		}
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(c))}))
		_, err := tw.Write([]byte(c))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	l, err := tarball.LayerFromReader(&buf)
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, l)
	require.NoError(t, err)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: arch, RootFS: mustConfig(t, img).RootFS})
	require.NoError(t, err)
	return img
}

func mustConfig(t *testing.T, img v1.Image) *v1.ConfigFile {
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	return cf
}

func TestForeignImages(t *testing.T) {
	host := startRegistry(t, nil)
	ctx := context.Background()
	push := func(tag string, img v1.Image) Ref {
		r := mustRef(t, host+"/other/kernel:"+tag)
		_, err := Write(ctx, img, r)
		require.NoError(t, err)
		return r
	}
	root := t.TempDir()

	// Another project's layout: ./boot/vmlinuz a symlink to the versioned file, no labels.
	got, err := Pull(ctx, root, push("lvh", rawImage(t, "amd64", map[string]string{
		"./boot/vmlinuz-6.6.0": string(fakeKernel("amd64", "x")), "./boot/vmlinuz": "->vmlinuz-6.6.0",
	})), "amd64")
	require.NoError(t, err)
	assert.Equal(t, Meta{Arch: "amd64"}, got.Meta, "no labels: no expectation")
	b, err := os.ReadFile(got.Path)
	require.NoError(t, err)
	assert.Equal(t, fakeKernel("amd64", "x"), b)

	fresh := t.TempDir()
	_, err = Pull(ctx, fresh, push("nokernel", rawImage(t, "amd64", map[string]string{"etc/os-release": "x"})), "amd64")
	assert.ErrorContains(t, err, "has no /boot/vmlinuz in its 1 layer(s)")
	assertCacheClean(t, fresh)

	_, err = Pull(ctx, fresh, push("dangling", rawImage(t, "amd64", map[string]string{"boot/vmlinuz": "->/boot/vmlinuz-6.6"})), "amd64")
	assert.ErrorContains(t, err, "/boot/vmlinuz links to /boot/vmlinuz-6.6, which is not in the same layer")
	assertCacheClean(t, fresh)

	_, err = Pull(ctx, fresh, push("otherarch", rawImage(t, "arm64", map[string]string{"boot/vmlinuz": string(fakeKernel("amd64", "x"))})), "arm64")
	assert.ErrorContains(t, err, "is an amd64 kernel, not arm64")
	assertCacheClean(t, fresh)

	// An index whose arm64 child is an amd64 image.
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{
		Add:        rawImage(t, "amd64", map[string]string{"boot/vmlinuz": string(fakeKernel("amd64", "y"))}),
		Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}},
	})
	idxRef := mustRef(t, host+"/other/kernel:liar")
	require.NoError(t, remote.WriteIndex(idxRef.fetchRef(), idx))
	_, err = Pull(ctx, fresh, idxRef, "arm64")
	assert.ErrorContains(t, err, "is for linux/amd64, want linux/arm64")
	_, err = Pull(ctx, fresh, idxRef, "")
	assert.ErrorContains(t, err, "is an index: name the platform")
	assertCacheClean(t, fresh)
}

func TestPullErrors(t *testing.T) {
	ctx := context.Background()
	host := startRegistry(t, nil)
	root := t.TempDir()
	_, err := Pull(ctx, root, mustRef(t, host+"/confine/kernel:missing"), "arm64")
	assert.ErrorContains(t, err, "no such image in "+host+"/confine/kernel (HTTP 404)")

	down := httptest.NewServer(http.NotFoundHandler())
	downHost := strings.TrimPrefix(down.URL, "http://")
	down.Close()
	_, err = Pull(ctx, root, mustRef(t, downHost+"/confine/kernel:7.3-arm64"), "arm64")
	assert.ErrorContains(t, err, "registry "+downHost+" unreachable")
	assertCacheClean(t, root)
}

func TestPullTruncatedLayer(t *testing.T) {
	// The registry cuts every blob except the config short by half, with a matching Content-Length.
	var cut bool
	host := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !cut || r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			if len(body) > 2000 { // the layer; the config is a few hundred bytes
				body = body[:len(body)/2]
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(rec.Code)
			w.Write(body)
		})
	})
	big := make([]byte, 64<<10) // incompressible, so the gzip'd layer is far larger than the config
	_, err := rand.Read(big)
	require.NoError(t, err)
	img, err := Build(writeKernel(t, "arm64", string(big)), meta73)
	require.NoError(t, err)
	ref := mustRef(t, host+"/confine/kernel:7.3-arm64")
	_, err = Write(context.Background(), img, ref)
	require.NoError(t, err)
	cut = true
	root := t.TempDir()
	_, err = Pull(context.Background(), root, ref, "arm64")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "layer sha256:")
	assert.Contains(t, err.Error(), "does not match expected size")
	assertCacheClean(t, root)

	// The same layer cut short in an OCI layout: the size and digest check of the copy sees it.
	dir := filepath.Join(t.TempDir(), "layout")
	_, err = Write(context.Background(), img, mustRef(t, "oci-layout:"+dir+":k"))
	require.NoError(t, err)
	layers, err := img.Layers()
	require.NoError(t, err)
	ld, err := layers[0].Digest()
	require.NoError(t, err)
	blob := filepath.Join(dir, "blobs", "sha256", ld.Hex)
	st, err := os.Stat(blob)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(blob, st.Size()/2))
	_, err = Pull(context.Background(), root, mustRef(t, "oci-layout:"+dir+":k"), "arm64")
	assert.ErrorContains(t, err, "layer "+ld.String()+": truncated or corrupt: got "+strconv.FormatInt(st.Size()/2, 10)+" bytes")
	assertCacheClean(t, root)
}

// An index of both arches resolves to the asked platform's child, from a registry and from an OCI layout.
func TestPullIndexByPlatform(t *testing.T) {
	ctx := context.Background()
	m64 := meta73
	m64.Arch, m64.Release = "amd64", "7.3.4+deb13-amd64"
	arm, err := Build(writeKernel(t, "arm64", "arm"), meta73)
	require.NoError(t, err)
	amd, err := Build(writeKernel(t, "amd64", "amd"), m64)
	require.NoError(t, err)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	armDigest, err := arm.Digest()
	require.NoError(t, err)

	host := startRegistry(t, nil)
	ref := mustRef(t, host+"/confine/kernel:7.3")
	require.NoError(t, remote.WriteIndex(ref.fetchRef(), idx))
	got, err := Pull(ctx, t.TempDir(), ref, "arm64")
	require.NoError(t, err)
	assert.Equal(t, armDigest, got.Digest)
	assert.Equal(t, meta73, got.Meta)

	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refName: "7.3"})))
	got, err = Pull(ctx, t.TempDir(), mustRef(t, "oci-layout:"+dir+":7.3"), "arm64")
	require.NoError(t, err)
	assert.Equal(t, armDigest, got.Digest)
	_, err = Pull(ctx, t.TempDir(), mustRef(t, "oci-layout:"+dir+":7.3"), "")
	assert.ErrorContains(t, err, "is an index: name the platform")
}

// Credentials come from the Docker config (authn.DefaultKeychain), as `docker login` writes them.
func TestRegistryAuthFromDockerConfig(t *testing.T) {
	host := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="kernels"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	cfg := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))
	require.NoError(t, os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"auths":{"`+host+`":{"auth":"`+auth+`"}}}`), 0o600))
	t.Setenv("DOCKER_CONFIG", cfg)
	img, err := Build(writeKernel(t, "arm64", "a"), meta73)
	require.NoError(t, err)
	ref := mustRef(t, host+"/confine/kernel:7.3-arm64")
	ctx := context.Background()
	_, err = Write(ctx, img, ref)
	require.NoError(t, err)
	_, err = Pull(ctx, t.TempDir(), ref, "arm64")
	require.NoError(t, err)

	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials
	root := t.TempDir()
	_, err = Pull(ctx, root, ref, "arm64")
	assert.ErrorContains(t, err, "registry "+host+" refused the credentials of ~/.docker/config.json ($DOCKER_CONFIG), or there are none")
	assert.ErrorContains(t, err, "401 Unauthorized")
	assertCacheClean(t, root)
}
