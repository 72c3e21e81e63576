package launch

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// WSL is the kind of Windows Subsystem for Linux a kernel belongs to. Its number is the report's "wsl" field.
type WSL int

// The kinds.
const (
	NotWSL WSL = 0 // a Linux kernel outside WSL
	WSL1   WSL = 1 // a translation layer, not a Linux kernel: no Landlock
	WSL2   WSL = 2 // a real Microsoft kernel in a utility VM
)

// DetectWSL returns the kind of release: WSL1's "kernel" reports e.g. "4.4.0-19041-Microsoft", WSL2's e.g.
// "6.6.36.6-microsoft-standard-WSL2". A launcher built with the wsl2 tag treats every non-WSL1 kernel as WSL2.
func DetectWSL(release string) WSL {
	lower := strings.ToLower(release)
	switch {
	case !strings.Contains(lower, "microsoft"):
		if wsl2Build {
			return WSL2
		}
		return NotWSL
	case strings.Contains(lower, "wsl2") || strings.Contains(lower, "microsoft-standard"):
		return WSL2
	case strings.Contains(release, "Microsoft"):
		return WSL1
	}
	return WSL2
}

// Interop is the state of WSL2's Windows interop: the binfmt_misc entry whose interpreter is /init and which
// starts .exe files as Windows processes, outside any Landlock domain.
type Interop string

// The interop states.
const (
	InteropEnabled  Interop = "enabled"
	InteropDisabled Interop = "disabled" // entry present but disabled, or no such entry
	InteropUnknown  Interop = "unknown"  // binfmt_misc is not mounted: an entry could exist unseen
)

// binfmtDir is where binfmt_misc shows its entries (Documentation/admin-guide/binfmt-misc.rst).
var binfmtDir = "/proc/sys/fs/binfmt_misc"

// readWSLInterop reads binfmt_misc for an enabled entry with interpreter /init (WSL registers "WSLInterop",
// sometimes also "WSLInterop-late", with flags PF, so the interpreter is pinned at registration and no
// Landlock rule on /init could stop it).
func readWSLInterop() Interop {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(binfmtDir, "status"), &st); err != nil {
		return InteropUnknown
	}
	names, _ := dirNames(binfmtDir)
	for _, name := range names {
		if name == "status" || name == "register" {
			continue
		}
		b, err := readFile(filepath.Join(binfmtDir, name))
		if err != nil {
			continue
		}
		text := string(b)
		if strings.HasPrefix(text, "enabled") && strings.Contains(text, "\ninterpreter /init\n") {
			return InteropEnabled
		}
	}
	return InteropDisabled
}
