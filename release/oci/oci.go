// Package oci publishes the confine launchers as a multi-arch OCI image index and reads them back, with
// go-containerregistry. Each child is one linux/<arch> image whose single layer holds the launcher at
// /confine (mode 0755, owner 0:0, mtime 0, so the same binary always gives the same digest). Pushes
// write every child by digest before the index is tagged, so a registry that refuses or fails part way
// leaves no tag pointing at a half-pushed index.
package oci

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// BinaryName is the launcher's path in each child's layer (and its entrypoint, "/confine").
const BinaryName = "confine"

// Child is one image of the index: the launcher file for platform linux/Arch.
type Child struct {
	// Arch is the GOARCH, which is also the OCI architecture ("amd64", "arm64").
	Arch string
	// Binary is the path of the launcher file to put in the image.
	Binary string
}

// Image returns the single-layer OCI image holding the file at binary as /confine, for linux/arch.
// Errors: the file cannot be read.
func Image(arch, binary string) (v1.Image, error) {
	b, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: BinaryName, Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	if _, err := tw.Write(b); err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	// The title annotation names the file; it also replaces the empty annotations map tarball layers
	// carry, which validate.Index rejects as a manifest that does not round-trip.
	if img, err = mutate.Append(img, mutate.Addendum{
		Layer:       layer,
		Annotations: map[string]string{"org.opencontainers.image.title": BinaryName},
	}); err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Config.Entrypoint = []string{"/" + BinaryName}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	return img, nil
}

// Index returns the OCI image index of one Image per child, each descriptor carrying its platform,
// checked with validate.Index. It does not look inside the binaries: verify the children after Pull.
func Index(children []Child) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, c := range children {
		img, err := Image(c.Arch, c.Binary)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: c.Arch}},
		})
	}
	if err := validate.Index(idx); err != nil {
		return nil, fmt.Errorf("oci: invalid index: %w", err)
	}
	return idx, nil
}

// Push writes idx to the registry as tag: first each child image by its digest, then the index by
// digest, and only then the tag. It returns the index digest. On any error nothing has been tagged
// (children already written stay as untagged blobs and manifests, which registries garbage-collect).
func Push(tag name.Tag, idx v1.ImageIndex, opts ...remote.Option) (v1.Hash, error) {
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("oci: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("oci: %w", err)
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("oci: %w", err)
		}
		if err := remote.Write(tag.Context().Digest(d.Digest.String()), img, opts...); err != nil {
			return v1.Hash{}, fmt.Errorf("oci: pushing the %s child %s: %w", d.Platform, d.Digest, err)
		}
	}
	if err := remote.WriteIndex(tag.Context().Digest(digest.String()), idx, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("oci: pushing the index %s: %w", digest, err)
	}
	if err := remote.Tag(tag, idx, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("oci: tagging %s: %w", tag, err)
	}
	return digest, nil
}

// WriteLayout writes idx into an OCI image layout at dir (created if missing), as one entry of the
// layout's index.json annotated with org.opencontainers.image.ref.name = ref.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("oci: %w", err)
		}
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	return nil
}

// LayoutIndex reads back the index annotated ref from the OCI layout at dir. Errors: no layout, or no
// entry with that ref.
func LayoutIndex(dir, ref string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	for _, d := range im.Manifests {
		if d.Annotations["org.opencontainers.image.ref.name"] == ref {
			return top.ImageIndex(d.Digest)
		}
	}
	return nil, fmt.Errorf("oci: %s: no index named %q", dir, ref)
}

// Extract finds the child of idx for linux/arch and writes its /confine to dest (mode 0755). It returns
// the child's manifest digest. Errors: no child, or more than one, for that platform; the child's
// layers hold no regular file named confine.
func Extract(idx v1.ImageIndex, arch, dest string) (v1.Hash, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("oci: %w", err)
	}
	var found []v1.Hash
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			found = append(found, d.Digest)
		}
	}
	if len(found) != 1 {
		return v1.Hash{}, fmt.Errorf("oci: the index has %d children for linux/%s, want 1", len(found), arch)
	}
	img, err := idx.Image(found[0])
	if err != nil {
		return v1.Hash{}, fmt.Errorf("oci: %w", err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return v1.Hash{}, fmt.Errorf("oci: the linux/%s child %s holds no file %s", arch, found[0], BinaryName)
		}
		if err != nil {
			return v1.Hash{}, fmt.Errorf("oci: reading the linux/%s child: %w", arch, err)
		}
		if filepath.Clean(h.Name) != BinaryName || h.Typeflag != tar.TypeReg {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return v1.Hash{}, fmt.Errorf("oci: %w", err)
		}
		f, err := os.OpenFile(dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("oci: %w", err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			f.Close()
			return v1.Hash{}, fmt.Errorf("oci: %w", err)
		}
		if err := f.Close(); err != nil {
			return v1.Hash{}, fmt.Errorf("oci: %w", err)
		}
		return found[0], nil
	}
}
