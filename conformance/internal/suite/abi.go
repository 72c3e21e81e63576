package suite

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/confine-dev/confine/conformance/internal/kabi"
)

// Probe is `confine probe --json` (schema confine.probe/v1, sandbox/README.md).
type Probe struct {
	Schema      string   `json:"schema"`
	Kernel      string   `json:"kernel"`
	Arch        string   `json:"arch"`
	Landlock    string   `json:"landlock"`
	ABI         int      `json:"abi"`
	Errata      uint64   `json:"errata"`
	Errno       string   `json:"errno"`
	AutoBackend string   `json:"auto_backend"`
	AutoReason  string   `json:"auto_reason"`
	WSL         int      `json:"wsl"`
	Handled     []string `json:"handled"`
	Seccomp     []string `json:"seccomp"`
}

// ProbeJSON runs `confine probe --json` and parses it.
func (t *T) ProbeJSON() Probe {
	r := t.Confine(nil, nil, Opts{NoReport: true, Argv: []string{"probe", "--json"}})
	if r.Exit != 0 {
		t.Fatalf("confine probe --json: exit %d, stderr %q", r.Exit, r.Stderr)
	}
	var p Probe
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &p); err != nil {
		t.Fatalf("confine probe --json: %v: %q", err, r.Stdout)
	}
	if p.Schema != "confine.probe/v1" {
		t.Errorf("probe schema %q, want confine.probe/v1", p.Schema)
	}
	return p
}

var abiCases = []Case{{
	ID:    "abi-negotiation/reported-abi",
	Title: "the ABI confine reports equals the kernel's own answer and the matrix manifest's",
	Rationale: "The ABI decides what is handled; a launcher that guesses it from uname, or caches a stale answer, " +
		"enforces the wrong set. The suite asks the kernel itself (landlock_create_ruleset with " +
		"LANDLOCK_CREATE_RULESET_VERSION), compares it with `confine probe --json` and with the report of a real " +
		"run, and inside the VM matrix with the ABI the kernel manifest expects (VM_EXPECTED_ABI), so a backport or " +
		"a misconfigured kernel is a visible surprise. Without Landlock, the status and errno must match (ENOSYS " +
		"absent, EOPNOTSUPP disabled).",
	Expect: []Expect{{"any", "probe.abi = kernel ABI = VM_EXPECTED_ABI (when set); probe.landlock/errno match the kernel; a run's report agrees"}},
	Run: func(t *T) {
		k := t.Cfg().Landlock
		p := t.ProbeJSON()
		if p.Landlock != string(k.State) || p.ABI != k.ABI {
			t.Errorf("probe says Landlock %s ABI %d, the kernel says %s ABI %d", p.Landlock, p.ABI, k.State, k.ABI)
		}
		if k.State != kabi.Available && p.Errno != k.Errno {
			t.Errorf("probe errno %q, the kernel answered %s", p.Errno, k.Errno)
		}
		if exp := t.Cfg().ExpectedABI; exp != nil {
			if k.ABI != *exp {
				t.Errorf("the kernel reports ABI %d, the VM manifest expects %d", k.ABI, *exp)
			}
		} else {
			t.Logf("no VM_EXPECTED_ABI: compared with the kernel's own answer only")
		}
		r := t.Confine(t.Flags(), t.HelperArgv(), Opts{})
		if r.Report == nil {
			t.Fatalf("no report (exit %d, stderr %q)", r.Exit, r.Stderr)
		}
		if r.Report.ABI != k.ABI || r.Report.Landlock != string(k.State) {
			t.Errorf("report says Landlock %s ABI %d, the kernel says %s ABI %d", r.Report.Landlock, r.Report.ABI, k.State, k.ABI)
		}
	},
}, {
	ID:    "abi-negotiation/errata",
	Title: "the errata confine reports equal the kernel's own answer",
	Rationale: "Errata (LANDLOCK_CREATE_RULESET_ERRATA, Linux 6.15+) tell which Landlock bugs a kernel has fixed; a " +
		"reviewer needs them to judge a kernel. The launcher must report what the kernel says, in probe and in " +
		"every report (0 where the kernel predates the flag or has no Landlock).",
	Expect: []Expect{{"any", "probe.errata = report.errata = the kernel's errata bitmask"}},
	Run: func(t *T) {
		k := t.Cfg().Landlock
		t.Logf("kernel errata: %#x", k.Errata)
		if p := t.ProbeJSON(); p.Errata != k.Errata {
			t.Errorf("probe errata %#x, kernel %#x", p.Errata, k.Errata)
		}
		r := t.Confine(t.Flags(), t.HelperArgv(), Opts{})
		if r.Report == nil {
			t.Fatalf("no report (exit %d, stderr %q)", r.Exit, r.Stderr)
		}
		if r.Report.Errata != k.Errata {
			t.Errorf("report errata %#x, kernel %#x", r.Report.Errata, k.Errata)
		}
	},
}, {
	ID:    "abi-negotiation/handled-mask",
	Title: "the handled mask is exactly the write-class rights of the kernel's ABI",
	Rationale: "Handling fewer rights than the ABI knows leaves a write path open (TRUNCATE on 6.2+, IOCTL_DEV on " +
		"6.10+); handling READ_FILE, READ_DIR or EXECUTE breaks reads; handling a right the ABI does not know " +
		"makes the ruleset fail. The suite's own table (from the uapi header, independent of sandbox/) gives the " +
		"exact set; probe, the report, and every rule's rights must agree with it. Under bwrap there is no " +
		"Landlock domain: a report that claimed handled rights, or rights on a rule, would claim a protection " +
		"that is not there, so both must be empty (and the writable roots still listed as rules).",
	Expect: []Expect{
		{"ABI 1", "WRITE_FILE, REMOVE_DIR, REMOVE_FILE, MAKE_{CHAR,DIR,REG,SOCK,FIFO,BLOCK,SYM}"},
		{"ABI 2", "+ REFER"}, {"ABI 3–4", "+ TRUNCATE"}, {"ABI ≥ 5", "+ IOCTL_DEV"},
		{"bwrap (no Landlock, or --backend bwrap)", "report.backend bwrap, report.handled [], every rule's rights [], the worktree among the rules; probe.handled is the kernel ABI's set"}},
	Needs: Needs{Confined: true},
	Run: func(t *T) {
		want := kabi.WriteRights(t.ABI())
		r := t.Confine(t.Flags(), t.HelperArgv(), Opts{})
		if r.Report == nil {
			t.Fatalf("no report (exit %d, stderr %q)", r.Exit, r.Stderr)
		}
		t.WantBackend(r)
		if got := sorted(t.ProbeJSON().Handled); !equal(got, want) {
			t.Errorf("probe.handled %v, want exactly %v for ABI %d", got, want, t.ABI())
		}
		if t.Bwrap() {
			if r.Report.Handled == nil || len(r.Report.Handled) != 0 {
				t.Errorf("bwrap: report.handled %v, want [] (no Landlock domain)", r.Report.Handled)
			}
			wt := false
			for _, rule := range r.Report.Rules {
				wt = wt || rule.Path == t.WT
				if rule.Rights == nil || len(rule.Rights) != 0 {
					t.Errorf("bwrap: rule %s has rights %v, want [] (a read-write bind, no Landlock right)", rule.Path, rule.Rights)
				}
			}
			if !wt {
				t.Errorf("bwrap: no rule for the worktree %s: %s", t.WT, r.ReportRaw)
			}
			return
		}
		if got := sorted(r.Report.Handled); !equal(got, want) {
			t.Errorf("report.handled %v, want exactly %v for ABI %d", got, want, t.ABI())
		}
		for _, rule := range r.Report.Rules {
			for _, right := range rule.Rights {
				if !contains(want, right) {
					t.Errorf("rule %s carries %s, which is not handled", rule.Path, right)
				}
			}
		}
	},
}, {
	ID:    "abi-negotiation/refer",
	Title: "cross-directory rename inside the worktree works on ABI ≥ 2, fails with EXDEV (reported) on ABI 1",
	Rationale: "Every Landlock domain denies reparenting unless a rule grants REFER, and ABI 1 has no REFER, so " +
		"there a cross-directory rename fails with EXDEV even inside the worktree. The launcher must grant REFER " +
		"where it exists, warn about EXDEV where it does not, and never drop the sandbox to avoid it. A rename " +
		"within one directory must work on every ABI. Under bwrap no Landlock domain stands in the way: every " +
		"rename and link inside the worktree (one read-write bind) must work, and no EXDEV warning be given.",
	Expect: []Expect{{"ABI 1", "same-dir rename ok; cross-dir rename and link fail with EXDEV; report.warnings mentions EXDEV"},
		{"ABI ≥ 2", "all renames and links inside the worktree succeed"},
		{"bwrap (no Landlock, or --backend bwrap)", "all renames and links inside the worktree succeed; no EXDEV warning"}},
	Needs: Needs{Confined: true},
	Setup: func(t *T) {
		t.WriteFile(t.WT+"/sub/a.txt", "a", 0o644)
		t.WriteFile(t.WT+"/sub/b.txt", "b", 0o644)
	},
	Run: func(t *T) {
		w := t.WT
		r := t.Confine(t.Flags(), t.HelperArgv(op2("rename", w+"/sub/a.txt", w+"/sub/a2.txt"),
			op2("rename", w+"/sub/b.txt", w+"/sub2/b.txt"), op2("link", w+"/sub/a2.txt", w+"/sub2/a-link.txt"),
			op2("rename", w+"/sub2", w+"/sub/sub2")), Opts{})
		res := t.helperResults("confine", r, 4)
		t.WantOK("rename within one directory", res[0])
		t.WantBackend(r)
		if t.Bwrap() {
			t.WantOK("bwrap: cross-directory rename and link", res[1:]...)
			if r.Report != nil && strings.Contains(strings.Join(r.Report.Warnings, "\n"), "EXDEV") {
				t.Errorf("bwrap: the report warns about EXDEV, which only a Landlock domain gives: %q", r.Report.Warnings)
			}
			return
		}
		if t.ABI() >= 2 {
			t.WantOK("cross-directory rename and link on ABI >= 2", res[1:]...)
			return
		}
		t.WantDenied("cross-directory rename and link on ABI 1", []string{"EXDEV"}, res[1:]...)
		if r.Report == nil || !strings.Contains(strings.Join(r.Report.Warnings, "\n"), "EXDEV") {
			t.Errorf("ABI 1: the report does not warn about EXDEV: %s", r.ReportRaw)
		}
	},
}, {
	ID:    "abi-negotiation/truncate",
	Title: "truncation follows the ABI and report.metadata: TRUNCATE from ABI 3, truncate(2) closed another way before",
	Rationale: "Before ABI 3 (6.2) Landlock cannot stop truncate(2) by path, so a confined command could empty " +
		"any file it can reach. confine closes that with read-only mounts outside the writable roots " +
		"(report.metadata mount-layer: truncate(2) works inside, EROFS outside) or, where no mount namespace can " +
		"be made, with seccomp: EPERM everywhere on ABI < 3, both under the supervisor (issue 15: it does not " +
		"supervise truncate) and under seccomp-deny. From ABI 3 the kernel handles TRUNCATE: without the layer " +
		"truncate(2) works inside and fails with EACCES outside. The case runs " +
		"confine as it is and again with namespaces taken away (as in boundary/metadata-fallback). Opening with " +
		"O_TRUNC is covered by WRITE_FILE on every ABI. Under bwrap (report.backend bwrap, mount-layer) only the " +
		"first run applies: without namespaces bwrap cannot run, and without Landlock confine refuses there " +
		"(fail-closed/bwrap-no-namespaces).",
	Expect: []Expect{{"any ABI, mount-layer", "truncate(2) and O_TRUNC work inside, fail outside (EROFS or EACCES)"},
		{"ABI 1–2, supervisor or seccomp-deny", "truncate(2) fails with EPERM inside and outside; O_TRUNC inside works, outside EACCES"},
		{"ABI ≥ 3, supervisor or seccomp-deny", "truncate(2) and O_TRUNC work inside, fail with EACCES outside"},
		{"bwrap (no Landlock, or --backend bwrap)", "as with the mount layer, EROFS outside; the run without namespaces is not made"}},
	Needs: Needs{Confined: true},
	Run: func(t *T) {
		for _, noNS := range []bool{false, true} {
			if noNS && t.Bwrap() {
				t.Logf("bwrap: no run without namespaces (bwrap needs them; fail-closed/bwrap-no-namespaces)")
				break
			}
			t.WriteFile(t.WT+"/existing.txt", "inside\n", 0o644)
			r, res := t.HelperRun(t.Flags(), Opts{NoNamespaces: noNS}, op("truncate", t.WT+"/existing.txt"),
				op("truncate", t.Out+"/file.txt"), op("trunc-open", t.WT+"/existing.txt"), op("trunc-open", t.Out+"/file.txt"))
			if r.Report == nil {
				t.Fatalf("no report on --report-fd")
			}
			m := r.Report.Metadata
			if noNS {
				t.WantFallback(r)
			} else {
				t.WantBackend(r)
			}
			t.WantOK(m+": O_TRUNC inside", res[2])
			switch {
			case m == "mount-layer":
				t.WantOK("mount-layer: truncate(2) inside", res[0])
				t.WantDenied("mount-layer: truncate(2) and O_TRUNC outside", denied, res[1], res[3])
			case t.ABI() >= 3:
				t.WantOK(m+": truncate(2) inside on ABI >= 3", res[0])
				t.WantDenied(m+": truncate(2) and O_TRUNC outside on ABI >= 3 (Landlock)", eacces, res[1], res[3])
			default:
				t.WantDenied(fmt.Sprintf("%s: truncate(2) on ABI %d (seccomp)", m, t.ABI()), eperm, res[0], res[1])
				t.WantDenied(m+": O_TRUNC outside (Landlock)", eacces, res[3])
			}
		}
	},
}}

func sorted(s []string) []string { c := append([]string{}, s...); sort.Strings(c); return c }

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
