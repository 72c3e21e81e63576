// Package initramfs writes gzip'd newc cpio archives for the Linux kernel's initramfs with u-root's pkg/cpio.
//
// The guest's initramfs is three concatenated archives, which the kernel unpacks in turn
// (Documentation/driver-api/early-userspace/buffer-format.rst): a base built once per (init binary, busybox)
// pair and cached, holding /init, /bin/busybox and the mount points; the payload under /payload, built once per
// arch per run; and the per-boot run configuration /vm/run.json. Output is reproducible: the same inputs give the
// same bytes (no timestamps, owners or gzip names).
package initramfs

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/u-root/u-root/pkg/cpio"
)

// Dirs are the mount points and directories the guest supervisor expects in its root.
var Dirs = []string{"bin", "dev", "etc", "newroot", "payload", "proc", "root", "sbin", "sys", "tmp", "usr", "usr/bin", "usr/sbin", "vm"}

// Base returns the records of the base archive: init as /init (mode 0755), busybox as /bin/busybox with /bin/sh
// linked to it, /dev/console (char 5:1, Documentation/admin-guide/devices.txt: the kernel opens it as /init's
// stdio before anything is mounted), and Dirs. Applet links other than sh are made in the guest by
// `busybox --install -s /bin`, from the guest's own busybox.
func Base(init, busybox []byte) []cpio.Record {
	recs := make([]cpio.Record, 0, len(Dirs)+4)
	for _, d := range Dirs {
		mode := uint64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		recs = append(recs, cpio.Directory(d, mode))
	}
	return append(recs,
		cpio.CharDev("dev/console", 0o600, 5, 1),
		File("init", init, 0o755),
		File("bin/busybox", busybox, 0o755),
		cpio.Symlink("bin/sh", "busybox"),
	)
}

// Payload returns the records of the payload archive: every file, directory and symlink under dir (permission
// bits kept, owners dropped) below /payload. Files other than regular files, directories and symlinks are an error.
func Payload(dir string) ([]cpio.Record, error) {
	var recs []cpio.Record
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := path.Join("payload", filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case rel == ".":
			return nil
		case d.IsDir():
			recs = append(recs, cpio.Directory(name, uint64(info.Mode().Perm())))
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			recs = append(recs, cpio.Symlink(name, target))
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			recs = append(recs, File(name, b, uint64(info.Mode().Perm())))
		default:
			return fmt.Errorf("payload %s: %s is not a regular file, directory or symlink", dir, rel)
		}
		return nil
	})
	return recs, err
}

// File is a regular file record; name is relative to / ("vm/run.json").
func File(name string, b []byte, perm uint64) cpio.Record {
	return cpio.StaticRecord(b, cpio.Info{Name: name, Mode: cpio.S_IFREG | perm})
}

// Write writes recs as one gzip'd newc archive with a trailer. Records are made reproducible and sorted by name,
// and missing parent directories are added (the kernel does not create them) with mode 0755, never for the root
// itself: the kernel chmods a directory that exists already to each record's mode, so a parent written 0777 (as
// u-root's WriteRecordsAndDirs writes them) by a later archive would leave /usr/bin writable by everyone, and the
// launcher rightly refuses a bwrap in such a directory.
func Write(w io.Writer, recs []cpio.Record) error {
	sorted := append([]cpio.Record(nil), recs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	cpio.MakeAllReproducible(sorted)
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	rw := cpio.NewDedupWriter(cpio.Newc.Writer(zw))
	written := map[string]bool{}
	for _, r := range sorted {
		name := cpio.Normalize(r.Name)
		if written[name] {
			return fmt.Errorf("initramfs: %q twice in the archive", name)
		}
		var recs []cpio.Record
		if dir := path.Dir(name); dir != "." {
			parts := strings.Split(dir, "/")
			for i := range parts {
				if d := path.Join(parts[:i+1]...); !written[d] {
					recs, written[d] = append(recs, cpio.Directory(d, 0o755)), true
				}
			}
		}
		r.Name, written[name] = name, true
		if err := cpio.WriteRecords(rw, append(recs, r)); err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
	}
	if err := cpio.WriteTrailer(rw); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return zw.Close()
}

// Bytes is Write into memory.
func Bytes(recs []cpio.Record) ([]byte, error) {
	var b bytes.Buffer
	err := Write(&b, recs)
	return b.Bytes(), err
}
