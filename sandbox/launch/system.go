package launch

import (
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/seccomp"
)

// System is what the launcher does to the kernel. Host is the real one; tests wrap it to make any step fail
// and drive every refusal without a kernel that has (or lacks) Landlock. What the launcher only reads is in
// Facts.
type System interface {
	landlock.Syscalls
	// SetSeccomp installs a seccomp filter on the calling thread (after no_new_privs): seccomp.Install.
	SetSeccomp(prog []unix.SockFilter) error
	// SetSeccompListener installs it with a listener (seccomp.InstallListener) and returns the listener.
	SetSeccompListener(prog []unix.SockFilter) (int, error)
	// LimitRootCaps cuts a root command's capabilities to rootCaps.
	LimitRootCaps() error
	// Exec replaces the process image (execve), from the calling thread.
	Exec(path string, argv, env []string) error
	Layer
}

// Layer is the mount layer's part of System (see layer.go).
type Layer interface {
	// UnshareMountNS moves the calling thread into new mount and IPC namespaces (unshare(CLONE_NEWNS |
	// CLONE_NEWIPC)); root only. The IPC namespace keeps System V IPC and POSIX message queues private. back
	// moves the thread back into the mount namespace it had (setns), for when no mount layer can be built in
	// the new one: the command then runs, and the supervisor (which compares mounts, each one namespace's)
	// answers it, in one mount namespace.
	UnshareMountNS() (back func() error, err error)
	// BuildMountLayer makes every mount read-only except the given roots' trees, in a fresh mount namespace,
	// and adds the private mounts priv asks for, returning O_PATH descriptors of their roots.
	BuildMountLayer(roots []*pathfd.Root, priv Private) (m Mounted, committed bool, err error)
	// StartLayered starts a layered child, which waits for its Handoff (child.go); with pidNS, in a new PID
	// namespace too, where it stays as the command's init. reportFD (or -1) is passed to it. Errors wrap
	// ErrLayerUnavailable.
	StartLayered(reportFD int, pidNS bool) (LayeredChild, error)
	// LayerAvailable says whether the layer's namespaces can be made here, with pidNS a PID namespace too, and
	// its first mount made in them (for probe). Errors wrap ErrLayerUnavailable.
	LayerAvailable(pidNS bool) error
	// SupervisorAvailable says whether a seccomp listener can be had here (for probe); errors wrap
	// ErrSupervisorUnavailable.
	SupervisorAvailable() error
}

// Host is the real System.
type Host struct{ landlock.Host }

func (Host) SetSeccomp(prog []unix.SockFilter) error { return seccomp.Install(prog) }
func (Host) SetSeccompListener(prog []unix.SockFilter) (int, error) {
	return seccomp.InstallListener(prog)
}
func (Host) LimitRootCaps() error                       { return limitRootCaps() }
func (Host) Exec(path string, argv, env []string) error { return unix.Exec(path, argv, env) }
func (Host) UnshareMountNS() (func() error, error)      { return unshareMountNS() }
func (Host) BuildMountLayer(roots []*pathfd.Root, priv Private) (Mounted, bool, error) {
	return buildMountLayer(roots, priv)
}
func (Host) StartLayered(reportFD int, pidNS bool) (LayeredChild, error) {
	return startLayered(reportFD, pidNS)
}
func (Host) LayerAvailable(pidNS bool) error { return layerAvailable(pidNS) }
func (Host) SupervisorAvailable() error      { return supervisorAvailable() }
