package gate

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	amd64Sum = "aa00000000000000000000000000000000000000000000000000000000000000"
	arm64Sum = "bb00000000000000000000000000000000000000000000000000000000000000"
)

// fixture writes a two-kernel, two-case world and a matrix that passes the gate; edit changes the
// decoded matrix before it is written (nil: as is). It returns the Inputs.
func fixture(t *testing.T, edit func(m map[string]any)) Inputs {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exp := "schema: confine.conformance.expected/v1\nrules: []\n"
	in := Inputs{
		Expected: write("expected.yaml", exp),
		Kernels:  write("kernels.json", `{"kernels":[{"id":"6.1-amd64","arch":"amd64"},{"id":"7.3-arm64","arch":"arm64"}]}`),
		Cases:    write("CASES.md", "# cases\n\n### `boundary/write-inside`\ntext\n\n### `fail-closed/no-landlock-sentinel`\ntext\n"),
		Released: map[string]string{"amd64": amd64Sum, "arm64": arm64Sum},
	}
	m := map[string]any{
		"schema":          Schema,
		"expected_sha256": fmt.Sprintf("%x", sha256.Sum256([]byte(exp))),
		"kernels": []any{
			map[string]any{"id": "6.1-amd64", "arch": "x86_64", "run_result": "ok", "confine_sha256": amd64Sum},
			map[string]any{"id": "7.3-arm64", "arch": "aarch64", "run_result": "ok", "confine_sha256": arm64Sum},
		},
		"results": []any{
			map[string]any{"kernel_id": "6.1-amd64", "case": "boundary/write-inside", "outcome": "PASS", "expected": "PASS"},
			map[string]any{"kernel_id": "6.1-amd64", "case": "fail-closed/no-landlock-sentinel", "outcome": "SKIP", "expected": "SKIP"},
			map[string]any{"kernel_id": "7.3-arm64", "case": "boundary/write-inside", "outcome": "PASS", "expected": "PASS"},
			map[string]any{"kernel_id": "7.3-arm64", "case": "fail-closed/no-landlock-sentinel", "outcome": "SKIP", "expected": "SKIP"},
		},
	}
	if edit != nil {
		edit(m)
	}
	b, _ := json.Marshal(m)
	in.Matrix = write("matrix.json", string(b))
	return in
}

func check(t *testing.T, in Inputs) []string {
	t.Helper()
	ps, digest, err := Check(in)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(in.Matrix)
	if digest != fmt.Sprintf("%x", sha256.Sum256(raw)) {
		t.Fatalf("digest %s is not the matrix file's sha256", digest)
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
		t.Log(p)
	}
	return out
}

func results(m map[string]any) []any { return m["results"].([]any) }
func kernels(m map[string]any) []any { return m["kernels"].([]any) }

func TestGoodReportPasses(t *testing.T) {
	if ps := check(t, fixture(t, nil)); len(ps) != 0 {
		t.Fatalf("a report as expected failed the gate: %q", ps)
	}
}

func TestPlantedRegressions(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(m map[string]any)
		want string
	}{
		"flipped case": {func(m map[string]any) {
			r := results(m)[2].(map[string]any)
			r["outcome"], r["reason"] = "FAIL", "wrote outside the worktree"
		}, "FAIL kernel=7.3-arm64 case=boundary/write-inside expected=PASS got=FAIL: wrote outside the worktree"},
		"pass became skip": {func(m map[string]any) {
			results(m)[0].(map[string]any)["outcome"] = "SKIP"
		}, "kernel=6.1-amd64 case=boundary/write-inside expected=PASS got=SKIP"},
		"missing kernel": {func(m map[string]any) {
			m["kernels"] = kernels(m)[:1]
			m["results"] = results(m)[:2]
		}, "kernel=7.3-arm64 expected=a column got=missing"},
		"missing case": {func(m map[string]any) {
			m["results"] = results(m)[:3]
		}, "kernel=7.3-arm64 case=fail-closed/no-landlock-sentinel expected=a result got=missing"},
		"infra": {func(m map[string]any) {
			k := kernels(m)[1].(map[string]any)
			k["run_result"], k["error"] = "infra", "qemu: boot timed out"
		}, "kernel=7.3-arm64 expected=a verdict got=infra: qemu: boot timed out"},
		"other binary": {func(m map[string]any) {
			kernels(m)[0].(map[string]any)["confine_sha256"] = strings.Repeat("cd", 32)
		}, "kernel=6.1-amd64: ran confine sha256 " + strings.Repeat("cd", 32) + ", the released amd64 launcher is"},
		"infra verdict": {func(m map[string]any) {
			r := results(m)[2].(map[string]any)
			r["outcome"], r["reason"] = "INFRA", "no verdict: the guest went silent"
		}, "expected=PASS got=INFRA: no verdict: the guest went silent"},
		"capped column ran another build, yet fails": {func(m map[string]any) {
			k := kernels(m)[1].(map[string]any)
			k["abi_cap"], k["confine_sha256"] = 3, strings.Repeat("ab", 32)
			results(m)[2].(map[string]any)["outcome"] = "FAIL"
		}, "kernel=7.3-arm64 case=boundary/write-inside expected=PASS got=FAIL"},
		"no binary recorded": {func(m map[string]any) {
			delete(kernels(m)[0].(map[string]any), "confine_sha256")
		}, "kernel=6.1-amd64: the run recorded no confine sha256"},
		"other expectations": {func(m map[string]any) {
			m["expected_sha256"] = strings.Repeat("00", 32)
		}, "the report was gated on expectations with sha256"},
		"planned run": {func(m map[string]any) {
			r := results(m)[3].(map[string]any)
			r["outcome"], r["ran_in"] = "ELSEWHERE", "6.1-amd64"
		}, "expected=every case in every column got=a planned run: 1 cells of"},
		"other schema": {func(m map[string]any) {
			m["schema"] = "confine.matrix/v0"
		}, `has schema "confine.matrix/v0"`},
	} {
		t.Run(name, func(t *testing.T) {
			ps := check(t, fixture(t, tc.edit))
			if !strings.Contains(strings.Join(ps, "\n"), tc.want) {
				t.Fatalf("gate said %q, want a problem containing %q", ps, tc.want)
			}
		})
	}
}

// A planned report fails the gate once, not once per cell the plan ran elsewhere.
func TestAPlannedReportIsOneProblem(t *testing.T) {
	ps := check(t, fixture(t, func(m map[string]any) {
		for _, i := range []int{2, 3} {
			r := results(m)[i].(map[string]any)
			r["outcome"], r["ran_in"] = "ELSEWHERE", "6.1-amd64"
		}
	}))
	if len(ps) != 1 || !strings.Contains(ps[0], "2 cells of") || !strings.Contains(ps[0], "make matrix-full") {
		t.Fatalf("gate of a planned report said %q", ps)
	}
}

// An ABI-capped column runs the confine_abicap test build, whose sha256 is not the release's: that alone is no
// problem.
func TestACappedColumnMayRunTheTestBuild(t *testing.T) {
	ps := check(t, fixture(t, func(m map[string]any) {
		k := kernels(m)[1].(map[string]any)
		k["abi_cap"], k["confine_sha256"] = 3, strings.Repeat("ab", 32)
	}))
	if len(ps) != 0 {
		t.Fatalf("a capped column that passed failed the gate: %q", ps)
	}
}

func TestMalformedReport(t *testing.T) {
	in := fixture(t, nil)
	b, _ := os.ReadFile(in.Matrix)
	if err := os.WriteFile(in.Matrix, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	ps := check(t, in)
	if len(ps) != 1 || !strings.Contains(ps[0], "matrix.json is malformed: unexpected EOF") {
		t.Fatalf("gate of a truncated report said %q", ps)
	}
}
