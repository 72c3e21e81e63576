package vm

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

//go:embed kernels.json
var manifestJSON []byte

// Landlock states a kernel can be in, named as in confine's report (confine.report/v1 "landlock").
const (
	LandlockAvailable = "available" // landlock_create_ruleset(NULL, 0, VERSION) returns the ABI (>= 1)
	LandlockAbsent    = "absent"    // not compiled in (kernels < 5.13, Debian 5.10): ENOSYS
	LandlockDisabled  = "disabled"  // compiled in but left out of lsm=: EOPNOTSUPP
)

// Kernel is one entry of the matrix: a Debian kernel package pinned to a version, or a kernel image given as an OCI
// reference (vm/KERNEL-IMAGE.md), booted with optional extra kernel command-line arguments.
type Kernel struct {
	ID       string `json:"id"`                // unique, e.g. "6.12-amd64", "6.12-amd64-disabled"
	Arch     string `json:"arch"`              // Debian/Go architecture: amd64 or arm64
	Package  string `json:"package,omitempty"` // linux-image-* (< 6.19) or linux-binary-* (>= 6.19); optional with Ref
	Version  string `json:"version,omitempty"` // exact Debian version, as apt-cache madison prints it
	Ref      string `json:"ref,omitempty"`     // OCI image to take the kernel from instead of fetching Package
	Landlock string `json:"landlock"`          // LandlockAvailable, LandlockAbsent or LandlockDisabled
	ABI      int    `json:"abi"`               // expected landlock_create_ruleset VERSION result; 0 unless available
	Cmdline  string `json:"cmdline,omitempty"` // extra kernel command line, space separated (e.g. an lsm= list)
	// ABICap, when > 0, asks the payload to make confine act as this lower ABI (VM_ABI_CAP in the guest; the
	// conformance runner uses a confine_abicap test build for it): an ABI no Debian kernel has runs on this
	// kernel. ABI stays the kernel's own answer.
	ABICap int `json:"abi_cap,omitempty"`
	// HostEmulation, when set, runs the whole suite under this host emulation (VM_HOST_EMULATION in the guest;
	// conformance/internal/hostemu): a seccomp filter reproducing a host where confine has no mount layer.
	HostEmulation string `json:"host_emulation,omitempty"`
}

// HostEmulations are the names HostEmulation may take (conformance/internal/hostemu.Names; the vm module does
// not import the conformance module).
var HostEmulations = []string{"ubuntu-userns-restricted", "no-namespaces", "nested-supervisor"}

// ExpectedABI renders the expectation the way the matrix table shows it (RenderABI of Landlock and ABI).
func (k Kernel) ExpectedABI() string { return RenderABI(k.Landlock, k.ABI) }

// RenderABI formats a Landlock state and ABI for tables and messages: the ABI number when the state is
// LandlockAvailable, else the state itself ("absent", "disabled", or a probe's "error: <errno>").
func RenderABI(state string, abi int) string {
	if state == LandlockAvailable {
		return fmt.Sprint(abi)
	}
	return state
}

// Package is a pinned Debian package (name, version).
type Package struct {
	Package string `json:"package"`
	Version string `json:"version"`
}

// Manifest is the parsed kernels.json.
type Manifest struct {
	Schema     string   `json:"schema"`
	Comment    string   `json:"comment"`
	AptSources []string `json:"apt_sources"` // one-line-style apt sources; the archive key is the system's
	Busybox    Package  `json:"busybox"`     // busybox-static, providing the guest's /bin/sh and applets
	// GuestTools are dynamically linked tools (git, bwrap, python3 with a few stdlib modules) and their libraries, put
	// into every guest.
	GuestTools        []Tool   `json:"guest_tools,omitempty"`
	GuestToolsComment string   `json:"guest_tools_comment,omitempty"`
	Kernels           []Kernel `json:"kernels"`
}

// Tool is one pinned Debian package and the files taken from it: Files are [guest path, package member] pairs,
// where "{triplet}" is the arch's multiarch triplet and "{ld}" its dynamic loader's file name.
type Tool struct {
	Package string      `json:"package"`
	Version string      `json:"version"`
	Files   [][2]string `json:"files"`
}

// Triplet and Loader name an arch's multiarch directory and dynamic loader (its programs' PT_INTERP is
// LoaderPath).
var (
	Triplet    = map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}
	Loader     = map[string]string{"amd64": "ld-linux-x86-64.so.2", "arm64": "ld-linux-aarch64.so.1"}
	LoaderPath = map[string]string{"amd64": "/lib64/ld-linux-x86-64.so.2", "arm64": "/lib/ld-linux-aarch64.so.1"}
)

// Expand replaces {triplet} and {ld} for arch.
func Expand(s, arch string) string {
	return strings.NewReplacer("{triplet}", Triplet[arch], "{ld}", Loader[arch]).Replace(s)
}

// Arches are the guest architectures the runner supports, as Debian and Go name them.
var Arches = []string{"amd64", "arm64"}

func knownArch(a string) bool { return a == Arches[0] || a == Arches[1] }

var idRe = regexp.MustCompile(`^[0-9a-z.+-]+$`)

// Load parses and validates the embedded manifest.
func Load() (*Manifest, error) { return Parse(manifestJSON) }

// Parse parses and validates a manifest. Unknown keys, duplicate ids and inconsistent ABI/landlock pairs are errors.
func Parse(b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("kernel manifest: %w", err)
	}
	if m.Schema != "confine.vm.kernels/v1" {
		return nil, fmt.Errorf("kernel manifest: schema %q, want confine.vm.kernels/v1", m.Schema)
	}
	if len(m.AptSources) == 0 || m.Busybox.Package == "" || m.Busybox.Version == "" {
		return nil, fmt.Errorf("kernel manifest: apt_sources and busybox are required")
	}
	seen := map[string]bool{}
	for _, k := range m.Kernels {
		switch {
		case !idRe.MatchString(k.ID):
			return nil, fmt.Errorf("kernel manifest: bad id %q", k.ID)
		case seen[k.ID]:
			return nil, fmt.Errorf("kernel manifest: duplicate id %q", k.ID)
		case !knownArch(k.Arch):
			return nil, fmt.Errorf("kernel manifest: %s: arch %q, want amd64 or arm64", k.ID, k.Arch)
		case (k.Ref == "" || k.Package != "") && !strings.HasPrefix(k.Package, "linux-image-") && !strings.HasPrefix(k.Package, "linux-binary-"):
			return nil, fmt.Errorf("kernel manifest: %s: package %q is not linux-image-* or linux-binary-*", k.ID, k.Package)
		case (k.Package == "") != (k.Version == ""):
			return nil, fmt.Errorf("kernel manifest: %s: package and version go together", k.ID)
		case k.Landlock == LandlockAvailable && k.ABI < 1:
			return nil, fmt.Errorf("kernel manifest: %s: landlock available needs abi >= 1", k.ID)
		case (k.Landlock == LandlockAbsent || k.Landlock == LandlockDisabled) && k.ABI != 0:
			return nil, fmt.Errorf("kernel manifest: %s: landlock %s needs abi 0", k.ID, k.Landlock)
		case k.ABICap < 0 || (k.ABICap > 0 && k.ABICap >= k.ABI):
			return nil, fmt.Errorf("kernel manifest: %s: abi_cap %d must be below the kernel's ABI %d (a cap can only lower it)", k.ID, k.ABICap, k.ABI)
		case k.HostEmulation != "" && !slices.Contains(HostEmulations, k.HostEmulation):
			return nil, fmt.Errorf("kernel manifest: %s: host_emulation %q, want one of %s", k.ID, k.HostEmulation, strings.Join(HostEmulations, ", "))
		case k.HostEmulation != "" && k.Landlock != LandlockAvailable:
			return nil, fmt.Errorf("kernel manifest: %s: host_emulation needs landlock available (confine refuses every command otherwise)", k.ID)
		case k.Landlock != LandlockAvailable && k.Landlock != LandlockAbsent && k.Landlock != LandlockDisabled:
			return nil, fmt.Errorf("kernel manifest: %s: landlock %q, want available, absent or disabled", k.ID, k.Landlock)
		}
		seen[k.ID] = true
	}
	return &m, nil
}

// Select returns the kernels named by ids (all when ids is empty) whose arch is in arches (all when empty), in
// manifest order. An unknown id or arch is an error naming it.
func (m *Manifest) Select(ids, arches []string) ([]Kernel, error) {
	want := map[string]bool{}
	for _, id := range ids {
		if !m.has(id) {
			return nil, fmt.Errorf("unknown kernel %q (known: %s)", id, strings.Join(m.IDs(), ", "))
		}
		want[id] = true
	}
	archOK := map[string]bool{}
	for _, a := range arches {
		if !knownArch(a) {
			return nil, fmt.Errorf("unknown arch %q (known: amd64, arm64)", a)
		}
		archOK[a] = true
	}
	var out []Kernel
	for _, k := range m.Kernels {
		if (len(want) == 0 || want[k.ID]) && (len(archOK) == 0 || archOK[k.Arch]) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no kernel matches --kernels %s --arch %s", strings.Join(ids, ","), strings.Join(arches, ","))
	}
	return out, nil
}

// IDs lists every kernel id in manifest order.
func (m *Manifest) IDs() []string {
	ids := make([]string, len(m.Kernels))
	for i, k := range m.Kernels {
		ids[i] = k.ID
	}
	return ids
}

func (m *Manifest) has(id string) bool {
	for _, k := range m.Kernels {
		if k.ID == id {
			return true
		}
	}
	return false
}

// Shard returns the i-th of n interleaved shards of ks (1 <= i <= n), so CI can spread the matrix over n runners.
func Shard[T any](ks []T, i, n int) ([]T, error) {
	if n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("bad shard %d/%d: want 1 <= i <= n", i, n)
	}
	var out []T
	for j, k := range ks {
		if j%n == i-1 {
			out = append(out, k)
		}
	}
	return out, nil
}
