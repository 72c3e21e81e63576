// Package gate decides whether a conformance report lets a release ship. It reads reports/matrix.json
// (schema confine.matrix/v1, written by `confine-conformance report`) and fails the release when the
// report is malformed; was gated on other expectations than the reviewed conformance/expected.yaml (its
// expected_sha256); was planned (`make matrix` runs a case once where its outcome cannot differ, and marks
// the other cells ELSEWHERE: a release needs `make matrix-full`, every case in every column); lacks a kernel
// of vm/kernels.json or a case of conformance/CASES.md on some kernel; holds an infrastructure failure
// instead of a verdict; has a case that got worse than expected on any kernel (INFRA, no verdict, is
// worst); or ran a confine whose sha256 is not the released launcher of that kernel's architecture (an
// ABI-capped column excepted: it runs the confine_abicap test build by design).
package gate

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Schema is the matrix.json schema this package reads.
const Schema = "confine.matrix/v1"

// Inputs names the files the gate reads and the released launchers.
type Inputs struct {
	Matrix   string // reports/matrix.json
	Expected string // conformance/expected.yaml
	Kernels  string // vm/kernels.json
	Cases    string // conformance/CASES.md
	// Released maps a GOARCH ("amd64", "arm64") to the hex sha256 of the released plain Linux launcher.
	Released map[string]string
}

// Problem is one reason the gate fails. Kernel and Case are "" when the problem is not about one.
type Problem struct {
	Kernel, Case, Expected, Got, Detail string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString("FAIL")
	for _, kv := range [][2]string{{"kernel", p.Kernel}, {"case", p.Case}, {"expected", p.Expected}, {"got", p.Got}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	return b.String()
}

type matrix struct {
	Schema         string `json:"schema"`
	ExpectedSHA256 string `json:"expected_sha256"`
	Kernels        []struct {
		ID            string `json:"id"`
		Arch          string `json:"arch"`
		RunResult     string `json:"run_result"`
		Error         string `json:"error"`
		ConfineSHA256 string `json:"confine_sha256"`
		ABICap        int    `json:"abi_cap"` // > 0: the column ran the confine_abicap test build, not the release
	} `json:"kernels"`
	Results []struct {
		KernelID string `json:"kernel_id"`
		Case     string `json:"case"`
		Outcome  string `json:"outcome"`
		Expected string `json:"expected"`
		Reason   string `json:"reason"`
	} `json:"results"`
}

// rank orders outcomes from worst to best; a result ranked below its expectation got worse.
// INFRA (no verdict: the VM run failed) is worse than anything.
var rank = map[string]int{"INFRA": -1, "FAIL": 0, "SKIP": 1, "EXPECTED-FAIL": 2, "PASS": 3}

// elsewhereOutcome marks a cell the gate's plan (`make matrix`) ran in another column (conformance report's
// Elsewhere). No such cell is a verdict of its own, so a report that has one cannot gate a release.
const elsewhereOutcome = "ELSEWHERE"

// unameArch maps uname -m (what a run records) to GOARCH.
var unameArch = map[string]string{"x86_64": "amd64", "aarch64": "arm64", "amd64": "amd64", "arm64": "arm64"}

var caseHeading = regexp.MustCompile("(?m)^### `([^`]+)`$")

// Check runs the gate. It returns the problems found (none: the release may ship) and the hex sha256
// of the matrix file (what every manifest records). An error means an input other than the matrix
// could not be read; a malformed matrix is a Problem.
func Check(in Inputs) ([]Problem, string, error) {
	raw, err := os.ReadFile(in.Matrix)
	if err != nil {
		return nil, "", fmt.Errorf("gate: %w", err)
	}
	digest := sha256hex(raw)
	expRaw, err := os.ReadFile(in.Expected)
	if err != nil {
		return nil, digest, fmt.Errorf("gate: %w", err)
	}
	var man struct {
		Kernels []struct {
			ID   string `json:"id"`
			Arch string `json:"arch"`
		} `json:"kernels"`
	}
	if b, err := os.ReadFile(in.Kernels); err != nil {
		return nil, digest, fmt.Errorf("gate: %w", err)
	} else if err := json.Unmarshal(b, &man); err != nil || len(man.Kernels) == 0 {
		return nil, digest, fmt.Errorf("gate: %s: no kernels (%v)", in.Kernels, err)
	}
	casesMD, err := os.ReadFile(in.Cases)
	if err != nil {
		return nil, digest, fmt.Errorf("gate: %w", err)
	}
	var cases []string
	for _, m := range caseHeading.FindAllSubmatch(casesMD, -1) {
		cases = append(cases, string(m[1]))
	}
	if len(cases) == 0 {
		return nil, digest, fmt.Errorf("gate: %s lists no cases", in.Cases)
	}

	var m matrix
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil {
		return []Problem{{Detail: fmt.Sprintf("%s is malformed: %v", in.Matrix, err)}}, digest, nil
	}
	if m.Schema != Schema {
		return []Problem{{Detail: fmt.Sprintf("%s has schema %q, want %q", in.Matrix, m.Schema, Schema)}}, digest, nil
	}
	var ps []Problem
	if want := sha256hex(expRaw); m.ExpectedSHA256 != want {
		ps = append(ps, Problem{Detail: fmt.Sprintf("the report was gated on expectations with sha256 %q, not %s (%s): re-run the report",
			m.ExpectedSHA256, want, in.Expected)})
	}
	kernels := map[string]bool{}
	for _, k := range m.Kernels {
		kernels[k.ID] = true
		switch {
		case k.RunResult == "infra" || k.Error != "":
			ps = append(ps, Problem{Kernel: k.ID, Expected: "a verdict", Got: "infra", Detail: k.Error})
		case k.ConfineSHA256 == "":
			ps = append(ps, Problem{Kernel: k.ID, Detail: "the run recorded no confine sha256"})
		case k.ABICap > 0:
			// An ABI-capped column runs the confine_abicap test build of the same source (vm/README.md): a
			// release is never that build, so its sha256 cannot be the released one. Its verdicts still gate.
		case k.ConfineSHA256 != in.Released[unameArch[k.Arch]]:
			ps = append(ps, Problem{Kernel: k.ID, Detail: fmt.Sprintf("ran confine sha256 %s, the released %s launcher is %q",
				k.ConfineSHA256, unameArch[k.Arch], in.Released[unameArch[k.Arch]])})
		}
	}
	for _, k := range man.Kernels {
		if !kernels[k.ID] {
			ps = append(ps, Problem{Kernel: k.ID, Expected: "a column", Got: "missing", Detail: "kernel of " + in.Kernels + " not in the report"})
		}
	}
	seen := map[[2]string]bool{}
	elsewhere := 0
	for _, r := range m.Results {
		seen[[2]string{r.KernelID, r.Case}] = true
		if r.Outcome == elsewhereOutcome {
			elsewhere++
			continue
		}
		got, gok := rank[r.Outcome]
		want, wok := rank[r.Expected]
		switch {
		case !gok || !wok:
			ps = append(ps, Problem{Kernel: r.KernelID, Case: r.Case, Expected: r.Expected, Got: r.Outcome, Detail: "not an outcome"})
		case got < want:
			ps = append(ps, Problem{Kernel: r.KernelID, Case: r.Case, Expected: r.Expected, Got: r.Outcome, Detail: r.Reason})
		}
	}
	if elsewhere > 0 {
		ps = append(ps, Problem{Expected: "every case in every column", Got: "a planned run",
			Detail: fmt.Sprintf("%d cells of %s ran in another column (the gate's plan, `make matrix`): a release needs `make matrix-full`",
				elsewhere, in.Matrix)})
	}
	for _, k := range m.Kernels {
		for _, c := range cases {
			if !seen[[2]string{k.ID, c}] {
				ps = append(ps, Problem{Kernel: k.ID, Case: c, Expected: "a result", Got: "missing"})
			}
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Kernel < ps[j].Kernel })
	return ps, digest, nil
}

func sha256hex(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }
