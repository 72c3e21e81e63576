// Package pathfd opens a writable root exactly once, without following symlinks, and validates the
// descriptor it got rather than the path string, so that a path swapped for a symlink between a check and a use
// cannot redirect a Landlock rule: a rule binds to the inode behind the descriptor (security/landlock/fs.c).
package pathfd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
)

// Kind is the type of the opened inode, taken from fstat on the descriptor itself.
type Kind string

// The kinds of inode a root may be. Anything else (FIFO, block device, symlink) is refused, and a socket is
// opened by OpenSocketIn alone.
const (
	Dir     Kind = "dir"
	File    Kind = "file"    // regular file
	CharDev Kind = "chardev" // e.g. /dev/null, /dev/tty
	Socket  Kind = "socket"  // a pathname unix socket (OpenSocketIn)
)

// Root is an opened root: FD is an O_PATH|O_CLOEXEC descriptor of Path.
type Root struct {
	Path string
	FD   int
	Kind Kind
}

// Close closes the descriptor.
func (r *Root) Close() error { return unix.Close(r.FD) }

// ErrBadPath is wrapped by every error about the path itself (as opposed to a system failure).
var ErrBadPath = errors.New("bad path")

// Check validates path as a string: absolute, clean (no ".", ".." or repeated or trailing "/"), not "/" and
// without NUL. It does not touch the filesystem.
func Check(path string) error {
	switch {
	case path == "":
		return msg.Err(ErrBadPath, ": empty path")
	case strings.IndexByte(path, 0) >= 0:
		return msg.Err(ErrBadPath, ": ", msg.Quoted(path), " contains NUL")
	case !filepath.IsAbs(path):
		return msg.Err(ErrBadPath, ": ", path, " is not absolute; pass an absolute path, e.g. \"$(realpath ", path, ")\"")
	case path == "/":
		return msg.Err(ErrBadPath, ": / cannot be a writable root")
	case filepath.Clean(path) != path:
		return msg.Err(ErrBadPath, ": ", path, " is not clean (want ", filepath.Clean(path), ")")
	}
	return nil
}

// Open is OpenIn(Here, path).
func Open(path string) (*Root, error) { return OpenIn(Here, path) }

// Here, as OpenIn's root, is this process's own root directory.
const Here = -1

// OpenIn checks path, opens it once with O_PATH|O_CLOEXEC without following any symlink in any component
// (openat2 RESOLVE_NO_SYMLINKS, 5.6; component by component with O_NOFOLLOW where openat2 is missing),
// and validates the descriptor: its type by fstat, and its name by /proc/self/fd when /proc is mounted.
// root is Here, or a descriptor of another mount namespace's root directory (such as /proc/PID/root), in
// which path is then resolved (RESOLVE_IN_ROOT): the descriptor lands on that namespace's mount.
// Errors wrap ErrBadPath for a missing, symlinked or odd path.
func OpenIn(root int, path string) (*Root, error) { return openIn(root, path, false) }

// OpenSocketIn is OpenIn for a pathname unix socket, which it must be (ErrBadPath otherwise): the same walk,
// following no symlink.
func OpenSocketIn(root int, path string) (*Root, error) { return openIn(root, path, true) }

func openIn(root int, path string, socket bool) (*Root, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	at, rel := unix.AT_FDCWD, path
	if root != Here {
		at, rel = root, path[1:]
		how.Resolve |= unix.RESOLVE_IN_ROOT
	}
	fd, err := unix.Openat2(at, rel, &how)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) { // no openat2, or a seccomp filter refusing it
		fd, err = openNoFollow(root, path)
	}
	if err != nil {
		return nil, describe(root, path, err)
	}
	r, err := validate(root, path, rootName(root)+path, fd, socket)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return r, nil
}

// openNoFollow walks path from root (Here: /) one component at a time, each opened with O_PATH|O_NOFOLLOW
// relative to the previous descriptor, so no symlink is followed anywhere. path is clean, so it has no "..".
func openNoFollow(root int, path string) (int, error) {
	start, name := root, "."
	if root == Here {
		start, name = unix.AT_FDCWD, "/"
	}
	fd, err := unix.Openat(start, name, unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(path[1:], "/") {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(fd)
			return -1, unix.ENOTDIR
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// KernelName is the kernel's name of the file open at fd: readlink(2) of /proc/self/fd/FD (proc(5)), an
// absolute path from this mount namespace's root with symlinks resolved, or an error (no /proc mounted).
func KernelName(fd int) (string, error) { return os.Readlink("/proc/self/fd/" + msg.Itoa(fd)) }

// rootName is the kernel's name, seen from this process, for root: "" for Here, and for another mount
// namespace's root usually "" too; but where this process is chrooted (a build chroot, not a pivot_root
// container), the name of a descriptor in another mount namespace is its path from that namespace's real
// root, which begins with the chroot's own path.
func rootName(root int) string {
	if root == Here {
		return ""
	}
	name, err := KernelName(root)
	if err != nil || name == "/" {
		return ""
	}
	return name
}

// validate checks fd, opened for path in root's mount namespace, whose kernel name (/proc/self/fd) must be want,
// and which must be a socket if socket, else a directory, regular file or character device.
func validate(root int, path, want string, fd int, socket bool) (*Root, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, msg.Err("fstat ", path, ": ", err)
	}
	var kind Kind
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		kind = Dir
	case unix.S_IFREG:
		kind = File
	case unix.S_IFCHR:
		kind = CharDev
	case unix.S_IFSOCK:
		kind = Socket
	case unix.S_IFLNK:
		// O_PATH|O_NOFOLLOW on a final symlink opens the link itself.
		return nil, symlinked(root, path, " is a symlink")
	default:
		return nil, msg.Err(ErrBadPath, ": ", path, " is not a directory, regular file or character device (mode ", msg.Oct(st.Mode&unix.S_IFMT), ")")
	}
	if socket != (kind == Socket) {
		if socket {
			return nil, msg.Err(ErrBadPath, ": ", path, " is not a unix socket")
		}
		return nil, msg.Err(ErrBadPath, ": ", path, " is a unix socket (--allow-socket connects to one)")
	}
	// Where /proc is mounted, the kernel's name for the descriptor must be the path we asked for: it was
	// opened without following links, so anything else means the tree moved under us.
	if got, err := KernelName(fd); err == nil && got != want {
		return nil, msg.Err(ErrBadPath, ": ", path, " was opened as ", got, " (did it move?)")
	}
	return &Root{Path: path, FD: fd, Kind: kind}, nil
}

func describe(root int, path string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return msg.Err(ErrBadPath, ": ", path, " does not exist")
	case errors.Is(err, unix.ELOOP):
		return symlinked(root, path, " has a symlink in its path")
	case errors.Is(err, unix.ENOTDIR):
		return msg.Err(ErrBadPath, ": a component of ", path, " is not a directory")
	case errors.Is(err, unix.EXDEV):
		return msg.Err(ErrBadPath, ": ", path, " crosses a magic link")
	}
	return msg.Err("open ", path, ": ", err)
}

// symlinked refuses path, which is or has a symlink (what says which), and says the way out: the resolved
// path, named where this process sees root's mount namespace as its own (Here) and the path resolves.
func symlinked(root int, path, what string) error {
	hint := " (pass the resolved path)"
	if real := Resolved(path); root == Here && real != "" {
		hint = " (pass the resolved path, " + real + ")"
	}
	return msg.Err(ErrBadPath, ": ", path, what, hint)
}

// Resolved is path with its symlinks resolved, as the kernel sees it (/proc/self/fd of an O_PATH descriptor:
// filepath.EvalSymlinks would cost the launcher a page), or "" if it cannot be opened.
func Resolved(path string) string {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	real, err := KernelName(fd)
	if err != nil || !strings.HasPrefix(real, "/") {
		return ""
	}
	return real
}
