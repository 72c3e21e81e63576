package runner

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestETA(t *testing.T) {
	expect := map[string]float64{"a": 100, "b": 60, "c": 40}
	// Two slots, nothing started: the longest first, each next to the slot that frees first: a | b+c = 100.
	left, ok := eta(expect, 0, nil, []string{"a", "b", "c"}, 2)
	require.True(t, ok)
	assert.Equal(t, 100*time.Second, left)
	// a has run 70 s of its 100: 30 left on its slot; b and c queued: 30+40 | 60 -> 70.
	left, _ = eta(expect, 0, map[string]time.Duration{"a": 70 * time.Second}, []string{"b", "c"}, 2)
	assert.Equal(t, 70*time.Second, left)
	// A kernel without a cached time takes this run's mean so far; a running one past its estimate has 0 left.
	left, _ = eta(expect, 50, map[string]time.Duration{"a": 200 * time.Second}, []string{"new"}, 1)
	assert.Equal(t, 50*time.Second, left)
	// Without this run's mean, the cached mean (200/3 s) stands in.
	left, _ = eta(expect, 0, nil, []string{"new"}, 1)
	assert.InDelta(t, 66.7, left.Seconds(), 0.1)
	// Nothing to go on: no estimate.
	_, ok = eta(nil, 0, nil, []string{"x"}, 1)
	assert.False(t, ok)
}

func TestTimingsRoundTrip(t *testing.T) {
	f := filepath.Join(t.TempDir(), "vm", "timings.json")
	assert.Empty(t, loadTimings(f), "a missing file is no timings")
	tm := Timings{"confine-conformance": {"7.3-amd64": 516}}
	require.NoError(t, tm.save(f))
	assert.Equal(t, tm, loadTimings(f))
}
