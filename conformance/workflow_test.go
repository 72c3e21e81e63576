package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

type workflow struct {
	Jobs map[string]struct {
		Strategy struct {
			Matrix struct {
				Shard []int `yaml:"shard"`
			} `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Run  string `yaml:"run"`
			Uses string `yaml:"uses"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// pinnedAction is an action pinned by its full commit hash: a tag can be moved to other code after review.
var pinnedAction = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$`)

// TestWorkflow validates the CI matrix workflow, which cannot run here: it parses, its shard list is exactly
// 1..N where N is the divisor in every --shard i/N, N is at most the number of kernels in vm/kernels.json (the
// VM runner's interleaved shards then cover every kernel exactly once, none empty), the shard jobs upload JUnit
// files, and every `make` target it runs exists.
func TestWorkflow(t *testing.T) {
	b, err := os.ReadFile("../.github/workflows/conformance-matrix.yml")
	require.NoError(t, err)
	var wf workflow
	require.NoError(t, yaml.Unmarshal(b, &wf))
	job, ok := wf.Jobs["shard"]
	require.True(t, ok, "no shard job")
	shards := job.Strategy.Matrix.Shard
	require.NotEmpty(t, shards)
	for i, s := range shards {
		assert.Equal(t, i+1, s, "the shard list must be exactly 1..N in order")
	}
	n := len(shards)

	var kernels struct {
		Kernels []struct{ ID string } `json:"kernels"`
	}
	mb, err := os.ReadFile("../vm/kernels.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(mb, &kernels))
	assert.LessOrEqual(t, n, len(kernels.Kernels), "more shards than kernels: a shard would be empty")
	covered := map[string]int{}
	for i := 1; i <= n; i++ { // vm.Shard: kernel j goes to shard j%n + 1
		for j, k := range kernels.Kernels {
			if j%n == i-1 {
				covered[k.ID]++
			}
		}
	}
	for _, k := range kernels.Kernels {
		assert.Equal(t, 1, covered[k.ID], "kernel %s", k.ID)
	}

	targets := makeTargets(t)
	shardRe := regexp.MustCompile(`--shard \$\{\{ matrix\.shard \}\}/([0-9]+)`)
	makeRe := regexp.MustCompile(`(?m)(?:^|&&|;)\s*make\s+([a-z][a-z0-9-]*)`)
	sawShard, sawUpload := false, false
	for name, j := range wf.Jobs {
		for _, st := range j.Steps {
			for _, m := range shardRe.FindAllStringSubmatch(st.Run, -1) {
				sawShard = true
				d, _ := strconv.Atoi(m[1])
				assert.Equal(t, n, d, "job %s: --shard divisor", name)
			}
			for _, m := range makeRe.FindAllStringSubmatch(st.Run, -1) {
				assert.True(t, targets[m[1]], "job %s runs `make %s`, which no Makefile defines", name, m[1])
			}
			if st.Uses != "" {
				assert.Regexp(t, pinnedAction, st.Uses, "job %s: a third-party action is pinned by its full commit hash, not a tag", name)
			}
			if name == "shard" && strings.HasPrefix(st.Uses, "actions/upload-artifact") {
				sawUpload = true
			}
		}
	}
	assert.True(t, sawShard, "no step passes --shard ${{ matrix.shard }}/N")
	assert.True(t, sawUpload, "the shard job uploads no artifact")
	assert.Contains(t, string(b), "reports/conformance/*.junit.xml")
}

func makeTargets(t *testing.T) map[string]bool {
	files, _ := filepath.Glob("../mk/*.mk")
	files = append(files, "../Makefile")
	re := regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*(?:\s+[a-z][a-z0-9-]*)*)\s*:([^=]|$)`)
	out := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			for _, name := range strings.Fields(m[1]) {
				out[name] = true
			}
		}
	}
	require.True(t, out["test"], "found no targets")
	return out
}
