// Package plan decides, as a pure value, in which columns of the kernel matrix each conformance case runs: a
// case runs once for every distinct combination of the things its outcome can depend on (Dims), in the first
// column of the manifest that has it, and the report can say for every other column where it ran instead and why.
//
// What a case depends on is declared in depends.go, case by case. A case declared nowhere depends on
// the kernel itself (Kernel): it runs in every column, so a new case is never planned away by omission.
package plan

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Dim is one thing a case's outcome can depend on.
type Dim string

// The dimensions. Arch is always one: a case that depends on nothing runs once per arch.
const (
	Arch    Dim = "arch"           // amd64, arm64
	ABI     Dim = "abi"            // the ABI confine acts as (a cap, or the kernel's own), and the Landlock state
	ABIStep Dim = "abi-step"       // the Landlock state and the ABI step (ABISteps) the ABI confine acts as is at
	Backend Dim = "backend"        // landlock, bwrap (no Landlock): the launcher's whole path
	User    Dim = "user"           // root, nobody
	HostEmu Dim = "host-emulation" // the host emulation the column runs under (none, no-namespaces, …)
	Cmdline Dim = "cmdline"        // the kernel command line's extras (lsm=, user namespaces off)
	Kernel  Dim = "kernel"         // the kernel entry itself: every column
)

// All is every dimension: what an undeclared case depends on.
var All = []Dim{Arch, ABIStep, ABI, Backend, User, HostEmu, Cmdline, Kernel}

// Launch is what a confined command's outcome depends on where it depends only on what confine decides and on
// who asks. The launcher's decision is the same for every ABI of one step (ABISteps); the kernel features its code
// tests for beyond the ABI (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, 5.19; pidfd_getfd of a thread, 6.9) are on
// the same side in every column of one step of vm/kernels.json. A case whose outcome also turns on the kernel
// itself (a system call new in some release, the ABI number a report gives) must not be declared with it.
var Launch = []Dim{ABIStep, Backend, User, HostEmu, Cmdline}

// ABISteps are the Landlock ABIs at which the launcher's decision changes: 1, Landlock at all; 2, REFER (5.19);
// 3, TRUNCATE (6.2); 5, IOCTL_DEV (6.10); 6, the signal and abstract-unix scopes (6.12), which also end the
// PID-namespace child and the supervised signals; 9, RESOLVE_UNIX (7.1). ABIs 4, 7, 8, 10 and 11 add network,
// logging, thread-sync and UDP features that confine does not use (include/uapi/linux/landlock.h). The launcher
// checks the same list against its own decision (sandbox/launch, TestDecisionSteps): a new step there fails that
// test until it is added here.
var ABISteps = []int{1, 2, 3, 5, 6, 9}

// Step returns the highest of ABISteps at or below abi, or 0 where abi < 1 (no Landlock).
func Step(abi int) int {
	step := 0
	for _, s := range ABISteps {
		if s <= abi {
			step = s
		}
	}
	return step
}

// Column is one column of the matrix: a kernel entry of vm/kernels.json and the user a pass runs as.
type Column struct {
	ID       string // <kernel id> for root, <kernel id>@nobody
	Kernel   string // the manifest id
	Arch     string
	Landlock string // available, absent, disabled
	ABI      int    // the ABI confine acts as: the cap where there is one, else the kernel's
	Backend  string // landlock where Landlock is available, else bwrap
	User     string // root or nobody
	HostEmu  string
	Cmdline  string
}

func (c Column) value(d Dim) string {
	switch d {
	case Arch:
		return c.Arch
	case ABI:
		return fmt.Sprintf("%s %d", c.Landlock, c.ABI)
	case ABIStep:
		return fmt.Sprintf("%s step %d", c.Landlock, Step(c.ABI))
	case Backend:
		return c.Backend
	case User:
		return c.User
	case HostEmu:
		return c.HostEmu
	case Cmdline:
		return c.Cmdline
	}
	return c.Kernel
}

// Columns reads vm/kernels.json's entries as the matrix's columns: each entry as root, then as nobody.
func Columns(manifest string) ([]Column, error) {
	b, err := os.ReadFile(manifest)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Kernels []struct {
			ID, Arch, Landlock, Cmdline string
			ABI                         int
			ABICap                      int    `json:"abi_cap"`
			HostEmulation               string `json:"host_emulation"`
		} `json:"kernels"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", manifest, err)
	}
	var out []Column
	for _, k := range doc.Kernels {
		c := Column{Kernel: k.ID, Arch: k.Arch, Landlock: k.Landlock, ABI: k.ABI, Backend: "bwrap", HostEmu: k.HostEmulation, Cmdline: k.Cmdline}
		if k.ABICap > 0 {
			c.ABI = min(c.ABI, k.ABICap)
		}
		if k.Landlock == "available" {
			c.Backend = "landlock"
		}
		for _, u := range []string{"root", "nobody"} {
			c.ID, c.User = k.ID, u
			if u != "root" {
				c.ID += "@" + u
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// Plan is where each case runs.
type Plan struct {
	Columns []Column
	// Runs lists, per case, the columns it runs in; Elsewhere, per case and column it does not run in, the
	// column that stands for it there and why.
	Runs      map[string][]string
	Elsewhere map[string]map[string]string
	Deps      map[string][]Dim
}

// Make plans cases (ids) over cols: each case runs in the first column of every group of columns that agree on
// all the dimensions deps gives it (Arch always added).
func Make(ids []string, cols []Column, deps func(id string) []Dim) Plan {
	p := Plan{Columns: cols, Runs: map[string][]string{}, Elsewhere: map[string]map[string]string{}, Deps: map[string][]Dim{}}
	for _, id := range ids {
		ds := normalise(deps(id))
		p.Deps[id] = ds
		first := map[string]string{} // key -> the column that runs it
		for _, c := range cols {
			var key []string
			for _, d := range ds {
				key = append(key, c.value(d))
			}
			k := strings.Join(key, "\x00")
			if by, ok := first[k]; ok {
				if p.Elsewhere[id] == nil {
					p.Elsewhere[id] = map[string]string{}
				}
				p.Elsewhere[id][c.ID] = fmt.Sprintf("ran in %s: the same %s", by, dimList(ds))
				continue
			}
			first[k] = c.ID
			p.Runs[id] = append(p.Runs[id], c.ID)
		}
	}
	return p
}

// normalise adds Arch, drops duplicates and orders the dimensions as All does.
func normalise(ds []Dim) []Dim {
	has := map[Dim]bool{Arch: true}
	for _, d := range ds {
		has[d] = true
	}
	var out []Dim
	for _, d := range All {
		if has[d] {
			out = append(out, d)
		}
	}
	return out
}

func dimList(ds []Dim) string {
	var s []string
	for _, d := range ds {
		s = append(s, string(d))
	}
	return strings.Join(s, ", ")
}

// Cells counts the (case, column) cells that run, out of all.
func (p Plan) Cells() (run, all int) {
	for id := range p.Deps {
		run += len(p.Runs[id])
		all += len(p.Columns)
	}
	return run, all
}

// Main is `confine-conformance plan [--manifest vm/kernels.json] [--case ID]`: it prints where each case of the
// catalogue (ids) would run and how many (case, column) cells that is of all, or, for one case, each column and
// the column that stands for it. Exit 0, 2 on bad input (an unknown case among them).
func Main(args []string, ids []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("confine-conformance plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifest := fs.String("manifest", "vm/kernels.json", "the kernel manifest whose entries (as root and as nobody) are the columns")
	one := fs.String("case", "", "print, for this case id, every column and where the case runs for it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cols, err := Columns(*manifest)
	if err != nil {
		fmt.Fprintf(stderr, "confine-conformance plan: %v\n", err)
		return 2
	}
	p := Make(ids, cols, Depends)
	if *one != "" {
		lines, ok := p.Case(*one)
		if !ok {
			fmt.Fprintf(stderr, "confine-conformance plan: no case %q (conformance/CASES.md lists them)\n", *one)
			return 2
		}
		for _, l := range lines {
			fmt.Fprintln(stdout, l)
		}
		return 0
	}
	for _, l := range p.Summary() {
		fmt.Fprintln(stdout, l)
	}
	run, all := p.Cells()
	fmt.Fprintf(stdout, "%d of %d case × column cells run (%d columns, %d cases); a case not declared in "+
		"conformance/internal/plan/depends.go runs in every column; --case ID names each column's stand-in\n", run, all, len(cols), len(ids))
	return 0
}

// Case is one line per column for case id, in manifest order: "column  runs" or "column  -> ran in X: the same
// …"; false when the plan has no such case.
func (p Plan) Case(id string) ([]string, bool) {
	ds, ok := p.Deps[id]
	if !ok {
		return nil, false
	}
	out := []string{fmt.Sprintf("%s runs in %d of %d columns (depends on %s):", id, len(p.Runs[id]), len(p.Columns), dimList(ds))}
	for _, c := range p.Columns {
		where := "runs"
		if e, ok := p.Elsewhere[id][c.ID]; ok {
			where = "-> " + e
		}
		out = append(out, fmt.Sprintf("  %-40s %s", c.ID, where))
	}
	return out, true
}

// Summary is one line per case, most-planned-away first: "id: runs in N of M columns (depends on …)".
func (p Plan) Summary() []string {
	ids := make([]string, 0, len(p.Deps))
	for id := range p.Deps {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if a, b := len(p.Runs[ids[i]]), len(p.Runs[ids[j]]); a != b {
			return a < b
		}
		return ids[i] < ids[j]
	})
	var out []string
	for _, id := range ids {
		out = append(out, fmt.Sprintf("%-50s runs in %2d of %d columns (depends on %s)", id, len(p.Runs[id]), len(p.Columns), dimList(p.Deps[id])))
	}
	return out
}
