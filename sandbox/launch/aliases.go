package launch

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Whether a writable directory shows a file under another name: a bind mount of the directory, of one beneath
// it or of one of the file's ancestors, an overlay with a layer there, or a loop device backed by a file there.
// The --config check (configOutside) and the re-exec's trust check (package reexec) ask it, so that one
// confined run cannot rewrite what a later launch reads or runs unconfined.

// overlayLayers returns the layer directories an overlay's super options name (lowerdir=A:B, lowerdir+=A,
// upperdir=U, datadir+=D; Documentation/filesystems/overlayfs.rst), octal escapes undone.
func overlayLayers(opts string) []string {
	var out []string
	for _, o := range strings.Split(opts, ",") {
		key, val, _ := strings.Cut(o, "=")
		switch key {
		case "lowerdir":
			for _, l := range strings.Split(val, ":") {
				out = append(out, UnescapeMountinfo(l))
			}
		case "upperdir", "lowerdir+", "datadir+":
			out = append(out, UnescapeMountinfo(val))
		}
	}
	return out
}

// A place is where in its file system (dev, mountinfo's major:minor) a path is when reached through a mount at
// point: the mount's root joined with the rest of the path.
type place struct{ dev, path, point string }

// placesOf returns p's places through every reachable mount on its way (a mount stacked over another on the way
// counts too: this errs toward refusing).
func placesOf(p string, mounts []mount) []place {
	var out []place
	for _, m := range mounts {
		if !m.hidden && beneath(p, m.point) {
			rel, _ := filepath.Rel(m.point, p)
			out = append(out, place{m.dev, filepath.Join(m.root, rel), m.point})
		}
	}
	return out
}

// beneath says whether p is dir or lies beneath it (both absolute and clean).
func beneath(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// shownAt returns where the directory dir, whose identity (st_dev, st_ino) is id, shows the file at path under
// another name, path's directory and its ancestors having the identities ids; "" where it does not. In order:
//   - dir is one of those directories (dir shown at a second path): that second path (the ancestor of path
//     that is dir now, by stat; dir where none is);
//   - a reachable mount beneath dir shows one of them: the mount's point;
//   - path's place through a mount lies beneath a place of dir, or beneath the root of a mount beneath dir, in
//     the same file system (a directory of dir's bound elsewhere; path's directory bound into dir): the point of
//     the mount through which path is reached there;
//   - path lies in an overlay with a layer in dir, or a layer that holds dir where path is: the overlay's point
//     (an overlay has a device of its own, so no place matches its layers' files). mountinfo gives the layers'
//     paths as they were given at mount time: a relative one, or one renamed since, cannot be placed, and is
//     passed over (a container's root is an overlay whose layers are the host's paths, not found here);
//   - path lies on a loop device whose backing file lies beneath dir: the mount's point.
func shownAt(path string, ids map[[2]uint64]bool, dir string, id [2]uint64, mounts []mount) string {
	if ids[id] {
		for d := filepath.Dir(path); ; d = filepath.Dir(d) {
			var st unix.Stat_t
			if unix.Stat(d, &st) == nil && st.Dev == id[0] && st.Ino == id[1] {
				return d
			}
			if d == "/" {
				return dir
			}
		}
	}
	var regions []place
	for _, m := range mounts {
		if m.hidden || !beneath(m.point, dir) {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(m.point, &st) == nil && ids[[2]uint64{st.Dev, st.Ino}] {
			return m.point
		}
		regions = append(regions, place{m.dev, m.root, m.point})
	}
	regions = append(regions, placesOf(dir, mounts)...)
	for _, p := range placesOf(path, mounts) {
		for _, r := range regions {
			if r.dev == p.dev && beneath(p.path, r.path) {
				return p.point
			}
		}
	}
	for _, m := range mounts {
		if m.hidden || len(m.layers) == 0 || !beneath(path, m.point) {
			continue
		}
		rel, _ := filepath.Rel(m.point, path)
		for _, l := range m.layers {
			if filepath.IsAbs(l) && (beneath(l, dir) || beneath(filepath.Join(l, rel), dir)) {
				return m.point
			}
		}
	}
	for _, m := range mounts {
		if !m.hidden && beneath(path, m.point) && strings.HasPrefix(m.dev, loopMajor) {
			if f := loopBacking(m.dev); f != "" && beneath(f, dir) {
				return m.point
			}
		}
	}
	return ""
}

// loopMajor is the loop devices' major number, as mountinfo's major:minor starts (Documentation/admin-guide/
// devices.txt: 7 block, loopback devices).
const loopMajor = "7:"

// loopBacking is the backing file of the loop device dev (major:minor), as the kernel reports it
// (/sys/dev/block/DEV/loop/backing_file, drivers/block/loop.c), or "" where it cannot be read.
func loopBacking(dev string) string {
	b, err := os.ReadFile("/sys/dev/block/" + dev + "/loop/backing_file")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// ShownBeneath returns the index in dirs of the first directory that shows the file at path (absolute, without
// symlinks) under another name (see shownAt), path's directory and its ancestors having the identities ids
// (st_dev, st_ino); -1 where none does. A directory that does not exist shows nothing. The mounts are
// /proc/self/mountinfo's, none where it cannot be read (the identities are still compared).
func ShownBeneath(path string, ids map[[2]uint64]bool, dirs []string) int {
	mounts, _ := readMounts()
	for i, dir := range dirs {
		var st unix.Stat_t
		if dir != "" && unix.Stat(dir, &st) == nil && shownAt(path, ids, dir, [2]uint64{st.Dev, st.Ino}, mounts) != "" {
			return i
		}
	}
	return -1
}
