package suite

import (
	"errors"
	"os"
	"path/filepath"
)

// BwrapDirs are where confine looks bwrap up without CONFINE_BWRAP, in order (bwrapDirs in
// sandbox/launch/bwrap.go): never $PATH.
var BwrapDirs = []string{"/usr/bin", "/bin", "/usr/local/bin"}

// FindBwrap is the bwrap confine will run from the runner's environment, found as confine finds it: the file
// CONFINE_BWRAP names when it is set (absolute; confine refuses an empty or relative one, and tries no other),
// else the first regular file named bwrap in BwrapDirs. The error says why there is none. Whether confine
// then trusts it (root-owned, nothing beneath a writable root) and whether it works is for the cases to show.
func FindBwrap() (string, error) {
	if v, set := os.LookupEnv("CONFINE_BWRAP"); set {
		if !filepath.IsAbs(v) {
			return "", errors.New("CONFINE_BWRAP is set but not an absolute path: confine refuses it")
		}
		if st, err := os.Stat(v); err != nil || !st.Mode().IsRegular() {
			return "", errors.New("CONFINE_BWRAP=" + v + " is not a regular file")
		}
		return v, nil
	}
	for _, dir := range BwrapDirs {
		if st, err := os.Stat(dir + "/bwrap"); err == nil && st.Mode().IsRegular() {
			return dir + "/bwrap", nil
		}
	}
	return "", errors.New("bwrap is not installed in /usr/bin, /bin or /usr/local/bin, and CONFINE_BWRAP is not set")
}
