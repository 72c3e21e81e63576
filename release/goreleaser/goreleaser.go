// Package goreleaser checks what `goreleaser release --snapshot` made from Bazel's launchers, reading
// only goreleaser's own record of it, <dist>/artifacts.json (never its folder names): for every platform
// of platforms.json, one Binary and one tar.gz Archive whose confine is byte for byte Bazel's (mode
// 0755), one CycloneDX SBOM; for every linux (not WSL2) platform one deb and one rpm ("Linux Package",
// nfpm ID "packages") that install Bazel's launcher at /usr/bin/confine (0755) and the AppArmor profile
// packaging/apparmor/confine at /etc/apparmor.d/confine (0644, a config file); and a checksums file that
// lists every archive, package and SBOM with its sha256. .goreleaser.yaml names its builds after the
// platform kind: ID "linux" or "wsl2".
package goreleaser

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/confine-dev/confine/release/pack"
	"github.com/confine-dev/confine/release/platforms"
)

// Artifact is the part of one artifacts.json entry this package reads.
type Artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	Type   string `json:"type"`
	Extra  struct {
		ID     string `json:"ID"`
		Format string `json:"Format"` // a Linux Package's: deb, rpm
	} `json:"extra"`
}

// Finding is one check's outcome.
type Finding struct {
	Platform string // platforms.json name, or "checksums"
	OK       bool
	Text     string
}

func (f Finding) String() string {
	s := "ok  "
	if !f.OK {
		s = "FAIL"
	}
	return fmt.Sprintf("%-11s %s %s", f.Platform, s, f.Text)
}

// Load reads artifacts.json. Paths in it are relative to the directory goreleaser ran in (root).
func Load(path string) ([]Artifact, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("goreleaser: %w", err)
	}
	var as []Artifact
	if err := json.Unmarshal(b, &as); err != nil {
		return nil, fmt.Errorf("goreleaser: %s: %w", path, err)
	}
	return as, nil
}

// kind is the build ID .goreleaser.yaml gives platform p.
func kind(p platforms.Platform) string {
	if p.WSL2 {
		return "wsl2"
	}
	return "linux"
}

// The system packages' install paths and nfpm ID (.goreleaser.yaml `nfpms`).
const (
	PackagesID     = "packages"
	LauncherPath   = "/usr/bin/confine"
	ProfilePath    = "/etc/apparmor.d/confine"
	linuxPackage   = "Linux Package"
	packageFormats = "deb rpm"
)

// Check compares as (paths relative to root) with the table ps, Bazel's launchers (binary(name)) and
// the AppArmor profile file the packages must install (profile, packaging/apparmor/confine). It returns
// one Finding per platform and per check; any !OK fails the release. A Binary, Archive or Linux
// Package of a platform not in the table (or a package of a WSL2 one) is a failure too.
func Check(root string, as []Artifact, ps []platforms.Platform, binary func(string) string, profile string) []Finding {
	var out []Finding
	add := func(p string, ok bool, format string, a ...any) {
		out = append(out, Finding{p, ok, fmt.Sprintf(format, a...)})
	}
	known := map[string]bool{}
	sboms := map[string]int{}
	for _, a := range as {
		if a.Type == "SBOM" {
			sboms[a.Extra.ID]++
		}
	}
	for _, p := range ps {
		known[kind(p)+"/"+p.GOARCH] = true
		want, _, err := pack.SHA256(binary(p.Name))
		if err != nil {
			add(p.Name, false, "Bazel's launcher: %v", err)
			continue
		}
		var bins, arcs []Artifact
		for _, a := range as {
			if a.Extra.ID == kind(p) && a.GOOS == p.GOOS && a.GOARCH == p.GOARCH {
				switch a.Type {
				case "Binary":
					bins = append(bins, a)
				case "Archive":
					arcs = append(arcs, a)
				}
			}
		}
		if len(bins) != 1 {
			add(p.Name, false, "artifacts.json has %d Binary entries for build %s %s/%s, want 1", len(bins), kind(p), p.GOOS, p.GOARCH)
		} else if got, _, err := pack.SHA256(filepath.Join(root, bins[0].Path)); err != nil || got != want {
			add(p.Name, false, "binary %s: sha256 %s (%v), Bazel built %s", bins[0].Path, got, err, want)
		} else {
			add(p.Name, true, "binary %s = Bazel's (sha256 %s)", bins[0].Path, want)
		}
		if len(arcs) != 1 {
			add(p.Name, false, "artifacts.json has %d Archive entries for build %s %s/%s, want 1", len(arcs), kind(p), p.GOOS, p.GOARCH)
		} else if got, mode, err := archived(filepath.Join(root, arcs[0].Path)); err != nil {
			add(p.Name, false, "archive %s: %v", arcs[0].Path, err)
		} else if got != want || mode != 0o755 {
			add(p.Name, false, "archive %s: confine sha256 %s mode %o, want Bazel's %s mode 755", arcs[0].Path, got, mode, want)
		} else {
			add(p.Name, true, "archive %s holds Bazel's confine, mode 755", arcs[0].Path)
		}
		if !p.WSL2 {
			out = append(out, checkPackages(root, as, p, want, profile)...)
		}
	}
	for _, a := range as {
		if (a.Type == "Binary" || a.Type == "Archive") && !known[a.Extra.ID+"/"+a.GOARCH] {
			add(a.Extra.ID+"_"+a.GOARCH, false, "%s %s is not a platform of the table", a.Type, a.Path)
		}
		if a.Type == linuxPackage && (a.Extra.ID != PackagesID || !known["linux/"+a.GOARCH]) {
			add("packages", false, "%s %s (nfpm ID %q, %s) is not a linux platform's package", a.Type, a.Path, a.Extra.ID, a.GOARCH)
		}
	}
	for id, n := range map[string]int{"linux": 0, "wsl2": 0} {
		for _, p := range ps {
			if kind(p) == id {
				n++
			}
		}
		if sboms[id] != n {
			add("sbom", false, "%d SBOMs for build %s, want %d (one per binary)", sboms[id], id, n)
		}
	}
	for _, a := range as {
		if a.Type == "SBOM" {
			if err := cyclonedx(filepath.Join(root, a.Path)); err != nil {
				add("sbom", false, "%s: %v", a.Path, err)
			} else {
				add("sbom", true, "%s: CycloneDX, lists golang.org/x/sys", a.Path)
			}
		}
	}
	out = append(out, checksums(root, as)...)
	return out
}

// archived returns the sha256 and permission bits of the file named confine in the tar.gz at path.
func archived(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", 0, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", 0, errors.New("no file confine in it")
		}
		if err != nil {
			return "", 0, err
		}
		if filepath.Base(h.Name) != "confine" || h.Typeflag != tar.TypeReg {
			continue
		}
		tmp, err := os.CreateTemp("", "confine-archived-")
		if err != nil {
			return "", 0, err
		}
		defer os.Remove(tmp.Name())
		if _, err := io.Copy(tmp, tr); err != nil {
			tmp.Close()
			return "", 0, err
		}
		tmp.Close()
		sum, _, err := pack.SHA256(tmp.Name())
		return sum, h.Mode & 0o777, err
	}
}

// cyclonedx checks that the file at path is a CycloneDX JSON document listing golang.org/x/sys, the
// launcher's one dependency.
func cyclonedx(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name string `json:"name"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	if doc.BOMFormat != "CycloneDX" {
		return fmt.Errorf("bomFormat %q, want CycloneDX", doc.BOMFormat)
	}
	for _, c := range doc.Components {
		if c.Name == "golang.org/x/sys" {
			return nil
		}
	}
	return errors.New("no component golang.org/x/sys")
}

// checkPackages checks platform p's deb and rpm: one of each, installing Bazel's launcher (sha256 want)
// at LauncherPath, mode 0755, and the file profile at ProfilePath, mode 0644, as a config file.
func checkPackages(root string, as []Artifact, p platforms.Platform, want, profile string) []Finding {
	var out []Finding
	add := func(ok bool, format string, a ...any) {
		out = append(out, Finding{p.Name, ok, fmt.Sprintf(format, a...)})
	}
	wantProfile, _, err := pack.SHA256(profile)
	if err != nil {
		add(false, "the AppArmor profile: %v", err)
		return out
	}
	for _, format := range strings.Fields(packageFormats) {
		var pkgs []Artifact
		for _, a := range as {
			if a.Type == linuxPackage && a.Extra.ID == PackagesID && a.Extra.Format == format && a.GOOS == p.GOOS && a.GOARCH == p.GOARCH {
				pkgs = append(pkgs, a)
			}
		}
		if len(pkgs) != 1 {
			add(false, "artifacts.json has %d %s Linux Package entries for %s/%s, want 1", len(pkgs), format, p.GOOS, p.GOARCH)
			continue
		}
		read := ReadDeb
		if format == "rpm" {
			read = ReadRPM
		}
		files, err := read(filepath.Join(root, pkgs[0].Path))
		if err != nil {
			add(false, "%s %s: %v", format, pkgs[0].Path, err)
			continue
		}
		if f, ok := files[LauncherPath]; !ok || f.SHA256 != want || f.Mode != 0o755 {
			add(false, "%s %s: %s present %v, sha256 %s mode %o, want Bazel's %s mode 755", format, pkgs[0].Path, LauncherPath, ok, f.SHA256, f.Mode, want)
		} else {
			add(true, "%s %s installs Bazel's confine at %s, mode 755", format, pkgs[0].Path, LauncherPath)
		}
		if f, ok := files[ProfilePath]; !ok || f.SHA256 != wantProfile || f.Mode != 0o644 || !f.Config {
			add(false, "%s %s: %s present %v, sha256 %s mode %o config %v, want %s's %s mode 644 config true", format, pkgs[0].Path, ProfilePath, ok, f.SHA256, f.Mode, f.Config, profile, wantProfile)
		} else {
			add(true, "%s %s installs the AppArmor profile at %s, mode 644, a config file", format, pkgs[0].Path, ProfilePath)
		}
	}
	return out
}

// checksums checks the Checksum artifact: it lists every Archive, Linux Package and SBOM with its real
// sha256.
func checksums(root string, as []Artifact) []Finding {
	var sums []Artifact
	for _, a := range as {
		if a.Type == "Checksum" {
			sums = append(sums, a)
		}
	}
	if len(sums) != 1 {
		return []Finding{{"checksums", false, fmt.Sprintf("%d Checksum artifacts, want 1", len(sums))}}
	}
	f, err := os.Open(filepath.Join(root, sums[0].Path))
	if err != nil {
		return []Finding{{"checksums", false, err.Error()}}
	}
	defer f.Close()
	listed := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, name, ok := strings.Cut(sc.Text(), "  "); ok {
			listed[name] = sum
		}
	}
	var out []Finding
	for _, a := range as {
		if a.Type != "Archive" && a.Type != "SBOM" && a.Type != linuxPackage {
			continue
		}
		got, _, err := pack.SHA256(filepath.Join(root, a.Path))
		switch {
		case err != nil:
			out = append(out, Finding{"checksums", false, err.Error()})
		case listed[a.Name] != got:
			out = append(out, Finding{"checksums", false, fmt.Sprintf("%s: listed %q, file has %s", a.Name, listed[a.Name], got)})
		default:
			out = append(out, Finding{"checksums", true, a.Name + " listed with its sha256"})
		}
	}
	return out
}
