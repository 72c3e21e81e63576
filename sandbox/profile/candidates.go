package profile

import (
	"path/filepath"
	"slices"
	"strings"
)

// Candidates returns every directory any profile may grant under getenv's environment: each candidate of each
// directory, not only the first one set (another caller's environment may pick another), git-global's too,
// absolute and clean, each once, in the table's order. A program that must not lie where a confined command
// could write (package reexec's trust check, the npm package's PROFILE_DIRS) tests against all of them.
func Candidates(getenv func(string) string) []string {
	var out []string
	for _, p := range profiles {
		for _, cands := range p.dirs {
			for _, c := range cands {
				val := getenv(c.v)
				if c.v == "GOPATH" {
					val, _, _ = strings.Cut(val, ":")
				}
				if dir := filepath.Clean(val + c.sub); filepath.IsAbs(val) && !slices.Contains(out, dir) {
					out = append(out, dir)
				}
			}
		}
	}
	return out
}
