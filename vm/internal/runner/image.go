package runner

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/confine-dev/confine/vm"
	"github.com/confine-dev/confine/vm/internal/fetch"
	"github.com/confine-dev/confine/vm/internal/oci"
)

// ImageTarget pulls the kernel image ref names (vm/KERNEL-IMAGE.md) for linux/arch (arch "" takes the image's own
// platform) into the cache under root and returns a Target for it. Its expectation (Landlock, ABI) and, for a
// Debian source, Package and Version come from the image's labels; an image without them is booted with no
// expectation. Its ID is the reference's tag, else the repository's last path element and the digest's first 12
// hex digits, with characters outside [0-9a-z.+-] turned into '-'.
func ImageTarget(ctx context.Context, root, ref, arch string) (Target, error) {
	r, err := oci.ParseRef(ref)
	if err != nil {
		return Target{}, err
	}
	k, err := oci.Pull(ctx, root, r, arch)
	if err != nil {
		return Target{}, err
	}
	id := r.Tag
	if id == "" {
		base := r.Layout
		if base == "" {
			base = r.Repo.RepositoryStr()
		}
		id = path.Base(base) + "-" + k.Digest.Hex[:12]
	}
	pkg, version, _ := k.Debian()
	kern := vm.Kernel{ID: sanitizeID(id), Arch: k.Arch, Package: pkg, Version: version, Ref: ref, Landlock: k.Landlock, ABI: k.ABI}
	return Target{Kernel: kern, Image: k.Path, ImageSHA256: k.SHA256, Digest: k.Digest.String()}, nil
}

var notID = regexp.MustCompile(`[^0-9a-z.+-]+`)

func sanitizeID(s string) string { return notID.ReplaceAllString(strings.ToLower(s), "-") }

// pullKernel pulls t.Ref for t.Arch and checks that an image labelled with a Debian source holds t's package.
func pullKernel(ctx context.Context, root string, t *Target) error {
	r, err := oci.ParseRef(t.Ref)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", t.ID, err)
	}
	k, err := oci.Pull(ctx, root, r, t.Arch)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", t.ID, err)
	}
	if pkg, version, ok := k.Debian(); t.Package != "" && (!ok || pkg != t.Package || version != t.Version) {
		return fmt.Errorf("kernel %s: image %s holds %q, the manifest pins %s=%s", t.ID, t.Ref, k.Source, t.Package, t.Version)
	}
	t.Image, t.ImageSHA256, t.Digest = k.Path, k.SHA256, k.Digest.String()
	return nil
}

// DebianKernel fetches pkg=version for arch into c (as the runner fetches manifest kernels) and returns its kernel
// image and the Meta to label an image of it with: the release from the image's path in the package, and the
// Landlock expectation of the manifest entry with that package, version and arch and no extra command line (empty
// when m has none).
func DebianKernel(ctx context.Context, c *fetch.Cache, m *vm.Manifest, pkg, version, arch string) (fetch.Extracted, oci.Meta, error) {
	ex, err := FetchKernel(ctx, c, vm.Kernel{ID: pkg + "=" + version, Package: pkg, Version: version, Arch: arch})
	if err != nil {
		return ex, oci.Meta{}, err
	}
	meta := oci.Meta{Arch: arch, Release: releaseOf(ex.Member), Source: oci.DebianSource(pkg, version)}
	for _, k := range m.Kernels {
		if k.Package == pkg && k.Version == version && k.Arch == arch && k.Cmdline == "" {
			meta.Landlock, meta.ABI = k.Landlock, k.ABI
			break
		}
	}
	return ex, meta, nil
}

// releaseOf returns the kernel release in a kernel image's package path: ./boot/vmlinuz-REL or
// ./usr/lib/modules/REL/vmlinuz (isKernelImage).
func releaseOf(member string) string {
	m := strings.TrimPrefix(member, ".")
	if rel, ok := strings.CutPrefix(m, "/boot/vmlinuz-"); ok {
		return rel
	}
	return path.Base(path.Dir(m))
}
