// Package pack lays out the confine launchers the way a VS Code extension ships them for one
// `vsce package --target` (linux-x64, linux-arm64, alpine-x64, alpine-arm64) and the way the npm
// platform packages carry them: bin/confine (the plain Linux launcher of the target's architecture),
// bin/confine-wsl2 (the WSL2 one) and manifest.json. The launchers are static, so one architecture's
// pair serves glibc and musl (Alpine) hosts alike.
package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/confine-dev/confine/release/platforms"
)

// ManifestSchema is the value of Manifest.Schema.
const ManifestSchema = "confine.manifest/v1"

// Manifest is manifest.json: what a layout holds and what it was checked against.
type Manifest struct {
	Schema string `json:"schema"`
	// Target is the VS Code target ("linux-x64") or, for an npm platform package, "linux-<node arch>".
	Target  string `json:"target"`
	Version string `json:"version"`
	Commit  string `json:"commit"`
	// ConformanceReport is the sha256 (hex) of the reports/matrix.json the release was gated on, or ""
	// when the layout was made without one (the CLI then says so: it is not a release).
	ConformanceReport string   `json:"conformance_report_sha256"`
	Binaries          []Binary `json:"binaries"`
}

// Binary is one launcher in a layout.
type Binary struct {
	// Path is relative to the layout root, e.g. "bin/confine".
	Path     string `json:"path"`
	Platform string `json:"platform"` // platforms.json name, e.g. "wsl2_arm64"
	GOOS     string `json:"goos"`
	GOARCH   string `json:"goarch"`
	WSL2     bool   `json:"wsl2"`
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
}

// targets maps each VS Code target confine ships to its GOARCH.
var targets = map[string]string{
	"linux-x64": "amd64", "linux-arm64": "arm64", "alpine-x64": "amd64", "alpine-arm64": "arm64",
}

// Targets lists the VS Code targets, sorted.
func Targets() []string {
	var out []string
	for t := range targets {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// GOARCH returns the architecture of VS Code target t. Errors: t is not one of Targets().
func GOARCH(t string) (string, error) {
	a, ok := targets[t]
	if !ok {
		return "", fmt.Errorf("pack: target %q is not one of %s", t, strings.Join(Targets(), ", "))
	}
	return a, nil
}

// Source says where each platform's launcher is and what the release is.
type Source struct {
	Platforms []platforms.Platform
	// Binary returns the path of the launcher of a platforms.json name.
	Binary          func(platform string) string
	Version, Commit string
	// ReportSHA256 is the conformance report's sha256, "" for none.
	ReportSHA256 string
}

// Layout writes the layout of every platform of src whose GOARCH is goarch into dir: bin/confine,
// bin/confine-wsl2 (mode 0755) and manifest.json (Target = target). It builds the tree next to dir and
// renames it into place, so on any error dir is untouched (and a previous dir is replaced only on
// success). Errors: no plain or no WSL2 platform for goarch in the table; a launcher is missing or
// unreadable; the file system.
func Layout(dir, target, goarch string, src Source) (Manifest, error) {
	m := Manifest{Schema: ManifestSchema, Target: target, Version: src.Version, Commit: src.Commit,
		ConformanceReport: src.ReportSHA256}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return m, fmt.Errorf("pack: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp")
	if err != nil {
		return m, fmt.Errorf("pack: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, wsl2 := range []bool{false, true} {
		var p *platforms.Platform
		for i := range src.Platforms {
			if q := src.Platforms[i]; q.GOARCH == goarch && q.WSL2 == wsl2 {
				p = &src.Platforms[i]
			}
		}
		if p == nil {
			return m, fmt.Errorf("pack: no platform for %s (wsl2 %v) in the table", goarch, wsl2)
		}
		rel := "bin/confine"
		if wsl2 {
			rel = "bin/confine-wsl2"
		}
		sum, size, err := copyExec(src.Binary(p.Name), filepath.Join(tmp, rel))
		if err != nil {
			return m, fmt.Errorf("pack: %s: %w", p.Name, err)
		}
		m.Binaries = append(m.Binaries, Binary{Path: rel, Platform: p.Name, GOOS: p.GOOS, GOARCH: p.GOARCH,
			WSL2: p.WSL2, SHA256: sum, Size: size})
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, fmt.Errorf("pack: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "manifest.json"), append(b, '\n'), 0o644); err != nil {
		return m, fmt.Errorf("pack: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return m, fmt.Errorf("pack: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return m, fmt.Errorf("pack: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return m, fmt.Errorf("pack: %w", err)
	}
	return m, nil
}

// SHA256 returns the hex sha256 and the size in bytes of the file at path.
func SHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// copyExec copies src to dst with mode 0755 and returns the sha256 and size of what it wrote, which
// must equal src's: a copy that changes the bytes is an error.
func copyExec(src, dst string) (string, int64, error) {
	want, _, err := SHA256(src)
	if err != nil {
		return "", 0, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", 0, err
	}
	in, err := os.Open(src)
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", 0, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", 0, err
	}
	if err := out.Close(); err != nil {
		return "", 0, err
	}
	if err := os.Chmod(dst, 0o755); err != nil { // the umask may have cleared bits at create
		return "", 0, err
	}
	got, size, err := SHA256(dst)
	if err != nil {
		return "", 0, err
	}
	if got != want {
		return "", 0, fmt.Errorf("copy of %s has sha256 %s, want %s", src, got, want)
	}
	return got, size, nil
}
