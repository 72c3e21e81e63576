package launch

import (
	"os"

	"golang.org/x/sys/unix"
)

// Facts are what the launcher reads about the host once per run, before deciding anything. Tests build them by
// hand to play other kernels.
type Facts struct {
	Release string  // kernel release, uname -r (e.g. "6.12.117+deb13-amd64")
	Machine string  // uname -m (e.g. "x86_64", "aarch64")
	EUID    int     // effective user ID: root builds the mount layer in place
	WSL     WSL     // from Release, and the wsl2 build tag
	Interop Interop // WSL2's Windows interop; InteropDisabled where WSL is not WSL2

	// Bwrap is $CONFINE_BWRAP (BwrapSet: it is set, perhaps empty), the bwrap the caller names; BwrapDirs are
	// where bwrap is looked up without it (bwrapDirs: tests name others). See findBwrap.
	Bwrap     string
	BwrapSet  bool
	BwrapDirs []string
}

// ReadFacts reads the Facts of this process: one uname(2), one geteuid(2), $CONFINE_BWRAP, and binfmt_misc on
// WSL2 only.
func ReadFacts() Facts {
	var u unix.Utsname
	unix.Uname(&u) // cannot fail: its only error is EFAULT
	f := Facts{Release: unix.ByteSliceToString(u.Release[:]), Machine: unix.ByteSliceToString(u.Machine[:]),
		EUID: os.Geteuid(), Interop: InteropDisabled}
	f.WSL = DetectWSL(f.Release)
	f.Bwrap, f.BwrapSet = os.LookupEnv(BwrapEnv)
	f.BwrapDirs = bwrapDirs
	if f.WSL == WSL2 {
		f.Interop = readWSLInterop()
	}
	return f
}
