// Package expect loads the reviewed expectations file (conformance/expected.yaml): for each case, the outcome
// expected on each kind of kernel (by Landlock status, ABI range, presence of git, host or VM). Whatever no rule
// covers is expected to PASS. A change of outcome is therefore a diff of this file in review, never a silent drift.
//
// The kernel → expected ABI table is not here: it is vm/kernels.json, read by the report tool.
package expect

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Outcomes a rule may expect.
const (
	Pass         = "PASS"
	Skip         = "SKIP"
	ExpectedFail = "EXPECTED-FAIL"
	Fail         = "FAIL" // never expected; used in results
)

// File is expected.yaml.
type File struct {
	Schema string `yaml:"schema"`
	Rules  []Rule `yaml:"rules"`
}

// Rule expects Outcome for the cases matching Cases (IDs, or path.Match patterns such as "boundary/*") on
// kernels matching When. The first matching rule wins. EXPECTED-FAIL needs Issue; SKIP and EXPECTED-FAIL need Why.
type Rule struct {
	Cases   []string `yaml:"cases"`
	When    When     `yaml:"when"`
	Outcome string   `yaml:"outcome"`
	Issue   string   `yaml:"issue"`
	Why     string   `yaml:"why"`
}

// When restricts a rule; an empty field matches anything.
type When struct {
	Landlock []string `yaml:"landlock"` // available, absent, disabled
	ABI      string   `yaml:"abi"`      // "N", "N-M" or "N+" (inclusive): the ABI confine acted as (capped, in an abi_cap column)
	// Kernel matches the VM kernel's manifest id by shell pattern ("6.19-*", "7.*"): for what depends on the
	// kernel's packaging rather than on its ABI, such as which modules it ships. A host run has no id.
	Kernel []string `yaml:"kernel"`
	Git    *bool    `yaml:"git"`  // git on PATH where the suite ran
	VM     *bool    `yaml:"vm"`   // ran as the VM runner's payload
	Arch   []string `yaml:"arch"` // uname -m: x86_64, aarch64
	Root   *bool    `yaml:"root"` // the suite ran as root (false: the unprivileged pass)
	// Cmdline matches when the VM's extra kernel command line contains this text (e.g.
	// "sysctl.user.max_user_namespaces=0").
	Cmdline string `yaml:"cmdline"`
	// HostEmulation matches runs under one of these host emulations (internal/hostemu names); "none" matches a
	// run under none.
	HostEmulation []string `yaml:"host_emulation"`
	// Backend matches runs whose confined commands ran under one of these backends: landlock, bwrap, none
	// (the run's start event; events.Env.Backend).
	Backend []string `yaml:"backend"`
	// Bwrap matches runs where confine found bwrap (true) or did not (false): events.Env.Bwrap.
	Bwrap *bool `yaml:"bwrap"`
}

// Env is what a rule is matched against (from the run's start event).
type Env struct {
	Landlock string
	ABI      int
	Kernel   string // the VM kernel's manifest id, or "" on a host
	Git      bool
	VM       bool
	Arch     string
	Root     bool
	Cmdline  string // the VM's extra kernel command line
	// HostEmulation is the run's host emulation ("" for none).
	HostEmulation string
	// Backend is the backend the run's confined commands ran under: landlock, bwrap or none.
	Backend string
	// Bwrap: confine found bwrap where the suite ran (events.Env.Bwrap).
	Bwrap bool
}

// Expectation is the outcome expected for one case on one Env.
type Expectation struct {
	Outcome string
	Issue   string
	Why     string
}

// Load reads and validates the file against the case IDs of the catalogue.
func Load(file string, ids []string) (*File, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Parse(b, ids)
}

// Parse parses and validates: unknown keys, an unknown outcome, a pattern that matches no case, an
// EXPECTED-FAIL without an issue, a SKIP or EXPECTED-FAIL without a why, and a bad ABI range are errors.
func Parse(b []byte, ids []string) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("expectations: %w", err)
	}
	if f.Schema != "confine.conformance.expected/v1" {
		return nil, fmt.Errorf("expectations: schema %q, want confine.conformance.expected/v1", f.Schema)
	}
	for i, r := range f.Rules {
		where := fmt.Sprintf("expectations: rule %d (%s)", i+1, strings.Join(r.Cases, ","))
		switch r.Outcome {
		case Pass, Skip, ExpectedFail:
		default:
			return nil, fmt.Errorf("%s: outcome %q, want PASS, SKIP or EXPECTED-FAIL", where, r.Outcome)
		}
		if r.Outcome == ExpectedFail && r.Issue == "" {
			return nil, fmt.Errorf("%s: EXPECTED-FAIL needs the issue that will fix it", where)
		}
		if r.Outcome != Pass && r.Why == "" {
			return nil, fmt.Errorf("%s: %s needs a why", where, r.Outcome)
		}
		if len(r.Cases) == 0 {
			return nil, fmt.Errorf("%s: no cases", where)
		}
		for _, pat := range r.Cases {
			n := 0
			for _, id := range ids {
				if m, err := path.Match(pat, id); err != nil {
					return nil, fmt.Errorf("%s: bad pattern %q: %w", where, pat, err)
				} else if m {
					n++
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("%s: %q matches no case", where, pat)
			}
		}
		if _, _, err := abiRange(r.When.ABI); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		for _, k := range r.When.Kernel {
			if _, err := path.Match(k, ""); err != nil {
				return nil, fmt.Errorf("%s: bad kernel pattern %q: %w", where, k, err)
			}
		}
		for _, h := range r.When.HostEmulation {
			if !in(HostEmulations, h) {
				return nil, fmt.Errorf("%s: host_emulation %q, want one of %s", where, h, strings.Join(HostEmulations, ", "))
			}
		}
		for _, b := range r.When.Backend {
			if !in(Backends, b) {
				return nil, fmt.Errorf("%s: backend %q, want one of %s", where, b, strings.Join(Backends, ", "))
			}
		}
		for _, s := range r.When.Landlock {
			if s != "available" && s != "absent" && s != "disabled" {
				return nil, fmt.Errorf("%s: landlock %q, want available, absent or disabled", where, s)
			}
		}
	}
	return &f, nil
}

// For returns the expectation for case id on env: the first matching rule's, else PASS.
func (f *File) For(id string, env Env) Expectation {
	for _, r := range f.Rules {
		if r.matches(id, env) {
			return Expectation{Outcome: r.Outcome, Issue: r.Issue, Why: r.Why}
		}
	}
	return Expectation{Outcome: Pass}
}

// Verdict compares a case's outcome (PASS, FAIL or SKIP) with the expectation. It returns the outcome to show
// (a FAIL that was expected becomes EXPECTED-FAIL) and, when the outcome is not the expected one, a deviation
// (e.g. an unexpected SKIP, or a PASS where an EXPECTED-FAIL was reviewed). A FAIL is never a deviation: it
// fails on its own.
func (e Expectation) Verdict(got string) (shown, deviation string) {
	switch {
	case got == Fail && e.Outcome == ExpectedFail:
		return ExpectedFail, ""
	case got == e.Outcome || got == Fail:
		return got, ""
	case e.Outcome == ExpectedFail:
		return got, fmt.Sprintf("expected EXPECTED-FAIL (%s) but got %s: update conformance/expected.yaml", e.Issue, got)
	}
	d := fmt.Sprintf("expected %s but got %s", e.Outcome, got)
	if e.Why != "" {
		d += " (expected because: " + e.Why + ")"
	}
	return got, d
}

func (r Rule) matches(id string, env Env) bool {
	hit := false
	for _, pat := range r.Cases {
		if m, _ := path.Match(pat, id); m {
			hit = true
		}
	}
	w := r.When
	lo, hi, _ := abiRange(w.ABI)
	return hit &&
		(len(w.Landlock) == 0 || in(w.Landlock, env.Landlock)) &&
		(w.ABI == "" || (env.ABI >= lo && env.ABI <= hi)) &&
		(len(w.Kernel) == 0 || matchAny(w.Kernel, env.Kernel)) &&
		(w.Git == nil || *w.Git == env.Git) &&
		(w.VM == nil || *w.VM == env.VM) &&
		(len(w.Arch) == 0 || in(w.Arch, env.Arch)) &&
		(w.Root == nil || *w.Root == env.Root) &&
		(w.Cmdline == "" || strings.Contains(env.Cmdline, w.Cmdline)) &&
		(len(w.HostEmulation) == 0 || in(w.HostEmulation, emulation(env.HostEmulation))) &&
		(len(w.Backend) == 0 || in(w.Backend, backend(env))) &&
		(w.Bwrap == nil || *w.Bwrap == env.Bwrap)
}

// matchAny says whether name matches one of the shell patterns (a host run's "" matches none).
func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if m, _ := path.Match(p, name); m && name != "" {
			return true
		}
	}
	return false
}

// emulation is the name a host_emulation selector matches: "none" for a run without one.
func emulation(name string) string {
	if name == "" {
		return "none"
	}
	return name
}

// backend is the backend a selector matches: the run's, or for a run from before the field, landlock where
// Landlock was available and none elsewhere (confine then refused every command there).
func backend(env Env) string {
	switch {
	case env.Backend != "":
		return env.Backend
	case env.Landlock == "available":
		return "landlock"
	}
	return "none"
}

// Backends are the values a backend selector may name.
var Backends = []string{"landlock", "bwrap", "none"}

// HostEmulations are the values a host_emulation selector may name (internal/hostemu's, and none).
var HostEmulations = []string{"none", "ubuntu-userns-restricted", "no-namespaces", "nested-supervisor"}

var abiRe = regexp.MustCompile(`^[0-9]+(-[0-9]+|\+)?$`)

// abiRange parses "N", "N-M" or "N+".
func abiRange(s string) (lo, hi int, err error) {
	if s == "" {
		return 0, 1 << 30, nil
	}
	bad := fmt.Errorf("abi %q: want N, N-M or N+", s)
	if !abiRe.MatchString(s) {
		return 0, 0, bad
	}
	if strings.HasSuffix(s, "+") {
		lo, err = strconv.Atoi(strings.TrimSuffix(s, "+"))
		if err != nil {
			return 0, 0, bad
		}
		return lo, 1 << 30, nil
	}
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = strconv.Atoi(a); err != nil {
		return 0, 0, bad
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil || hi < lo {
			return 0, 0, bad
		}
	}
	return lo, hi, nil
}

func in(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
