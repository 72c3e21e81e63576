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
	Package  string   `json:",omitempty"`
	Test     string   `json:",omitempty"`
	Output   string   `json:",omitempty"`
	Elapsed  float64  `json:",omitempty"` // seconds
	Family   string   `json:",omitempty"`
	Reason   string   `json:",omitempty"` // why a case was skipped, or its first failure
	Attempts int      `json:",omitempty"` // for race cases: how many attempts ran
	Env      *Env     `json:",omitempty"` // on "start" only
	Summary  *Summary `json:",omitempty"` // on the final package-level event only
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
	// LaunchMicros is the median wall time of `confine --worktree DIR -- true` here, in microseconds, over
	// LaunchRuns launches: under emulation it is what the suite's time is mostly made of.
	LaunchMicros int `json:"launch_us,omitempty"`
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
type Writer struct{ enc *json.Encoder }

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{enc: json.NewEncoder(w)} }

// Emit writes e, filling Time and Package.
func (w *Writer) Emit(e Event) error {
	e.Time = time.Now().UTC()
	e.Package = Package
	return w.enc.Encode(e)
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
