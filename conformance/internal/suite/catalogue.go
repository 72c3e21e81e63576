package suite

import (
	"fmt"
	"sort"
	"strings"

	"github.com/confine-dev/confine/conformance/internal/helper"
)

// Markdown renders the case catalogue (conformance/CASES.md) from the cases themselves, so the two cannot
// drift: a test regenerates it and compares.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# confine conformance cases\n\n")
	b.WriteString("<!-- Generated from conformance/internal/suite by `go generate ./...` in conformance/ " +
		"(`confine-conformance cases`). Do not edit: TestCatalogueUpToDate fails when this file drifts. -->\n\n")
	b.WriteString("Each case runs against a real `confine` binary (`confine-conformance --confine PATH`). The confined " +
		"command is usually the runner itself re-executed as a helper that performs single syscalls and prints each " +
		"errno (table at the end), so results do not depend on the guest's userland. Around every case the runner " +
		"snapshots everything outside the writable set that the case could touch (content, size, existence, names, " +
		"mode, owner, mtime, ctime, symlink targets, xattrs) and fails the case on any difference, and checks that " +
		"/dev/null is still the null device. A case whose precondition does not hold is a SKIP with the reason; the " +
		"reviewed expectations (`expected.yaml`) say where a SKIP or an EXPECTED-FAIL is the right outcome.\n\n")
	all := All()
	for _, f := range Families {
		var n int
		for _, c := range all {
			if c.Family() == f {
				n++
			}
		}
		fmt.Fprintf(&b, "- [%s](#%s) (%d cases)\n", f, f, n)
	}
	for _, f := range Families {
		fmt.Fprintf(&b, "\n## %s\n", f)
		for _, c := range all {
			if c.Family() != f {
				continue
			}
			fmt.Fprintf(&b, "\n### `%s`\n%s.\n\n%s\n\n", c.ID, c.Title, c.Rationale)
			if n := needsText(c.Needs); n != "" {
				fmt.Fprintf(&b, "Needs: %s.\n\n", n)
			}
			b.WriteString("| kernel | expected |\n|---|---|\n")
			for _, e := range c.Expect {
				fmt.Fprintf(&b, "| %s | %s |\n", e.Kernel, e.Result)
			}
		}
	}
	b.WriteString("\n## Helper ops\n\n`confine-conformance helper '[{\"op\":…,\"path\":…}]'` performs each op and prints one JSON " +
		"line of results (`ok`, or the errno's name).\n\n| op | syscall |\n|---|---|\n")
	var ops []string
	for name := range helper.Ops {
		ops = append(ops, name)
	}
	sort.Strings(ops)
	for _, name := range ops {
		fmt.Fprintf(&b, "| `%s` | %s |\n", name, helper.Ops[name])
	}
	return b.String()
}

func needsText(n Needs) string {
	var parts []string
	if n.Confined {
		parts = append(parts, "a backend (Landlock, or bwrap where Landlock is absent or disabled)")
	}
	if n.Landlock {
		parts = append(parts, "Landlock")
	}
	if n.MinABI > 0 {
		parts = append(parts, fmt.Sprintf("ABI ≥ %d", n.MinABI))
	}
	if n.NoLandlk {
		parts = append(parts, "a kernel without Landlock, or with it disabled")
	}
	for _, tool := range n.Tools {
		if tool == "bwrap" {
			parts = append(parts, "`bwrap` where confine finds it (CONFINE_BWRAP, else /usr/bin, /bin, /usr/local/bin)")
		} else {
			parts = append(parts, "`"+tool+"` on PATH")
		}
	}
	if n.Shell {
		parts = append(parts, "/bin/sh")
	}
	return strings.Join(parts, ", ")
}
