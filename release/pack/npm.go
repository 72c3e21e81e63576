package pack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/confine-dev/confine/release/platforms"
)

// NPMScope is the npm scope of the root package and of the platform packages.
const NPMScope = "@confine-dev"

// NPMRepository is every package's repository.url: npm's provenance check requires it to be the
// repository of the workflow that publishes (.github/workflows/release.yml).
const NPMRepository = "git+https://github.com/confine-dev/confine.git"

// semver is a SemVer 2 version without build metadata (npm drops it), with an optional leading v.
var semver = regexp.MustCompile(`^v?(\d+\.\d+\.\d+(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)$`)

// NPMVersion returns the npm version for a release stamp: the stamp itself without its v when it is
// SemVer (v1.2.0 → 1.2.0), else 0.0.0-dev.<stamp> (git describe's e49ce93-dirty → 0.0.0-dev.e49ce93-dirty).
func NPMVersion(stamp string) string {
	if m := semver.FindStringSubmatch(stamp); m != nil {
		return m[1]
	}
	return "0.0.0-dev." + regexp.MustCompile(`[^0-9A-Za-z-]+`).ReplaceAllString(stamp, "-")
}

// NPM writes, under out, one folder per architecture in the table, each an npm platform package
// <scope>/confine-linux-<node arch> (package.json with "os" and "cpu", plus the Layout of that
// architecture), and the root package "confine" copied from the template folder root with its version
// and optionalDependencies set to exactly those packages at the same version. Each folder is ready for
// `npm pack`. It returns the folders, root last. Errors: as Layout; the template is missing or its
// package.json is not JSON.
func NPM(out, root string, src Source) ([]string, error) {
	version := NPMVersion(src.Version)
	var dirs []string
	optional := map[string]string{}
	seen := map[string]bool{}
	for _, p := range src.Platforms {
		if seen[p.GOARCH] {
			continue
		}
		seen[p.GOARCH] = true
		arch := platforms.NodeArch(p.GOARCH)
		pkgName := npmPackageName(arch)
		dir := filepath.Join(out, "confine-linux-"+arch)
		if _, err := Layout(dir, "linux-"+arch, p.GOARCH, src); err != nil {
			return nil, err
		}
		manifest := map[string]any{
			"name":        pkgName,
			"version":     version,
			"description": fmt.Sprintf("The confine launchers for linux/%s (plain Linux and WSL2), static; installed by %s/confine", arch, NPMScope),
			"license":     "UNLICENSED",
			// npm publish --provenance refuses a package whose repository is not the workflow's.
			"repository":      map[string]string{"type": "git", "url": NPMRepository},
			"os":              []string{"linux"},
			"cpu":             []string{arch},
			"files":           []string{"bin", "manifest.json"},
			"preferUnplugged": true,
		}
		if err := writeJSON(filepath.Join(dir, "package.json"), manifest); err != nil {
			return nil, err
		}
		optional[pkgName] = version
		dirs = append(dirs, dir)
	}
	dir := filepath.Join(out, "confine")
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if err := copyTree(root, dir); err != nil {
		return nil, fmt.Errorf("pack: copying the root package %s: %w", root, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	var pj map[string]any
	if err := json.Unmarshal(b, &pj); err != nil {
		return nil, fmt.Errorf("pack: %s/package.json: %w", root, err)
	}
	pj["version"] = version
	pj["optionalDependencies"] = optional
	if err := writeJSON(filepath.Join(dir, "package.json"), pj); err != nil {
		return nil, err
	}
	return append(dirs, dir), nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	return nil
}

// npmPackageName is the platform package of a Node architecture ("x64", "arm64").
func npmPackageName(arch string) string { return NPMScope + "/confine-linux-" + arch }

// copyTree copies the directories and files under src to dst (files 0644), following symlinks (Bazel's
// runfiles are symlinks, which os.CopyFS refuses).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		if st.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}
