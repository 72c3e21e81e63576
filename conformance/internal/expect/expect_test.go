package expect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ids = []string{"boundary/a", "boundary/b", "git-worktree/linked-ops"}

func TestFor(t *testing.T) {
	f, err := Parse([]byte(`
schema: confine.conformance.expected/v1
rules:
  - cases: [boundary/*]
    when: {landlock: [absent, disabled]}
    outcome: SKIP
    why: no landlock
  - cases: [boundary/b]
    when: {abi: "1-2"}
    outcome: EXPECTED-FAIL
    issue: "#9"
    why: old
  - cases: [git-worktree/linked-ops]
    when: {git: true, vm: false}
    outcome: EXPECTED-FAIL
    issue: "#10"
    why: not yet
`), ids)
	require.NoError(t, err)
	assert.Equal(t, Skip, f.For("boundary/a", Env{Landlock: "absent"}).Outcome)
	assert.Equal(t, Pass, f.For("boundary/a", Env{Landlock: "available", ABI: 1}).Outcome)
	assert.Equal(t, Expectation{ExpectedFail, "#9", "old"}, f.For("boundary/b", Env{Landlock: "available", ABI: 2}))
	assert.Equal(t, Pass, f.For("boundary/b", Env{Landlock: "available", ABI: 3}).Outcome)
	assert.Equal(t, ExpectedFail, f.For("git-worktree/linked-ops", Env{Git: true}).Outcome)
	assert.Equal(t, Pass, f.For("git-worktree/linked-ops", Env{Git: true, VM: true}).Outcome)
}

func TestHostEmulation(t *testing.T) {
	f, err := Parse([]byte(`
schema: confine.conformance.expected/v1
rules:
  - cases: [boundary/a]
    when: {host_emulation: [no-namespaces, nested-supervisor]}
    outcome: SKIP
    why: no mount layer
  - cases: [boundary/b]
    when: {host_emulation: [none]}
    outcome: SKIP
    why: only under an emulation
`), ids)
	require.NoError(t, err)
	assert.Equal(t, Skip, f.For("boundary/a", Env{HostEmulation: "no-namespaces"}).Outcome)
	assert.Equal(t, Skip, f.For("boundary/a", Env{HostEmulation: "nested-supervisor"}).Outcome)
	assert.Equal(t, Pass, f.For("boundary/a", Env{HostEmulation: "ubuntu-userns-restricted"}).Outcome)
	assert.Equal(t, Pass, f.For("boundary/a", Env{}).Outcome)
	assert.Equal(t, Skip, f.For("boundary/b", Env{}).Outcome)
	assert.Equal(t, Pass, f.For("boundary/b", Env{HostEmulation: "no-namespaces"}).Outcome)
}

// A rule can name VM kernels by manifest id pattern: the abi_cap columns of 7.3 are "7.3-amd64-abi1" and so on.
func TestKernelPattern(t *testing.T) {
	f, err := Parse([]byte(`
schema: confine.conformance.expected/v1
rules:
  - cases: [boundary/a]
    when: {kernel: ["6.19-*", "7.*"]}
    outcome: SKIP
    why: needs a module only the linux-image kernels ship
`), ids)
	require.NoError(t, err)
	assert.Equal(t, Skip, f.For("boundary/a", Env{ABI: 1, Kernel: "7.3-amd64-abi1"}).Outcome)
	assert.Equal(t, Skip, f.For("boundary/a", Env{ABI: 7, Kernel: "6.19-arm64"}).Outcome)
	assert.Equal(t, Pass, f.For("boundary/a", Env{ABI: 7, Kernel: "6.16-amd64"}).Outcome)
	assert.Equal(t, Pass, f.For("boundary/a", Env{ABI: 7}).Outcome, "a host run has no kernel id")
}

func TestParseRejects(t *testing.T) {
	for name, body := range map[string]string{
		"schema":        "schema: x\nrules: []\n",
		"unknown key":   "schema: confine.conformance.expected/v1\nrules:\n  - cases: [boundary/a]\n    outcome: PASS\n    color: red\n",
		"bad outcome":   "schema: confine.conformance.expected/v1\nrules:\n  - cases: [boundary/a]\n    outcome: MAYBE\n",
		"xfail issue":   "schema: confine.conformance.expected/v1\nrules:\n  - cases: [boundary/a]\n    outcome: EXPECTED-FAIL\n    why: w\n",
		"skip why":      "schema: confine.conformance.expected/v1\nrules:\n  - cases: [boundary/a]\n    outcome: SKIP\n",
		"no match":      "schema: confine.conformance.expected/v1\nrules:\n  - cases: [nope/*]\n    outcome: PASS\n",
		"bad abi":       "schema: confine.conformance.expected/v1\nrules:\n  - cases: [boundary/a]\n    when: {abi: \"3-1\"}\n    outcome: PASS\n",
		"bad landlock":  "schema: confine.conformance.expected/v1\nrules:\n  - cases: [boundary/a]\n    when: {landlock: [maybe]}\n    outcome: PASS\n",
		"bad emulation": "schema: confine.conformance.expected/v1\nrules:\n  - cases: [boundary/a]\n    when: {host_emulation: [docker]}\n    outcome: PASS\n",
	} {
		_, err := Parse([]byte(body), ids)
		assert.Error(t, err, name)
	}
}

func TestABIRange(t *testing.T) {
	for s, want := range map[string][2]int{"3": {3, 3}, "1-2": {1, 2}, "5+": {5, 1 << 30}, "": {0, 1 << 30}} {
		lo, hi, err := abiRange(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, [2]int{lo, hi}, s)
	}
	for _, s := range []string{"x", "2-", "+3", "4-2"} {
		_, _, err := abiRange(s)
		assert.Error(t, err, s)
	}
}

func TestVerdict(t *testing.T) {
	xfail := Expectation{ExpectedFail, "#9", "old"}
	skip := Expectation{Skip, "", "no landlock"}
	pass := Expectation{Outcome: Pass}
	for _, c := range []struct {
		exp        Expectation
		got, shown string
		deviates   bool
	}{
		{pass, Pass, Pass, false},
		{pass, Fail, Fail, false}, // a failure, not a deviation
		{pass, Skip, Skip, true},
		{xfail, Fail, ExpectedFail, false},
		{xfail, Pass, Pass, true}, // fixed: the expectations must be updated
		{skip, Skip, Skip, false},
		{skip, Pass, Pass, true},
	} {
		shown, dev := c.exp.Verdict(c.got)
		assert.Equal(t, c.shown, shown, "%v got %s", c.exp, c.got)
		assert.Equal(t, c.deviates, dev != "", "%v got %s: %q", c.exp, c.got, dev)
	}
}
