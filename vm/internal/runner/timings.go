package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Timings are the wall seconds each kernel id's VM took the last time a command ran in it, per guest command
// (the payload's argv[0] basename: the conformance suite and the ABI probe differ a hundredfold), kept in the
// cache (CACHE/vm/timings.json) so that the next run's progress lines can say how long is left from the start.
type Timings map[string]map[string]float64

// loadTimings reads file; a missing or unreadable file is no timings.
func loadTimings(file string) Timings {
	t := Timings{}
	if b, err := os.ReadFile(file); err == nil {
		_ = json.Unmarshal(b, &t)
	}
	return t
}

// save writes t to file (atomically: a temporary file renamed over it).
func (t Timings) save(file string) error {
	b, err := json.MarshalIndent(t, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// eta estimates the wall time left: each kernel's expected seconds (its cached time, else the mean of the
// kernels done in this run, else the mean of the cached times, else unknown) less what a running one has
// had, packed greedily onto jobs slots, longest first. ok is false when nothing is known to estimate from.
func eta(expect map[string]float64, doneMean float64, running map[string]time.Duration, queued []string, jobs int) (time.Duration, bool) {
	fallback := doneMean
	if fallback == 0 && len(expect) > 0 {
		var sum float64
		for _, s := range expect {
			sum += s
		}
		fallback = sum / float64(len(expect))
	}
	est := func(id string) (float64, bool) {
		if s, ok := expect[id]; ok && s > 0 {
			return s, true
		}
		return fallback, fallback > 0
	}
	jobs = max(jobs, 1)
	slots := make([]float64, jobs)
	i := 0
	for id, had := range running {
		s, ok := est(id)
		if !ok {
			return 0, false
		}
		if i < jobs {
			slots[i] = max(0, s-had.Seconds())
		}
		i++
	}
	var rest []float64
	for _, id := range queued {
		s, ok := est(id)
		if !ok {
			return 0, false
		}
		rest = append(rest, s)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(rest)))
	for _, s := range rest { // each next kernel goes to the slot that frees first
		min := 0
		for j := range slots {
			if slots[j] < slots[min] {
				min = j
			}
		}
		slots[min] += s
	}
	var longest float64
	for _, s := range slots {
		longest = max(longest, s)
	}
	return time.Duration(longest * float64(time.Second)), true
}
