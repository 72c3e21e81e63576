// Package oci packs kernel images (vmlinuz) into OCI images, writes them to a registry or an OCI layout directory,
// and pulls them back into the kernel cache by digest. The image format is vm/KERNEL-IMAGE.md.
package oci

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/confine-dev/confine/vm"
)

// Labels and annotations of a kernel image (vm/KERNEL-IMAGE.md). Each is set both as a config label and as a
// manifest annotation; a reader takes the annotation first.
const (
	LabelRelease  = "dev.confine.kernel.release"      // the kernel's `uname -r`, e.g. 7.3.4+deb13-arm64
	LabelLandlock = "dev.confine.kernel.landlock"     // available, absent or disabled, as booted without extra cmdline
	LabelABI      = "dev.confine.kernel.landlock-abi" // decimal Landlock ABI; "0" unless available
	LabelSource   = "dev.confine.kernel.source"       // "debian:<package>=<version>" or free text
)

// KernelPath is where the kernel image sits in the image's filesystem (the common layout of kernel images).
const KernelPath = "boot/vmlinuz"

// debianPrefix starts a Source naming a Debian package: "debian:<package>=<version>".
const debianPrefix = "debian:"

// Meta describes the kernel an image holds.
type Meta struct {
	Arch     string // guest architecture: amd64 or arm64 (the image's platform is linux/<Arch>)
	Release  string // `uname -r` of the kernel
	Landlock string // vm.LandlockAvailable, vm.LandlockAbsent or vm.LandlockDisabled; "" when the image has no labels
	ABI      int    // expected Landlock ABI (>= 1 when available, else 0)
	Source   string // "debian:<package>=<version>" or free text; "" when unlabelled
}

// DebianSource renders the Source of a Debian package: "debian:<package>=<version>".
func DebianSource(pkg, version string) string { return debianPrefix + pkg + "=" + version }

// Debian returns the package and version of a "debian:<package>=<version>" Source; ok is false for other sources.
func (m Meta) Debian() (pkg, version string, ok bool) {
	rest, ok := strings.CutPrefix(m.Source, debianPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "=")
}

// ParseExpectation parses an expected Landlock state in the matrix table's notation (vm.RenderABI): an ABI number
// >= 1 (available), "absent" or "disabled".
func ParseExpectation(s string) (landlock string, abi int, err error) {
	switch s {
	case vm.LandlockAbsent, vm.LandlockDisabled:
		return s, 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("expected Landlock %q: want an ABI number >= 1, absent or disabled", s)
	}
	return vm.LandlockAvailable, n, nil
}

// validate checks a Meta before it is written into an image.
func (m Meta) validate() error {
	switch {
	case m.Arch != "amd64" && m.Arch != "arm64":
		return fmt.Errorf("arch %q: want amd64 or arm64", m.Arch)
	case m.Release == "":
		return fmt.Errorf("kernel release is required")
	case m.Source == "":
		return fmt.Errorf("source is required")
	}
	if _, _, err := ParseExpectation(vm.RenderABI(m.Landlock, m.ABI)); err != nil {
		return err
	}
	if m.Landlock != vm.LandlockAvailable && m.ABI != 0 {
		return fmt.Errorf("landlock %s needs abi 0", m.Landlock)
	}
	return nil
}

// labels renders m as the image's labels.
func (m Meta) labels() map[string]string {
	return map[string]string{
		LabelRelease:  m.Release,
		LabelLandlock: m.Landlock,
		LabelABI:      strconv.Itoa(m.ABI),
		LabelSource:   m.Source,
	}
}

// metaFrom reads a Meta from an image's annotations, falling back to its config labels. An image with neither
// (another project's kernel image) gives a Meta with only Arch set. Labels that are present must be well formed.
func metaFrom(arch string, annotations, labels map[string]string) (Meta, error) {
	get := func(k string) string {
		if v, ok := annotations[k]; ok {
			return v
		}
		return labels[k]
	}
	m := Meta{Arch: arch, Release: get(LabelRelease), Source: get(LabelSource)}
	state, abi := get(LabelLandlock), get(LabelABI)
	if state == "" && abi == "" {
		return m, nil
	}
	n, err := strconv.Atoi(abi)
	if err != nil {
		return m, fmt.Errorf("label %s=%q is not a number", LabelABI, abi)
	}
	m.Landlock, m.ABI = state, n
	if _, _, err := ParseExpectation(vm.RenderABI(state, n)); err != nil || (state != vm.LandlockAvailable && n != 0) {
		return m, fmt.Errorf("labels %s=%q %s=%q: want available with an ABI >= 1, or absent/disabled with 0",
			LabelLandlock, state, LabelABI, abi)
	}
	return m, nil
}
