package launch

import (
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/sys"
	"github.com/confine-dev/confine/sandbox/landlock"
)

// System is the kernel as the launcher sees it. Host is the real one; tests substitute a fake to drive every
// refusal without a kernel that has (or lacks) Landlock.
type System interface {
	landlock.Syscalls
	// SetSeccomp installs a seccomp filter on the calling thread (after no_new_privs).
	SetSeccomp(prog []unix.SockFilter) error
	// Exec replaces the process image (execve), from the calling thread.
	Exec(path string, argv, env []string) error
	// OSRelease is the kernel release, as in /proc/sys/kernel/osrelease or uname -r.
	OSRelease() string
	// Machine is uname -m.
	Machine() string
	// WSLInterop is the state of WSL2's Windows interop, from binfmt_misc.
	WSLInterop() Interop
	// LayerChild reports whether this process is the layered child, and its sync descriptor.
	LayerChild() (bool, int, error)
	// Geteuid is the effective user ID: root can build the mount layer in place.
	Geteuid() int
	// UnshareMountNS moves the calling thread into a new mount namespace (unshare(CLONE_NEWNS)).
	UnshareMountNS() error
	// BuildMountLayer makes every mount read-only except the writable roots, in a fresh mount namespace.
	BuildMountLayer(roots []string) (committed bool, err error)
	// RunLayered runs this invocation again as a layered child and waits for it.
	RunLayered(reportFD int) (syscall.WaitStatus, error)
	// LayerAvailable says whether the layer's namespaces can be made here (for probe).
	LayerAvailable() error
	// LimitRootCaps cuts a root command's capabilities to the file-ownership set (see rootCaps).
	LimitRootCaps() error
}

// Host is the real System.
type Host struct{ landlock.Kernel }

func (Host) SetSeccomp(prog []unix.SockFilter) error    { return sys.SeccompSetModeFilter(prog) }
func (Host) Exec(path string, argv, env []string) error { return unix.Exec(path, argv, env) }
func (Host) OSRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
func (Host) WSLInterop() Interop                                 { return readWSLInterop() }
func (Host) LayerChild() (bool, int, error)                      { return layerChild() }
func (Host) Geteuid() int                                        { return os.Geteuid() }
func (Host) UnshareMountNS() error                               { return unix.Unshare(unix.CLONE_NEWNS) }
func (Host) BuildMountLayer(roots []string) (bool, error)        { return buildMountLayer(roots) }
func (Host) RunLayered(reportFD int) (syscall.WaitStatus, error) { return runLayered(reportFD) }
func (Host) LayerAvailable() error                               { return layerAvailable() }
func (Host) LimitRootCaps() error                                { return limitRootCaps() }
func (Host) Machine() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Machine[:])
}

// environ is the command's environment. On WSL2 it drops WSL_INTEROP, the socket through which a process
// asks the Windows side to start .exe files.
func environ(wsl int) []string {
	env := os.Environ()
	if wsl != 2 {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "WSL_INTEROP=") {
			out = append(out, kv)
		}
	}
	return out
}

// errnoName is the uapi name of the errnos Landlock answers with.
func errnoName(e unix.Errno) string {
	switch e {
	case unix.ENOSYS:
		return "ENOSYS"
	case unix.EOPNOTSUPP:
		return "EOPNOTSUPP"
	}
	return ""
}
