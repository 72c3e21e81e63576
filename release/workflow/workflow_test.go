package workflow

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The release workflow and the rules it is held to (its header comment states them).
const releaseYML = "../../.github/workflows/release.yml"

var releasePolicy = Policy{
	Gate: "gate",
	Writes: map[string][]string{
		"contents":     {"github-release"},
		"id-token":     {"attest", "npm"},
		"attestations": {"attest"},
		"packages":     {"oci"},
	},
	PublishCommands: []string{"npm publish", "gh release", "oci push", "cosign sign", "docker push"},
}

func load(t *testing.T) Workflow {
	t.Helper()
	wf, _, err := Load(releaseYML)
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

func targets(t *testing.T) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob("../../mk/*.mk")
	ts, err := MakeTargets(append(files, "../../Makefile")...)
	if err != nil {
		t.Fatal(err)
	}
	if !ts["test"] || !ts["release-tool"] {
		t.Fatalf("found no make targets (test, release-tool) in %v", files)
	}
	return ts
}

// TestReleaseWorkflow: .github/workflows/release.yml runs on v* tags and has no problem under the policy;
// the jobs that publish are the ones the policy names, and each needs the gate.
func TestReleaseWorkflow(t *testing.T) {
	wf := load(t)
	for _, p := range Check(wf, releasePolicy, targets(t)) {
		t.Error(p)
	}
	var on struct {
		Push struct {
			Tags []string `yaml:"tags"`
		} `yaml:"push"`
	}
	if err := wf.On.Decode(&on); err != nil || len(on.Push.Tags) != 1 || on.Push.Tags[0] != "v*" {
		t.Errorf("the workflow runs on %v (%v), want push tags [v*]", on.Push.Tags, err)
	}
	var pub []string
	for name := range wf.Jobs {
		if dependsOn(wf, name, "gate", map[string]bool{}) {
			pub = append(pub, name)
		}
	}
	sort.Strings(pub)
	if got := strings.Join(pub, " "); got != "attest github-release npm oci package" {
		t.Errorf("jobs after the gate: %s", got)
	}
	// The gate itself runs after the build of record and the whole matrix.
	for _, dep := range []string{"build", "matrix"} {
		if !dependsOn(wf, "gate", dep, map[string]bool{}) {
			t.Errorf("the gate does not depend on %s", dep)
		}
	}
}

// TestPlantedProblems: each kind of problem, planted in a copy of the real workflow, is reported.
func TestPlantedProblems(t *testing.T) {
	ts := targets(t)
	if ps := Check(load(t), releasePolicy, ts); len(ps) != 0 {
		t.Fatalf("the real workflow already has problems: %q", ps)
	}
	for name, c := range map[string]struct {
		plant func(wf *Workflow)
		want  string
	}{
		"unpinned action": {func(wf *Workflow) {
			wf.Jobs["npm"].Steps[0].Uses = "actions/setup-node@v7"
		}, "job npm step 1: actions/setup-node@v7 is not pinned"},
		"short hash": {func(wf *Workflow) {
			wf.Jobs["build"].Steps[1].Uses = "actions/checkout@3d3c42e"
		}, "actions/checkout@3d3c42e is not pinned"},
		"missing gate dependency": {func(wf *Workflow) {
			j := wf.Jobs["oci"]
			j.Needs = Needs{"build"}
			wf.Jobs["oci"] = j
		}, "job oci publishes but does not depend on the gate job gate"},
		"publishing by command, no gate": {func(wf *Workflow) {
			j := wf.Jobs["matrix"]
			j.Steps = append(j.Steps, Step{Run: "npm publish x.tgz"})
			wf.Jobs["matrix"] = j
		}, "job matrix publishes but does not depend on the gate"},
		"broad permission": {func(wf *Workflow) {
			j := wf.Jobs["build"]
			j.Permissions = Permissions{Set: true, Scopes: map[string]string{"contents": "write"}}
			wf.Jobs["build"] = j
		}, "job build: permission contents: write is not allowed here"},
		"id-token outside signing": {func(wf *Workflow) {
			j := wf.Jobs["github-release"]
			j.Permissions.Scopes["id-token"] = "write"
		}, "job github-release: permission id-token: write is not allowed here"},
		"write-all": {func(wf *Workflow) {
			j := wf.Jobs["package"]
			j.Permissions = Permissions{Set: true, All: "write-all"}
			wf.Jobs["package"] = j
		}, `job package: permissions "write-all"`},
		"top-level write": {func(wf *Workflow) {
			wf.Permissions = Permissions{Set: true, Scopes: map[string]string{"contents": "write"}}
		}, "workflow: permission contents: write is not allowed here"},
		"no permissions block": {func(wf *Workflow) {
			j := wf.Jobs["gate"]
			j.Permissions = Permissions{}
			wf.Jobs["gate"] = j
		}, "job gate: no permissions block"},
		"unknown make target": {func(wf *Workflow) {
			wf.Jobs["build"].Steps[3].Run = "make bazel-deps build-everything"
		}, "runs `make build-everything`, which no Makefile defines"},
	} {
		t.Run(name, func(t *testing.T) {
			wf := load(t) // a fresh copy: Load decodes the file again
			c.plant(&wf)
			ps := Check(wf, releasePolicy, ts)
			found := false
			for _, p := range ps {
				found = found || strings.Contains(p, c.want)
			}
			if !found {
				t.Errorf("planted %s: problems %q, want one containing %q", name, ps, c.want)
			}
		})
	}
}

// TestNeedsForms: needs as a scalar and as a list both decode.
func TestNeedsForms(t *testing.T) {
	var wf Workflow
	src := "permissions: {}\njobs:\n  a: {permissions: {}}\n  b: {needs: a, permissions: {}}\n  c: {needs: [b], permissions: read-all}\n"
	if err := yaml.Unmarshal([]byte(src), &wf); err != nil {
		t.Fatal(err)
	}
	if !dependsOn(wf, "c", "a", map[string]bool{}) {
		t.Error("c needs b needs a, but c does not depend on a")
	}
	if !wf.Permissions.Set || len(wf.Permissions.Scopes) != 0 || wf.Jobs["c"].Permissions.All != "read-all" {
		t.Errorf("permissions decoded as %+v and %+v", wf.Permissions, wf.Jobs["c"].Permissions)
	}
}
