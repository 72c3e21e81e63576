package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/confine-dev/confine/release/internal/fixture"
	"github.com/confine-dev/confine/release/platforms"
	"github.com/confine-dev/confine/release/registry"
	"github.com/confine-dev/confine/release/verify"
)

const version = "v1.0.0-test"

// startRegistry runs the real docker-registry on loopback for one test. Without it the test skips, unless
// CONFINE_REQUIRE_REGISTRY=1 (set by `make release-test`, which installs it first): then it fails.
func startRegistry(t *testing.T) *registry.Server {
	t.Helper()
	s, err := registry.Start("", t.TempDir())
	if errors.Is(err, registry.ErrNoBinary) && os.Getenv("CONFINE_REQUIRE_REGISTRY") != "1" {
		t.Skip("skipped: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func sum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func plat(arch string) platforms.Platform {
	return platforms.Platform{Name: "linux_" + arch, GOOS: "linux", GOARCH: arch, MaxBytes: 64 << 20}
}

// binaries builds a static, stripped, stamped fixture per architecture.
func binaries(t *testing.T) map[string]string {
	return map[string]string{
		"amd64": fixture.Build(t, fixture.Spec{GOARCH: "amd64", Version: version}),
		"arm64": fixture.Build(t, fixture.Spec{GOARCH: "arm64", Version: version}),
	}
}

// TestRoundTrip pushes the two-arch index to a real registry and to an OCI layout, pulls each child back
// by platform, and checks the extracted binary is byte for byte the input and passes verify.
func TestRoundTrip(t *testing.T) {
	bins := binaries(t)
	srv := startRegistry(t)
	idx, err := Index([]Child{{"amd64", bins["amd64"]}, {"arm64", bins["arm64"]}})
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(srv.Addr+"/confine:"+version, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := Push(tag, idx)
	if err != nil {
		t.Fatal(err)
	}
	lay := filepath.Join(t.TempDir(), "layout")
	if err := WriteLayout(lay, idx, version); err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(tag)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := pulled.Digest(); d != digest {
		t.Fatalf("the tag resolves to %s, pushed %s", d, digest)
	}
	fromLayout, err := LayoutIndex(lay, version)
	if err != nil {
		t.Fatal(err)
	}
	for src, ix := range map[string]v1.ImageIndex{"registry": pulled, "layout": fromLayout} {
		for arch, bin := range bins {
			out := filepath.Join(t.TempDir(), "confine")
			child, err := Extract(ix, arch, out)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if got, want := sum(t, out), sum(t, bin); got != want {
				t.Fatalf("%s linux/%s child %s: sha256 %s, pushed %s", src, arch, child, got, want)
			}
			if st, _ := os.Stat(out); st.Mode().Perm() != 0o755 {
				t.Fatalf("%s linux/%s: extracted mode %v", src, arch, st.Mode())
			}
			if rs := verify.Artifact(out, plat(arch), verify.Release{Version: version}); verify.Failed(rs) {
				t.Fatalf("%s linux/%s: verify failed: %v", src, arch, rs)
			}
			t.Logf("%s linux/%s: child %s, sha256 %s, verify ok", src, arch, child, sum(t, out))
		}
	}
}

// TestWrongArchChildCaught: an index whose arm64 child holds the amd64 binary pushes fine (the registry
// cannot know), but the binary pulled back for linux/arm64 fails verify's machine check.
func TestWrongArchChildCaught(t *testing.T) {
	bins := binaries(t)
	srv := startRegistry(t)
	idx, err := Index([]Child{{"amd64", bins["amd64"]}, {"arm64", bins["amd64"]}})
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(srv.Addr+"/confine:bad", name.Insecure)
	if _, err := Push(tag, idx); err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(tag)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "confine")
	if _, err := Extract(pulled, "arm64", out); err != nil {
		t.Fatal(err)
	}
	rs := verify.Artifact(out, plat("arm64"), verify.Release{Version: version})
	for _, r := range rs {
		t.Log(r)
		if r.Check == verify.CheckMachine && !r.OK && strings.Contains(r.Detail, "machine EM_X86_64, want EM_AARCH64") {
			return
		}
	}
	t.Fatalf("verify did not catch the amd64 binary in the arm64 child: %v", rs)
}

// TestRefusedPushLeavesNoTag puts a proxy in front of the real registry that refuses the arm64 child's
// manifest (403): Push fails naming that child, and the registry behind has no tag and no index.
func TestRefusedPushLeavesNoTag(t *testing.T) {
	bins := binaries(t)
	srv := startRegistry(t)
	idx, err := Index([]Child{{"amd64", bins["amd64"]}, {"arm64", bins["arm64"]}})
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	var refused string
	for _, d := range im.Manifests {
		if d.Platform.Architecture == "arm64" {
			refused = d.Digest.String()
		}
	}
	backend, _ := url.Parse("http://" + srv.Addr)
	proxy := httputil.NewSingleHostReverseProxy(backend)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/"+refused) {
			http.Error(w, `{"errors":[{"code":"DENIED","message":"refused by the test"}]}`, http.StatusForbidden)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	frontTag, _ := name.NewTag(strings.TrimPrefix(front.URL, "http://")+"/confine:"+version, name.Insecure)
	_, err = Push(frontTag, idx)
	if err == nil || !strings.Contains(err.Error(), "pushing the linux/arm64 child") {
		t.Fatalf("Push through a refusing registry = %v, want an error naming the linux/arm64 child", err)
	}
	t.Log(err)
	assertNothingTagged(t, srv.Addr, idx)
}

// TestRegistryDown: pushing to a registry that has stopped fails, and leaves nothing behind it tagged.
func TestRegistryDown(t *testing.T) {
	bins := binaries(t)
	srv := startRegistry(t)
	idx, err := Index([]Child{{"amd64", bins["amd64"]}, {"arm64", bins["arm64"]}})
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr
	srv.Stop()
	tag, _ := name.NewTag(addr+"/confine:"+version, name.Insecure)
	if _, err := Push(tag, idx); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Push to a stopped registry = %v, want connection refused", err)
	}
}

func assertNothingTagged(t *testing.T, addr string, idx v1.ImageIndex) {
	t.Helper()
	tag, _ := name.NewTag(addr+"/confine:"+version, name.Insecure)
	_, err := remote.Head(tag)
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusNotFound {
		t.Fatalf("HEAD %s after a failed push = %v, want 404", tag, err)
	}
	d, _ := idx.Digest()
	if _, err := remote.Head(tag.Context().Digest(d.String())); !errors.As(err, &terr) || terr.StatusCode != http.StatusNotFound {
		t.Fatalf("HEAD of the index %s after a failed push = %v, want 404", d, err)
	}
}
