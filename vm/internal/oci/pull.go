package oci

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/confine-dev/confine/vm/internal/preflight"
)

// Kernel is a kernel image pulled into the cache.
type Kernel struct {
	Ref    string  // the reference as given
	Digest v1.Hash // digest of the image manifest (the platform's child when the reference names an index)
	Path   string  // the cached kernel image, <root>/oci/<algorithm>-<hex>/vmlinuz
	SHA256 string  // hex sha256 of Path
	Meta           // from the image's annotations or labels; Landlock and Source are "" for an unlabelled image
}

// entry is <root>/oci/<algorithm>-<hex>/meta.json.
type entry struct {
	Digest string `json:"digest"`
	SHA256 string `json:"sha256"`
	Meta   Meta   `json:"meta"`
}

// Pull returns the kernel of the image ref names for linux/arch (arch "" takes the image's own platform, which an
// index cannot give), pulling it into root/oci (root is the vm cache, $CACHE/vm) unless the cache already holds
// that image digest. A registry is read with authn.DefaultKeychain's credentials.
//
// Errors name the reference: it does not exist, the registry is unreachable, a pinned tag ("repo:tag@digest")
// moved, the image or index child is for another platform, no layer holds /boot/vmlinuz, the kernel is not a
// bzImage/Image for arch, or a layer's bytes do not match its digest or size (truncated). The cache entry is a
// directory renamed into place once complete, so a failed pull leaves nothing in it.
func Pull(ctx context.Context, root string, ref Ref, arch string) (Kernel, error) {
	k, err := pull(ctx, root, ref, arch)
	if err != nil {
		return Kernel{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	k.Ref = ref.Raw
	return k, nil
}

func pull(ctx context.Context, root string, ref Ref, arch string) (Kernel, error) {
	if ref.Tag == "" {
		if k, ok, err := cached(root, ref.Digest, arch); ok || err != nil {
			return k, err
		}
	}
	img, err := resolve(ctx, ref, arch)
	if err != nil {
		return Kernel{}, err
	}
	dig, err := img.Digest()
	if err != nil {
		return Kernel{}, err
	}
	if k, ok, err := cached(root, dig, arch); ok || err != nil {
		return k, err
	}
	if err := verify(img, dig); err != nil {
		return Kernel{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Kernel{}, fmt.Errorf("image %s: config: %w", dig, err)
	}
	if cf.OS != "linux" || (arch != "" && cf.Architecture != arch) || (cf.Architecture != "amd64" && cf.Architecture != "arm64") {
		want := "linux/" + arch
		if arch == "" {
			want = "linux/amd64 or linux/arm64"
		}
		return Kernel{}, fmt.Errorf("image %s is for %s/%s, want %s", dig, cf.OS, cf.Architecture, want)
	}
	mf, err := img.Manifest()
	if err != nil {
		return Kernel{}, fmt.Errorf("image %s: manifest: %w", dig, err)
	}
	meta, err := metaFrom(cf.Architecture, mf.Annotations, cf.Config.Labels)
	if err != nil {
		return Kernel{}, fmt.Errorf("image %s: %w", dig, err)
	}
	return store(root, img, dig, meta)
}

// resolve finds the image of ref for linux/arch, checking a pinned tag.
func resolve(ctx context.Context, ref Ref, arch string) (v1.Image, error) {
	if ref.Layout != "" {
		return resolveLayout(ref, arch)
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if arch != "" {
		opts = append(opts, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
	}
	desc, err := remote.Get(ref.fetchRef(), opts...)
	if err != nil {
		return nil, describe(ref, err)
	}
	if err := checkPin(ref, desc.Digest); err != nil {
		return nil, err
	}
	if desc.MediaType.IsIndex() && arch == "" {
		return nil, fmt.Errorf("%s is an index: name the platform (--arch amd64 or arm64)", desc.Digest)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, describe(ref, err)
	}
	return img, nil
}

func resolveLayout(ref Ref, arch string) (v1.Image, error) {
	p, err := layout.FromPath(ref.Layout)
	if err != nil {
		return nil, fmt.Errorf("no OCI layout at %s: %w", ref.Layout, err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := ii.IndexManifest()
	if err != nil {
		return nil, err
	}
	var desc *v1.Descriptor
	for i, d := range im.Manifests {
		if (ref.Tag != "" && d.Annotations[refName] == ref.Tag) || (ref.Tag == "" && d.Digest == ref.Digest) {
			desc = &im.Manifests[i]
		}
	}
	if desc == nil {
		return nil, fmt.Errorf("not found in OCI layout %s", ref.Layout)
	}
	if err := checkPin(ref, desc.Digest); err != nil {
		return nil, err
	}
	if !desc.MediaType.IsIndex() {
		return ii.Image(desc.Digest)
	}
	if arch == "" {
		return nil, fmt.Errorf("%s is an index: name the platform (--arch amd64 or arm64)", desc.Digest)
	}
	child, err := ii.ImageIndex(desc.Digest)
	if err != nil {
		return nil, err
	}
	cm, err := child.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range cm.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			return child.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("index %s has no linux/%s child", desc.Digest, arch)
}

// verify checks the image manifest against dig and the config blob against the manifest (a layout directory's
// files are read as they are; layers are checked as they are downloaded).
func verify(img v1.Image, dig v1.Hash) error {
	raw, err := img.RawManifest()
	if err != nil {
		return fmt.Errorf("image %s: manifest: %w", dig, err)
	}
	if got, _, _ := v1.SHA256(bytes.NewReader(raw)); got != dig {
		return fmt.Errorf("image %s: manifest does not match its digest (it hashes to %s)", dig, got)
	}
	mf, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("image %s: manifest: %w", dig, err)
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("image %s: config: %w", dig, err)
	}
	if got, _, _ := v1.SHA256(bytes.NewReader(cfg)); got != mf.Config.Digest {
		return fmt.Errorf("image %s: config does not match its digest %s (it hashes to %s)", dig, mf.Config.Digest, got)
	}
	return nil
}

// checkPin fails when ref pins its tag to a digest and the tag now names another.
func checkPin(ref Ref, got v1.Hash) error {
	if ref.Tag == "" || ref.Digest == (v1.Hash{}) || got == ref.Digest {
		return nil
	}
	return fmt.Errorf("tag %q moved: it now names %s, the reference pins %s", ref.Tag, got, ref.Digest)
}

// describe turns go-containerregistry's transport errors into one-line reasons.
func describe(ref Ref, err error) error {
	var te *transport.Error
	var ne net.Error
	switch {
	case errors.As(err, &te) && te.StatusCode == http.StatusNotFound:
		return fmt.Errorf("no such image in %s (HTTP 404): %w", ref.Repo, err)
	case errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden):
		return fmt.Errorf("registry %s refused the credentials of ~/.docker/config.json ($DOCKER_CONFIG), or there are none (docker login %s): %w",
			ref.Repo.RegistryStr(), ref.Repo.RegistryStr(), err)
	case errors.As(err, &ne):
		return fmt.Errorf("registry %s unreachable: %w", ref.Repo.RegistryStr(), err)
	}
	return err
}

// cached returns the cache entry of image digest dig, if complete. An entry for another arch is an error.
func cached(root string, dig v1.Hash, arch string) (Kernel, bool, error) {
	dir := entryDir(root, dig)
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return Kernel{}, false, nil
	}
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Kernel{}, false, fmt.Errorf("cache entry %s: %w", dir, err)
	}
	if arch != "" && e.Meta.Arch != arch {
		return Kernel{}, false, fmt.Errorf("image %s is for linux/%s, want linux/%s", dig, e.Meta.Arch, arch)
	}
	return Kernel{Digest: dig, Path: filepath.Join(dir, "vmlinuz"), SHA256: e.SHA256, Meta: e.Meta}, true, nil
}

func entryDir(root string, dig v1.Hash) string {
	return filepath.Join(root, "oci", dig.Algorithm+"-"+dig.Hex)
}

// store extracts the kernel of img into a staging directory, checks it, and renames it into the cache.
func store(root string, img v1.Image, dig v1.Hash, meta Meta) (Kernel, error) {
	if err := os.MkdirAll(filepath.Join(root, "oci"), 0o755); err != nil {
		return Kernel{}, err
	}
	staging, err := os.MkdirTemp(filepath.Join(root, "oci"), ".pull-")
	if err != nil {
		return Kernel{}, err
	}
	defer os.RemoveAll(staging)
	out := filepath.Join(staging, "vmlinuz")
	layers, err := img.Layers()
	if err != nil {
		return Kernel{}, fmt.Errorf("image %s: %w", dig, err)
	}
	found := false
	for i := len(layers) - 1; i >= 0 && !found; i-- { // the topmost layer holding the file wins
		if found, err = fromLayer(layers[i], staging, out); err != nil {
			return Kernel{}, fmt.Errorf("image %s: %w", dig, err)
		}
	}
	if !found {
		return Kernel{}, fmt.Errorf("image %s has no /%s in its %d layer(s)", dig, KernelPath, len(layers))
	}
	if err := preflight.KernelImage(out, meta.Arch); err != nil {
		return Kernel{}, fmt.Errorf("image %s (linux/%s): /%s: %w", dig, meta.Arch, KernelPath, err)
	}
	sum, err := fileSHA256(out)
	if err != nil {
		return Kernel{}, err
	}
	b, err := json.MarshalIndent(entry{Digest: dig.String(), SHA256: sum, Meta: meta}, "", "  ")
	if err != nil {
		return Kernel{}, err
	}
	if err := os.WriteFile(filepath.Join(staging, "meta.json"), append(b, '\n'), 0o644); err != nil {
		return Kernel{}, err
	}
	dir := entryDir(root, dig)
	if err := os.Rename(staging, dir); err != nil {
		if k, ok, cerr := cached(root, dig, meta.Arch); ok && cerr == nil {
			return k, nil // another process stored the same digest first
		}
		return Kernel{}, err
	}
	return Kernel{Digest: dig, Path: filepath.Join(dir, "vmlinuz"), SHA256: sum, Meta: meta}, nil
}

// fromLayer downloads layer l into dir, verifying its size and digest, and copies its boot/vmlinuz (following one
// symlink within the layer) to out. It reports whether the layer holds the file.
func fromLayer(l v1.Layer, dir, out string) (bool, error) {
	dig, err := l.Digest()
	if err != nil {
		return false, err
	}
	blob := filepath.Join(dir, "layer")
	if err := download(l, dig, blob); err != nil {
		return false, fmt.Errorf("layer %s: %w", dig, err)
	}
	defer os.Remove(blob)
	h, r, closeFn, err := findMember(blob, KernelPath)
	if err != nil {
		return false, fmt.Errorf("layer %s: %w", dig, err)
	}
	if h == nil {
		return false, nil
	}
	name := KernelPath
	if h.Typeflag == tar.TypeSymlink {
		closeFn()
		name = memberName(path.Join(path.Dir(KernelPath), h.Linkname))
		if path.IsAbs(h.Linkname) {
			name = memberName(h.Linkname)
		}
		if h, r, closeFn, err = findMember(blob, name); err != nil {
			return false, fmt.Errorf("layer %s: %w", dig, err)
		}
		if h == nil {
			return false, fmt.Errorf("layer %s: /%s links to /%s, which is not in the same layer", dig, KernelPath, name)
		}
	}
	defer closeFn()
	if h.Typeflag != tar.TypeReg {
		return false, fmt.Errorf("layer %s: /%s is not a regular file (or a symlink to one)", dig, name)
	}
	if err := writeFile(out, r); err != nil {
		return false, fmt.Errorf("layer %s: /%s: %w", dig, name, err)
	}
	return true, nil
}

// download copies l's compressed bytes to path and checks them against the layer's digest and size.
func download(l v1.Layer, dig v1.Hash, path string) error {
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("truncated or unreadable after %d of %d bytes: %w", n, size, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); n != size || (dig.Algorithm == "sha256" && got != dig.String()) {
		return fmt.Errorf("truncated or corrupt: got %d bytes with digest %s, want %d bytes", n, got, size)
	}
	return nil
}

// findMember opens the layer blob at path (gzip'd or plain tar) and returns the header and reader of member want
// (a path without leading "/" or "./"), or a nil header when the layer lacks it.
func findMember(path, want string) (*tar.Header, io.Reader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	br := bufio.NewReader(f)
	var r io.Reader = br
	magic, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, nil, err
		}
		r = zr
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		f.Close()
		return nil, nil, nil, errors.New("zstd-compressed layers are not supported; use gzip or none")
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			f.Close()
			return nil, nil, func() {}, nil
		}
		if err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("bad tar: %w", err)
		}
		if memberName(h.Name) == want {
			return h, tr, func() { f.Close() }, nil
		}
	}
}

// memberName normalises a tar member path: "./boot/vmlinuz" and "/boot/vmlinuz" become "boot/vmlinuz".
func memberName(n string) string { return path.Clean("/" + n)[1:] }

func writeFile(out string, r io.Reader) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
