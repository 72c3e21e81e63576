// Package platforms reads the release platform table, platforms/platforms.json at the repository root:
// one entry per shipped confine artifact. Bazel's platforms/platforms.bzl holds the same table
// (platforms_test checks that they agree).
package platforms

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Platform is one release platform.
type Platform struct {
	// Name is the Bazel platform name (//platforms:<Name>) and the dist/bin/<Name>/ directory, e.g.
	// "linux_amd64" or "wsl2_arm64".
	Name string `json:"name"`
	// GOOS and GOARCH are Go's names for the target, e.g. "linux" and "arm64".
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	// WSL2 marks the WSL2 variant: the launcher is built with the Go build tag "wsl2".
	WSL2 bool `json:"wsl2"`
	// MaxBytes is the artifact's size budget in bytes: `confine-release verify` fails a larger file.
	MaxBytes int64 `json:"max_bytes"`
}

// Table is the decoded platforms.json.
type Table struct {
	Comment   string     `json:"comment"`
	Platforms []Platform `json:"platforms"`
}

var namePattern = regexp.MustCompile(`^[a-z0-9]+_[a-z0-9]+$`)

// Load reads and validates the table at path. Errors: the file cannot be read, is not the JSON above
// (unknown fields are rejected), is empty, or has a duplicate name, a name not of the form
// <os>_<arch>, a GOOS other than linux, or a GOARCH other than amd64 and arm64 (the architectures
// confine ships), or a max_bytes that is not positive.
func Load(path string) ([]Platform, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("platforms: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("platforms: %s: %w", path, err)
	}
	if len(t.Platforms) == 0 {
		return nil, fmt.Errorf("platforms: %s: no platforms", path)
	}
	seen := map[string]bool{}
	for _, p := range t.Platforms {
		switch {
		case !namePattern.MatchString(p.Name):
			return nil, fmt.Errorf("platforms: %s: bad name %q", path, p.Name)
		case seen[p.Name]:
			return nil, fmt.Errorf("platforms: %s: duplicate name %q", path, p.Name)
		case p.GOOS != "linux":
			return nil, fmt.Errorf("platforms: %s: %s: unsupported goos %q", path, p.Name, p.GOOS)
		case p.GOARCH != "amd64" && p.GOARCH != "arm64":
			return nil, fmt.Errorf("platforms: %s: %s: unsupported goarch %q", path, p.Name, p.GOARCH)
		case p.MaxBytes <= 0:
			return nil, fmt.Errorf("platforms: %s: %s: max_bytes must be positive, got %d", path, p.Name, p.MaxBytes)
		}
		seen[p.Name] = true
	}
	return t.Platforms, nil
}

// Find returns the platform named name in ps, or an error listing the names the table has.
func Find(ps []Platform, name string) (Platform, error) {
	var names []string
	for _, p := range ps {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Platform{}, fmt.Errorf("platforms: %q is not in the table (have %s)", name, strings.Join(names, ", "))
}

// NodeArch returns Node's name (process.arch, npm's "cpu", VS Code's target suffix) for a GOARCH the
// table allows: "x64" for amd64, "arm64" for arm64.
func NodeArch(goarch string) string {
	if goarch == "amd64" {
		return "x64"
	}
	return goarch
}
