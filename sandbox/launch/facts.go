package launch

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
)

// Facts are what the launcher reads about the host once per run, before deciding anything. Tests build them by
// hand to play other kernels.
type Facts struct {
	Release string  // kernel release, uname -r (e.g. "6.12.117+deb13-amd64")
	Machine string  // uname -m (e.g. "x86_64", "aarch64")
	EUID    int     // effective user ID: root builds the mount layer in place
	WSL     WSL     // from Release, and the wsl2 build tag
	Interop Interop // WSL2's Windows interop; InteropDisabled where WSL is not WSL2
	// Terminal is the caller's controlling terminal where one of descriptors 0 to 2 is open on it; else zero.
	Terminal Terminal

	// Bwrap is $CONFINE_BWRAP (BwrapSet: it is set, perhaps empty), the bwrap the caller names; BwrapDirs are
	// where bwrap is looked up without it (bwrapDirs: tests name others). See findBwrap.
	Bwrap     string
	BwrapSet  bool
	BwrapDirs []string
}

// ReadFacts reads the Facts of this process: one uname(2), one geteuid(2), $CONFINE_BWRAP, the caller's terminal
// (readTerminal: an fstat and an ioctl per standard descriptor, one readlink), and binfmt_misc on WSL2 only.
func ReadFacts() Facts {
	var u unix.Utsname
	unix.Uname(&u) // cannot fail: its only error is EFAULT
	f := Facts{Release: unix.ByteSliceToString(u.Release[:]), Machine: unix.ByteSliceToString(u.Machine[:]),
		EUID: os.Geteuid(), Interop: InteropDisabled}
	f.WSL = DetectWSL(f.Release)
	f.Bwrap, f.BwrapSet = os.LookupEnv(BwrapEnv)
	f.BwrapDirs = bwrapDirs
	f.Terminal = readTerminal()
	if f.WSL == WSL2 {
		f.Interop = readWSLInterop()
	}
	return f
}

// A Terminal is the caller's controlling terminal as one of its descriptors shows it: the device node's path
// (from /proc/self/fd, e.g. "/dev/pts/3") and its device number (st_rdev). With a mount layer it is bound over
// /dev/tty, so that a program that reopens /dev/tty (a pager, an editor, a prompt) reaches this terminal, and
// no other: /dev/tty itself names whatever terminal the process controls when it is opened.
type Terminal struct {
	Path string // "" where no descriptor 0 to 2 is the controlling terminal
	Rdev uint64
}

// readTerminal finds the first of descriptors 0 to 2 open on the caller's controlling terminal: a character
// device on which TIOCGSID answers (it fails with ENOTTY on a terminal that is not the caller's controlling
// one, tty_ioctl(4)), whose /proc/self/fd link names a node beneath /dev. It returns the zero Terminal where
// there is none (an agent's pipes, a session without a terminal).
func readTerminal() Terminal {
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		if _, err := unix.IoctlGetInt(fd, unix.TIOCGSID); err != nil {
			continue
		}
		path, err := os.Readlink("/proc/self/fd/" + msg.Itoa(fd))
		if err != nil || !strings.HasPrefix(path, "/dev/") {
			continue
		}
		return Terminal{Path: path, Rdev: st.Rdev}
	}
	return Terminal{}
}
