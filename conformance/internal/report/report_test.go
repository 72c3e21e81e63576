package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/conformance/internal/events"
	"github.com/confine-dev/confine/conformance/internal/expect"
	"github.com/confine-dev/confine/conformance/internal/plan"
)

var ids = []string{"boundary/write-inside", "fail-closed/no-landlock-sentinel", "git-worktree/linked-ops"}

const expectations = `
schema: confine.conformance.expected/v1
rules:
  - cases: [boundary/*, git-worktree/*]
    when: {landlock: [absent, disabled]}
    outcome: SKIP
    why: needs Landlock
  - cases: [fail-closed/no-landlock-sentinel]
    when: {landlock: [available]}
    outcome: SKIP
    why: needs no Landlock
  - cases: [git-worktree/*]
    when: {git: false}
    outcome: SKIP
    why: no git
  - cases: [git-worktree/linked-ops]
    outcome: EXPECTED-FAIL
    issue: "#7"
    why: not yet
`

const manifest = `{"kernels": [
 {"id": "5.10-amd64", "arch": "amd64", "landlock": "absent", "abi": 0},
 {"id": "6.1-amd64", "arch": "amd64", "landlock": "available", "abi": 2},
 {"id": "7.3-arm64", "arch": "arm64", "landlock": "available", "abi": 11}]}`

type run struct {
	id, landlock string
	abi          int
	git          bool
	verdicts     map[string][2]string // case -> action, reason
	finished     bool
	record       string // the VM record's result
	pass         string // the events' pass ("" for a single run)
	also         *run   // a second pass in the same stream (interleaved with the first)
	metadata     string // the start event's metadata
	backend      string // the start event's backend and launch_backend
	extra        map[string]any
}

// writeRun writes a VM runner record and the suite's events for one kernel, as the real runner and suite do.
func writeRun(t *testing.T, dir string, r run) {
	rec := map[string]any{"schema": "confine.vm.result/v1", "kernel": r.id, "release": r.id + "-release", "arch": "amd64",
		"accel": "tcg", "result": r.record, "seconds": 9.5}
	for k, v := range r.extra {
		rec[k] = v
	}
	b, _ := json.Marshal(rec)
	require.NoError(t, os.WriteFile(filepath.Join(dir, r.id+".json"), b, 0o644))
	var out bytes.Buffer
	out.WriteString("[    0.123] kernel noise before the payload\n")
	passes := []run{r}
	if r.also != nil {
		passes = append(passes, *r.also)
	}
	ws := make([]*events.Writer, len(passes))
	for i, p := range passes {
		if p.verdicts == nil {
			continue
		}
		ws[i] = events.NewWriter(&out)
		ws[i].SetPass(p.pass)
		ws[i].Emit(events.Event{Action: events.Start, Env: &events.Env{Kernel: r.id + "-release", Arch: "x86_64", Landlock: r.landlock,
			ABI: r.abi, Git: r.git, VMKernelID: r.id, Root: p.pass != "nobody", Attempts: 100, Pass: p.pass, Metadata: p.metadata,
			Backend: r.backend, LaunchBackend: r.backend}})
	}
	for _, id := range ids { // the passes interleave, as they do when they run concurrently
		for i, p := range passes {
			v, ok := p.verdicts[id]
			if ws[i] == nil {
				continue
			}
			if !ok {
				if !p.finished { // the case that was running when the VM stopped; nothing after it
					ws[i].Emit(events.Event{Action: events.Run, Test: id})
					ws[i] = nil
				}
				continue
			}
			ws[i].Emit(events.Event{Action: events.Run, Test: id})
			ws[i].Emit(events.Event{Action: events.Output, Test: id, Output: "    log line\n"})
			ws[i].Emit(events.Event{Action: v[0], Test: id, Reason: v[1], Family: strings.Split(id, "/")[0]})
		}
	}
	for _, p := range passes {
		if p.finished {
			w := events.NewWriter(&out)
			w.SetPass(p.pass)
			w.Emit(events.Event{Action: events.Pass, Elapsed: 12.5, Summary: &events.Summary{}})
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, r.id+".out"), out.Bytes(), 0o644))
}

func build(t *testing.T, runs ...run) (*Matrix, string) {
	dir := t.TempDir()
	vmDir := filepath.Join(dir, "vm")
	require.NoError(t, os.MkdirAll(vmDir, 0o755))
	for _, r := range runs {
		writeRun(t, vmDir, r)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kernels.json"), []byte(manifest), 0o644))
	exp, err := expect.Parse([]byte(expectations), ids)
	require.NoError(t, err)
	m, err := Build(vmDir, nil, filepath.Join(dir, "kernels.json"), exp, ids)
	require.NoError(t, err)
	return m, dir
}

func cell(m *Matrix, kernelID, id string) Result {
	for _, r := range m.Results {
		if r.KernelID == kernelID && r.Case == id {
			return r
		}
	}
	return Result{}
}

func TestMatrixAsExpected(t *testing.T) {
	m, dir := build(t,
		run{id: "5.10-amd64", landlock: "absent", backend: "bwrap", record: "ok", finished: true, verdicts: map[string][2]string{
			"boundary/write-inside": {"skip", "requires Landlock"}, "fail-closed/no-landlock-sentinel": {"pass", ""},
			"git-worktree/linked-ops": {"skip", "requires Landlock"}}},
		run{id: "6.1-amd64", landlock: "available", abi: 2, git: true, record: "fail", finished: true, verdicts: map[string][2]string{
			"boundary/write-inside": {"pass", ""}, "fail-closed/no-landlock-sentinel": {"skip", "requires no Landlock"},
			"git-worktree/linked-ops": {"fail", "git add: exit 128"}}},
	)
	assert.True(t, m.OK(), "%+v", m.Summary)
	assert.Equal(t, Summary{Pass: 3, Skip: 3, ExpectedFail: 1}, m.Summary) // vm/bwrap-backend on 5.10 too
	x := cell(m, "6.1-amd64", "git-worktree/linked-ops")
	assert.Equal(t, expect.ExpectedFail, x.Outcome)
	assert.Equal(t, "#7", x.Issue)
	assert.Equal(t, "6.1-amd64-release", x.Kernel)
	assert.Equal(t, 2, x.ABI)

	paths, err := m.WriteAll(filepath.Join(dir, "out"))
	require.NoError(t, err)
	assert.Len(t, paths, 4)
	var back map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "out", "matrix.json"))
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, "SUBSET PASSED, NOT THE GATE: 1 of 3 kernel entries absent (7.3-arm64)", back["verdict"], "the JSON says what the table says")
	first := back["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"kernel", "arch", "abi", "family", "case", "outcome", "reason"} {
		assert.Contains(t, first, k)
	}
	junit, _ := os.ReadFile(filepath.Join(dir, "out", "conformance", "6.1-amd64.junit.xml"))
	var js junitSuites
	require.NoError(t, xml.Unmarshal(junit, &js))
	assert.Equal(t, 3, js.Suites[0].Tests)
	assert.Equal(t, 0, js.Suites[0].Failures)
	assert.Equal(t, 2, js.Suites[0].Skipped)
	html, _ := os.ReadFile(filepath.Join(dir, "out", "matrix.html"))
	assert.Contains(t, string(html), "EXPECTED-FAIL")
	assert.NotContains(t, string(html), "<script src", "self-contained")
	assert.NotContains(t, string(html), "<link ")

	var table bytes.Buffer
	m.Table(&table)
	assert.Contains(t, table.String(), "XFAIL(")
	assert.Contains(t, table.String(), "SKIP(")
	assert.Contains(t, table.String(), "2 columns: 3 PASS, 0 FAIL, 3 SKIP, 1 EXPECTED-FAIL, 0 INFRA, 0 deviations")
	// 7.3-arm64 of the manifest did not run: the report passes, and says it is a subset, never the gate's OK.
	assert.Equal(t, &Coverage{Manifest: 3, Ran: []string{"5.10-amd64", "6.1-amd64"}, Absent: []string{"7.3-arm64"}}, m.Coverage)
	assert.Contains(t, table.String(), "kernel entries: 2 of 3 in vm/kernels.json ran; SUBSET: absent 7.3-arm64")
	assert.Contains(t, table.String(), "verdict: SUBSET PASSED, NOT THE GATE: 1 of 3 kernel entries absent (7.3-arm64)")
	assert.NotContains(t, table.String(), "verdict: OK")
	assert.Contains(t, string(html), "2 columns over 2 of 3 kernel entries")
	assert.Contains(t, string(html), "<strong>SUBSET PASSED, NOT THE GATE")
	assert.Contains(t, string(html), "no results for 7.3-arm64")
	assert.NotContains(t, string(html), " kernels</span>", "a column is a pass on a kernel entry, not a kernel")
	assert.Contains(t, string(back["coverage"].(map[string]any)["absent"].([]any)[0].(string)), "7.3-arm64")
}

// A complete matrix (every manifest kernel ran) is the gate's OK; --require-complete fails a subset.
func TestSubsetAndComplete(t *testing.T) {
	pass := map[string][2]string{"boundary/write-inside": {"pass", ""}, "fail-closed/no-landlock-sentinel": {"skip", "requires no Landlock"},
		"git-worktree/linked-ops": {"fail", "x"}}
	noLL := map[string][2]string{"boundary/write-inside": {"skip", "requires Landlock"}, "fail-closed/no-landlock-sentinel": {"pass", ""},
		"git-worktree/linked-ops": {"skip", "requires Landlock"}}
	runs := []run{
		{id: "5.10-amd64", landlock: "absent", backend: "bwrap", record: "ok", finished: true, verdicts: noLL},
		{id: "6.1-amd64", landlock: "available", abi: 2, git: true, record: "ok", finished: true, verdicts: pass},
		{id: "7.3-arm64", landlock: "available", abi: 11, git: true, record: "ok", finished: true, verdicts: pass},
	}
	m, _ := build(t, runs...)
	require.True(t, m.OK(), "%+v", m.Results)
	assert.False(t, m.Subset())
	assert.Equal(t, "OK", m.Verdict())
	assert.Empty(t, m.incomplete(true))
	sub, _ := build(t, runs[:2]...)
	assert.True(t, sub.OK())
	assert.Empty(t, sub.incomplete(false), "a subset passes where it is asked for (a shard, make test's smoke run)")
	assert.Equal(t, "NOT PASSED: --require-complete, and 1 of 3 kernel entries of the manifest have no result: 7.3-arm64", sub.incomplete(true))

	_, dir := build(t, runs[:2]...)
	expFile := filepath.Join(dir, "expected.yaml")
	require.NoError(t, os.WriteFile(expFile, []byte(expectations), 0o644))
	args := []string{"--results", filepath.Join(dir, "vm"), "--manifest", filepath.Join(dir, "kernels.json"), "--expect", expFile, "--out", filepath.Join(dir, "out")}
	var out, errOut bytes.Buffer
	// Main checks the real catalogue's case ids: the three here are all real, the rest have no verdict (FAIL), so
	// a subset cannot pass through Main; the verdict's agreement with the exit status is what is checked.
	code := Main(args, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "verdict: NOT OK")
	assert.Contains(t, out.String(), "SUBSET: absent 7.3-arm64")
}

func TestMatrixDeviations(t *testing.T) {
	m, _ := build(t,
		// The ABI differs from the manifest; the EXPECTED-FAIL case passes; the no-Landlock case was skipped
		// where it should have run; a case has no verdict.
		run{id: "6.1-amd64", landlock: "available", abi: 3, git: true, record: "ok", finished: true, verdicts: map[string][2]string{
			"fail-closed/no-landlock-sentinel": {"skip", "requires no Landlock"}, "git-worktree/linked-ops": {"pass", ""}}},
		run{id: "5.10-amd64", landlock: "absent", backend: "bwrap", record: "ok", finished: true, verdicts: map[string][2]string{
			"boundary/write-inside": {"skip", "x"}, "fail-closed/no-landlock-sentinel": {"skip", "oops"},
			"git-worktree/linked-ops": {"skip", "x"}}},
		// The VM never started the suite.
		run{id: "7.3-arm64", record: "infra"},
	)
	assert.False(t, m.OK())
	assert.Equal(t, expect.Fail, cell(m, "6.1-amd64", "vm/expected-abi").Outcome)
	assert.Contains(t, cell(m, "6.1-amd64", "vm/expected-abi").Reason, "expects available ABI 2")
	assert.Contains(t, cell(m, "6.1-amd64", "git-worktree/linked-ops").Deviation, "update conformance/expected.yaml")
	assert.Equal(t, expect.Fail, cell(m, "6.1-amd64", "boundary/write-inside").Outcome)
	assert.Contains(t, cell(m, "5.10-amd64", "fail-closed/no-landlock-sentinel").Deviation, "expected PASS but got SKIP")
	assert.Equal(t, Infra, cell(m, "7.3-arm64", "vm/run").Outcome)
	assert.Equal(t, 2, m.Summary.Fail)
	assert.Equal(t, 1, m.Summary.Infra)
	assert.Equal(t, 2, m.Summary.Deviations)
}

// A VM kernel without Landlock must have run the suite under bwrap (the guest carries it): a column whose cases
// all skipped for want of a backend is a FAIL of its own, not a quiet row of SKIPs.
func TestBwrapBackendInVM(t *testing.T) {
	v := map[string][2]string{"boundary/write-inside": {"skip", "requires a backend"}, "fail-closed/no-landlock-sentinel": {"pass", ""},
		"git-worktree/linked-ops": {"skip", "requires a backend"}}
	m, _ := build(t, run{id: "5.10-amd64", landlock: "absent", backend: "none", record: "ok", finished: true, verdicts: v})
	c := cell(m, "5.10-amd64", "vm/bwrap-backend")
	assert.Equal(t, expect.Fail, c.Outcome)
	assert.Contains(t, c.Reason, `backend "none"`)
	m, _ = build(t, run{id: "5.10-amd64", landlock: "absent", backend: "bwrap", record: "ok", finished: true, verdicts: v})
	assert.Equal(t, expect.Pass, cell(m, "5.10-amd64", "vm/bwrap-backend").Outcome)
	assert.Equal(t, "bwrap", m.Kernels[0].Backend)
}

func TestMainExitStatus(t *testing.T) {
	_, dir := build(t, run{id: "7.3-arm64", record: "infra"})
	expFile := filepath.Join(dir, "expected.yaml")
	require.NoError(t, os.WriteFile(expFile, []byte(expectations), 0o644))
	var out, errOut bytes.Buffer
	// The real catalogue is used by Main, so this expectations file (three cases) is rejected only if it names
	// unknown cases; it does not, so the run gets to the matrix, which fails (the VM never ran the suite).
	code := Main([]string{"--results", filepath.Join(dir, "vm"), "--manifest", filepath.Join(dir, "kernels.json"),
		"--expect", expFile, "--out", filepath.Join(dir, "out")}, &out, &errOut)
	assert.Equal(t, 1, code, errOut.String())
	assert.Contains(t, out.String(), "NOT PASSED")
	assert.Contains(t, out.String(), "7.3-arm64: no verdict for 1 cases: the VM run ended INFRA")
	assert.Equal(t, 2, Main(nil, &out, &errOut))
}

// TestMatrixPassesAndInfra: one VM's stream carries a root and a nobody pass, interleaved: each is a column. A VM
// that went silent while a case ran gives INFRA (not FAIL) for the cases without a verdict, names the running
// case and attaches the watchdog's evidence to it, and makes the matrix NOT OK; the retry is reported.
func TestMatrixPassesAndInfra(t *testing.T) {
	all := map[string][2]string{"boundary/write-inside": {"pass", ""}, "fail-closed/no-landlock-sentinel": {"skip", "x"},
		"git-worktree/linked-ops": {"fail", "git add"}}
	m, dir := build(t,
		run{id: "6.1-amd64", landlock: "available", abi: 2, git: true, record: "ok", finished: true, pass: "root", verdicts: all,
			also: &run{pass: "nobody", finished: true, verdicts: all}},
		run{id: "7.3-arm64", landlock: "available", abi: 11, git: true, record: "infra", pass: "root",
			verdicts: map[string][2]string{"boundary/write-inside": {"pass", ""}},
			extra: map[string]any{"error": "watchdog: no console output for 2m0s: QEMU killed", "evidence": []string{"sysrq: Show State", "task:confine state:D"},
				"retries": []map[string]any{{"error": "watchdog: no console output", "seconds": 130}}}},
	)
	var cols []string
	for _, k := range m.Kernels {
		cols = append(cols, k.ID+"/"+k.Pass)
	}
	assert.Equal(t, []string{"6.1-amd64/root", "6.1-amd64@nobody/nobody", "7.3-arm64/root", "7.3-arm64@nobody/"}, cols)
	assert.Equal(t, expect.ExpectedFail, cell(m, "6.1-amd64@nobody", "git-worktree/linked-ops").Outcome)
	assert.Equal(t, expect.Pass, cell(m, "7.3-arm64", "boundary/write-inside").Outcome)
	running := cell(m, "7.3-arm64", "fail-closed/no-landlock-sentinel")
	assert.Equal(t, Infra, running.Outcome)
	assert.Contains(t, running.Reason, "this case was running when the run ended (INFRA: watchdog")
	assert.Contains(t, running.Output, "task:confine state:D")
	assert.Equal(t, Infra, cell(m, "7.3-arm64", "git-worktree/linked-ops").Outcome)
	assert.Equal(t, Infra, cell(m, "7.3-arm64@nobody", "vm/run").Outcome, "the second pass never started")
	assert.Equal(t, 3, m.Summary.Infra)
	assert.Equal(t, 1, m.Summary.Retried)
	assert.Equal(t, 0, m.Summary.Fail)
	assert.False(t, m.OK())
	assert.Contains(t, strings.Join(m.Problems(), "\n"), "7.3-arm64: no verdict for 2 cases")

	var table bytes.Buffer
	m.Table(&table)
	assert.Contains(t, table.String(), "INFRA(")
	assert.Contains(t, table.String(), "retried: run 1 ended INFRA after 130.0 s: watchdog")
	assert.Contains(t, table.String(), "1 VM runs retried after INFRA")
	_, err := m.WriteAll(filepath.Join(dir, "out"))
	require.NoError(t, err)
	junit, _ := os.ReadFile(filepath.Join(dir, "out", "conformance", "7.3-arm64.junit.xml"))
	var js junitSuites
	require.NoError(t, xml.Unmarshal(junit, &js))
	assert.Equal(t, 2, js.Suites[0].Errors)
	assert.Equal(t, 0, js.Suites[0].Failures)
	html, _ := os.ReadFile(filepath.Join(dir, "out", "matrix.html"))
	assert.Contains(t, string(html), `class="INFRA`)
	assert.Contains(t, string(html), "watchdog evidence")
}

// TestUsernsFallback: on the kernel booted without user namespaces the unprivileged pass must report a fallback
// (seccomp-deny, or the supervisor of issue 15); a mount-layer claim there fails.
func TestUsernsFallback(t *testing.T) {
	v := map[string][2]string{"boundary/write-inside": {"pass", ""}}
	cmd := map[string]any{"cmdline_extra": "sysctl.user.max_user_namespaces=0"}
	m, _ := build(t,
		run{id: "6.1-amd64", landlock: "available", abi: 2, record: "ok", finished: true, pass: "root", verdicts: v, metadata: "mount-layer",
			extra: cmd, also: &run{pass: "nobody", finished: true, verdicts: v, metadata: "seccomp-deny"}},
		run{id: "7.3-arm64", landlock: "available", abi: 11, record: "ok", finished: true, pass: "root", verdicts: v, metadata: "mount-layer",
			extra: cmd, also: &run{pass: "nobody", finished: true, verdicts: v, metadata: "mount-layer"}},
		run{id: "6.12-amd64", landlock: "available", abi: 6, record: "ok", finished: true, pass: "root", verdicts: v, metadata: "mount-layer",
			extra: cmd, also: &run{pass: "nobody", finished: true, verdicts: v, metadata: "supervisor"}},
	)
	assert.Equal(t, expect.Pass, cell(m, "6.1-amd64@nobody", "vm/userns-fallback").Outcome)
	assert.Equal(t, expect.Pass, cell(m, "6.12-amd64@nobody", "vm/userns-fallback").Outcome)
	assert.Equal(t, "", cell(m, "6.1-amd64", "vm/userns-fallback").Outcome, "the root pass needs no user namespace")
	bad := cell(m, "7.3-arm64@nobody", "vm/userns-fallback")
	assert.Equal(t, expect.Fail, bad.Outcome)
	assert.Contains(t, bad.Reason, `metadata "mount-layer", want supervisor or seccomp-deny`)
}

// TestHostEmulation: a column under a host emulation has no mount layer, so a launch there must report supervisor
// or seccomp-deny, and under nested-supervisor (a listener held above confine) seccomp-deny only.
func TestHostEmulation(t *testing.T) {
	v := map[string][2]string{"boundary/write-inside": {"pass", ""}}
	emu := func(name string) map[string]any { return map[string]any{"host_emulation": name} }
	m, _ := build(t,
		run{id: "6.1-amd64", landlock: "available", abi: 2, record: "ok", finished: true, pass: "root", verdicts: v, metadata: "supervisor",
			extra: emu("ubuntu-userns-restricted"), also: &run{pass: "nobody", finished: true, verdicts: v, metadata: "mount-layer"}},
		run{id: "7.3-arm64", landlock: "available", abi: 11, record: "ok", finished: true, pass: "root", verdicts: v, metadata: "supervisor",
			extra: emu("nested-supervisor"), also: &run{pass: "nobody", finished: true, verdicts: v, metadata: "seccomp-deny"}},
	)
	assert.Equal(t, "ubuntu-userns-restricted", m.Kernels[0].HostEmulation)
	assert.Equal(t, expect.Pass, cell(m, "6.1-amd64", "vm/host-emulation").Outcome)
	bad := cell(m, "6.1-amd64@nobody", "vm/host-emulation")
	assert.Equal(t, expect.Fail, bad.Outcome)
	assert.Contains(t, bad.Reason, `under ubuntu-userns-restricted a launch reported metadata "mount-layer", want supervisor or seccomp-deny`)
	nested := cell(m, "7.3-arm64", "vm/host-emulation")
	assert.Equal(t, expect.Fail, nested.Outcome)
	assert.Contains(t, nested.Reason, "want seccomp-deny")
	assert.Equal(t, expect.Pass, cell(m, "7.3-arm64@nobody", "vm/host-emulation").Outcome)
	var table bytes.Buffer
	m.Table(&table)
	assert.Contains(t, table.String(), "host emulation nested-supervisor")
}

// The race cases' attempts, rate and power are carried from the events into the results, the table's race power
// lines, the HTML's cell titles and the JUnit properties.
func TestRacePower(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	w := events.NewWriter(&out)
	w.Emit(events.Event{Action: events.Start, Env: &events.Env{Kernel: "k", Arch: "x86_64", Landlock: "available", ABI: 7, Root: true}})
	w.Emit(events.Event{Action: events.Run, Test: "boundary/write-inside"})
	w.Emit(events.Event{Action: events.Pass, Test: "boundary/write-inside", Family: "boundary", Attempts: 30, Rate: 0.21,
		Power: 0.99915, Mutant: "follow-symlinks", RateFrom: "host amd64 landlock root: 242 wins of 1000"})
	w.Emit(events.Event{Action: events.Run, Test: "git-worktree/linked-ops"})
	w.Emit(events.Event{Action: events.Pass, Test: "git-worktree/linked-ops", Family: "git-worktree", Attempts: 200})
	w.Emit(events.Event{Action: events.Pass, Elapsed: 1, Summary: &events.Summary{}})
	f := filepath.Join(dir, "host.jsonl")
	require.NoError(t, os.WriteFile(f, out.Bytes(), 0o644))
	exp, err := expect.Parse([]byte(expectations), ids)
	require.NoError(t, err)
	m, err := Build("", []string{f}, "", exp, ids)
	require.NoError(t, err)
	r := cell(m, "host-root", "boundary/write-inside")
	assert.Equal(t, 30, r.Attempts)
	assert.Equal(t, 0.21, r.Rate)
	assert.Equal(t, 0.99915, r.Power)
	assert.Equal(t, "follow-symlinks", r.Mutant)
	lines := m.RacePower()
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], "30 attempts in 1 columns; power >= 99.91 % against follow-symlinks (the weakest column's rate 0.21: host amd64 landlock root: 242 wins of 1000)")
	assert.Contains(t, lines[1], "200 attempts in 1 columns; 1 columns without a measured rate (fixed count, power unknown)")
	x, err := m.JUnit("host-root")
	require.NoError(t, err)
	assert.Contains(t, string(x), `name="race boundary/write-inside" value="attempts 30, rate 0.21 (follow-symlinks, host amd64 landlock root: 242 wins of 1000), power 99.91 %"`)
	var html bytes.Buffer
	require.NoError(t, m.HTML(&html))
	assert.Contains(t, html.String(), "attempts: 30, rate 0.21 of follow-symlinks")
	assert.Contains(t, html.String(), "<h2>Race power</h2>")
	// Two rated columns, each of 200 attempts at a rate of 1/850 (21 % alone): together 1 − (1 − 1/850)^400 = 37.5 %.
	m2 := &Matrix{Results: []Result{
		{KernelID: "a", Case: "toctou-symlink-swap/gitfile-swap", Attempts: 200, Rate: 1.0 / 850, Power: 0.21, Mutant: "gitfile-reread", RateFrom: "tcg"},
		{KernelID: "b", Case: "toctou-symlink-swap/gitfile-swap", Attempts: 200, Rate: 1.0 / 850, Power: 0.21, Mutant: "gitfile-reread", RateFrom: "tcg"}}}
	require.Len(t, m2.RacePower(), 1)
	assert.Contains(t, m2.RacePower()[0], "power >= 21 % against gitfile-reread")
	assert.Contains(t, m2.RacePower()[0], "its 2 rated columns together >= 37.5 %")
	// The weakest column is named by its own rate and source, not by the lowest rate of another column.
	m3 := &Matrix{Results: []Result{
		{KernelID: "a", Case: "toctou-symlink-swap/metadata-swap-fallback", Attempts: 52, Rate: 0.125, Power: 0.9990, Mutant: "supervisor-act-by-path", RateFrom: "tcg arm64 landlock nobody"},
		{KernelID: "b", Case: "toctou-symlink-swap/metadata-swap-fallback", Attempts: 1, Rate: 0.963, Power: 0.963, Mutant: "supervisor-act-by-path", RateFrom: "tcg amd64 landlock root"}}}
	assert.Contains(t, m3.RacePower()[0], "power >= 96.3 % against supervisor-act-by-path (the weakest column's rate 0.963: tcg amd64 landlock root)")
	assert.NotContains(t, lines[0], "together", "one rated column: nothing to add up")
	assert.Equal(t, "", m.TimeSplit(), "no timings: nothing to split")
	m.Kernels = append(m.Kernels, Column{ID: "vm", VM: true, Pass: "root", Seconds: 100, GuestSeconds: 90})
	m.Results = append(m.Results, Result{KernelID: "vm", Case: "boundary/write-inside", Attempts: 30, Seconds: 60},
		Result{KernelID: "vm", Case: "git-worktree/linked-ops", Seconds: 25})
	assert.Equal(t, "1 VM: 100 s of VM time, boots 10 s of it; cases 25 s, races 60 s (summed over 2 columns); in a VM the root and the unprivileged pass run at once, so the columns' sum can exceed the VM time", m.TimeSplit())
	// A second entry in the same VM (a pass of vm's boot) adds its guest time, and no VM.
	m.Kernels = append(m.Kernels, Column{ID: "vm-abi5", VMKernel: "vm-abi5", VM: true, Pass: "root", Seconds: 40, GuestSeconds: 40, Boot: "vm"})
	assert.Equal(t, "1 VM: 140 s of VM time, boots 10 s of it; cases 25 s, races 60 s (summed over 3 columns); in a VM the root and the unprivileged pass run at once, so the columns' sum can exceed the VM time", m.TimeSplit())
	assert.Equal(t, ", in vm's VM: guest 40.0 s", m.Kernels[len(m.Kernels)-1].timing())
}

// A case the plan ran in another column is ELSEWHERE here, not judged, and the column it names must have a verdict
// of its own for it; where that column is missing, the cell FAILs.
func TestElsewhere(t *testing.T) {
	v := map[string][2]string{"boundary/write-inside": {"pass", ""}, "fail-closed/no-landlock-sentinel": {"skip", "requires no Landlock"},
		"git-worktree/linked-ops": {"fail", "x"}}
	dir := t.TempDir()
	vmDir := filepath.Join(dir, "vm")
	require.NoError(t, os.MkdirAll(vmDir, 0o755))
	writeRun(t, vmDir, run{id: "6.1-amd64", landlock: "available", abi: 2, git: true, record: "ok", finished: true, verdicts: v})
	// 7.3-arm64's stream: boundary/write-inside planned elsewhere, once to 6.1-amd64 (which ran it) and once, in a
	// second file, to a column that is not here.
	var out bytes.Buffer
	w := events.NewWriter(&out)
	w.Emit(events.Event{Action: events.Start, Env: &events.Env{Kernel: "r", Arch: "aarch64", Landlock: "available", ABI: 11, Git: true, VMKernelID: "7.3-arm64", Root: true}})
	w.Emit(events.Event{Action: events.Skip, Test: "boundary/write-inside", Reason: "planned elsewhere", Elsewhere: "ran in 6.1-amd64: the same arch"})
	w.Emit(events.Event{Action: events.Skip, Test: "git-worktree/linked-ops", Reason: "planned elsewhere", Elsewhere: "ran in 5.10-amd64: the same arch"})
	w.Emit(events.Event{Action: events.Skip, Test: "fail-closed/no-landlock-sentinel", Reason: "planned elsewhere", Elsewhere: "ran in 6.1-amd64: the same arch"})
	w.Emit(events.Event{Action: events.Pass, Elapsed: 1, Summary: &events.Summary{}})
	rec := `{"schema":"confine.vm.result/v1","kernel":"7.3-arm64","arch":"arm64","accel":"tcg","result":"ok","seconds":1}`
	require.NoError(t, os.WriteFile(filepath.Join(vmDir, "7.3-arm64.json"), []byte(rec), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(vmDir, "7.3-arm64.out"), out.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kernels.json"), []byte(manifest), 0o644))
	exp, err := expect.Parse([]byte(expectations), ids)
	require.NoError(t, err)
	m, err := Build(vmDir, nil, filepath.Join(dir, "kernels.json"), exp, ids)
	require.NoError(t, err)
	c := cell(m, "7.3-arm64", "boundary/write-inside")
	assert.Equal(t, Elsewhere, c.Outcome)
	assert.Equal(t, "6.1-amd64", c.RanIn)
	assert.Empty(t, c.Deviation, "not judged here")
	c = cell(m, "7.3-arm64", "git-worktree/linked-ops")
	assert.Equal(t, expect.Fail, c.Outcome)
	assert.Equal(t, "the plan ran this case in 5.10-amd64, which is not in this report", c.Reason)
	// 6.1-amd64 SKIPped the sentinel: the cell that stands on it says so.
	c = cell(m, "7.3-arm64", "fail-closed/no-landlock-sentinel")
	assert.Equal(t, Elsewhere, c.Outcome)
	assert.Contains(t, c.Reason, "it SKIPped there: requires no Landlock")
	assert.Equal(t, 2, m.Summary.Elsewhere)
	assert.Equal(t, 1, m.Summary.ElsewhereSkip)
	assert.Zero(t, m.Summary.Deviations, "each standing verdict meets the cell's own expectation")
	// The JUnit file of 7.3-arm64 counts the planned-away cells as skipped, not passed.
	junit, err := m.JUnit("7.3-arm64")
	require.NoError(t, err)
	assert.Contains(t, string(junit), `<skipped message="planned elsewhere: ran in 6.1-amd64`)
	var table bytes.Buffer
	m.Table(&table)
	assert.Contains(t, table.String(), "2 cells planned elsewhere")
	assert.Contains(t, table.String(), "1 of them where that column SKIPped it")
	assert.Contains(t, table.String(), "->(")
	assert.Contains(t, table.String(), "ran in 6.1-amd64")
	var html bytes.Buffer
	require.NoError(t, m.HTML(&html))
	assert.Contains(t, html.String(), "→ 6.1-amd64")
}

// A standing column's outcome below the cell's own expectation is a deviation of that cell: 6.1 may SKIP by its
// own rules what 7.3 expects to PASS. Above it (a PASS where this column expects SKIP) is not.
func TestElsewhereJudgedByItsOwnExpectation(t *testing.T) {
	m := &Matrix{Results: []Result{
		{Case: "a/below", KernelID: "6.1-amd64", Outcome: expect.Skip, Expected: expect.Skip},
		{Case: "a/below", KernelID: "7.3-amd64", Outcome: Elsewhere, RanIn: "6.1-amd64", Expected: expect.Pass},
		{Case: "a/above", KernelID: "6.1-amd64", Outcome: expect.Pass, Expected: expect.Pass},
		{Case: "a/above", KernelID: "7.3-amd64", Outcome: Elsewhere, RanIn: "6.1-amd64", Expected: expect.Skip},
	}}
	m.checkElsewhere(func(string) []plan.Dim { return plan.Launch })
	assert.Equal(t, 1, m.Summary.Deviations)
	assert.Equal(t, "expected PASS here, but the column that stands for this one, 6.1-amd64, got SKIP", m.Results[1].Deviation)
	assert.Empty(t, m.Results[3].Deviation)
	assert.False(t, m.OK())
}

// A case whose outcome follows the launcher's path stands on another column only where both columns' probe
// launches took the same path (backend, metadata layer, and the layer without namespaces); one declared on arch
// alone may stand on a column whose launches took another.
func TestElsewhereNeedsTheSameLaunchPath(t *testing.T) {
	deps := map[string][]plan.Dim{"a/launch": plan.Launch, "a/usage": {}}
	col := func(id, backend, metadata, fallback string) Column {
		return Column{ID: id, Backend: "landlock", LaunchBackend: backend, Metadata: metadata, FallbackMetadata: fallback}
	}
	m := &Matrix{
		Kernels: []Column{
			col("6.1-amd64", "landlock", "mount-layer", "supervisor"),
			col("6.1-amd64-no-namespaces", "landlock", "supervisor", "supervisor"),
			col("6.12-amd64", "landlock", "mount-layer", "supervisor"),
			col("6.16-amd64", "landlock", "mount-layer", "seccomp-deny"),
			col("6.17-amd64", "bwrap", "mount-layer", "supervisor"),
		},
		Results: []Result{
			{Case: "a/launch", KernelID: "6.1-amd64", Outcome: expect.Pass, Expected: expect.Pass},
			{Case: "a/launch", KernelID: "6.1-amd64-no-namespaces", Outcome: Elsewhere, RanIn: "6.1-amd64", Expected: expect.Pass},
			{Case: "a/launch", KernelID: "6.12-amd64", Outcome: Elsewhere, RanIn: "6.1-amd64", Expected: expect.Pass},
			{Case: "a/launch", KernelID: "6.16-amd64", Outcome: Elsewhere, RanIn: "6.1-amd64", Expected: expect.Pass},
			{Case: "a/launch", KernelID: "6.17-amd64", Outcome: Elsewhere, RanIn: "6.1-amd64", Expected: expect.Pass},
			{Case: "a/usage", KernelID: "6.1-amd64", Outcome: expect.Pass, Expected: expect.Pass},
			{Case: "a/usage", KernelID: "6.1-amd64-no-namespaces", Outcome: Elsewhere, RanIn: "6.1-amd64", Expected: expect.Pass},
		},
		Summary: Summary{Pass: 2, Elsewhere: 5},
	}
	m.checkElsewhere(func(id string) []plan.Dim { return deps[id] })
	assert.Equal(t, expect.Fail, m.Results[1].Outcome, "another metadata layer")
	assert.Equal(t, "the plan ran this case in 6.1-amd64 for the same launch, but launches took backend landlock, "+
		"metadata supervisor, without namespaces supervisor here and backend landlock, metadata mount-layer, without "+
		"namespaces supervisor there: the case ran in no column like this one (make matrix-full runs it here)", m.Results[1].Reason)
	assert.Equal(t, Elsewhere, m.Results[2].Outcome, "the same path")
	assert.Equal(t, expect.Fail, m.Results[3].Outcome, "another layer without namespaces")
	assert.Equal(t, expect.Fail, m.Results[4].Outcome, "another backend chosen")
	assert.Equal(t, Elsewhere, m.Results[6].Outcome, "a case declared on arch alone")
	assert.Equal(t, Summary{Pass: 2, Fail: 3, Elsewhere: 2}, m.Summary)
	assert.False(t, m.OK())
}
