package launch

import (
	"os"
	"strings"

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
func (Host) Machine() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Machine[:])
}

// DetectWSL returns 0 when release is not a WSL kernel, 1 for WSL1 (whose "kernel" is a translation layer
// reporting e.g. "4.4.0-19041-Microsoft") and 2 for WSL2 (a real kernel, e.g. "6.6.36.6-microsoft-standard-WSL2").
func DetectWSL(release string) int {
	lower := strings.ToLower(release)
	switch {
	case !strings.Contains(lower, "microsoft"):
		return 0
	case strings.Contains(lower, "wsl2") || strings.Contains(lower, "microsoft-standard"):
		return 2
	case strings.Contains(release, "Microsoft"):
		return 1
	}
	return 2
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
