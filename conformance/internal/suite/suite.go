// Package suite holds the conformance cases and the framework that runs them against a real confine binary.
//
// Every case has an ID (family/name), a one-paragraph rationale, the result expected on each kind of kernel,
// and a test that can fail. The confined command is usually this binary itself, re-executed as `helper` (see
// internal/helper), so a case checks exact errnos without depending on the guest's userland; cases about shell
// behaviour use /bin/sh. Around every case the framework snapshots everything outside the writable set that the
// case could touch and fails the case on any difference (the invariant; see internal/snapshot).
package suite

import (
	"fmt"
	"strings"
)

// Case is one conformance case.
type Case struct {
	ID        string   // "family/name", stable: reports and the expectations file key on it
	Title     string   // one line
	Rationale string   // one paragraph: what could go wrong in a sandbox, and why this catches it
	Expect    []Expect // the result expected on each kind of kernel, for CASES.md
	Needs     Needs
	Setup     func(t *T) // optional: fixtures created before the invariant snapshot
	Run       func(t *T)
	// RatedWhere, where set, tells from the column's probe launches whether a measured win rate can plan this
	// race case: its planted bug lives in one layer, and where the case's launch does not get that layer the bug
	// cannot win, so the case has no plan there and its power is reported as unknown. metadata and fallback are
	// report.metadata of the plain probe launch and of the one without namespaces (events.Env).
	RatedWhere func(metadata, fallback string) bool
	// RateOf is the race case whose measured win rate (conformance/race-rates.json) plans this one, where it
	// races the same launch as this one; empty: its own.
	RateOf string
}

// Expect is one row of a case's expected-result table: on which kind of kernel, what happens.
type Expect struct {
	Kernel string // e.g. "ABI ≥ 2", "no Landlock (ENOSYS/EOPNOTSUPP)", "any"
	Result string
}

// Needs are a case's preconditions. When one does not hold the case is skipped, with a reason naming what it
// needs and what it found.
type Needs struct {
	// Confined: confine must have a backend that confines a command here (Config.Backend not none): Landlock,
	// or bwrap where Landlock is absent or disabled (or the runner asks for bwrap). The case then holds under
	// either backend, and reads report.backend (T.Bwrap) where their answers differ.
	Confined bool
	// Landlock: the suite's commands must run under Landlock (any ABI): the case checks what only a Landlock
	// domain gives (the handled mask, REFER, ABI-scoped channels, the fallbacks without a mount namespace).
	Landlock bool
	MinABI   int      // the kernel's ABI must be at least this
	NoLandlk bool     // the kernel must NOT have Landlock (fail-closed cases)
	Tools    []string // executables that must be on PATH (e.g. git)
	Shell    bool     // /bin/sh must exist
	// HostOnly, where set, is why the case runs in the host suite only and skips in a VM guest: its outcome does
	// not follow the kernel, and it costs minutes a pass under TCG.
	HostOnly string
}

// Family returns the family part of the case ID.
func (c Case) Family() string { f, _, _ := strings.Cut(c.ID, "/"); return f }

// Families lists the families in catalogue order.
var Families = []string{"boundary", "toctou-symlink-swap", "abi-negotiation", "dev-null", "fail-closed", "git-worktree", "git-metadata", "passthrough", "side-channels", "workflow", "toolchains", "wsl-interop", "deputy", "workloads"}

// All returns every case, in catalogue order: the order of Families, then the order each family file gives.
func All() []Case {
	var all []Case
	for _, f := range [][]Case{boundaryCases, protectCases, toctouCases, abiCases, devNullCases, failClosedCases, gitCases, gitParityCases, gitMetadataCases, passthroughCases, sideChannelsCases, workflowCases, toolchainsCases, wslInteropCases, deputyCases, workloadsCases()} {
		all = append(all, f...)
	}
	return all
}

// Select returns the cases whose family is in families (all when empty) and whose ID is in ids (all when empty),
// or an error naming a family or ID that matches nothing.
func Select(families, ids []string) ([]Case, error) {
	all := All()
	for _, f := range families {
		if !contains(Families, f) {
			return nil, fmt.Errorf("unknown family %q (families: %s)", f, strings.Join(Families, ", "))
		}
	}
	for _, id := range ids {
		found := false
		for _, c := range all {
			found = found || c.ID == id
		}
		if !found {
			return nil, fmt.Errorf("unknown case %q", id)
		}
	}
	var out []Case
	for _, c := range all {
		if (len(families) == 0 || contains(families, c.Family())) && (len(ids) == 0 || contains(ids, c.ID)) {
			out = append(out, c)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
