// Package snapshot records everything about a set of paths that a write could change, so that a conformance case
// can prove that nothing outside the writable set changed: existence, names, type, content (SHA-256), size,
// mode, owner, mtime and ctime, symlink target, device number and extended attributes. Atime is not recorded
// (reads are allowed and change it).
package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Entry is what is recorded for one path. Exists is false for a watched path that did not exist.
type Entry struct {
	Exists  bool
	Type    string // "file", "dir", "symlink", "char", "block", "fifo", "socket"
	Mode    uint32 // permission and set-id bits
	UID     uint32
	GID     uint32
	Size    int64
	Rdev    uint64
	Mtime   unix.Timespec
	Ctime   unix.Timespec
	Content string // SHA-256 of a regular file
	Target  string // a symlink's target
	Xattrs  map[string]string
}

// Snapshot maps each recorded path to its Entry.
type Snapshot map[string]Entry

// Take records each root, recursively for directories (without following symlinks), skipping any path equal to
// or under one of skip. A root that does not exist is recorded as absent, so that its creation is a difference.
func Take(roots, skip []string) (Snapshot, error) {
	s := Snapshot{}
	skipped := func(p string) bool {
		for _, x := range skip {
			if p == x || strings.HasPrefix(p, x+"/") {
				return true
			}
		}
		return false
	}
	for _, root := range roots {
		if skipped(root) {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				s[p] = Entry{}
				return nil
			}
			if err != nil {
				return err
			}
			if skipped(p) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			e, err := record(p)
			if err != nil {
				return err
			}
			s[p] = e
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", root, err)
		}
	}
	return s, nil
}

func record(p string) (Entry, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return Entry{}, fmt.Errorf("lstat: %w", err)
	}
	e := Entry{
		Exists: true, Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid, Size: st.Size, Rdev: st.Rdev,
		Mtime: st.Mtim, Ctime: st.Ctim,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Type = "file"
		h, err := hashFile(p)
		if err != nil {
			return Entry{}, err
		}
		e.Content = h
	case unix.S_IFDIR:
		e.Type = "dir"
	case unix.S_IFLNK:
		e.Type = "symlink"
		t, err := os.Readlink(p)
		if err != nil {
			return Entry{}, err
		}
		e.Target = t
	case unix.S_IFCHR:
		e.Type = "char"
	case unix.S_IFBLK:
		e.Type = "block"
	case unix.S_IFIFO:
		e.Type = "fifo"
	case unix.S_IFSOCK:
		e.Type = "socket"
	}
	x, err := xattrs(p)
	if err != nil {
		return Entry{}, err
	}
	e.Xattrs = x
	return e, nil
}

func hashFile(p string) (string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func xattrs(p string) (map[string]string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EPERM) {
		return nil, nil // the filesystem has none
	}
	if err != nil {
		return nil, fmt.Errorf("llistxattr %s: %w", p, err)
	}
	out := map[string]string{}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name == "" {
			continue
		}
		v := make([]byte, 4096)
		m, err := unix.Lgetxattr(p, name, v)
		if err != nil {
			out[name] = "error: " + err.Error()
			continue
		}
		out[name] = string(v[:m])
	}
	return out, nil
}

// Diff returns one line per difference between before and after, sorted by path: a path that appeared,
// disappeared, or whose recorded fields changed (naming the fields).
func Diff(before, after Snapshot) []string {
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok || (b.Exists && !a.Exists):
			out = append(out, p+": removed or renamed away")
		case !b.Exists && a.Exists:
			out = append(out, p+": created")
		default:
			if f := changed(b, a); len(f) > 0 {
				out = append(out, p+": changed "+strings.Join(f, ", "))
			}
		}
	}
	for p, a := range after {
		if _, ok := before[p]; !ok && a.Exists {
			out = append(out, p+": created")
		}
	}
	sort.Strings(out)
	return out
}

func changed(b, a Entry) []string {
	var f []string
	add := func(cond bool, name string) {
		if cond {
			f = append(f, name)
		}
	}
	add(b.Type != a.Type, fmt.Sprintf("type %s→%s", b.Type, a.Type))
	add(b.Content != a.Content, "content")
	add(b.Size != a.Size, fmt.Sprintf("size %d→%d", b.Size, a.Size))
	add(b.Mode != a.Mode, fmt.Sprintf("mode %04o→%04o", b.Mode, a.Mode))
	add(b.UID != a.UID || b.GID != a.GID, fmt.Sprintf("owner %d:%d→%d:%d", b.UID, b.GID, a.UID, a.GID))
	add(b.Rdev != a.Rdev, "device number")
	add(b.Target != a.Target, fmt.Sprintf("symlink target %q→%q", b.Target, a.Target))
	add(b.Mtime != a.Mtime, "mtime")
	add(b.Ctime != a.Ctime, "ctime")
	add(fmt.Sprint(b.Xattrs) != fmt.Sprint(a.Xattrs), "xattrs")
	return f
}
