// Package report defines confine's structured report (schema confine.report/v1), the stable reason codes of a
// refusal, and the probe verdict (confine.probe/v1). The schemas are documented in sandbox/README.md; a change
// that removes or renames a field bumps the version.
package report

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/confine-dev/confine/sandbox/internal/msg"
)

// Schema versions.
const (
	Schema           = "confine.report/v1"
	ExecFailedSchema = "confine.exec-failed/v1"
	ProbeSchema      = "confine.probe/v1"
)

// Reason is a stable code saying why confine refused. Callers match on it, never on message text.
type Reason string

// The reason codes. Their meanings are in sandbox/README.md.
const (
	Usage              Reason = "usage"
	BadRoot            Reason = "bad-root"
	BadReportFD        Reason = "bad-report-fd"
	BadStdio           Reason = "bad-stdio"
	ForeignChildren    Reason = "foreign-children" // confine was exec'd by a process that had children
	LandlockAbsent     Reason = "landlock-absent"
	LandlockDisabled   Reason = "landlock-disabled"
	BackendUnavailable Reason = "backend-unavailable"
	WSL1               Reason = "wsl1"
	WSL2Interop        Reason = "wsl2-interop"
	ProtectUnavailable Reason = "protect-unavailable" // --protect, where no mount layer can be had
	Ruleset            Reason = "ruleset"
	Seccomp            Reason = "seccomp"
	CommandNotFound    Reason = "command-not-found"      // exit 127
	CommandNotExec     Reason = "command-not-executable" // exit 126
	WrongArch          Reason = "wrong-arch"             // exit 126: execve said ENOEXEC, the ELF is another machine's
	InterpreterMissing Reason = "interpreter-missing"    // exit 127: execve said ENOENT, the file's interpreter is missing
	ChannelOpen        Reason = "channel-open"           // --strict, and a channel is open
	Internal           Reason = "internal"
)

// Refusal is an error that makes confine exit 125 without running the command.
type Refusal struct {
	Reason Reason
	Err    error
}

// Error is the message on one line: control characters from user input (a path or flag with a newline) are
// escaped, so a refusal can never print a second line that lacks the "confine: " prefix.
func (r *Refusal) Error() string { return OneLine(r.Err.Error()) }

// OneLine returns s with every control character (a newline among them) replaced by '?', so that a message
// stays one line on stderr.
func OneLine(s string) string {
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return '?'
		}
		return c
	}, s)
}

func (r *Refusal) Unwrap() error { return r.Err }

// Refuse returns a *Refusal whose message is parts concatenated, as msg.Err builds it.
func Refuse(reason Reason, parts ...any) *Refusal {
	return &Refusal{Reason: reason, Err: msg.Err(parts...)}
}

// ReasonOf returns err's reason code, or Internal if err is not a *Refusal.
func ReasonOf(err error) Reason {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return Internal
}

// Rule is one path-beneath rule as enforced.
type Rule struct {
	Path   string   `json:"path"`
	Type   string   `json:"type"` // "dir", "file" or "socket"
	Rights []string `json:"rights"`
	Reason string   `json:"reason,omitempty"` // why it is granted, for a git directory found from the worktree
}

// Channel is whether one way out of the sandbox, other than writing a file, is closed: Status is Closed or
// Open, How says by what, or what it would need.
type Channel struct {
	Status string `json:"status"`
	How    string `json:"how"`
}

// Channel statuses.
const (
	Closed = "closed"
	Open   = "open"
)

// SortedNames returns the channel names in order, as encoding/json orders a map's keys.
func SortedNames(ch map[string]Channel) []string {
	return slices.Sorted(maps.Keys(ch))
}

func appendChannels(o *jsonObject, ch map[string]Channel) {
	if ch == nil {
		o.raw("channels", []byte("null"))
		return
	}
	co := newObject()
	for _, name := range SortedNames(ch) {
		c := newObject()
		c.str("status", ch[name].Status)
		c.str("how", ch[name].How)
		co.raw(name, c.end())
	}
	o.raw("channels", co.end())
}

// Report is the one JSON object written to --report-fd.
type Report struct {
	Schema   string             `json:"schema"`
	Outcome  string             `json:"outcome"` // "exec" or "refused"
	Reason   Reason             `json:"reason,omitempty"`
	Error    string             `json:"error,omitempty"`
	Mode     string             `json:"mode"`
	Backend  string             `json:"backend"`
	Bwrap    string             `json:"bwrap,omitempty"` // the bwrap executable, under the bwrap backend
	Metadata string             `json:"metadata"`        // mount-layer, supervisor or seccomp-deny; empty when refused before a backend
	ABI      int                `json:"abi"`
	Errata   int                `json:"errata"`
	Landlock string             `json:"landlock"` // available, absent, disabled or unknown
	Handled  []string           `json:"handled"`
	Rules    []Rule             `json:"rules"`
	Seccomp  []string           `json:"seccomp"`
	Channels map[string]Channel `json:"channels"`
	Command  []string           `json:"command"`
	Warnings []string           `json:"warnings"`

	// Protected are the --protect paths the mount layer holds read-only (omitted where none was asked).
	Protected []string `json:"protected,omitempty"`

	// WSLInterop is, on WSL2 only, what became of Windows interop: disabled (WSL's setting), closed (inside
	// the sandbox) or allowed (--allow-interop); omitted elsewhere.
	WSLInterop string `json:"wsl_interop,omitempty"`
}

// New returns a report with every list empty (never null) and Landlock "unknown".
func New(mode string) *Report {
	return &Report{Schema: Schema, Mode: mode, Landlock: "unknown", Handled: []string{}, Rules: []Rule{},
		Seccomp: []string{}, Channels: map[string]Channel{}, Command: []string{}, Warnings: []string{}}
}

// Refused records err as the outcome.
func (r *Report) Refused(err error) {
	r.Outcome, r.Reason, r.Error = "refused", ReasonOf(err), err.Error()
}

// Marshal returns the report as one line of JSON with a trailing newline.
func (r *Report) Marshal() []byte {
	o := newObject()
	o.str("schema", r.Schema)
	o.str("outcome", r.Outcome)
	if r.Reason != "" {
		o.str("reason", string(r.Reason))
	}
	if r.Error != "" {
		o.str("error", r.Error)
	}
	o.str("mode", r.Mode)
	o.str("backend", r.Backend)
	if r.Bwrap != "" {
		o.str("bwrap", r.Bwrap)
	}
	o.str("metadata", r.Metadata)
	o.num("abi", r.ABI)
	o.num("errata", r.Errata)
	o.str("landlock", r.Landlock)
	o.strs("handled", r.Handled)
	if r.Rules == nil {
		o.raw("rules", []byte("null"))
	} else {
		rules := []byte{'['}
		for i, rule := range r.Rules {
			if i > 0 {
				rules = append(rules, ',')
			}
			ro := newObject()
			ro.str("path", rule.Path)
			ro.str("type", rule.Type)
			ro.strs("rights", rule.Rights)
			if rule.Reason != "" {
				ro.str("reason", rule.Reason)
			}
			rules = append(rules, ro.end()...)
		}
		o.raw("rules", append(rules, ']'))
	}
	o.strs("seccomp", r.Seccomp)
	appendChannels(o, r.Channels)
	o.strs("command", r.Command)
	o.strs("warnings", r.Warnings)
	if len(r.Protected) > 0 {
		o.strs("protected", r.Protected)
	}
	if r.WSLInterop != "" {
		o.str("wsl_interop", r.WSLInterop)
	}
	return append(o.end(), '\n')
}

// Probe is the verdict of `confine probe --json`.
type Probe struct {
	Schema      string             `json:"schema"`
	Kernel      string             `json:"kernel"`
	Arch        string             `json:"arch"`
	Landlock    string             `json:"landlock"`
	ABI         int                `json:"abi"`
	Errata      int                `json:"errata"`
	Errno       string             `json:"errno,omitempty"`
	AutoBackend string             `json:"auto_backend"` // "landlock", "bwrap" or "none"
	AutoReason  string             `json:"auto_reason"`
	Bwrap       string             `json:"bwrap,omitempty"`       // the bwrap --backend bwrap would run, if one passes confine's checks
	WSL         int                `json:"wsl"`                   // 0 (not WSL), 1 or 2
	WSLInterop  string             `json:"wsl_interop,omitempty"` // on WSL2: enabled, disabled or unknown
	Handled     []string           `json:"handled"`
	Seccomp     []string           `json:"seccomp"`
	Metadata    string             `json:"metadata"`               // mount-layer where a user+mount namespace could be made, else supervisor where a seccomp listener can be had, else seccomp-deny
	MetadataWhy string             `json:"metadata_why,omitempty"` // why the mount layer (and the supervisor) is not used
	Strategies  []string           `json:"strategies"`             // what a run would try, in order: the first one the host allows runs (launch.Strategy)
	Channels    map[string]Channel `json:"channels"`
	Warnings    []string           `json:"warnings"`
}

// Marshal returns the probe verdict as one line of JSON (without a trailing newline).
func (p *Probe) Marshal() []byte {
	o := newObject()
	o.str("schema", p.Schema)
	o.str("kernel", p.Kernel)
	o.str("arch", p.Arch)
	o.str("landlock", p.Landlock)
	o.num("abi", p.ABI)
	o.num("errata", p.Errata)
	if p.Errno != "" {
		o.str("errno", p.Errno)
	}
	o.str("auto_backend", p.AutoBackend)
	o.str("auto_reason", p.AutoReason)
	if p.Bwrap != "" {
		o.str("bwrap", p.Bwrap)
	}
	o.num("wsl", p.WSL)
	if p.WSLInterop != "" {
		o.str("wsl_interop", p.WSLInterop)
	}
	o.strs("handled", p.Handled)
	o.strs("seccomp", p.Seccomp)
	o.str("metadata", p.Metadata)
	if p.MetadataWhy != "" {
		o.str("metadata_why", p.MetadataWhy)
	}
	o.strs("strategies", p.Strategies)
	appendChannels(o, p.Channels)
	o.strs("warnings", p.Warnings)
	return o.end()
}

// ExecFailed is the second record on --report-fd, written only when execve failed after the report (outcome
// "exec") was written: the command did not run. Schema ExecFailedSchema, outcome "exec-failed".
type ExecFailed struct {
	Schema      string   `json:"schema"`
	Outcome     string   `json:"outcome"`               // always "exec-failed"
	Reason      Reason   `json:"reason"`                // CommandNotFound, CommandNotExec, WrongArch or InterpreterMissing
	Error       string   `json:"error"`                 // the stderr line, without the "confine: " prefix
	Errno       string   `json:"errno"`                 // execve's errno, by name (ENOENT, ENOEXEC, EACCES, ...)
	Status      int      `json:"status"`                // confine's exit status: 126 or 127
	Command     []string `json:"command"`               // as in the report
	Machine     string   `json:"machine,omitempty"`     // wrong-arch: the ELF's machine (e_machine), e.g. "aarch64"
	Host        string   `json:"host,omitempty"`        // wrong-arch: this kernel's machine (uname -m)
	Interpreter string   `json:"interpreter,omitempty"` // interpreter-missing: the PT_INTERP path or the #! interpreter
}

// Marshal returns the record as one line of JSON with a trailing newline.
func (r *ExecFailed) Marshal() []byte {
	o := newObject()
	o.str("schema", r.Schema)
	o.str("outcome", r.Outcome)
	o.str("reason", string(r.Reason))
	o.str("error", r.Error)
	o.str("errno", r.Errno)
	o.num("status", r.Status)
	o.strs("command", r.Command)
	if r.Machine != "" {
		o.str("machine", r.Machine)
	}
	if r.Host != "" {
		o.str("host", r.Host)
	}
	if r.Interpreter != "" {
		o.str("interpreter", r.Interpreter)
	}
	return append(o.end(), '\n')
}
