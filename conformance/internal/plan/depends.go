package plan

import "strings"

// What each case's outcome can depend on, by family ("family/*") or by case id (which wins). One line per entry,
// so that a new case adds a line here, reviewed like expected.yaml; a case matching no entry depends on the
// kernel itself and runs in every column. An entry must name every dimension in which the case's outcome can
// differ, not only those its expectations mention: a dimension left out is a column in which a regression would
// go unseen.
var depends = map[string][]Dim{
	// Argument parsing and usage refusals: decided before any backend is chosen.
	"fail-closed/usage":            {},
	"fail-closed/report-any-order": {},
	// file_setattr is new in 6.17, within ABI step 6 (6.12 to 7.0): the route exists only in some of its kernels.
	"side-channels/metadata-file-setattr":          All,
	"side-channels/metadata-file-setattr-fallback": All,
	// What a confined command may do: the launcher's decision (Launch). abi-negotiation is not declared: it
	// checks the ABI each kernel reports, so it runs in every column.
	"boundary/*":            Launch,
	"toctou-symlink-swap/*": Launch,
	"dev-null/*":            Launch,
	"fail-closed/*":         Launch,
	"git-worktree/*":        Launch,
	"passthrough/*":         Launch,
	"side-channels/*":       Launch,
	"workflow/*":            Launch,
	"toolchains/*":          Launch,
	"wsl-interop/*":         Launch,
	"deputy/*":              Launch,
	"workloads/*":           Launch,
}

// Depends returns what case id depends on: its own entry, its family's, or every dimension.
func Depends(id string) []Dim {
	if d, ok := depends[id]; ok {
		return d
	}
	fam, _, _ := strings.Cut(id, "/")
	if d, ok := depends[fam+"/*"]; ok {
		return d
	}
	return All
}

// Declared lists the ids and family patterns of depends, for a check that each names a real case or family.
func Declared() []string {
	var out []string
	for k := range depends {
		out = append(out, k)
	}
	return out
}
