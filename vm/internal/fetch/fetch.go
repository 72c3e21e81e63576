// Package fetch downloads pinned Debian packages with apt through a private apt configuration (the system's sources
// are never touched) and extracts single files from them into a cache keyed by package, version and arch.
//
// Cache layout under Root (default $CACHE/vm, $CACHE defaulting to ~/.cache/confine):
//
//	apt/{sources.list,lists,cache,status}   private apt state
//	pkg/<package>_<version>_<arch>/<file>   one extracted file, with <file>.sha256 and <file>.member
package fetch

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Cache fetches and extracts packages. It is safe for concurrent use.
type Cache struct {
	Root    string   // cache root, e.g. ~/.cache/confine/vm
	Sources []string // apt source lines ("deb URI SUITE COMPONENT")
	Log     func(format string, args ...any)

	mu      sync.Mutex // serialises apt (it takes a lock on lists/) and extraction of one key
	updated bool
}

// Extracted is a file taken out of a package.
type Extracted struct {
	Path   string // absolute path in the cache
	SHA256 string // hex sha256 of the file
	Member string // its path inside the package, e.g. ./boot/vmlinuz-6.12.117+deb13-amd64
}

// DefaultRoot returns $CACHE/vm, or ~/.cache/confine/vm when CACHE is unset.
func DefaultRoot() string {
	if c := os.Getenv("CACHE"); c != "" {
		return filepath.Join(c, "vm")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "confine", "vm")
}

// ErrNoMember is wrapped by Extract's error when the package holds no member that match accepts (e.g. a kernel
// module built into that kernel).
var ErrNoMember = errors.New("holds no matching file")

// Extract returns the member of package pkg=version for arch that match accepts, fetching the package first if the
// cache lacks it. The name passed to match is the tar member path (e.g. "./boot/vmlinuz-…"). The first match wins;
// a package without a matching member is an error wrapping ErrNoMember, and that answer is cached too (<file>.absent:
// a pinned package's content does not change), so it is not downloaded again to learn it.
func (c *Cache) Extract(ctx context.Context, pkg, version, arch, file string, match func(member string) bool) (Extracted, error) {
	return c.ExtractAlso(ctx, pkg, version, arch, file, match)
}

// Want is a file to take out of a package: the name it is cached under, and which member it is.
type Want struct {
	File  string
	Match func(member string) bool
}

// ExtractAlso is Extract, and when it downloads the package it takes each of also out of the same download too
// (cached as Extract would cache it, or marked absent), so that a later Extract of one of them needs no second
// download: a kernel package is where both the kernel and its modules come from.
func (c *Cache) ExtractAlso(ctx context.Context, pkg, version, arch, file string, match func(member string) bool, also ...Want) (Extracted, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dir := filepath.Join(c.Root, "pkg", safe(pkg+"_"+version+"_"+arch))
	cached := func(file string) (Extracted, bool, error) {
		out := filepath.Join(dir, file)
		if sum, err := os.ReadFile(out + ".sha256"); err == nil {
			member, _ := os.ReadFile(out + ".member")
			if _, err := os.Stat(out); err == nil {
				return Extracted{Path: out, SHA256: strings.TrimSpace(string(sum)), Member: strings.TrimSpace(string(member))}, true, nil
			}
		}
		if b, err := os.ReadFile(out + ".absent"); err == nil {
			return Extracted{}, true, fmt.Errorf("%s=%s (%s): package %s %w (cached: %s)", pkg, version, arch, strings.TrimSpace(string(b)), ErrNoMember, out+".absent")
		}
		return Extracted{}, false, nil
	}
	if ex, ok, err := cached(file); ok {
		return ex, err
	}
	wants := []Want{{file, match}}
	for _, w := range also {
		if _, ok, _ := cached(w.File); !ok {
			wants = append(wants, w)
		}
	}
	deb, cleanup, err := c.download(ctx, pkg, version, arch)
	if err != nil {
		return Extracted{}, err
	}
	defer cleanup()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Extracted{}, err
	}
	got, err := extractMembers(ctx, deb, dir, wants)
	if err != nil {
		return Extracted{}, fmt.Errorf("%s=%s (%s): %w", pkg, version, arch, err)
	}
	var first Extracted
	for i, w := range wants {
		out := filepath.Join(dir, w.File)
		ex, ok := got[i]
		if !ok {
			_ = os.WriteFile(out+".absent", []byte(filepath.Base(deb)+"\n"), 0o644)
			continue
		}
		if err := os.WriteFile(out+".member", []byte(ex.Member+"\n"), 0o644); err != nil {
			return Extracted{}, err
		}
		// The checksum file is written last: its presence marks a complete entry.
		if err := os.WriteFile(out+".sha256", []byte(ex.SHA256+"\n"), 0o644); err != nil {
			return Extracted{}, err
		}
		if i == 0 {
			first = ex
		}
	}
	if _, ok := got[0]; !ok {
		return Extracted{}, fmt.Errorf("%s=%s (%s): package %s %w", pkg, version, arch, filepath.Base(deb), ErrNoMember)
	}
	return first, nil
}

// ExtractMembers returns the members of package pkg=version for arch named in files (exact tar member path, e.g.
// "./usr/bin/git", to the name it is cached under), each as Extract would, but fetching the package at most once
// for all of them: a guest tool may take dozens of files from one package (Python's stdlib), and each apt-get run
// reads the whole of the lists (seconds). A member the package lacks is an error naming it; nothing of a failed
// call is cached.
func (c *Cache) ExtractMembers(ctx context.Context, pkg, version, arch string, files map[string]string) (map[string]Extracted, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dir := filepath.Join(c.Root, "pkg", safe(pkg+"_"+version+"_"+arch))
	got := map[string]Extracted{}
	missing := map[string]string{} // member -> cache path
	for member, name := range files {
		out := filepath.Join(dir, name)
		sum, err := os.ReadFile(out + ".sha256")
		if _, serr := os.Stat(out); err == nil && serr == nil {
			got[member] = Extracted{Path: out, SHA256: strings.TrimSpace(string(sum)), Member: member}
			continue
		}
		missing[member] = out
	}
	if len(missing) == 0 {
		return got, nil
	}
	deb, cleanup, err := c.download(ctx, pkg, version, arch)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dpkg-deb: %w", err)
	}
	tr := tar.NewReader(pipe)
	var terr error
	for len(got) < len(files) && terr == nil {
		var ex Extracted
		var found bool
		ex, found, terr = copyMember(tr, "", func(m string) bool { _, ok := missing[m]; return ok }, func(m string) string { return missing[m] })
		if !found {
			break
		}
		if terr == nil {
			got[ex.Member] = ex
		}
	}
	io.Copy(io.Discard, pipe)
	werr := cmd.Wait()
	switch {
	case terr != nil:
		return nil, fmt.Errorf("%s=%s (%s): corrupt package %s: %w", pkg, version, arch, filepath.Base(deb), terr)
	case werr != nil && len(got) < len(files):
		return nil, fmt.Errorf("%s=%s (%s): corrupt package %s: dpkg-deb: %v: %s", pkg, version, arch, filepath.Base(deb), werr, lastLines(stderr.Bytes(), 2))
	}
	var absent []string
	for member := range missing {
		if _, ok := got[member]; !ok {
			absent = append(absent, member)
		}
	}
	if len(absent) > 0 {
		sort.Strings(absent)
		return nil, fmt.Errorf("%s=%s (%s): package %s holds no %s", pkg, version, arch, filepath.Base(deb), strings.Join(absent, ", "))
	}
	// The checksum files are written last: their presence marks complete entries.
	for member, out := range missing {
		ex := got[member]
		if err := os.WriteFile(out+".member", []byte(ex.Member+"\n"), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(out+".sha256", []byte(ex.SHA256+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return got, nil
}

// aptArgs are the options that make apt use only the private state under Root.
func (c *Cache) aptArgs() []string {
	a := filepath.Join(c.Root, "apt")
	return []string{
		"-o", "Dir::Etc::sourcelist=" + filepath.Join(a, "sources.list"),
		"-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::Lists=" + filepath.Join(a, "lists"),
		"-o", "Dir::State::status=" + filepath.Join(a, "status"),
		"-o", "Dir::Cache=" + filepath.Join(a, "cache"),
		"-o", "APT::Architecture=amd64",
		"-o", "APT::Architectures::=amd64",
		"-o", "APT::Architectures::=arm64",
		"-o", "Acquire::Languages=none",
		// Only Packages indexes are needed: skip the AppStream (DEP-11) metadata a host's appstream package adds,
		// about 30 MB across the six suites.
		"-o", "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
		"-o", "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false",
		"-o", "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false",
		"-o", "Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled=false",
		"-o", "Debug::NoLocking=true",
		"-o", "APT::Sandbox::User=" + sandboxUser(),
		"-q",
	}
}

func sandboxUser() string {
	if os.Geteuid() == 0 {
		return "root" // download straight into our cache; _apt may not be able to write there
	}
	return os.Getenv("USER")
}

// update writes the private sources.list and runs apt-get update when the lists are missing, the sources changed,
// or force is set (a pinned version was not found: the lists may be stale).
func (c *Cache) update(ctx context.Context, force bool) error {
	a := filepath.Join(c.Root, "apt")
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(a, d), 0o755); err != nil {
			return err
		}
	}
	var src bytes.Buffer
	for _, s := range c.Sources {
		// The archive keys are the system's (debian-archive-keyring); Signed-By keeps apt from trusting anything else.
		s = strings.Replace(s, "deb ", "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ", 1)
		src.WriteString(s + "\n")
	}
	stamp := filepath.Join(a, "updated")
	old, _ := os.ReadFile(stamp)
	if !force && bytes.Equal(old, src.Bytes()) {
		return nil
	}
	if err := os.WriteFile(filepath.Join(a, "sources.list"), src.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(a, "status"), nil, 0o644); err != nil {
		return err
	}
	c.logf("apt-get update (private config in %s)", a)
	cmd := exec.CommandContext(ctx, "apt-get", append(c.aptArgs(), "update")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update: %w: %s", err, lastLines(out, 5))
	}
	c.updated = true
	return os.WriteFile(stamp, src.Bytes(), 0o644)
}

// download fetches pkg:arch=version into a temporary directory under Root and returns the .deb's path.
func (c *Cache) download(ctx context.Context, pkg, version, arch string) (string, func(), error) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", nil, fmt.Errorf("fetch %s=%s: apt-get not found (a Debian host is needed to fetch kernels; or pass --kernel PATH)", pkg, version)
	}
	if err := c.update(ctx, false); err != nil {
		return "", nil, fmt.Errorf("fetch %s=%s: %w", pkg, version, err)
	}
	tmp, err := os.MkdirTemp(c.Root, "download-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	spec := pkg + ":" + arch + "=" + version
	var out []byte
	for attempt := 0; attempt < 2; attempt++ {
		c.logf("apt-get download %s", spec)
		cmd := exec.CommandContext(ctx, "apt-get", append(c.aptArgs(), "download", spec)...)
		cmd.Dir = tmp
		out, err = cmd.CombinedOutput()
		if err == nil {
			break
		}
		if attempt == 0 && !c.updated && (notFound(out) || goneFromMirror(out)) {
			// Stale lists: refresh once, then retry.
			if uerr := c.update(ctx, true); uerr != nil {
				cleanup()
				return "", nil, fmt.Errorf("fetch %s: %w", spec, uerr)
			}
			continue
		}
		break
	}
	if err != nil {
		cleanup()
		if notFound(out) {
			return "", nil, &GoneError{Package: pkg, Version: version, Arch: arch, Detail: lastLines(out, 2)}
		}
		return "", nil, fmt.Errorf("fetch %s: apt-get download: %w: %s", spec, err, lastLines(out, 3))
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		cleanup()
		return "", nil, fmt.Errorf("fetch %s: apt-get download left %d .deb files", spec, len(debs))
	}
	return debs[0], cleanup, nil
}

// goneFromMirror matches a download that the lists promised but the mirror no longer has (stale lists).
func goneFromMirror(out []byte) bool { return strings.Contains(string(out), "404") }

// notFound matches apt's messages for a package or version absent from the lists.
func notFound(out []byte) bool {
	s := string(out)
	return strings.Contains(s, "Unable to locate package") || strings.Contains(s, "Can't find a source") ||
		strings.Contains(s, "was not found") || strings.Contains(s, "has no installation candidate")
}

// extractMembers streams the .deb's data archive through dpkg-deb once and copies, for each of wants, the first
// member its Match accepts to dir/File; the result is keyed by the index in wants (a want no member matched is
// absent from it).
func extractMembers(ctx context.Context, deb, dir string, wants []Want) (map[int]Extracted, error) {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dpkg-deb: %w", err)
	}
	got := map[int]Extracted{}
	which := func(m string) int {
		for i, w := range wants {
			if _, done := got[i]; !done && w.Match(m) {
				return i
			}
		}
		return -1
	}
	tr := tar.NewReader(pipe)
	var terr error
	for len(got) < len(wants) {
		var ex Extracted
		var found bool
		idx := -1
		ex, found, terr = copyMember(tr, "", func(m string) bool { idx = which(m); return idx >= 0 },
			func(string) string { return filepath.Join(dir, wants[idx].File) })
		if terr != nil || !found {
			break
		}
		got[idx] = ex
	}
	io.Copy(io.Discard, pipe)
	werr := cmd.Wait()
	switch {
	case terr != nil:
		return nil, fmt.Errorf("corrupt package %s: %w", filepath.Base(deb), terr)
	case werr != nil && len(got) < len(wants):
		return nil, fmt.Errorf("corrupt package %s: dpkg-deb: %v: %s", filepath.Base(deb), werr, lastLines(stderr.Bytes(), 2))
	}
	return got, nil
}

// copyMember copies the next member match accepts to out (or, with outFor, to outFor(member)) and reports
// whether one was found before the archive's end.
func copyMember(tr *tar.Reader, out string, match func(string) bool, outFor ...func(string) string) (Extracted, bool, error) {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return Extracted{}, false, nil
		}
		if err != nil {
			return Extracted{}, false, err
		}
		if h.Typeflag != tar.TypeReg || !match(h.Name) {
			continue
		}
		if len(outFor) > 0 {
			out = outFor[0](h.Name)
		}
		tmp := out + ".part"
		f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return Extracted{}, true, err
		}
		sum := sha256.New()
		if _, err := io.Copy(io.MultiWriter(f, sum), tr); err != nil {
			f.Close()
			return Extracted{}, true, err
		}
		if err := f.Close(); err != nil {
			return Extracted{}, true, err
		}
		if err := os.Rename(tmp, out); err != nil {
			return Extracted{}, true, err
		}
		return Extracted{Path: out, SHA256: hex.EncodeToString(sum.Sum(nil)), Member: h.Name}, true, nil
	}
}

// safe makes a package key usable as a directory name (':' from epochs becomes '%3a').
func safe(s string) string { return strings.ReplaceAll(s, ":", "%3a") }

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func (c *Cache) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}

// GoneError is a pinned package version the archive no longer has (Debian drops superseded kernel packages).
type GoneError struct{ Package, Version, Arch, Detail string }

func (e *GoneError) Error() string {
	return fmt.Sprintf("fetch %s:%s=%s: not in the archive (dropped or never published; update the pin in vm/kernels.json): %s",
		e.Package, e.Arch, e.Version, e.Detail)
}

// Series returns the pattern of package names in pkg's series: the same kernel line (MAJOR.MINOR), flavour and
// Debian suffix, any patch level or kernel ABI number. linux-image-6.1.0-57-amd64 -> linux-image-6.1.0-N-amd64;
// linux-binary-7.3.4+deb13-amd64 -> linux-binary-7.3.N+deb13-amd64 (the +debNN and the arch stay literal, so a
// trixie backport never falls back to a sid build). ok is false for a name that is not a kernel package.
func Series(pkg string) (*regexp.Regexp, bool) {
	m := seriesRe.FindStringSubmatch(pkg)
	if m == nil {
		return nil, false
	}
	prefix, line, rest := m[1], m[2], m[3]
	head, tail := rest, ""
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		head, tail = rest[:i], rest[i:]
	} else if i := strings.LastIndexByte(rest, '-'); i >= 0 {
		head, tail = rest[:i], rest[i:]
	}
	head = digits.ReplaceAllString(regexp.QuoteMeta(head), "[0-9]+")
	return regexp.MustCompile("^" + regexp.QuoteMeta(prefix+line) + head + regexp.QuoteMeta(tail) + "$"), true
}

var (
	seriesRe = regexp.MustCompile(`^(linux-(?:image|binary)-)([0-9]+\.[0-9]+)(.*)$`)
	digits   = regexp.MustCompile(`[0-9]+`)
)

// Newest returns the newest package version of pkg's series (Series) that the archive has for arch: the
// fallback for a pin that left the archive. It asks apt-cache through the cache's private apt configuration.
func (c *Cache) Newest(ctx context.Context, pkg, arch string) (string, string, error) {
	re, ok := Series(pkg)
	if !ok {
		return "", "", fmt.Errorf("%s is not a kernel package: no series to fall back to", pkg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.update(ctx, false); err != nil {
		return "", "", err
	}
	out, err := exec.CommandContext(ctx, "apt-cache", append(c.aptArgs(), "search", "--names-only", re.String())...).Output()
	if err != nil {
		return "", "", fmt.Errorf("apt-cache search %s: %w", re, err)
	}
	var bestPkg, bestVer string
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(line, " ")
		if !re.MatchString(name) {
			continue
		}
		mad, err := exec.CommandContext(ctx, "apt-cache", append(c.aptArgs(), "madison", name+":"+arch)...).Output()
		if err != nil {
			continue
		}
		for _, ml := range strings.Split(string(mad), "\n") { // "name | version | source arch Packages"
			f := strings.Split(ml, "|")
			if len(f) < 3 || !strings.Contains(f[2], " "+arch+" ") {
				continue
			}
			v := strings.TrimSpace(f[1])
			if bestVer == "" || exec.CommandContext(ctx, "dpkg", "--compare-versions", v, "gt", bestVer).Run() == nil {
				bestPkg, bestVer = name, v
			}
		}
	}
	if bestPkg == "" {
		return "", "", fmt.Errorf("no package of the series %s for %s in the archive", re, arch)
	}
	return bestPkg, bestVer, nil
}
