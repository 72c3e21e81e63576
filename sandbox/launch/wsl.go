package launch

import (
	"os"
	"path/filepath"
	"strings"
)

// DetectWSL returns 0 when release is not a WSL kernel, 1 for WSL1 (whose "kernel" is a translation layer
// reporting e.g. "4.4.0-19041-Microsoft") and 2 for WSL2 (a real kernel, e.g. "6.6.36.6-microsoft-standard-WSL2").
// A launcher built with the wsl2 tag treats every non-WSL1 kernel as WSL2.
func DetectWSL(release string) int {
	lower := strings.ToLower(release)
	switch {
	case !strings.Contains(lower, "microsoft"):
		if wsl2Build {
			return 2
		}
		return 0
	case strings.Contains(lower, "wsl2") || strings.Contains(lower, "microsoft-standard"):
		return 2
	case strings.Contains(release, "Microsoft"):
		return 1
	}
	return 2
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
	if _, err := os.Stat(filepath.Join(binfmtDir, "status")); err != nil {
		return InteropUnknown
	}
	entries, _ := os.ReadDir(binfmtDir)
	for _, e := range entries {
		if e.Name() == "status" || e.Name() == "register" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(binfmtDir, e.Name()))
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
