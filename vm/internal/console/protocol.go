// Package console is the guest -> host result protocol over the serial console.
//
// The guest supervisor writes, each line in one write(2):
//
//	@@vm:<nonce>:begin
//	@@vm:<nonce>:o <payload stdout line>        (one per line, bytes unchanged)
//	@@vm:<nonce>:result <json> <sha256 of json, hex>
//	@@vm:<nonce>:end
//
// The nonce is random per run, so neither kernel messages nor the payload can forge a marker, and markers are
// matched anywhere in a line (firmware and printk noise may precede them). The result JSON carries the sha256 of
// the payload's stdout, so the host can prove the lines it collected are exactly the ones the guest sent.
package console

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Result is what the guest reports about one payload run.
type Result struct {
	Release      string  `json:"release"`             // uname -r in the guest
	Exit         int     `json:"exit"`                // payload exit status; -1 if it did not exit normally
	Signal       string  `json:"signal,omitempty"`    // signal that ended it, e.g. "SIGKILL"
	TimedOut     bool    `json:"timed_out,omitempty"` // the guest timeout killed it
	Error        string  `json:"error,omitempty"`     // supervisor failure (mount, exec), payload not run or run incompletely
	Seconds      float64 `json:"seconds"`             // payload wall time in the guest
	Uptime       float64 `json:"uptime"`              // guest uptime when the result was written, seconds
	Lines        int     `json:"lines"`               // stdout lines sent
	StdoutSHA256 string  `json:"stdout_sha256"`       // sha256 over the stdout lines, each followed by "\n"
	Landlock     string  `json:"landlock"`            // available, absent (ENOSYS), disabled (EOPNOTSUPP) or "error: <errno>"
	ABI          int     `json:"abi"`                 // landlock_create_ruleset(NULL, 0, VERSION); 0 unless available
}

// Markers for one nonce.
type Markers struct{ prefix string }

// NewMarkers returns the markers of a run. nonce must be non-empty and contain no spaces or colons.
func NewMarkers(nonce string) Markers { return Markers{prefix: "@@vm:" + nonce + ":"} }

// Begin is the line (with newline) that opens the payload output.
func (m Markers) Begin() []byte { return []byte(m.prefix + "begin\n") }

// End is the line (with newline) that closes the run.
func (m Markers) End() []byte { return []byte(m.prefix + "end\n") }

// Output wraps one payload stdout line (without its newline).
func (m Markers) Output(line []byte) []byte {
	b := make([]byte, 0, len(m.prefix)+3+len(line))
	b = append(b, m.prefix...)
	b = append(b, "o "...)
	b = append(b, line...)
	return append(b, '\n')
}

// ResultLine encodes r as a result line: JSON followed by the hex sha256 of the JSON bytes.
func (m Markers) ResultLine(r Result) []byte {
	js, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("BUG(vm): marshal result: %v", err)) // Result has only plain fields
	}
	sum := sha256.Sum256(js)
	return []byte(m.prefix + "result " + string(js) + " " + hex.EncodeToString(sum[:]) + "\n")
}
