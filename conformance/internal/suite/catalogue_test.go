package suite

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/conformance/internal/expect"
	"github.com/confine-dev/confine/conformance/internal/power"
)

// TestCatalogueUpToDate fails when CASES.md differs from what the code generates: run `go generate ./...` in
// conformance/ and commit the result.
func TestCatalogueUpToDate(t *testing.T) {
	b, err := os.ReadFile("../../CASES.md")
	require.NoError(t, err)
	if string(b) != Markdown() {
		t.Fatal("conformance/CASES.md is out of date: run `go generate ./...` in conformance/ and commit it")
	}
}

func TestCatalogueShape(t *testing.T) {
	idRe := regexp.MustCompile(`^[a-z-]+/[a-z0-9-]+$`)
	seen := map[string]bool{}
	perFamily := map[string]int{}
	for _, c := range All() {
		assert.Regexp(t, idRe, c.ID)
		assert.False(t, seen[c.ID], "duplicate case %s", c.ID)
		seen[c.ID] = true
		assert.Contains(t, Families, c.Family(), c.ID)
		perFamily[c.Family()]++
		assert.NotEmpty(t, c.Title, c.ID)
		assert.GreaterOrEqual(t, len(c.Rationale), 120, "%s: the rationale is one real paragraph", c.ID)
		assert.NotEmpty(t, c.Expect, "%s: expected results by kind of kernel", c.ID)
		assert.NotNil(t, c.Run, c.ID)
	}
	for _, f := range Families {
		assert.Positive(t, perFamily[f], "family %s has no case", f)
	}
}

// TestRateOf: a case planned by another's measured win rate names a real case that is planned by its own and
// has one in race-rates.json (else the borrower would drop to its fixed count, silently); every case of
// race-rates.json is a real case.
func TestRateOf(t *testing.T) {
	rates, err := power.Load("../../race-rates.json")
	require.NoError(t, err)
	ids := map[string]Case{}
	for _, c := range All() {
		ids[c.ID] = c
	}
	rated := map[string]bool{}
	for _, r := range rates.Rates {
		assert.Contains(t, ids, r.Case, "race-rates.json names a case that does not exist")
		rated[r.Case] = rated[r.Case] || r.Wins > 0
	}
	borrowed := 0
	for _, c := range All() {
		if c.RateOf == "" {
			continue
		}
		borrowed++
		of, ok := ids[c.RateOf]
		if assert.True(t, ok, "%s: RateOf %s is no case", c.ID, c.RateOf) {
			assert.Empty(t, of.RateOf, "%s: %s borrows a rate itself", c.ID, of.ID)
			assert.True(t, rated[of.ID], "%s: %s has no measured rate with a win in race-rates.json", c.ID, of.ID)
		}
	}
	assert.Positive(t, borrowed, "toctou-symlink-swap/metadata-swap borrows its fallback's rate")
}

// TestRatedWhere: the metadata races are planned from a measured rate only in columns whose launch gets the
// supervisor, where their planted bug lives: not under the mount layer, bwrap (whose refused fallback probe
// reports mount-layer) or seccomp-deny.
func TestRatedWhere(t *testing.T) {
	by := map[string]Case{}
	for _, c := range All() {
		by[c.ID] = c
	}
	plain, fallback := by["toctou-symlink-swap/metadata-swap"], by["toctou-symlink-swap/metadata-swap-fallback"]
	require.NotNil(t, plain.RatedWhere)
	require.NotNil(t, fallback.RatedWhere)
	for _, col := range []struct {
		metadata, noNamespaces string
		plain, fallback        bool
	}{
		{"mount-layer", "supervisor", false, true}, // most kernels
		{"supervisor", "supervisor", true, true},   // no mount namespace to be had
		{"seccomp-deny", "seccomp-deny", false, false},
		{"mount-layer", "mount-layer", false, false}, // bwrap
		{"", "", false, false},                       // a probe that failed
	} {
		assert.Equal(t, col.plain, plain.RatedWhere(col.metadata, col.noNamespaces), "metadata-swap in %+v", col)
		assert.Equal(t, col.fallback, fallback.RatedWhere(col.metadata, col.noNamespaces), "metadata-swap-fallback in %+v", col)
	}
}

func TestSelect(t *testing.T) {
	cs, err := Select([]string{"dev-null"}, nil)
	require.NoError(t, err)
	for _, c := range cs {
		assert.Equal(t, "dev-null", c.Family())
	}
	cs, err = Select(nil, []string{"passthrough/stdio"})
	require.NoError(t, err)
	require.Len(t, cs, 1)
	_, err = Select([]string{"nope"}, nil)
	assert.ErrorContains(t, err, "unknown family")
	_, err = Select(nil, []string{"boundary/nope"})
	assert.ErrorContains(t, err, "unknown case")
}

// TestExpectationsMatchNeeds keeps expected.yaml and the cases' preconditions in step: a case that needs
// Landlock is expected to SKIP where there is none (the VM's 5.10 and lsm-disabled kernels, which run the rest under
// bwrap), a case that needs a backend to SKIP where there is none at all, a no-Landlock case to SKIP where there is
// Landlock, one that needs a tool to SKIP without it, and every other case to PASS on those kernels.
func TestExpectationsMatchNeeds(t *testing.T) {
	var ids []string
	for _, c := range All() {
		ids = append(ids, c.ID)
	}
	exp, err := expect.Load("../../expected.yaml", ids)
	require.NoError(t, err)
	for _, c := range All() {
		for _, status := range []string{"absent", "disabled"} {
			got := exp.For(c.ID, expect.Env{Landlock: status, VM: true, Backend: "bwrap", Bwrap: true, Git: true})
			switch {
			case c.Needs.HostOnly != "":
				// VM is set: a host-only case skips in every guest (an earlier rule may say why first).
				assert.Equal(t, expect.Skip, got.Outcome, "%s in a VM guest", c.ID)
			case c.Needs.Landlock:
				assert.Equal(t, expect.Skip, got.Outcome, "%s on Landlock %s", c.ID, status)
			case c.Family() == "side-channels" && got.Outcome == expect.Skip:
				assert.True(t, strings.HasPrefix(got.Why, "open and reported: "), "%s under bwrap: a side-channels SKIP must be 'open and reported: …', got %q", c.ID, got.Why)
			case c.Family() == "deputy" && got.Outcome == expect.Skip:
				// This env is the unprivileged pass's (Root false): a route only root can build skips.
				assert.True(t, strings.HasPrefix(got.Why, "needs root: "), "%s under bwrap: a deputy SKIP here must be 'needs root: …', got %q", c.ID, got.Why)
			case got.Outcome == expect.Skip && strings.HasPrefix(got.Why, "needs root: "):
				// This env is the unprivileged pass's: a case whose setup only root can make says so.
			case got.Outcome == expect.Skip && strings.HasPrefix(got.Why, "requires git >= "):
				// a case that needs a newer git than the machines of the matrix carry (git-worktree/parity-reftable)
			default:
				assert.Contains(t, []string{expect.Pass, expect.ExpectedFail}, got.Outcome, "%s on Landlock %s (bwrap)", c.ID, status)
			}
			none := exp.For(c.ID, expect.Env{Landlock: status, Backend: "none", Git: true})
			if c.Needs.Confined || c.Needs.Landlock {
				assert.Equal(t, expect.Skip, none.Outcome, "%s on Landlock %s without bwrap", c.ID, status)
			}
		}
		avail := exp.For(c.ID, expect.Env{Landlock: "available", ABI: 7, VM: true, Git: true})
		if c.Needs.HostOnly != "" {
			assert.Equal(t, expect.Skip, avail.Outcome, "%s in a VM guest", c.ID)
			assert.True(t, strings.HasPrefix(avail.Why, "runs in the host suite only"), "%s: %q", c.ID, avail.Why)
		}
		avail = exp.For(c.ID, expect.Env{Landlock: "available", ABI: 7, VM: true, Git: false})
		switch {
		case c.Family() == "side-channels" && avail.Outcome == expect.Skip:
			// A side channel the kernel or the fallback cannot close is reported open: a SKIP, and only that.
			assert.True(t, strings.HasPrefix(avail.Why, "open and reported: "), "%s: a side-channels SKIP must be 'open and reported: …', got %q", c.ID, avail.Why)
		case c.Family() == "deputy" && avail.Outcome == expect.Skip:
			// As above: the unprivileged pass cannot build a route that needs root (a device node), and says so.
			assert.True(t, strings.HasPrefix(avail.Why, "needs root: ") || strings.HasPrefix(avail.Why, "open and reported: "),
				"%s: a deputy SKIP must be 'needs root: …' or 'open and reported: …', got %q", c.ID, avail.Why)
		case avail.Outcome == expect.Skip && strings.HasPrefix(avail.Why, "needs root: "):
			// As above: the unprivileged pass cannot make what only root can, and says so.
		case c.Needs.HostOnly != "":
			// Checked above: a host-only case skips in every guest.
		case c.Needs.NoLandlk || contains(c.Needs.Tools, "git") || contains(c.Needs.Tools, "bwrap"):
			// The env above has neither git nor bwrap; python3 and unshare are everywhere the suite runs (the VM
			// guest: vm/kernels.json guest_tools, busybox).
			assert.Equal(t, expect.Skip, avail.Outcome, c.ID)
		case c.Family() == "toolchains" && avail.Outcome == expect.Skip:
			// A tool that cannot work under confine is checked to fail the documented way, and says so.
			assert.True(t, strings.HasPrefix(avail.Why, "fails, and says why: ") || strings.HasPrefix(avail.Why, "unavailable and reported: "),
				"%s: a toolchains SKIP must be 'fails, and says why: …' or 'unavailable and reported: …', got %q", c.ID, avail.Why)
		default:
			assert.Contains(t, []string{expect.Pass, expect.ExpectedFail}, avail.Outcome, c.ID)
		}
	}
}

// TestJudge pins the family's verdict table: closed passes, a lie fails, open and reported skips.
func TestJudge(t *testing.T) {
	run := func(status string, open bool) *T {
		tt := &T{}
		r := scRun{rep: &scReport{Channels: map[string]ChannelStatus{}}, raw: "{}"}
		if status != "" {
			r.rep.Channels["ipc"] = ChannelStatus{Status: status, How: "test"}
		}
		guard(tt, func() { judge(tt, r, "ipc", open, "evidence") })
		return tt
	}
	for _, c := range []struct {
		status        string
		open          bool
		failed, skips bool
	}{{"closed", false, false, false}, {"open", false, false, false}, {"closed", true, true, false},
		{"open", true, false, true}, {"", false, true, false}, {"ajar", false, true, false}} {
		got := run(c.status, c.open)
		assert.Equal(t, c.failed, got.failed, "%+v", c)
		assert.Equal(t, c.skips, got.skipped, "%+v", c)
	}
}

// TestGitTableUpToDate fails when sandbox/README.md's git table differs from what the git parity cases check
// (gitGaps): run `out/confine-conformance git-table` and put its output in place of the old table.
func TestGitTableUpToDate(t *testing.T) {
	b, err := os.ReadFile("../../../sandbox/README.md")
	require.NoError(t, err)
	if !strings.Contains(string(b), GitTable()) {
		t.Fatal("sandbox/README.md's git table is out of date: replace it with the output of `confine-conformance git-table`")
	}
}

// TestGitGapsNameSteps keeps the table's rows tied to the script: each names a step of paritySteps, a class, modes
// the cases can report, a cause and a workaround; only a loud row may leave something.
func TestGitGapsNameSteps(t *testing.T) {
	var steps []string
	for _, s := range paritySteps {
		steps = append(steps, s.Name)
	}
	for _, g := range gitGaps {
		assert.Contains(t, steps, g.Step)
		assert.Contains(t, []string{parityLoud, paritySilent}, g.Class, g.Step)
		assert.NotEmpty(t, g.Modes, g.Step)
		for _, m := range g.Modes {
			assert.Contains(t, parityModes, m, g.Step)
		}
		assert.NotEmpty(t, g.Cause, g.Step)
		assert.NotEmpty(t, g.Workaround, g.Step)
		assert.True(t, g.Leaves == "" || g.Class == parityLoud, "%s: only a loud step leaves something", g.Step)
	}
}

// TestParityClass pins the classification: the same, loud (a clean failure, or one that only adds refs), and
// silent (exit 0 with another state, or a failure that changed what a later command reads).
func TestParityClass(t *testing.T) {
	pre := map[string]string{"refs": "refs/heads/a 1", "HEAD": "1"}
	same := map[string]string{"refs": "refs/heads/a 1", "HEAD": "1"}
	moved := map[string]string{"refs": "refs/heads/a 1", "HEAD": "2"}
	added := map[string]string{"refs": "refs/heads/a 1\nrefs/heads/b 1", "HEAD": "1"}
	for _, c := range []struct {
		ea, eb      int
		sa, sb      map[string]string
		want, diff0 string
	}{
		{0, 0, moved, moved, paritySame, ""},
		{1, 1, same, same, paritySame, ""},
		{0, 1, moved, same, parityLoud, "HEAD: "},
		{0, 128, added, added, parityLoud, "leaves: "},
		{0, 0, moved, same, paritySilent, "HEAD: "},
		{0, 1, moved, moved, paritySilent, "failed and left state behind: "},
		{0, 1, same, moved, paritySilent, "failed and left state behind: "},
	} {
		got, diff := parityClass(c.ea, c.eb, pre, c.sa, c.sb)
		assert.Equal(t, c.want, got, "%+v", c)
		assert.True(t, strings.HasPrefix(diff, c.diff0), "%q", diff)
	}
}
