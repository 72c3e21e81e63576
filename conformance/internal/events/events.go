// Package events is the runner's output: JSON Lines whose fields are a superset of `go test -json` (cmd/test2json):
// Time, Action, Package, Test, Output, Elapsed. Tools that read go test -json read these events; the extra fields
// (Family, Reason, Attempts, Env, Summary) carry what the matrix report needs.
//
// A run is: one "start" event carrying Env, then per case "run", any "output", and one of "pass", "fail" or
// "skip" (a skip always has a Reason), then a final package-level "pass" or "fail" carrying Summary.
package events

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"
)

// Package is the Package field of every event.
const Package = "confine-conformance"

// Actions, as in cmd/test2json.
const (
	Start  = "start"
	Run    = "run"
	Output = "output"
	Pass   = "pass"
	Fail   = "fail"
	Skip   = "skip"
)

// Event is one line of output.
type Event struct {
	Time     time.Time `json:",omitempty"`
	Action   string
	Package  string  `json:",omitempty"`
	Test     string  `json:",omitempty"`
	Output   string  `json:",omitempty"`
	Elapsed  float64 `json:",omitempty"` // seconds
	Family   string  `json:",omitempty"`
	Reason   string  `json:",omitempty"` // why a case was skipped, or its first failure
	Attempts int     `json:",omitempty"` // for race cases: how many attempts ran
	// For race cases with a measured win rate (conformance/race-rates.json): the rate used, the resulting power
	// against Mutant, and where the rate was measured. Wins counts the attempts a planted bug won (measuring runs,
	// --measure-races, only).
	Rate     float64 `json:",omitempty"`
	Power    float64 `json:",omitempty"`
	Mutant   string  `json:",omitempty"`
	RateFrom string  `json:",omitempty"`
	Wins     int     `json:",omitempty"`
	Measured bool    `json:",omitempty"` // the case counted Wins (a race case that supports --measure-races)
	// Elsewhere, on a skip, says that the matrix's plan (internal/plan) runs this case in another column, which
	// stands for this one: "ran in COLUMN: the same DIMS". The report checks that COLUMN has a verdict for it.
	Elsewhere string   `json:",omitempty"`
	Env       *Env     `json:",omitempty"` // on "start" only
	Summary   *Summary `json:",omitempty"` // on the final package-level event only
	// Pass names the run an event belongs to when one stream carries several (the VM guest runs the suite as
	// root and as an unprivileged uid, interleaved): "root", "nobody"; empty for a single run.
	Pass string `json:",omitempty"`
}

// Env describes where the suite ran. The report tool keys expectations on it.
type Env struct {
	Kernel      string `json:"kernel"`   // uname -r
	Arch        string `json:"arch"`     // uname -m
	Landlock    string `json:"landlock"` // available, absent or disabled: the kernel's own answer
	ABI         int    `json:"abi"`      // the kernel's own answer
	Errata      uint64 `json:"errata"`
	Root        bool   `json:"root"`
	Git         bool   `json:"git"`                    // git is on PATH
	VMKernelID  string `json:"vm_kernel_id,omitempty"` // VM_KERNEL_ID, set by the vm runner's guest
	ExpectedABI *int   `json:"expected_abi,omitempty"` // VM_EXPECTED_ABI, when set
	Confine     string `json:"confine"`                // `confine version`
	// ConfineSHA256 is the hex sha256 of the confine binary the suite ran, so a release can prove its
	// matrix ran the binaries it ships (confine-release gate).
	ConfineSHA256 string `json:"confine_sha256"`
	Attempts      int    `json:"toctou_attempts"` // the --toctou-attempts setting
	// Helper is the binary run under confine as the cases' helper: confine-conformance-helper, or
	// confine-conformance itself where that is missing (a start twice as dear under TCG).
	Helper string `json:"helper,omitempty"`
	// LaunchMicros is the median wall time of `confine --worktree DIR -- true` here, in microseconds, over
	// LaunchRuns launches: under emulation it is what the suite's time is mostly made of.
	LaunchMicros int `json:"launch_us,omitempty"`
	// Metadata is the report's metadata field of one plain launch (mount-layer, supervisor or seccomp-deny):
	// which layer closes metadata changes for this user on this kernel.
	Metadata string `json:"metadata,omitempty"`
	// RaceWhere and User are what a race case's measured win rate is keyed on besides Arch and Backend
	// (conformance/race-rates.json): host, or the VM's accelerator (tcg, kvm); root, nobody (uid 65534) or user.
	RaceWhere string `json:"race_where,omitempty"`
	User      string `json:"user,omitempty"`
	// Pass is this run's name where one stream carries several: "root" or "nobody" (the uid it ran as).
	Pass string `json:"pass,omitempty"`
	// ABICap, when > 0, is the Landlock ABI confine was told to act as (a confine_abicap test build only); ABI is
	// then min(KernelABI, ABICap) and KernelABI is the kernel's own answer.
	ABICap    int `json:"abi_cap,omitempty"`
	KernelABI int `json:"kernel_abi,omitempty"`
	// HostEmulation names the host emulation the whole run was under (internal/hostemu: ubuntu-userns-restricted,
	// no-namespaces or nested-supervisor), "" for none.
	HostEmulation string `json:"host_emulation,omitempty"`
	// Backend is the backend the suite's confined commands ran under: landlock, bwrap (where Landlock is absent
	// or disabled and confine finds bwrap, or with the runner's --backend bwrap) or none (neither: every confined
	// case skips). Absent from older runs: landlock where Landlock is available, else none.
	Backend string `json:"backend,omitempty"`
	// BackendFlag is the runner's --backend when it forced one ("bwrap"), "" under auto.
	BackendFlag string `json:"backend_flag,omitempty"`
	// Bwrap is the bwrap confine finds where the suite ran (suite.FindBwrap: CONFINE_BWRAP, else /usr/bin, /bin,
	// /usr/local/bin; never $PATH), "" when there is none.
	Bwrap string `json:"bwrap,omitempty"`
	// LaunchBackend is the report's backend field of the plain launch that gave Metadata: what confine chose.
	LaunchBackend string `json:"launch_backend,omitempty"`
	// FallbackMetadata is the report's metadata field for a launch where no namespace can be made (the fallback
	// cases' wrapper, internal/nsdeny): supervisor or seccomp-deny under Landlock. The field is read whatever the
	// launch's outcome: under bwrap, which cannot run there, the refusal's report still says mount-layer.
	FallbackMetadata string `json:"fallback_metadata,omitempty"`
	// CaseSeconds is each case's own time bound: a case still running then ends as FAIL.
	CaseSeconds float64 `json:"case_seconds,omitempty"`
}

// LaunchRuns is how many launches LaunchMicros is the median of.
const LaunchRuns = 21

// Summary counts case outcomes.
type Summary struct {
	Pass int `json:"pass"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
}

// Writer emits events as JSON Lines (one event per line).
// Emit may be called from several goroutines (a case's heartbeat, a second pass's relay): each event is one
// write of one line.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	pass string
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// SetPass tags every event emitted from now on with pass (see Event.Pass).
func (w *Writer) SetPass(pass string) { w.mu.Lock(); w.pass = pass; w.mu.Unlock() }

// Raw writes line (one JSON event, as another run emitted it) followed by a newline, between whole events.
func (w *Writer) Raw(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.w.Write(append(append([]byte(nil), line...), '\n'))
	return err
}

// Emit writes e, filling Time and Package.
func (w *Writer) Emit(e Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	e.Time = time.Now().UTC()
	e.Package = Package
	if e.Pass == "" {
		e.Pass = w.pass
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.w.Write(append(b, '\n'))
	return err
}

// Read parses a stream, keeping every line that is an event of this package and ignoring other lines (kernel
// log, guest supervisor chatter), so that a VM runner's captured stdout can be read as is.
func Read(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e Event
		if json.Unmarshal([]byte(line), &e) != nil || e.Package != Package || e.Action == "" {
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
