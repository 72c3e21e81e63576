package plan

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/conformance/internal/suite"
)

func cols() []Column {
	return []Column{
		{ID: "5.10-amd64", Kernel: "5.10-amd64", Arch: "amd64", Landlock: "absent", Backend: "bwrap", User: "root"},
		{ID: "6.1-amd64", Kernel: "6.1-amd64", Arch: "amd64", Landlock: "available", ABI: 2, Backend: "landlock", User: "root"},
		{ID: "6.1-amd64@nobody", Kernel: "6.1-amd64", Arch: "amd64", Landlock: "available", ABI: 2, Backend: "landlock", User: "nobody"},
		{ID: "7.3-amd64", Kernel: "7.3-amd64", Arch: "amd64", Landlock: "available", ABI: 11, Backend: "landlock", User: "root"},
		{ID: "7.3-amd64-abi1", Kernel: "7.3-amd64-abi1", Arch: "amd64", Landlock: "available", ABI: 1, Backend: "landlock", User: "root"},
		{ID: "7.3-arm64", Kernel: "7.3-arm64", Arch: "arm64", Landlock: "available", ABI: 11, Backend: "landlock", User: "root"},
	}
}

func TestMake(t *testing.T) {
	deps := map[string][]Dim{"a/nothing": {}, "a/abi": {ABI}, "a/user": {Backend, User}}
	p := Make([]string{"a/nothing", "a/abi", "a/user", "a/new"}, cols(), func(id string) []Dim {
		if d, ok := deps[id]; ok {
			return d
		}
		return All
	})
	// Nothing: once per arch, in the first column of each.
	assert.Equal(t, []string{"5.10-amd64", "7.3-arm64"}, p.Runs["a/nothing"])
	assert.Equal(t, "ran in 5.10-amd64: the same arch", p.Elsewhere["a/nothing"]["7.3-amd64"])
	// The ABI: every distinct (Landlock state, ABI) per arch; 6.1's nobody pass has root's.
	assert.Equal(t, []string{"5.10-amd64", "6.1-amd64", "7.3-amd64", "7.3-amd64-abi1", "7.3-arm64"}, p.Runs["a/abi"])
	assert.Equal(t, "ran in 6.1-amd64: the same arch, abi", p.Elsewhere["a/abi"]["6.1-amd64@nobody"])
	// Backend and user: bwrap root, landlock root, landlock nobody on amd64; arm64.
	assert.Equal(t, []string{"5.10-amd64", "6.1-amd64", "6.1-amd64@nobody", "7.3-arm64"}, p.Runs["a/user"])
	// Undeclared: every column.
	assert.Len(t, p.Runs["a/new"], len(cols()))
	assert.Empty(t, p.Elsewhere["a/new"])
	run, all := p.Cells()
	assert.Equal(t, 2+5+4+6, run)
	assert.Equal(t, 4*6, all)
	assert.True(t, strings.HasPrefix(p.Summary()[0], "a/nothing"))
}

// A case declared with the ABI's step runs once per step: ABIs 6 to 8 are one step, 10 and 11 another, and the
// Landlock state still tells a kernel without Landlock from one where it is disabled.
func TestABIStep(t *testing.T) {
	for abi, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 3, 4: 3, 5: 5, 6: 6, 7: 6, 8: 6, 9: 9, 11: 9, 12: 9} {
		assert.Equal(t, want, Step(abi), "ABI %d", abi)
	}
	cs := []Column{
		{ID: "5.10-amd64", Kernel: "5.10-amd64", Arch: "amd64", Landlock: "absent", Backend: "bwrap", User: "root"},
		{ID: "6.12-amd64-disabled", Kernel: "6.12-amd64-disabled", Arch: "amd64", Landlock: "disabled", Backend: "bwrap", User: "root"},
		{ID: "6.12-amd64", Kernel: "6.12-amd64", Arch: "amd64", Landlock: "available", ABI: 6, Backend: "landlock", User: "root"},
		{ID: "7.0-amd64", Kernel: "7.0-amd64", Arch: "amd64", Landlock: "available", ABI: 8, Backend: "landlock", User: "root"},
		{ID: "7.2-amd64", Kernel: "7.2-amd64", Arch: "amd64", Landlock: "available", ABI: 10, Backend: "landlock", User: "root"},
		{ID: "7.3-amd64", Kernel: "7.3-amd64", Arch: "amd64", Landlock: "available", ABI: 11, Backend: "landlock", User: "root"},
		{ID: "7.3-amd64-abi5", Kernel: "7.3-amd64-abi5", Arch: "amd64", Landlock: "available", ABI: 5, Backend: "landlock", User: "root"},
	}
	p := Make([]string{"a/launch"}, cs, func(string) []Dim { return Launch })
	assert.Equal(t, []string{"5.10-amd64", "6.12-amd64-disabled", "6.12-amd64", "7.2-amd64", "7.3-amd64-abi5"}, p.Runs["a/launch"])
	assert.Equal(t, "ran in 6.12-amd64: the same arch, abi-step, backend, user, host-emulation, cmdline", p.Elsewhere["a/launch"]["7.0-amd64"])
	assert.Equal(t, "ran in 7.2-amd64: the same arch, abi-step, backend, user, host-emulation, cmdline", p.Elsewhere["a/launch"]["7.3-amd64"])
}

func TestColumnsFromManifest(t *testing.T) {
	cs, err := Columns("../../../vm/kernels.json")
	require.NoError(t, err)
	require.NotEmpty(t, cs)
	byID := map[string]Column{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	assert.Equal(t, 2*len(cs)/2, len(byID), "each entry as root and as nobody")
	assert.Equal(t, "bwrap", byID["5.10-amd64"].Backend)
	assert.Equal(t, "nobody", byID["7.3-amd64@nobody"].User)
	assert.Equal(t, 1, byID["7.3-amd64-abi1"].ABI, "a cap is the ABI confine acts as")
	assert.Equal(t, "no-namespaces", byID["6.1-amd64-no-namespaces"].HostEmu)
}

// The payload has loop.ko and binfmt_misc.ko for the linux-image kernels only (5.10 to 6.18; expected.yaml skips
// device-node and wsl-interop on 6.19 and 7.x): ABI step 6 must keep running them in 6.12, its first column, not in
// a later kernel of the step where they skip.
func TestStepSixRunsWhereModulesAre(t *testing.T) {
	cs, err := Columns("../../../vm/kernels.json")
	require.NoError(t, err)
	var ids []string
	for _, c := range suite.All() {
		ids = append(ids, c.ID)
	}
	p := Make(ids, cs, Depends)
	for _, id := range []string{"deputy/device-node", "wsl-interop/exe-escape", "wsl-interop/no-layer-refused"} {
		for _, col := range []string{"6.12-amd64", "6.12-amd64@nobody", "6.12-arm64"} {
			assert.Contains(t, p.Runs[id], col, "%s must run in %s", id, col)
		}
	}
}

// Arch is every case's dimension, so over the real manifest no column stands for one of the other arch: a run of
// one arch (MATRIX_FLAGS="--arch A") keeps the plan and still has every cell's stand-in.
func TestAStandInSharesTheArch(t *testing.T) {
	cs, err := Columns("../../../vm/kernels.json")
	require.NoError(t, err)
	arch := map[string]string{}
	for _, c := range cs {
		arch[c.ID] = c.Arch
	}
	var ids []string
	for _, c := range suite.All() {
		ids = append(ids, c.ID)
	}
	p := Make(ids, cs, Depends)
	n := 0
	for id, cells := range p.Elsewhere {
		for col, why := range cells {
			by, _, _ := strings.Cut(strings.TrimPrefix(why, "ran in "), ":")
			require.Contains(t, arch, by, "%s in %s: %q names no column", id, col, why)
			assert.Equal(t, arch[col], arch[by], "%s: %s stands for %s", id, by, col)
			n++
		}
	}
	assert.Positive(t, n, "the plan runs some case elsewhere")
}

// Case lists every column once, in manifest order, and says where each ran.
func TestCase(t *testing.T) {
	p := Make([]string{"a/x"}, cols(), func(string) []Dim { return nil })
	lines, ok := p.Case("a/x")
	require.True(t, ok)
	require.Len(t, lines, len(p.Columns)+1)
	assert.Contains(t, lines[1], "runs")
	for _, l := range lines[2:] {
		if !strings.Contains(l, " runs") {
			assert.Contains(t, l, "-> ran in ", l)
		}
	}
	_, ok = p.Case("a/none")
	assert.False(t, ok)
}

func TestDepends(t *testing.T) {
	assert.Equal(t, All, Depends("abi-negotiation/reported-abi"), "a case declared nowhere")
	assert.Equal(t, All, Depends("boundary/never-declared"), "a new case of a Launch family, not yet declared")
	assert.Equal(t, Launch, Depends("boundary/write-outside-denied"))
	assert.Empty(t, Depends("fail-closed/usage"))
	assert.Equal(t, All, Depends("side-channels/metadata-file-setattr"))
}

// Every declaration names a case of the catalogue, once: a renamed case must not leave a stale line that silently
// stops applying, and an id declared twice would have two answers.
func TestDeclaredNamesRealCases(t *testing.T) {
	ids := map[string]bool{}
	for _, c := range suite.All() {
		ids[c.ID] = true
	}
	seen := map[string]bool{}
	for _, d := range Declared() {
		assert.True(t, ids[d], "conformance/internal/plan/depends.go names %q, which is no case", d)
		assert.False(t, seen[d], "conformance/internal/plan/depends.go declares %q twice", d)
		seen[d] = true
	}
}
