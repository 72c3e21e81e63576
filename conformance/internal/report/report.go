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
	"slices"
	"sort"
	"strings"

	"github.com/confine-dev/confine/conformance/internal/events"
	"github.com/confine-dev/confine/conformance/internal/expect"
	"github.com/confine-dev/confine/conformance/internal/plan"
)

// Schema of matrix.json. Other tools read it: the names of Result's fields are stable.
const Schema = "confine.matrix/v1"

// Infra is the outcome of a case that has no verdict because the VM run around it ended without a verified
// result (QEMU error, a silent guest, a kernel panic): not a FAIL of the case, but never a pass either: a column
// with an INFRA cell makes the report NOT OK.
const Infra = "INFRA"

// Elsewhere is the outcome of a case the matrix's plan ran in another column that stands for this one
// (internal/plan): its verdict is that column's. Build checks that the column it names has one.
const Elsewhere = "ELSEWHERE"

// Result is one cell of the matrix. Kernel is the release (uname -r); Outcome is PASS, FAIL, SKIP, INFRA or
// EXPECTED-FAIL; Reason is the skip reason, the first failure, or the EXPECTED-FAIL's why; Deviation, when set,
// says how the cell differs from the expectations (and fails the report).
type Result struct {
	Kernel    string `json:"kernel"`
	KernelID  string `json:"kernel_id"`
	Arch      string `json:"arch"`
	ABI       int    `json:"abi"`
	Landlock  string `json:"landlock"`
	Family    string `json:"family"`
	Case      string `json:"case"`
	Outcome   string `json:"outcome"`
	Reason    string `json:"reason"`
	Issue     string `json:"issue,omitempty"`
	Expected  string `json:"expected"`
	Deviation string `json:"deviation,omitempty"`
	Pass      string `json:"pass,omitempty"` // root or nobody: the uid the suite ran as (VM columns)
	Attempts  int    `json:"attempts,omitempty"`
	// A race case's power (conformance/race-rates.json): the per-attempt win rate of its planted bug used, the
	// probability Attempts had of catching it, the mutant, and where the rate was measured.
	RanIn    string  `json:"ran_in,omitempty"` // ELSEWHERE: the column whose verdict stands for this cell
	Rate     float64 `json:"rate,omitempty"`
	Power    float64 `json:"power,omitempty"`
	Mutant   string  `json:"mutant,omitempty"`
	RateFrom string  `json:"rate_from,omitempty"`
	Seconds  float64 `json:"seconds"`
	Output   string  `json:"-"` // the case's log, for JUnit
}

// Column is one column of the matrix: one run (pass) of the suite, on one kernel (a VM or the host).
type Column struct {
	ID          string `json:"id"`                  // manifest id (root pass), <id>@<pass> for another pass, or host-*
	VMKernel    string `json:"vm_kernel,omitempty"` // the manifest id of the VM this pass ran in
	Pass        string `json:"pass,omitempty"`      // root or nobody (uid 65534), from the run's start event
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
	ConfineSHA256 string `json:"confine_sha256,omitempty"`
	LaunchMicros  int    `json:"launch_us,omitempty"`  // median wall time of one confine launch there
	RunResult     string `json:"run_result,omitempty"` // the VM runner's result: ok, fail or infra
	// Seconds is the kernel entry's share of its VM's wall time, QEMU start to exit (both passes): its payload's
	// time, and for the first entry of a boot also the boot's own (vm/internal/runner's Record.Seconds).
	Seconds      float64 `json:"seconds"`
	GuestSeconds float64 `json:"guest_seconds,omitempty"` // the payload in the guest (both passes)
	// Boot is the kernel entry whose VM this column's ran in, one after the other (a kernel's abi_cap and
	// host_emulation entries share its boot); BootSeconds is that VM's wall time.
	Boot         string  `json:"boot,omitempty"`
	BootSeconds  float64 `json:"boot_seconds,omitempty"`
	SuiteSeconds float64 `json:"suite_seconds,omitempty"` // this pass, from its final event
	Error        string  `json:"error,omitempty"`
	// Retries lists the VM runs that ended INFRA before this one and were retried (the VM runner retries once).
	Retries []Retry `json:"retries,omitempty"`
	// Evidence is what the watchdog collected before it killed QEMU (the guest's task states), INFRA only.
	Evidence     []string `json:"evidence,omitempty"`
	CmdlineExtra string   `json:"cmdline_extra,omitempty"`
	// HostEmulation is the host emulation the column's suite ran under (internal/hostemu), "" for none.
	HostEmulation string `json:"host_emulation,omitempty"`
	Metadata      string `json:"metadata,omitempty"` // mount-layer or seccomp-deny: a plain launch's report there
	// LaunchBackend is the backend a plain launch chose there (Backend is what the suite ran under), and
	// FallbackMetadata a launch's metadata where no namespace can be made (the fallback cases' path).
	LaunchBackend    string `json:"launch_backend,omitempty"`
	FallbackMetadata string `json:"fallback_metadata,omitempty"`
	// Backend is the backend the column's confined commands ran under (landlock, bwrap or none), and BackendFlag
	// the runner's --backend when it forced one.
	Backend       string `json:"backend,omitempty"`
	BackendFlag   string `json:"backend_flag,omitempty"`
	Bwrap         string `json:"bwrap,omitempty"`      // the bwrap confine finds where the suite ran (suite.FindBwrap)
	ABICap        int    `json:"abi_cap,omitempty"`    // confine acted as this ABI (a confine_abicap build)
	KernelABI     int    `json:"kernel_abi,omitempty"` // the kernel's own ABI, with ABICap
	Package       string `json:"package,omitempty"`
	Version       string `json:"version,omitempty"` // the kernel package version that ran (see vm/kernels.json's fallback)
	PinnedVersion string `json:"pinned_version,omitempty"`
}

// Retry is one VM run that ended INFRA and was retried.
type Retry struct {
	Error    string   `json:"error"`
	Seconds  float64  `json:"seconds"`
	Evidence []string `json:"evidence,omitempty"`
}

// Summary counts outcomes over the whole matrix.
type Summary struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Skip         int `json:"skip"`
	ExpectedFail int `json:"expected_fail"`
	Infra        int `json:"infra"`
	Deviations   int `json:"deviations"`
	Retried      int `json:"retried"`             // VM runs retried after an INFRA (whatever the retry gave)
	Elsewhere    int `json:"elsewhere,omitempty"` // cells whose case the plan ran in another column
	// ElsewhereSkip counts the Elsewhere cells whose standing column SKIPped the case.
	ElsewhereSkip int `json:"elsewhere_skip,omitempty"`
}

// Matrix is matrix.json.
type Matrix struct {
	Schema string `json:"schema"`
	// ExpectedSHA256 is the hex sha256 of the expectations file the cells were gated on (Main sets it).
	ExpectedSHA256 string `json:"expected_sha256,omitempty"`
	// VerdictLine is Verdict() as WriteAll found it: "OK", "SUBSET PASSED, NOT THE GATE: …" or "NOT OK", for a
	// reader of the JSON alone.
	VerdictLine string  `json:"verdict"`
	Summary     Summary `json:"summary"`
	// Coverage says which kernel entries of the manifest have results here (VM reports built with a manifest).
	Coverage *Coverage `json:"coverage,omitempty"`
	// Kernels are the matrix's columns (one per VM pass or host run); the name is kept for the readers of v1.
	Kernels []Column `json:"kernels"`
	Results []Result `json:"results"`
}

// Coverage is how much of the kernel manifest a VM report covers. A report with Absent entries is a subset (e.g.
// `make matrix MATRIX_FLAGS="--kernels …"`, a shard, or make test's smoke run): its verdict says so, and it is
// never the gate's OK (confine-release gate requires every manifest kernel too).
type Coverage struct {
	Manifest int      `json:"manifest_kernels"` // kernel entries in vm/kernels.json
	Ran      []string `json:"ran"`              // manifest ids with a VM result here, in manifest order
	Absent   []string `json:"absent,omitempty"` // manifest ids without one, in manifest order
}

// Subset reports whether the VM results cover only part of the manifest.
func (m *Matrix) Subset() bool { return m.Coverage != nil && len(m.Coverage.Absent) > 0 }

// Verdict is the one-line verdict the table, the HTML and the gate print: "OK" only for a complete matrix with no
// FAIL, INFRA or deviation; "SUBSET PASSED (…)" when the results that are here pass but manifest kernels are
// absent (not the gate); "NOT OK" otherwise.
func (m *Matrix) Verdict() string {
	switch {
	case !m.OK():
		return "NOT OK"
	case m.Subset():
		return fmt.Sprintf("SUBSET PASSED, NOT THE GATE: %d of %d kernel entries absent (%s)", len(m.Coverage.Absent),
			m.Coverage.Manifest, abbreviate(m.Coverage.Absent, 6))
	}
	return "OK"
}

// abbreviate joins list, naming at most n entries and counting the rest.
func abbreviate(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:n], ", "), len(list)-n)
}

// OK reports whether the matrix has no FAIL, no INFRA (a kernel without a verdict is not passed) and no
// deviation.
func (m *Matrix) OK() bool {
	return m.Summary.Fail == 0 && m.Summary.Infra == 0 && m.Summary.Deviations == 0
}

// Problems says, one line each, why the matrix is not OK: kernels without a verdict first, then counts.
func (m *Matrix) Problems() []string {
	var out []string
	for _, k := range m.Kernels {
		n := 0
		for _, r := range m.Results {
			if r.KernelID == k.ID && r.Outcome == Infra {
				n++
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%s: no verdict for %d cases: the VM run ended INFRA (%s), after %d retry(ies): not passed",
				k.ID, n, k.Error, len(k.Retries)))
		}
	}
	if m.Summary.Fail > 0 || m.Summary.Deviations > 0 {
		out = append(out, fmt.Sprintf("%d FAIL, %d deviations from the expectations", m.Summary.Fail, m.Summary.Deviations))
	}
	return out
}

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
	GuestSeconds     float64  `json:"guest_seconds"`
	Boot             string   `json:"boot"`
	BootSeconds      float64  `json:"boot_seconds"`
	Error            string   `json:"error"`
	ConsoleTail      []string `json:"console_tail"`
	Evidence         []string `json:"evidence"`
	Retries          []Retry  `json:"retries"`
	CmdlineExtra     string   `json:"cmdline_extra"`
	HostEmulation    string   `json:"host_emulation"`
	Package          string   `json:"package"`
	Version          string   `json:"version"`
	PinnedVersion    string   `json:"pinned_version"`
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
	var order []string
	if manifest != "" {
		var err error
		if man, order, err = readManifest(manifest); err != nil {
			return nil, err
		}
	}
	ran := map[string]bool{}
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
			k := Column{ID: rec.Kernel, VMKernel: rec.Kernel, Release: rec.Release, Arch: rec.Arch, Accel: rec.Accel, VM: true,
				RunResult: rec.Result, Seconds: rec.Seconds, GuestSeconds: rec.GuestSeconds, Boot: rec.Boot, BootSeconds: rec.BootSeconds, Error: rec.Error,
				Retries: rec.Retries, Evidence: rec.Evidence, CmdlineExtra: rec.CmdlineExtra, HostEmulation: rec.HostEmulation, Package: rec.Package,
				Version: rec.Version, PinnedVersion: rec.PinnedVersion}
			if len(rec.Retries) > 0 {
				m.Summary.Retried++
			}
			ran[rec.Kernel] = true
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
			for _, p := range splitPasses(evs) {
				kp := k
				if p.name != "" && p.name != "root" {
					kp.ID = rec.Kernel + "@" + p.name
				}
				m.addRun(kp, p.evs, exp, caseIDs, man, tail)
			}
		}
	}
	if man != nil && vmDir != "" {
		m.Coverage = &Coverage{Manifest: len(order), Ran: []string{}}
		for _, id := range order {
			if ran[id] {
				m.Coverage.Ran = append(m.Coverage.Ran, id)
			} else {
				m.Coverage.Absent = append(m.Coverage.Absent, id)
			}
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
	m.checkElsewhere(plan.Depends)
	return m, nil
}

type passEvents struct {
	name string
	evs  []events.Event
}

// splitPasses splits one VM's event stream into its passes (events.Event.Pass), in order of first appearance.
// A root pass that names itself "root" was run with --also-as, so a second pass is due: when none appears, an
// empty "nobody" pass stands for it, and the report says it did not start.
func splitPasses(evs []events.Event) []passEvents {
	var out []passEvents
	idx := map[string]int{}
	for _, e := range evs {
		i, ok := idx[e.Pass]
		if !ok {
			i = len(out)
			idx[e.Pass] = i
			out = append(out, passEvents{name: e.Pass})
		}
		out[i].evs = append(out[i].evs, e)
	}
	if len(out) == 0 {
		return []passEvents{{}}
	}
	if _, root := idx["root"]; root && len(out) == 1 {
		out = append(out, passEvents{name: "nobody"})
	}
	return out
}

// addRun adds one kernel's column: one Result per catalogue case.
func (m *Matrix) addRun(k Column, evs []events.Event, exp *expect.File, caseIDs []string, man map[string]manifestKernel, tail string) {
	var start *events.Env
	var finished bool
	running := "" // the last case that started and has no verdict
	type verdict struct {
		action, reason string
		attempts       int
		elapsed        float64
		ev             events.Event
		elsewhere      string
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
			k.SuiteSeconds = e.Elapsed
		case e.Test != "":
			v := got[e.Test]
			if v == nil {
				v = &verdict{}
				got[e.Test] = v
			}
			switch e.Action {
			case events.Run:
				running = e.Test
			case events.Output:
				v.output.WriteString(e.Output)
			case events.Pass, events.Fail, events.Skip:
				v.elsewhere = e.Elsewhere
				v.action, v.reason, v.attempts, v.elapsed, v.ev = e.Action, e.Reason, e.Attempts, e.Elapsed, e
				family[e.Test] = e.Family
				if running == e.Test {
					running = ""
				}
			}
		}
	}
	if start != nil {
		k.Release, k.Arch, k.Landlock, k.ABI = start.Kernel, start.Arch, start.Landlock, start.ABI
		k.Root, k.Git, k.Attempts, k.Confine = start.Root, start.Git, start.Attempts, start.Confine
		k.LaunchMicros, k.ConfineSHA256 = start.LaunchMicros, start.ConfineSHA256
		k.VM = k.VM || start.VMKernelID != ""
		k.Pass, k.ABICap, k.KernelABI, k.Metadata = start.Pass, start.ABICap, start.KernelABI, start.Metadata
		k.Backend, k.BackendFlag, k.Bwrap = start.Backend, start.BackendFlag, start.Bwrap
		k.LaunchBackend, k.FallbackMetadata = start.LaunchBackend, start.FallbackMetadata
		if start.HostEmulation != "" || k.HostEmulation == "" {
			k.HostEmulation = start.HostEmulation
		}
	}
	// A VM run that ended without a verified result leaves its missing verdicts unknown, not failed.
	infra := k.RunResult == "infra"
	noVerdict := expect.Fail
	if infra {
		noVerdict = Infra
	}
	if k.ID == "host" {
		k.ID = "host-user"
		if k.Root {
			k.ID = "host-root"
		}
		if k.BackendFlag != "" {
			k.ID += "-" + k.BackendFlag
		}
		for _, other := range m.Kernels {
			if other.ID == k.ID {
				k.ID += fmt.Sprintf("-%d", len(m.Kernels)+1)
			}
		}
	}
	m.Kernels = append(m.Kernels, k)
	base := Result{Kernel: k.Release, KernelID: k.ID, Arch: k.Arch, ABI: k.ABI, Landlock: k.Landlock, Pass: k.Pass}
	if start == nil {
		r := base
		r.Family, r.Case, r.Outcome, r.Expected = "vm", "vm/run", noVerdict, expect.Pass
		r.Reason = fmt.Sprintf("the suite did not start (VM result %q: %s)", k.RunResult, k.Error)
		if k.RunResult == "ok" {
			r.Reason = "this pass did not start (the other pass of the same VM did): see the payload's stderr in the console"
		}
		r.Output = tail
		if len(k.Evidence) > 0 {
			r.Output += "\n--- watchdog evidence ---\n" + strings.Join(k.Evidence, "\n")
		}
		m.add(r)
		return
	}
	if k.ExpectedABI != nil {
		mk := man[k.VMKernel]
		kabi := k.ABI
		if k.ABICap > 0 {
			kabi = k.KernelABI
		}
		if kabi != mk.ABI || k.Landlock != mk.Landlock {
			r := base
			r.Family, r.Case, r.Outcome, r.Expected = "vm", "vm/expected-abi", expect.Fail, expect.Pass
			r.Reason = fmt.Sprintf("kernel reports Landlock %s ABI %d, vm/kernels.json expects %s ABI %d", k.Landlock, kabi, mk.Landlock, mk.ABI)
			m.add(r)
		}
	}
	// A kernel booted without user namespaces proves the fallback: an unprivileged launch there can make no mount
	// namespace, so the metadata layer must be a fallback (the supervisor of issue 15, or the seccomp denial of the
	// launchers before it), never a silent mount-layer claim.
	if strings.Contains(k.CmdlineExtra, "max_user_namespaces=0") && !k.Root && k.Landlock == "available" {
		r := base
		r.Family, r.Case, r.Expected = "vm", "vm/userns-fallback", expect.Pass
		r.Outcome = expect.Pass
		if k.Metadata != "seccomp-deny" && k.Metadata != "supervisor" {
			r.Outcome = expect.Fail
			r.Reason = fmt.Sprintf("user namespaces are disabled (%s) and the suite ran unprivileged, yet a launch reported metadata %q, want supervisor or seccomp-deny",
				k.CmdlineExtra, k.Metadata)
		}
		m.add(r)
	}
	// A column under a host emulation (internal/hostemu) has no mount layer: a launch must say how it closed
	// metadata instead, and under nested-supervisor (a listener already held above confine) it cannot supervise.
	if k.HostEmulation != "" && k.Landlock == "available" {
		r := base
		r.Family, r.Case, r.Expected, r.Outcome = "vm", "vm/host-emulation", expect.Pass, expect.Pass
		want := []string{"supervisor", "seccomp-deny"}
		if k.HostEmulation == "nested-supervisor" {
			want = []string{"seccomp-deny"}
		}
		r.Reason = fmt.Sprintf("under %s a launch reported metadata %q", k.HostEmulation, k.Metadata)
		if !slices.Contains(want, k.Metadata) {
			r.Outcome = expect.Fail
			r.Reason += ", want " + strings.Join(want, " or ")
		}
		m.add(r)
	}
	// The VM guest carries bwrap (vm/kernels.json guest_tools): on a kernel without Landlock the suite must run
	// under it, and a launch must have chosen it, never a silent "none" whose cases would all skip.
	if k.VM && k.Landlock != "available" {
		r := base
		r.Family, r.Case, r.Expected, r.Outcome = "vm", "vm/bwrap-backend", expect.Pass, expect.Pass
		r.Reason = fmt.Sprintf("Landlock %s: the suite ran under backend %q, a launch chose %q", k.Landlock, k.Backend, start.LaunchBackend)
		if k.Backend != "bwrap" || start.LaunchBackend != "bwrap" {
			r.Outcome = expect.Fail
			r.Reason += ", want bwrap for both (the guest carries bwrap)"
		}
		m.add(r)
	}
	env := expect.Env{Landlock: k.Landlock, ABI: k.ABI, Git: k.Git, VM: k.VM, Arch: k.Arch, Root: k.Root,
		Cmdline: k.CmdlineExtra, HostEmulation: k.HostEmulation, Backend: k.Backend, Bwrap: k.Bwrap != ""}
	if k.VM {
		env.Kernel = k.ID
	}
	for _, id := range caseIDs {
		r := base
		r.Case, r.Family = id, strings.SplitN(id, "/", 2)[0]
		want := exp.For(id, env)
		r.Expected = want.Outcome
		v := got[id]
		switch {
		case v == nil || v.action == "":
			r.Outcome = noVerdict
			r.Reason = "no verdict: the case did not run"
			switch {
			case id == running:
				r.Reason = "no verdict: this case was running when the run ended"
			case !finished:
				r.Reason = "no verdict: the runner stopped before this case"
			}
			if infra {
				r.Reason += fmt.Sprintf(" (INFRA: %s)", k.Error)
				if id == running && len(k.Evidence) > 0 {
					r.Output += "--- watchdog evidence (guest task states) ---\n" + strings.Join(k.Evidence, "\n") + "\n"
				}
			}
		case v.elsewhere != "":
			r.Outcome, r.Reason = Elsewhere, "planned elsewhere: "+v.elsewhere
			r.RanIn, _, _ = strings.Cut(strings.TrimPrefix(v.elsewhere, "ran in "), ":")
		case v.action == events.Pass:
			r.Outcome = expect.Pass
		case v.action == events.Skip:
			r.Outcome, r.Reason = expect.Skip, v.reason
		default:
			r.Outcome, r.Reason = expect.Fail, v.reason
		}
		if v != nil {
			r.Attempts, r.Seconds, r.Output = v.attempts, v.elapsed, v.output.String()+r.Output
			r.Rate, r.Power, r.Mutant, r.RateFrom = v.ev.Rate, v.ev.Power, v.ev.Mutant, v.ev.RateFrom
		}
		if r.Outcome != Infra && r.Outcome != Elsewhere {
			r.Outcome, r.Deviation = want.Verdict(r.Outcome)
		}
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

// checkElsewhere turns each ELSEWHERE cell whose standing column has no verdict of its own for the case (the
// column did not run, ended INFRA, or planned it elsewhere too) into a FAIL: a planned-away case must have run.
// Where the standing column SKIPped the case, the cell says so and why, and Summary.ElsewhereSkip counts it: the
// case was exercised in none of the columns it stands for. A standing column whose outcome is below this cell's
// own expectation (FAIL < SKIP < EXPECTED-FAIL < PASS: a SKIP where this column expects PASS) makes the cell a
// deviation: the standing column's own rules may allow what this column's do not.
//
// A case whose outcome follows the launcher's path (deps gives it plan.Backend) stood for this column on the
// premise that both columns' launches take the same path; each column's probe launches report the path they took
// (Column.LaunchBackend, Metadata, and FallbackMetadata where no namespace can be made), and where the two differ
// the premise did not hold, so the case ran in no column like this one: a FAIL that names both paths. The
// run-time path is not a dimension of the plan (the launcher learns it on each kernel), so this is where a
// launcher change that moved some kernels to another path is seen.
func (m *Matrix) checkElsewhere(deps func(id string) []plan.Dim) {
	cells := map[[2]string]Result{} // by case and column
	for _, r := range m.Results {
		cells[[2]string{r.Case, r.KernelID}] = r
	}
	path := map[string]string{} // by column: the path its probe launches reported
	for _, k := range m.Kernels {
		path[k.ID] = fmt.Sprintf("backend %s, metadata %s, without namespaces %s", orNone(k.LaunchBackend),
			orNone(k.Metadata), orNone(k.FallbackMetadata))
	}
	for i, r := range m.Results {
		if r.Outcome != Elsewhere {
			continue
		}
		standing := cells[[2]string{r.Case, r.RanIn}]
		got := standing.Outcome
		if slices.Contains(deps(r.Case), plan.Backend) && got != "" && path[r.KernelID] != path[r.RanIn] {
			m.Summary.Elsewhere--
			m.Summary.Fail++
			m.Results[i].Outcome = expect.Fail
			m.Results[i].Reason = fmt.Sprintf("the plan ran this case in %s for the same launch, but launches took %s "+
				"here and %s there: the case ran in no column like this one (make matrix-full runs it here)",
				r.RanIn, path[r.KernelID], path[r.RanIn])
			continue
		}
		if got == expect.Skip {
			m.Summary.ElsewhereSkip++
			m.Results[i].Reason = fmt.Sprintf("%s; it SKIPped there: %s", r.Reason, standing.Reason)
		}
		if g, ok := standingRank[got]; ok && g < standingRank[r.Expected] {
			m.Summary.Deviations++
			m.Results[i].Deviation = fmt.Sprintf("expected %s here, but the column that stands for this one, %s, got %s",
				r.Expected, r.RanIn, got)
		}
		switch got {
		case "", Elsewhere, Infra:
			why := "which is not in this report"
			if got != "" {
				why = "which has no verdict for it (" + got + ")"
			}
			m.Summary.Elsewhere--
			m.Summary.Fail++
			m.Results[i].Outcome = expect.Fail
			m.Results[i].Reason = fmt.Sprintf("the plan ran this case in %s, %s", r.RanIn, why)
		}
	}
}

// orNone is s, or "(none reported)" where s is empty.
func orNone(s string) string {
	if s == "" {
		return "(none reported)"
	}
	return s
}

// standingRank orders the verdicts a standing column can give, worst first, for checkElsewhere.
var standingRank = map[string]int{expect.Fail: 0, expect.Skip: 1, expect.ExpectedFail: 2, expect.Pass: 3}

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
	case Infra:
		m.Summary.Infra++
	case Elsewhere:
		m.Summary.Elsewhere++
	}
	if r.Deviation != "" {
		m.Summary.Deviations++
	}
}

// readManifest returns vm/kernels.json's kernels by id, and their ids in manifest order.
func readManifest(file string) (map[string]manifestKernel, []string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("kernel manifest: %w", err)
	}
	var doc struct {
		Kernels []manifestKernel `json:"kernels"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("kernel manifest %s: %w", file, err)
	}
	out := map[string]manifestKernel{}
	var order []string
	for _, k := range doc.Kernels {
		out[k.ID] = k
		order = append(order, k.ID)
	}
	return out, order, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
