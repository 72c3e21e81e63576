// Package report builds the kernel × case matrix from conformance runs: the VM runner's per-kernel results
// (reports/vm/<id>.json + <id>.out) and/or a host run's events. It gates them against the reviewed expectations
// (conformance/expected.yaml) and the kernel manifest's expected ABI (vm/kernels.json), and writes
// reports/matrix.json, one JUnit file per kernel, reports/matrix.html, and a printed table.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/confine-dev/confine/conformance/internal/events"
	"github.com/confine-dev/confine/conformance/internal/expect"
)

// Schema of matrix.json. Other tools read it: the names of Result's fields are stable.
const Schema = "confine.matrix/v1"

// Result is one cell of the matrix. Kernel is the release (uname -r); Outcome is PASS, FAIL, SKIP or
// EXPECTED-FAIL; Reason is the skip reason, the first failure, or the EXPECTED-FAIL's why; Deviation, when set,
// says how the cell differs from the expectations (and fails the report).
type Result struct {
	Kernel    string  `json:"kernel"`
	KernelID  string  `json:"kernel_id"`
	Arch      string  `json:"arch"`
	ABI       int     `json:"abi"`
	Landlock  string  `json:"landlock"`
	Family    string  `json:"family"`
	Case      string  `json:"case"`
	Outcome   string  `json:"outcome"`
	Reason    string  `json:"reason"`
	Issue     string  `json:"issue,omitempty"`
	Expected  string  `json:"expected"`
	Deviation string  `json:"deviation,omitempty"`
	Attempts  int     `json:"attempts,omitempty"`
	Seconds   float64 `json:"seconds"`
	Output    string  `json:"-"` // the case's log, for JUnit
}

// Column is one column of the matrix: one run of the suite, on one kernel (a VM or the host).
type Column struct {
	ID          string `json:"id"` // manifest id, or "host"
	Release     string `json:"release"`
	Arch        string `json:"arch"`
	Accel       string `json:"accel,omitempty"`
	Landlock    string `json:"landlock"`
	ABI         int    `json:"abi"`
	ExpectedABI *int   `json:"expected_abi,omitempty"` // from vm/kernels.json
	Root        bool   `json:"root"`
	Git         bool   `json:"git"`
	VM          bool   `json:"vm"`
	Attempts    int    `json:"toctou_attempts"`
	Confine     string `json:"confine"`
	// ConfineSHA256 is the hex sha256 of the confine binary this run used (from its start event).
	ConfineSHA256 string  `json:"confine_sha256,omitempty"`
	LaunchMicros  int     `json:"launch_us,omitempty"`  // median wall time of one confine launch there
	RunResult     string  `json:"run_result,omitempty"` // the VM runner's result: ok, fail or infra
	Seconds       float64 `json:"seconds"`
	Error         string  `json:"error,omitempty"`
}

// Summary counts outcomes over the whole matrix.
type Summary struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Skip         int `json:"skip"`
	ExpectedFail int `json:"expected_fail"`
	Deviations   int `json:"deviations"`
}

// Matrix is matrix.json.
type Matrix struct {
	Schema string `json:"schema"`
	// ExpectedSHA256 is the hex sha256 of the expectations file the cells were gated on (Main sets it).
	ExpectedSHA256 string   `json:"expected_sha256,omitempty"`
	Summary        Summary  `json:"summary"`
	Kernels        []Column `json:"kernels"`
	Results        []Result `json:"results"`
}

// OK reports whether the matrix has no FAIL and no deviation.
func (m *Matrix) OK() bool { return m.Summary.Fail == 0 && m.Summary.Deviations == 0 }

// vmRecord is the VM runner's <id>.json (schema confine.vm.result/v1, vm/internal/runner/record.go).
type vmRecord struct {
	Schema           string   `json:"schema"`
	Kernel           string   `json:"kernel"`
	Release          string   `json:"release"`
	Arch             string   `json:"arch"`
	Accel            string   `json:"accel"`
	ExpectedLandlock string   `json:"expected_landlock"`
	ExpectedABI      int      `json:"expected_abi"`
	Exit             int      `json:"exit"`
	Result           string   `json:"result"`
	Seconds          float64  `json:"seconds"`
	Error            string   `json:"error"`
	ConsoleTail      []string `json:"console_tail"`
}

// manifestKernel is the part of vm/kernels.json the report needs.
type manifestKernel struct {
	ID       string `json:"id"`
	Landlock string `json:"landlock"`
	ABI      int    `json:"abi"`
}

// Build assembles the matrix. caseIDs is the catalogue (in order) and families maps each ID to its family.
// vmDir may be "" (no VM results); hostEvents lists host runs' event files (each a column named host-root or
// host-user); manifest may be "" (no ABI check).
func Build(vmDir string, hostEvents []string, manifest string, exp *expect.File, caseIDs []string) (*Matrix, error) {
	m := &Matrix{Schema: Schema}
	var man map[string]manifestKernel
	if manifest != "" {
		var err error
		if man, err = readManifest(manifest); err != nil {
			return nil, err
		}
	}
	if vmDir != "" {
		files, _ := filepath.Glob(filepath.Join(vmDir, "*.json"))
		sort.Strings(files)
		for _, f := range files {
			var rec vmRecord
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if json.Unmarshal(b, &rec) != nil || rec.Schema != "confine.vm.result/v1" {
				continue // not a per-kernel record
			}
			out, _ := os.ReadFile(strings.TrimSuffix(f, ".json") + ".out")
			evs, err := events.Read(strings.NewReader(string(out)))
			if err != nil {
				return nil, fmt.Errorf("%s.out: %w", strings.TrimSuffix(f, ".json"), err)
			}
			k := Column{ID: rec.Kernel, Release: rec.Release, Arch: rec.Arch, Accel: rec.Accel, VM: true,
				RunResult: rec.Result, Seconds: rec.Seconds, Error: rec.Error}
			if mk, ok := man[rec.Kernel]; ok {
				abi := mk.ABI
				k.ExpectedABI = &abi
				k.Landlock = mk.Landlock // until the run's own start event says otherwise
			} else if man != nil && !strings.HasPrefix(rec.Kernel, "custom-") {
				m.add(Result{KernelID: rec.Kernel, Arch: rec.Arch, Family: "vm", Case: "vm/manifest", Outcome: expect.Fail,
					Expected: expect.Pass, Reason: "kernel id not in the manifest " + manifest})
			}
			var tail string
			if len(rec.ConsoleTail) > 0 {
				tail = strings.Join(rec.ConsoleTail, "\n")
			}
			m.addRun(k, evs, exp, caseIDs, man, tail)
		}
	}
	for _, file := range hostEvents {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		evs, err := events.Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		m.addRun(Column{ID: "host"}, evs, exp, caseIDs, nil, "")
	}
	if len(m.Kernels) == 0 {
		return nil, fmt.Errorf("no results: no confine.vm.result/v1 records in %q and no host events", vmDir)
	}
	return m, nil
}

// addRun adds one kernel's column: one Result per catalogue case.
func (m *Matrix) addRun(k Column, evs []events.Event, exp *expect.File, caseIDs []string, man map[string]manifestKernel, tail string) {
	var start *events.Env
	var finished bool
	type verdict struct {
		action, reason string
		attempts       int
		elapsed        float64
		output         strings.Builder
	}
	got := map[string]*verdict{}
	family := map[string]string{}
	for _, e := range evs {
		switch {
		case e.Action == events.Start && e.Env != nil:
			start = e.Env
		case e.Test == "" && (e.Action == events.Pass || e.Action == events.Fail) && e.Summary != nil:
			finished = true
		case e.Test != "":
			v := got[e.Test]
			if v == nil {
				v = &verdict{}
				got[e.Test] = v
			}
			switch e.Action {
			case events.Output:
				v.output.WriteString(e.Output)
			case events.Pass, events.Fail, events.Skip:
				v.action, v.reason, v.attempts, v.elapsed = e.Action, e.Reason, e.Attempts, e.Elapsed
				family[e.Test] = e.Family
			}
		}
	}
	if start != nil {
		k.Release, k.Arch, k.Landlock, k.ABI = start.Kernel, start.Arch, start.Landlock, start.ABI
		k.Root, k.Git, k.Attempts, k.Confine = start.Root, start.Git, start.Attempts, start.Confine
		k.LaunchMicros, k.ConfineSHA256 = start.LaunchMicros, start.ConfineSHA256
		k.VM = k.VM || start.VMKernelID != ""
	}
	if k.ID == "host" {
		k.ID = "host-user"
		if k.Root {
			k.ID = "host-root"
		}
		for _, other := range m.Kernels {
			if other.ID == k.ID {
				k.ID += fmt.Sprintf("-%d", len(m.Kernels)+1)
			}
		}
	}
	m.Kernels = append(m.Kernels, k)
	base := Result{Kernel: k.Release, KernelID: k.ID, Arch: k.Arch, ABI: k.ABI, Landlock: k.Landlock}
	if start == nil {
		r := base
		r.Family, r.Case, r.Outcome, r.Expected = "vm", "vm/run", expect.Fail, expect.Pass
		r.Reason = fmt.Sprintf("the suite did not start (VM result %q: %s)", k.RunResult, k.Error)
		r.Output = tail
		m.add(r)
		return
	}
	if k.ExpectedABI != nil {
		mk := man[k.ID]
		if k.ABI != mk.ABI || k.Landlock != mk.Landlock {
			r := base
			r.Family, r.Case, r.Outcome, r.Expected = "vm", "vm/expected-abi", expect.Fail, expect.Pass
			r.Reason = fmt.Sprintf("kernel reports Landlock %s ABI %d, vm/kernels.json expects %s ABI %d", k.Landlock, k.ABI, mk.Landlock, mk.ABI)
			m.add(r)
		}
	}
	env := expect.Env{Landlock: k.Landlock, ABI: k.ABI, Git: k.Git, VM: k.VM, Arch: k.Arch}
	for _, id := range caseIDs {
		r := base
		r.Case, r.Family = id, strings.SplitN(id, "/", 2)[0]
		want := exp.For(id, env)
		r.Expected = want.Outcome
		v := got[id]
		switch {
		case v == nil || v.action == "":
			r.Outcome = expect.Fail
			r.Reason = "no verdict: the case did not run"
			if !finished {
				r.Reason = "no verdict: the runner stopped before this case"
			}
		case v.action == events.Pass:
			r.Outcome = expect.Pass
		case v.action == events.Skip:
			r.Outcome, r.Reason = expect.Skip, v.reason
		default:
			r.Outcome, r.Reason = expect.Fail, v.reason
		}
		if v != nil {
			r.Attempts, r.Seconds, r.Output = v.attempts, v.elapsed, v.output.String()
		}
		r.Outcome, r.Deviation = want.Verdict(r.Outcome)
		if r.Outcome == expect.ExpectedFail {
			r.Issue = want.Issue
		}
		m.add(r)
	}
	for id := range got {
		if !contains(caseIDs, id) {
			r := base
			r.Case, r.Family, r.Outcome, r.Expected = id, family[id], expect.Fail, expect.Pass
			r.Reason = "not in this report tool's catalogue: the runner and the report are from different builds"
			m.add(r)
		}
	}
}

func (m *Matrix) add(r Result) {
	m.Results = append(m.Results, r)
	switch r.Outcome {
	case expect.Pass:
		m.Summary.Pass++
	case expect.Fail:
		m.Summary.Fail++
	case expect.Skip:
		m.Summary.Skip++
	case expect.ExpectedFail:
		m.Summary.ExpectedFail++
	}
	if r.Deviation != "" {
		m.Summary.Deviations++
	}
}

func readManifest(file string) (map[string]manifestKernel, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("kernel manifest: %w", err)
	}
	var doc struct {
		Kernels []manifestKernel `json:"kernels"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("kernel manifest %s: %w", file, err)
	}
	out := map[string]manifestKernel{}
	for _, k := range doc.Kernels {
		out[k.ID] = k
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
