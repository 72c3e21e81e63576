package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/confine-dev/confine/vm/internal/preflight"
)

// refName is the OCI layout annotation that names an image in index.json (its "tag").
const refName = "org.opencontainers.image.ref.name"

// epoch is every timestamp in a built image (tar entries, config, history), so that the same kernel and Meta
// always give the same digest.
var epoch = time.Unix(0, 0).UTC()

// Build packs the kernel image at path into a single-layer OCI image for linux/<m.Arch> with m as labels and
// annotations. The kernel must be a bzImage (amd64) or arm64 Image for m.Arch (preflight.KernelImage). The layer is
// a gzip'd tar of boot/ and boot/vmlinuz (mode 0644, owner 0:0, mtime 0); the same file and Meta give the same
// digest.
func Build(path string, m Meta) (v1.Image, error) {
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	if err := preflight.KernelImage(path, m.Arch); err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	kernel, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	tarBytes, err := layerTar(kernel)
	if err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Created:      v1.Time{Time: epoch},
		OS:           "linux",
		Architecture: m.Arch,
		Config:       v1.Config{Labels: m.labels()},
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "confine vm kernel import (" + m.Source + ")"},
	})
	if err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	return mutate.Annotations(img, m.labels()).(v1.Image), nil
}

// layerTar returns the uncompressed layer: directory boot/ and file boot/vmlinuz, with fixed metadata.
func layerTar(kernel []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdrs := []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "boot/", Mode: 0o755, ModTime: epoch, Format: tar.FormatUSTAR},
		{Typeflag: tar.TypeReg, Name: KernelPath, Mode: 0o644, Size: int64(len(kernel)), ModTime: epoch, Format: tar.FormatUSTAR},
	}
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if _, err := tw.Write(kernel); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write stores img under ref and returns its digest: pushed to a registry (credentials from
// authn.DefaultKeychain, i.e. ~/.docker/config.json and its helpers), or added to an OCI layout directory (created
// if missing) under the tag, replacing the image that tag named. ref must carry a tag and no digest.
func Write(ctx context.Context, img v1.Image, ref Ref) (v1.Hash, error) {
	if ref.Digest != (v1.Hash{}) {
		return v1.Hash{}, fmt.Errorf("write %s: a destination takes a tag, not a digest", ref)
	}
	dig, err := img.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("write %s: %w", ref, err)
	}
	if ref.Layout == "" {
		if err := remote.Write(ref.fetchRef(), img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return v1.Hash{}, fmt.Errorf("write %s: %w", ref, describe(ref, err))
		}
		return dig, nil
	}
	p, err := layout.FromPath(ref.Layout)
	if errors.Is(err, os.ErrNotExist) {
		p, err = layout.Write(ref.Layout, empty.Index)
	}
	if err != nil {
		return v1.Hash{}, fmt.Errorf("write %s: %w", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("write %s: %w", ref, err)
	}
	err = p.ReplaceImage(img, match.Annotation(refName, ref.Tag),
		layout.WithAnnotations(map[string]string{refName: ref.Tag}),
		layout.WithPlatform(*cf.Platform()))
	if err != nil {
		return v1.Hash{}, fmt.Errorf("write %s: %w", ref, err)
	}
	return dig, nil
}
