package helper

// The metadata routes (issue 15): every system call that changes a file's mode, owner, times or extended
// attributes, by path and by descriptor, so that a case can aim each one at a file outside the writable set (it
// must fail, and the file must not change) and inside it (it must work where report.metadata says metadata is
// allowed there). A descriptor route opens the file itself, read-only (O_RDONLY; O_PATH would refuse fchmod),
// the way a command holds an outside file it may read. Each op makes a visible change: mode 0604, owner arg
// ("UID:GID"; the caller's own when empty), atime and mtime MetaTime, xattr user.conformance = "changed" (or its
// removal). A legacy call the architecture does not have (chmod(2) on arm64) answers ENOSYS with data
// "absent on this architecture".

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MetaMode is the mode the chmod routes set; MetaTime the atime and mtime (seconds) the times routes set.
const (
	MetaMode = 0o604
	MetaTime = 1000000000
)

// ArchAbsent is the data of a legacy route the architecture does not have.
const ArchAbsent = "absent on this architecture"

// sysFchmodat2 is fchmodat2(2) (Linux 6.6), the same number on amd64 and arm64 (include/uapi/asm-generic/unistd.h).
const sysFchmodat2 = 452

var metaOps = map[string]string{
	"m-chmod":              "chmod(2) itself (not fchmodat), mode 0604; absent on arm64",
	"m-fchmod":             "open(path, O_RDONLY), fchmod(fd, 0604)",
	"m-fchmodat":           "fchmodat(AT_FDCWD, path, 0604, 0)",
	"m-fchmodat-dirfd":     "open(dirname(path), O_RDONLY|O_DIRECTORY), fchmodat(dirfd, basename(path), 0604, 0)",
	"m-fchmodat2-empty":    "open(path, O_RDONLY), fchmodat2(fd, \"\", 0604, AT_EMPTY_PATH) (6.6)",
	"m-chown":              "chown(2) itself (not fchownat), to arg UID:GID (the caller's when empty); absent on arm64",
	"m-lchown":             "lchown(2) itself, to arg UID:GID; absent on arm64",
	"m-fchown":             "open(path, O_RDONLY), fchown(fd, arg UID:GID)",
	"m-fchownat":           "fchownat(AT_FDCWD, path, arg UID:GID, AT_SYMLINK_NOFOLLOW)",
	"m-fchownat-empty":     "open(path, O_RDONLY), fchownat(fd, \"\", arg UID:GID, AT_EMPTY_PATH)",
	"m-utime":              "utime(2), atime = mtime = 10^9 s; absent on arm64",
	"m-utimes":             "utimes(2), atime = mtime = 10^9 s; absent on arm64",
	"m-futimesat":          "futimesat(AT_FDCWD, path, 10^9 s); absent on arm64",
	"m-utimensat":          "utimensat(AT_FDCWD, path, 10^9 s, 0)",
	"m-utimensat-nofollow": "utimensat(AT_FDCWD, path, 10^9 s, AT_SYMLINK_NOFOLLOW)",
	"m-utimensat-fd":       "open(path, O_RDONLY), utimensat(fd, NULL, 10^9 s, 0): futimens(3)",
	"m-utimensat-dirfd":    "open(dirname(path), O_RDONLY|O_DIRECTORY), utimensat(dirfd, basename(path), 10^9 s, 0)",
	"m-setxattr":           "setxattr(path, user.conformance, \"changed\")",
	"m-lsetxattr":          "lsetxattr(path, user.conformance, \"changed\")",
	"m-fsetxattr":          "open(path, O_RDONLY), fsetxattr(fd, user.conformance, \"changed\")",
	"m-removexattr":        "removexattr(path, user.conformance)",
	"m-lremovexattr":       "lremovexattr(path, user.conformance)",
	"m-fremovexattr":       "open(path, O_RDONLY), fremovexattr(fd, user.conformance)",
}

func init() {
	for k, v := range metaOps {
		Ops[k] = v
	}
}

// MetaOps lists the metadata routes' op names, sorted.
func MetaOps() []string {
	var names []string
	for k := range metaOps {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// doMeta performs a metadata route; ok is false when op is not one.
func doMeta(op Op) (data string, err error, ok bool) {
	if op.Op == "race-metadata" {
		data, err = raceMetadata(op)
		return data, err, true
	}
	if _, ok := metaOps[op.Op]; !ok {
		return "", nil, false
	}
	uid, gid := os.Getuid(), os.Getgid()
	if u, g, found := strings.Cut(op.Arg, ":"); found {
		uid, gid = atoi(u), atoi(g)
	}
	times := []unix.Timespec{{Sec: MetaTime}, {Sec: MetaTime}}
	tv := []unix.Timeval{{Sec: MetaTime}, {Sec: MetaTime}}
	withFd := func(flags int, f func(fd int) error) error {
		fd, err := unix.Open(op.Path, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return f(fd)
	}
	withDir := func(f func(dfd int, name string) error) error {
		fd, err := unix.Open(filepath.Dir(op.Path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return f(fd, filepath.Base(op.Path))
	}
	legacy := func(nr uintptr, a1, a2 uintptr) error {
		if nr == 0 {
			data = ArchAbsent
			return unix.ENOSYS
		}
		p, err := unix.BytePtrFromString(op.Path)
		if err != nil {
			return err
		}
		var e unix.Errno
		if nr == sysFutimesat {
			atFdcwd := unix.AT_FDCWD
			_, _, e = unix.Syscall(nr, uintptr(atFdcwd), uintptr(unsafe.Pointer(p)), a1)
		} else {
			_, _, e = unix.Syscall(nr, uintptr(unsafe.Pointer(p)), a1, a2)
		}
		if e != 0 {
			return e
		}
		return nil
	}
	name, val := "user.conformance", []byte("changed")
	switch op.Op {
	case "m-chmod":
		err = legacy(sysChmod, MetaMode, 0)
	case "m-fchmod":
		err = withFd(unix.O_RDONLY, func(fd int) error { return unix.Fchmod(fd, MetaMode) })
	case "m-fchmodat":
		err = unix.Fchmodat(unix.AT_FDCWD, op.Path, MetaMode, 0)
	case "m-fchmodat-dirfd":
		err = withDir(func(dfd int, n string) error { return unix.Fchmodat(dfd, n, MetaMode, 0) })
	case "m-fchmodat2-empty":
		err = withFd(unix.O_RDONLY, func(fd int) error {
			empty := []byte{0}
			_, _, e := unix.Syscall6(sysFchmodat2, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])), MetaMode, unix.AT_EMPTY_PATH, 0, 0)
			if e != 0 {
				return e
			}
			return nil
		})
	case "m-chown":
		err = legacy(sysChown, uintptr(uid), uintptr(gid))
	case "m-lchown":
		err = legacy(sysLchown, uintptr(uid), uintptr(gid))
	case "m-fchown":
		err = withFd(unix.O_RDONLY, func(fd int) error { return unix.Fchown(fd, uid, gid) })
	case "m-fchownat":
		err = unix.Fchownat(unix.AT_FDCWD, op.Path, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	case "m-fchownat-empty":
		err = withFd(unix.O_RDONLY, func(fd int) error { return unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH) })
	case "m-utime":
		buf := unix.Utimbuf{Actime: MetaTime, Modtime: MetaTime}
		err = legacy(sysUtime, uintptr(unsafe.Pointer(&buf)), 0)
	case "m-utimes":
		err = legacy(sysUtimes, uintptr(unsafe.Pointer(&tv[0])), 0)
	case "m-futimesat":
		err = legacy(sysFutimesat, uintptr(unsafe.Pointer(&tv[0])), 0)
	case "m-utimensat":
		err = unix.UtimesNanoAt(unix.AT_FDCWD, op.Path, times, 0)
	case "m-utimensat-nofollow":
		err = unix.UtimesNanoAt(unix.AT_FDCWD, op.Path, times, unix.AT_SYMLINK_NOFOLLOW)
	case "m-utimensat-fd":
		err = withFd(unix.O_RDONLY, func(fd int) error {
			_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&times[0])), 0, 0, 0)
			if e != 0 {
				return e
			}
			return nil
		})
	case "m-utimensat-dirfd":
		err = withDir(func(dfd int, n string) error { return unix.UtimesNanoAt(dfd, n, times, 0) })
	case "m-setxattr":
		err = unix.Setxattr(op.Path, name, val, 0)
	case "m-lsetxattr":
		err = unix.Lsetxattr(op.Path, name, val, 0)
	case "m-fsetxattr":
		err = withFd(unix.O_RDONLY, func(fd int) error { return unix.Fsetxattr(fd, name, val, 0) })
	case "m-removexattr":
		err = unix.Removexattr(op.Path, name)
	case "m-lremovexattr":
		err = unix.Lremovexattr(op.Path, name)
	case "m-fremovexattr":
		err = withFd(unix.O_RDONLY, func(fd int) error { return unix.Fremovexattr(fd, name) })
	}
	return data, err, true
}

// UIDGID is the "UID:GID" argument of the chown routes.
func UIDGID(uid, gid int) string { return strconv.Itoa(uid) + ":" + strconv.Itoa(gid) }
