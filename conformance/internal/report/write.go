package report

import (
	"crypto/sha256"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/confine-dev/confine/conformance/internal/expect"
	"github.com/confine-dev/confine/conformance/internal/power"
	"github.com/confine-dev/confine/conformance/internal/suite"
)

// Main is `confine-conformance report`: it returns 0 when the matrix has no FAIL, INFRA or deviation (a subset of
// the manifest's kernels included, which its verdict names as one), 1 otherwise or, with --require-complete, when
// manifest kernels are absent; 2 when it cannot build the matrix.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("confine-conformance report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	results := fs.String("results", "", "the VM runner's results directory (<id>.json + <id>.out), e.g. reports/vm")
	var host []string
	fs.Func("host", "a host run's events (confine-conformance --json output); repeatable", func(s string) error { host = append(host, s); return nil })
	expFile := fs.String("expect", "conformance/expected.yaml", "the reviewed expectations file")
	manifest := fs.String("manifest", "", "the kernel manifest (vm/kernels.json); VM kernels' ABIs are checked against it")
	out := fs.String("out", "reports", "where matrix.json, matrix.html and conformance/<kernel>.junit.xml go")
	complete := fs.Bool("require-complete", false, "fail unless every kernel of --manifest has a VM result (the gate: merged shards)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int { fmt.Fprintf(stderr, "confine-conformance report: %v\n", err); return 2 }
	if *results == "" && len(host) == 0 {
		return fail(fmt.Errorf("give --results DIR, --host FILE, or both"))
	}
	var ids []string
	for _, c := range suite.All() {
		ids = append(ids, c.ID)
	}
	exp, err := expect.Load(*expFile, ids)
	if err != nil {
		return fail(err)
	}
	if *results != "" && *manifest == "" {
		fmt.Fprintln(stderr, "confine-conformance report: no --manifest: the kernels' ABIs are not checked against vm/kernels.json")
	}
	m, err := Build(*results, host, *manifest, exp, ids)
	if err != nil {
		return fail(err)
	}
	expBytes, err := os.ReadFile(*expFile)
	if err != nil {
		return fail(err)
	}
	m.ExpectedSHA256 = fmt.Sprintf("%x", sha256.Sum256(expBytes))
	paths, err := m.WriteAll(*out)
	if err != nil {
		return fail(err)
	}
	m.Table(stdout)
	fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(paths, ", "))
	if !m.OK() {
		fmt.Fprintf(stdout, "NOT PASSED (%s):\n", *expFile)
		for _, p := range m.Problems() {
			fmt.Fprintf(stdout, "  %s\n", p)
		}
		return 1
	}
	if msg := m.incomplete(*complete); msg != "" {
		fmt.Fprintln(stdout, msg)
		return 1
	}
	return 0
}

// incomplete is the NOT PASSED line of a subset when the run must be complete (--require-complete), else "".
func (m *Matrix) incomplete(require bool) string {
	if !require || !m.Subset() {
		return ""
	}
	return fmt.Sprintf("NOT PASSED: --require-complete, and %d of %d kernel entries of the manifest have no result: %s",
		len(m.Coverage.Absent), m.Coverage.Manifest, strings.Join(m.Coverage.Absent, ", "))
}

// WriteAll writes matrix.json, matrix.html and conformance/<kernel>.junit.xml under dir and returns their paths.
func (m *Matrix) WriteAll(dir string) ([]string, error) {
	if err := os.MkdirAll(filepath.Join(dir, "conformance"), 0o755); err != nil {
		return nil, err
	}
	m.VerdictLine = m.Verdict()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(dir, "matrix.json"), filepath.Join(dir, "matrix.html")}
	if err := os.WriteFile(paths[0], append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	f, err := os.Create(paths[1])
	if err != nil {
		return nil, err
	}
	if err := m.HTML(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	for _, k := range m.Kernels {
		p := filepath.Join(dir, "conformance", k.ID+".junit.xml")
		x, err := m.JUnit(k.ID)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, x, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Cell is the table's text for a result: PASS, FAIL, SKIP(n) or EXPECTED-FAIL(n), n indexing the notes; a
// trailing "!" marks a deviation from the expectations.
func (m *Matrix) cells() (map[[2]string]string, []string) {
	var notes []string
	index := map[string]int{}
	note := func(s string) int {
		if i, ok := index[s]; ok {
			return i
		}
		notes = append(notes, s)
		index[s] = len(notes)
		return len(notes)
	}
	out := map[[2]string]string{}
	for _, r := range m.Results {
		c := r.Outcome
		switch r.Outcome {
		case expect.Skip:
			c = fmt.Sprintf("SKIP(%d)", note("skip: "+r.Reason))
		case expect.ExpectedFail:
			c = fmt.Sprintf("XFAIL(%d)", note("EXPECTED-FAIL, issue: "+r.Issue))
		case expect.Fail:
			c = fmt.Sprintf("FAIL(%d)", note("fail: "+r.Reason))
		case Infra:
			c = fmt.Sprintf("INFRA(%d)", note("infra: "+r.Reason))
		case Elsewhere:
			c = fmt.Sprintf("->(%d)", note("ran in "+r.RanIn))
		}
		if r.Deviation != "" {
			c += "!"
		}
		out[[2]string{r.Case, r.KernelID}] = c
	}
	return out, notes
}

func (m *Matrix) caseRows() []string {
	var rows []string
	seen := map[string]bool{}
	for _, r := range m.Results {
		if !seen[r.Case] {
			seen[r.Case] = true
			rows = append(rows, r.Case)
		}
	}
	return rows
}

// timing is a column's ", suite S s, VM V s = boot B s + guest G s (G/B x boot)" text: the VM's numbers cover
// both passes; boot is QEMU's time outside the payload (boot, unpacking the initramfs, power-off). A column that
// ran in another entry's VM (Column.Boot) says so, with its guest time.
func (k Column) timing() string {
	s := ""
	if k.SuiteSeconds > 0 {
		s = fmt.Sprintf(", suite %.1f s", k.SuiteSeconds)
	}
	if k.VM && k.Boot != "" && k.Boot != k.VMKernel && k.Pass != "nobody" {
		return s + fmt.Sprintf(", in %s's VM: guest %.1f s", k.Boot, k.GuestSeconds)
	}
	if k.VM && k.Seconds > 0 && k.GuestSeconds > 0 && k.Pass != "nobody" {
		boot := k.Seconds - k.GuestSeconds
		s += fmt.Sprintf(", VM %.1f s = boot %.1f s + guest %.1f s", k.Seconds, boot, k.GuestSeconds)
		if boot > 0 {
			s += fmt.Sprintf(" (suite/bare boot %.1fx)", k.GuestSeconds/boot)
		}
	}
	return s
}

// TimeSplit says where the matrix's time went, summed over its columns: the VMs' time outside the payload
// (boot, unpacking, power-off), and, in the suite's passes, the race cases' time and the other cases'. The passes
// of one VM run concurrently, so their sum exceeds the guest's time; "" when no column has timings. A VM is a
// boot: the kernel entries that shared one count once.
func (m *Matrix) TimeSplit() string {
	var vms int
	var vmSecs, boot, races, cases float64
	for _, k := range m.Kernels {
		if k.VM && k.Pass != "nobody" && k.Seconds > 0 {
			if k.Boot == "" || k.Boot == k.VMKernel {
				vms++
			}
			vmSecs += k.Seconds
			if k.GuestSeconds > 0 {
				boot += k.Seconds - k.GuestSeconds
			}
		}
	}
	for _, r := range m.Results {
		if r.Attempts > 0 {
			races += r.Seconds
		} else {
			cases += r.Seconds
		}
	}
	if vmSecs == 0 && races+cases == 0 {
		return ""
	}
	s := fmt.Sprintf("cases %.0f s, races %.0f s (summed over %s)", cases, races, count(len(m.Kernels), "column"))
	if vms > 0 {
		s = fmt.Sprintf("%s: %.0f s of VM time, boots %.0f s of it; ", count(vms, "VM"), vmSecs, boot) + s +
			"; in a VM the root and the unprivileged pass run at once, so the columns' sum can exceed the VM time"
	}
	return s
}

// count is "1 VM", "2 VMs".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// RacePower returns, per race case (a case that reported attempts), one line: its attempts per column, and its
// rate and the lowest power over the columns, or that it had no measured rate. Where more than one column had a
// rate it adds their power together: the probability that the planted bug won in at least one of them,
// 1 − Π (1 − rate)^attempts. That is the gate's power against a bug of confine's own code, which every column runs
// (all of conformance/mutants are), where one column's power can stay low (gitfile-swap's bug wins about 1 attempt
// in 150 under TCG).
func (m *Matrix) RacePower() []string {
	type agg struct {
		cols             []string
		minN, maxN       int
		minPower         float64
		rated, unrated   int
		mutant, rateFrom string
		weakestRate      float64 // the rate of the column with minPower
		logMiss          float64 // Σ attempts × ln(1 − rate) over the rated columns
	}
	var order []string
	by := map[string]*agg{}
	for _, r := range m.Results {
		if r.Attempts == 0 {
			continue
		}
		a := by[r.Case]
		if a == nil {
			a = &agg{minN: r.Attempts, minPower: 2}
			by[r.Case] = a
			order = append(order, r.Case)
		}
		a.cols = append(a.cols, r.KernelID)
		a.minN, a.maxN = min(a.minN, r.Attempts), max(a.maxN, r.Attempts)
		if r.Rate > 0 {
			a.rated++
			if r.Power < a.minPower { // the weakest column, named by its own rate and source
				a.minPower, a.weakestRate, a.mutant, a.rateFrom = r.Power, r.Rate, r.Mutant, r.RateFrom
			}
			a.logMiss += float64(r.Attempts) * math.Log1p(-r.Rate)
		} else {
			a.unrated++
		}
	}
	var out []string
	for _, id := range order {
		a := by[id]
		n := fmt.Sprint(a.minN)
		if a.maxN != a.minN {
			n = fmt.Sprintf("%d..%d", a.minN, a.maxN)
		}
		l := fmt.Sprintf("%-45s %s attempts in %d columns", id, n, len(a.cols))
		if a.rated > 0 {
			l += fmt.Sprintf("; power >= %s against %s (the weakest column's rate %.3g: %s)", power.Percent(a.minPower), a.mutant, a.weakestRate, a.rateFrom)
			if a.rated > 1 {
				l += fmt.Sprintf("; its %d rated columns together >= %s", a.rated, power.Percent(-math.Expm1(a.logMiss)))
			}
		}
		if a.unrated > 0 {
			l += fmt.Sprintf("; %d columns without a measured rate (fixed count, power unknown)", a.unrated)
		}
		out = append(out, l)
	}
	return out
}

// SlowCases returns the n cases with the most seconds summed over every column, as "case: total s (max s)".
func (m *Matrix) SlowCases(n int) []string {
	sum, mx := map[string]float64{}, map[string]float64{}
	for _, r := range m.Results {
		sum[r.Case] += r.Seconds
		mx[r.Case] = max(mx[r.Case], r.Seconds)
	}
	ids := make([]string, 0, len(sum))
	for id := range sum {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return sum[ids[i]] > sum[ids[j]] })
	var out []string
	for _, id := range ids[:min(n, len(ids))] {
		out = append(out, fmt.Sprintf("%-45s %7.1f s in all, %5.1f s at most", id, sum[id], mx[id]))
	}
	return out
}

// Table prints the kernel × case table: one row per case, one column per kernel (k1…kN, listed above it), then
// the notes, the deviations and the counts.
func (m *Matrix) Table(w io.Writer) {
	cells, notes := m.cells()
	fmt.Fprintln(w, "columns (kernel entry, and the pass as which the suite ran there):")
	for i, k := range m.Kernels {
		exp := ""
		if k.ExpectedABI != nil {
			exp = fmt.Sprintf(", expected ABI %d", *k.ExpectedABI)
		}
		where := "host"
		if k.VM {
			where = "vm " + k.Accel
		}
		launch := ""
		if k.LaunchMicros > 0 {
			launch = fmt.Sprintf(", launch %.1f ms", float64(k.LaunchMicros)/1000)
		}
		if k.Metadata != "" {
			launch += ", metadata " + k.Metadata
		}
		if k.HostEmulation != "" {
			launch += ", host emulation " + k.HostEmulation
		}
		if k.ABICap > 0 {
			exp = fmt.Sprintf(" (confine capped to it; the kernel's own ABI %d%s)", k.KernelABI, exp)
		}
		fmt.Fprintf(w, "  k%-2d %-22s %-8s %s, Landlock %s ABI %d%s, root=%v, toctou attempts %d%s%s\n",
			i+1, k.ID, k.Arch, where, k.Landlock, k.ABI, exp, k.Root, k.Attempts, launch, k.timing())
		if k.Version != "" && k.PinnedVersion != "" && k.Version != k.PinnedVersion {
			fmt.Fprintf(w, "       kernel package %s %s (pinned %s has left the archive)\n", k.Package, k.Version, k.PinnedVersion)
		}
		for j, r := range k.Retries {
			fmt.Fprintf(w, "       retried: run %d ended INFRA after %.1f s: %s\n", j+1, r.Seconds, r.Error)
		}
	}
	rows := m.caseRows()
	width := 4
	for _, r := range rows {
		if len(r) > width {
			width = len(r)
		}
	}
	colw := 5
	for _, c := range cells {
		if len(c)+1 > colw {
			colw = len(c) + 1
		}
	}
	fmt.Fprintf(w, "\n%-*s", width+1, "case")
	for i := range m.Kernels {
		fmt.Fprintf(w, "%-*s", colw, fmt.Sprintf("k%d", i+1))
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s", width+1, r)
		for _, k := range m.Kernels {
			c := cells[[2]string{r, k.ID}]
			if c == "" {
				c = "-"
			}
			fmt.Fprintf(w, "%-*s", colw, c)
		}
		fmt.Fprintln(w)
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for i, n := range notes {
			fmt.Fprintf(w, "  (%d) %s\n", i+1, n)
		}
	}
	var devs []string
	for _, r := range m.Results {
		if r.Deviation != "" {
			devs = append(devs, fmt.Sprintf("  %s on %s: %s", r.Case, r.KernelID, r.Deviation))
		}
	}
	if len(devs) > 0 {
		sort.Strings(devs)
		fmt.Fprintln(w, "\ndeviations from the expectations (marked !):")
		fmt.Fprintln(w, strings.Join(devs, "\n"))
	}
	if lines := m.RacePower(); len(lines) > 0 {
		fmt.Fprintln(w, "\nrace power (attempts per column; power: the probability they had of catching the case's planted bug):")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if s := m.TimeSplit(); s != "" {
		fmt.Fprintln(w, "\ntime split: "+s)
	}
	fmt.Fprintln(w, "\nslowest cases (seconds summed over the columns):")
	for _, l := range m.SlowCases(8) {
		fmt.Fprintln(w, "  "+l)
	}
	s := m.Summary
	fmt.Fprintf(w, "\n%d columns: %d PASS, %d FAIL, %d SKIP, %d EXPECTED-FAIL, %d INFRA, %d deviations; %d VM runs retried after INFRA\n",
		len(m.Kernels), s.Pass, s.Fail, s.Skip, s.ExpectedFail, s.Infra, s.Deviations, s.Retried)
	if s.Elsewhere > 0 {
		fmt.Fprintf(w, "%d cells planned elsewhere (->: the case ran in the column named, which stands for this one; "+
			"conformance/internal/plan), %d of them where that column SKIPped it\n", s.Elsewhere, s.ElsewhereSkip)
	}
	if c := m.Coverage; c != nil {
		fmt.Fprintf(w, "kernel entries: %d of %d in vm/kernels.json ran", len(c.Ran), c.Manifest)
		if len(c.Absent) > 0 {
			fmt.Fprintf(w, "; SUBSET: absent %s", strings.Join(c.Absent, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "verdict: %s\n", m.Verdict())
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Props    []junitProp `xml:"properties>property"`
	Cases    []junitCase `xml:"testcase"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Class   string     `xml:"classname,attr"`
	Name    string     `xml:"name,attr"`
	Time    float64    `xml:"time,attr"`
	Failure *junitText `xml:"failure"`
	Error   *junitText `xml:"error"`
	Skipped *junitText `xml:"skipped"`
	Output  string     `xml:"system-out,omitempty"`
}

type junitText struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit renders one kernel's results. A FAIL or a deviation is a <failure>; SKIP and EXPECTED-FAIL are <skipped>
// with the reason (JUnit has no expected-failure element).
func (m *Matrix) JUnit(kernelID string) ([]byte, error) {
	var k Column
	for _, x := range m.Kernels {
		if x.ID == kernelID {
			k = x
		}
	}
	s := junitSuite{Name: "confine-conformance " + kernelID, Props: []junitProp{
		{"kernel", k.Release}, {"pass", k.Pass}, {"arch", k.Arch}, {"landlock", k.Landlock}, {"abi", fmt.Sprint(k.ABI)}, {"confine", k.Confine}}}
	for _, r := range m.Results {
		if r.KernelID == kernelID && r.Attempts > 0 {
			v := fmt.Sprintf("attempts %d, no measured rate: power unknown", r.Attempts)
			if r.Rate > 0 {
				v = fmt.Sprintf("attempts %d, rate %.4g (%s, %s), power %s", r.Attempts, r.Rate, r.Mutant, r.RateFrom, power.Percent(r.Power))
			}
			s.Props = append(s.Props, junitProp{"race " + r.Case, v})
		}
	}
	for _, r := range m.Results {
		if r.KernelID != kernelID {
			continue
		}
		c := junitCase{Class: r.Family, Name: r.Case, Time: r.Seconds, Output: r.Output}
		switch {
		case r.Outcome == expect.Fail:
			c.Failure = &junitText{Message: r.Reason, Text: r.Output}
		case r.Outcome == Infra: // JUnit's error: the test could not give a verdict
			c.Error = &junitText{Message: r.Reason, Text: r.Output}
		case r.Deviation != "":
			c.Failure = &junitText{Message: r.Deviation, Text: r.Output}
		case r.Outcome == expect.Skip, r.Outcome == Elsewhere: // a planned-away cell did not run here
			c.Skipped = &junitText{Message: r.Reason}
		case r.Outcome == expect.ExpectedFail:
			c.Skipped = &junitText{Message: "EXPECTED-FAIL (" + r.Issue + "): " + r.Reason}
		}
		if c.Failure != nil {
			s.Failures++
		}
		if c.Error != nil {
			s.Errors++
		}
		if c.Skipped != nil {
			s.Skipped++
		}
		s.Tests++
		s.Time += r.Seconds
		s.Cases = append(s.Cases, c)
	}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// page is the matrix page's template, parsed on first use rather than at package init: every process of the runner
// binary links this package, the helper that a confined command runs included, and under TCG the parse cost about
// 20 ms of each helper start (GODEBUG=inittrace=1 in a 7.3-amd64 guest, issue 27), paid by every race attempt.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("matrix").Parse(pageText))
})

const pageText = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>confine conformance matrix</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th.k{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-weight:normal}
td.PASS{background:#d7f5d7}td.FAIL{background:#f7b6b6;font-weight:bold}td.SKIP{background:#eee;color:#666}
td.EXPECTED-FAIL{background:#fde7b0}td.ELSEWHERE{color:#888;font-size:smaller}td.INFRA{background:#c9d7f7;font-weight:bold}td.dev{outline:3px solid #c00}
.summary span{margin-right:1.5em}.fam{background:#f4f4f4;font-weight:bold}
</style></head><body>
<h1>confine conformance matrix</h1>
<p class="summary"><span>{{len .Kernels}} columns{{if .Coverage}} over {{len .Coverage.Ran}} of {{.Coverage.Manifest}} kernel entries{{end}}</span><span>PASS {{.Summary.Pass}}</span><span>FAIL {{.Summary.Fail}}</span>
<span>SKIP {{.Summary.Skip}}</span><span>EXPECTED-FAIL {{.Summary.ExpectedFail}}</span><span>INFRA {{.Summary.Infra}}</span><span>retried {{.Summary.Retried}}</span><span>deviations {{.Summary.Deviations}}</span>
<strong>{{.Verdict}}</strong></p>
{{if .Coverage}}{{if .Coverage.Absent}}<p><strong>Subset:</strong> no results for {{range $i, $k := .Coverage.Absent}}{{if $i}}, {{end}}{{$k}}{{end}}. This report is not the gate.</p>{{end}}{{end}}
<table><tr><th>case</th>{{range .Kernels}}<th class="k" title="{{.Release}} {{.Arch}}">{{.ID}} · ABI {{.ABI}}{{if .Accel}} · {{.Accel}}{{end}}</th>{{end}}</tr>
{{range .Rows}}{{if .Family}}<tr><td class="fam" colspan="{{$.Cols}}">{{.Family}}</td></tr>{{end}}
<tr><td>{{.Case}}</td>{{range .Cells}}<td class="{{.Outcome}}{{if .Deviation}} dev{{end}}" title="{{.Title}}">{{.Short}}</td>{{end}}</tr>{{end}}
</table>
<h2>Columns</h2><table><tr><th>column</th><th>release</th><th>arch</th><th>where</th><th>Landlock</th><th>ABI</th><th>expected ABI</th><th>root</th><th>git</th><th>toctou attempts</th><th>VM seconds</th><th>suite seconds</th><th>error</th><th>retries</th></tr>
{{range .Kernels}}<tr><td>{{.ID}}</td><td>{{.Release}}</td><td>{{.Arch}}</td><td>{{if .VM}}vm {{.Accel}}{{else}}host{{end}}</td><td>{{.Landlock}}</td><td>{{.ABI}}</td>
<td>{{if .ExpectedABI}}{{.ExpectedABI}}{{end}}</td><td>{{.Root}}</td><td>{{.Git}}</td><td>{{.Attempts}}</td><td>{{printf "%.1f" .Seconds}}</td><td>{{printf "%.1f" .SuiteSeconds}}</td><td>{{.Error}}{{if .Evidence}}<details><summary>watchdog evidence</summary><pre>{{range .Evidence}}{{.}}
{{end}}</pre></details>{{end}}</td><td>{{range .Retries}}INFRA after {{printf "%.1f" .Seconds}} s: {{.Error}}<br>{{end}}</td></tr>{{end}}
</table>
{{if .Races}}<h2>Race power</h2><p>Attempts per column, and the probability they had of catching the case's planted bug (conformance/mutants, rates in conformance/race-rates.json).</p><ul>{{range .Races}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{if .Problems}}<h2>Failures and deviations</h2><ul>{{range .Problems}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p>Hover a cell for its reason. Expectations: conformance/expected.yaml; cases: conformance/CASES.md.</p>
</body></html>
`

type htmlCell struct{ Outcome, Short, Title, Deviation string }
type htmlRow struct {
	Family, Case string
	Cells        []htmlCell
}

// HTML writes a self-contained page (no external resources).
func (m *Matrix) HTML(w io.Writer) error {
	byCell := map[[2]string]Result{}
	for _, r := range m.Results {
		byCell[[2]string{r.Case, r.KernelID}] = r
	}
	var rows []htmlRow
	lastFam := ""
	for _, c := range m.caseRows() {
		row := htmlRow{Case: c}
		if f := strings.SplitN(c, "/", 2)[0]; f != lastFam {
			row.Family, lastFam = f, f
		}
		for _, k := range m.Kernels {
			r, ok := byCell[[2]string{c, k.ID}]
			if !ok {
				row.Cells = append(row.Cells, htmlCell{Short: "-"})
				continue
			}
			short := map[string]string{expect.Pass: "PASS", expect.Fail: "FAIL", expect.Skip: "SKIP", expect.ExpectedFail: "XFAIL", Infra: "INFRA",
				Elsewhere: "→ " + r.RanIn}[r.Outcome]
			title := r.Reason
			if r.Issue != "" {
				title = "issue: " + r.Issue + "\n" + title
			}
			if r.Attempts > 0 {
				title += fmt.Sprintf("\nattempts: %d", r.Attempts)
				if r.Rate > 0 {
					title += fmt.Sprintf(", rate %.3g of %s (%s), power %s", r.Rate, r.Mutant, r.RateFrom, power.Percent(r.Power))
				} else {
					title += ", no measured rate: power unknown"
				}
			}
			if r.Deviation != "" {
				title = "DEVIATION: " + r.Deviation + "\n" + title
			}
			row.Cells = append(row.Cells, htmlCell{Outcome: r.Outcome, Short: short, Title: title, Deviation: r.Deviation})
		}
		rows = append(rows, row)
	}
	var problems []string
	for _, r := range m.Results {
		if r.Outcome == expect.Fail || r.Outcome == Infra || r.Deviation != "" {
			problems = append(problems, fmt.Sprintf("%s on %s: %s %s", r.Case, r.KernelID, r.Reason, r.Deviation))
		}
	}
	return page().Execute(w, map[string]any{"Kernels": m.Kernels, "Summary": m.Summary, "Verdict": m.Verdict(), "Coverage": m.Coverage, "Races": m.RacePower(), "Rows": rows,
		"Cols": len(m.Kernels) + 1, "Problems": problems})
}
