// Package workflow checks a GitHub Actions workflow against the release's rules, which no CI run here
// can exercise: every `make` target it runs exists; every job states its permissions and writes only what
// the Policy lets that job write (no read-all/write-all); every third-party action is pinned by a full
// 40-hex commit hash; and every publishing job depends, directly or through other jobs, on the gate job.
// It is used by the test of .github/workflows/release.yml (workflow_test.go).
package workflow

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Workflow is the part of a workflow file the checks read.
type Workflow struct {
	On          yaml.Node      `yaml:"on"`
	Permissions Permissions    `yaml:"permissions"`
	Jobs        map[string]Job `yaml:"jobs"`
}

// Job is one job.
type Job struct {
	Needs       Needs       `yaml:"needs"`
	Permissions Permissions `yaml:"permissions"`
	Steps       []Step      `yaml:"steps"`
}

// Step is one step: a `uses` action or a `run` script.
type Step struct {
	Name string `yaml:"name"`
	Uses string `yaml:"uses"`
	Run  string `yaml:"run"`
}

// Needs is a job's `needs`: one job name or a list.
type Needs []string

// UnmarshalYAML accepts a scalar or a sequence.
func (n *Needs) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode {
		*n = Needs{v.Value}
		return nil
	}
	var l []string
	if err := v.Decode(&l); err != nil {
		return err
	}
	*n = l
	return nil
}

// Permissions is a `permissions` block: absent (Set false), a shorthand (All: "read-all", "write-all")
// or a map of scope → "read" | "write" | "none" ({} is Set with no scopes: nothing granted).
type Permissions struct {
	Set    bool
	All    string
	Scopes map[string]string
}

// UnmarshalYAML accepts the shorthand string or the map.
func (p *Permissions) UnmarshalYAML(v *yaml.Node) error {
	p.Set = true
	if v.Kind == yaml.ScalarNode {
		p.All = v.Value
		return nil
	}
	return v.Decode(&p.Scopes)
}

// Policy is what a workflow may do.
type Policy struct {
	// Gate is the job every publishing job must depend on.
	Gate string
	// Writes maps each permission scope to the jobs allowed `write` on it; a scope not listed may be
	// written by no job. Each job listed here is a publishing job.
	Writes map[string][]string
	// Publishing lists further jobs that publish without a write permission (e.g. with a secret token).
	Publishing []string
	// PublishCommands are substrings of a `run` script that make its job a publishing job.
	PublishCommands []string
}

// Load parses the workflow file at path.
func Load(path string) (Workflow, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Workflow{}, nil, err
	}
	var wf Workflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		return Workflow{}, b, fmt.Errorf("%s: %w", path, err)
	}
	return wf, b, nil
}

var (
	pinned  = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$`)
	makeCmd = regexp.MustCompile(`(?m)(?:^|&&|;|\|\|)\s*make\s+((?:[a-z][a-z0-9-]*\s*)+)`)
)

// Check returns every problem of wf under policy, one line each, sorted; targets are the make targets
// that exist (MakeTargets).
func Check(wf Workflow, policy Policy, targets map[string]bool) []string {
	var ps []string
	add := func(format string, a ...any) { ps = append(ps, fmt.Sprintf(format, a...)) }

	if _, ok := wf.Jobs[policy.Gate]; !ok {
		add("no gate job %q", policy.Gate)
	}
	// Top level: nothing granted beyond read, so a job that forgets its block gets no write.
	checkScopes := func(where string, p Permissions, allowed func(scope string) bool) {
		if p.All != "" {
			add("%s: permissions %q: name each scope (least privilege)", where, p.All)
		}
		for scope, level := range p.Scopes {
			switch level {
			case "read", "none":
			case "write":
				if !allowed(scope) {
					add("%s: permission %s: write is not allowed here", where, scope)
				}
			default:
				add("%s: permission %s: %q is not read, write or none", where, scope, level)
			}
		}
	}
	if !wf.Permissions.Set {
		add("workflow: no top-level permissions block (the default token may write): state {} or read scopes")
	}
	checkScopes("workflow", wf.Permissions, func(string) bool { return false })

	publishing := map[string]bool{}
	for _, j := range policy.Publishing {
		publishing[j] = true
	}
	for _, jobs := range policy.Writes {
		for _, j := range jobs {
			publishing[j] = true
		}
	}
	names := make([]string, 0, len(wf.Jobs))
	for n := range wf.Jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		job := wf.Jobs[name]
		where := "job " + name
		if !job.Permissions.Set {
			add("%s: no permissions block (it would inherit the workflow's)", where)
		}
		checkScopes(where, job.Permissions, func(scope string) bool {
			for _, j := range policy.Writes[scope] {
				if j == name {
					return true
				}
			}
			return false
		})
		for _, level := range job.Permissions.Scopes {
			if level == "write" {
				publishing[name] = true // whatever may write, publishes
			}
		}
		for i, st := range job.Steps {
			if st.Uses != "" && !strings.HasPrefix(st.Uses, "./") && !pinned.MatchString(st.Uses) {
				add("%s step %d: %s is not pinned by a full commit hash (owner/repo@<40 hex>)", where, i+1, st.Uses)
			}
			for _, m := range makeCmd.FindAllStringSubmatch(st.Run, -1) {
				for _, t := range strings.Fields(m[1]) {
					if !targets[t] {
						add("%s step %d: runs `make %s`, which no Makefile defines", where, i+1, t)
					}
				}
			}
			for _, c := range policy.PublishCommands {
				if strings.Contains(st.Run, c) {
					publishing[name] = true
				}
			}
		}
		for _, n := range job.Needs {
			if _, ok := wf.Jobs[n]; !ok {
				add("%s: needs %q, which is not a job", where, n)
			}
		}
	}
	for _, name := range names {
		if publishing[name] && name != policy.Gate && !dependsOn(wf, name, policy.Gate, map[string]bool{}) {
			add("job %s publishes but does not depend on the gate job %s", name, policy.Gate)
		}
	}
	sort.Strings(ps)
	return ps
}

// dependsOn reports whether job depends on target through `needs`, directly or transitively.
func dependsOn(wf Workflow, job, target string, seen map[string]bool) bool {
	if seen[job] {
		return false
	}
	seen[job] = true
	for _, n := range wf.Jobs[job].Needs {
		if n == target || dependsOn(wf, n, target, seen) {
			return true
		}
	}
	return false
}

var targetLine = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*(?:\s+[a-z][a-z0-9-]*)*)\s*:([^=]|$)`)

// MakeTargets returns the targets the given makefiles define (rule lines "name [name…]:", not
// variable assignments ":=").
func MakeTargets(files ...string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range targetLine.FindAllStringSubmatch(string(b), -1) {
			for _, n := range strings.Fields(m[1]) {
				out[n] = true
			}
		}
	}
	return out, nil
}
