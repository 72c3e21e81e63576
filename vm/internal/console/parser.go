package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"regexp"
	"strings"
)

// Errors the parser reports. Each means the run's outcome is unknown: an infrastructure failure, not a test failure.
var (
	ErrNoBegin     = errors.New("no BEGIN marker: the guest supervisor never started")
	ErrNoResult    = errors.New("no RESULT line: the guest stopped before reporting")
	ErrBadChecksum = errors.New("RESULT checksum mismatch: console output corrupted")
	ErrOutput      = errors.New("payload stdout corrupted on the console")
)

// PanicError is a kernel panic seen on the console.
type PanicError struct{ Reason string } // text after "Kernel panic - not syncing: "

func (e *PanicError) Error() string { return "kernel panic: " + e.Reason }

// TailLines is how many console lines Parser keeps for error reports.
const TailLines = 50

// OopsLines is how many console lines Parser keeps from the first kernel oops on (Oops): the oops's head (what
// faulted, in which task) scrolls out of the tail behind the stack and register dumps of a panic.
const OopsLines = 80

// oopsStart marks the first line of a kernel oops or warning: "BUG: …", "Oops: …", "general protection fault…",
// "WARNING: CPU: …" (kernel/panic.c, arch/x86/kernel/dumpstack.c).
var oopsStart = regexp.MustCompile(`\] (BUG: |Oops: |general protection fault|WARNING: CPU: )`)

// Parser consumes raw console bytes (an io.Writer fed from QEMU's serial output), sends the payload's stdout lines
// to Stdout, and keeps the result and the last TailLines lines of console text. Lines may arrive split across
// writes; markers may sit mid-line. It is not safe for concurrent use.
type Parser struct {
	Stdout io.Writer // receives each payload stdout line plus "\n"; may be nil

	m        Markers
	partial  []byte
	tail     []string
	oops     []string
	hash     hash.Hash
	lines    int
	began    bool
	ended    bool
	result   *Result
	errs     []error
	panicked *PanicError
	closed   bool
}

// NewParser returns a parser for the run with this nonce.
func NewParser(nonce string, stdout io.Writer) *Parser {
	return &Parser{Stdout: stdout, m: NewMarkers(nonce), hash: sha256.New()}
}

// Write implements io.Writer. It never fails, except when Stdout does.
func (p *Parser) Write(b []byte) (int, error) {
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		if err := p.line(p.partial[:i]); err != nil {
			return len(b), err
		}
		p.partial = p.partial[i+1:]
	}
	if len(p.partial) > 1<<20 { // a runaway line with no newline: treat as a line so memory stays bounded
		if err := p.line(p.partial); err != nil {
			return len(b), err
		}
		p.partial = nil
	}
	return len(b), nil
}

// Close handles a final line that had no newline.
func (p *Parser) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	if len(p.partial) > 0 {
		err := p.line(p.partial)
		p.partial = nil
		return err
	}
	return nil
}

var escapes = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|[()][0-9A-Za-z]|[@-Z\\-_])`)

func (p *Parser) line(raw []byte) error {
	text := strings.TrimRight(escapes.ReplaceAllString(string(raw), ""), "\r")
	p.tail = append(p.tail, text)
	if len(p.tail) > TailLines {
		p.tail = p.tail[len(p.tail)-TailLines:]
	}
	if (len(p.oops) > 0 || oopsStart.MatchString(text)) && len(p.oops) < OopsLines {
		p.oops = append(p.oops, text)
	}
	i := bytes.Index(raw, []byte(p.m.prefix))
	if i < 0 {
		if j := strings.Index(text, "Kernel panic - not syncing: "); j >= 0 && p.panicked == nil {
			p.panicked = &PanicError{Reason: strings.TrimSpace(text[j+len("Kernel panic - not syncing: "):])}
		}
		return nil
	}
	rest := raw[i+len(p.m.prefix):]
	switch {
	case bytes.HasPrefix(rest, []byte("o ")):
		if !p.began || p.result != nil {
			p.errs = append(p.errs, fmt.Errorf("%w: output line outside BEGIN..RESULT", ErrOutput))
			return nil
		}
		out := rest[2:]
		p.lines++
		p.hash.Write(out)
		p.hash.Write([]byte{'\n'})
		if p.Stdout != nil {
			if _, err := p.Stdout.Write(append(append([]byte(nil), out...), '\n')); err != nil {
				return err
			}
		}
	case bytes.Equal(bytes.TrimRight(rest, "\r"), []byte("begin")):
		p.began = true
	case bytes.Equal(bytes.TrimRight(rest, "\r"), []byte("end")):
		p.ended = true
	case bytes.HasPrefix(rest, []byte("result ")):
		p.parseResult(strings.TrimRight(string(rest[len("result "):]), "\r"))
	}
	return nil
}

func (p *Parser) parseResult(s string) {
	if p.result != nil {
		p.errs = append(p.errs, errors.New("second RESULT line"))
		return
	}
	sp := strings.LastIndexByte(s, ' ')
	if sp < 0 {
		p.errs = append(p.errs, fmt.Errorf("%w: no checksum", ErrBadChecksum))
		return
	}
	js, sum := s[:sp], s[sp+1:]
	got := sha256.Sum256([]byte(js))
	if hex.EncodeToString(got[:]) != sum {
		p.errs = append(p.errs, ErrBadChecksum)
		return
	}
	var r Result
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		p.errs = append(p.errs, fmt.Errorf("%w: %v", ErrBadChecksum, err))
		return
	}
	p.result = &r
}

// Began reports whether the BEGIN marker was seen.
func (p *Parser) Began() bool { return p.began }

// Ended reports whether the END marker was seen.
func (p *Parser) Ended() bool { return p.ended }

// Tail returns the last console lines (escape codes stripped), oldest first.
func (p *Parser) Tail() []string { return append([]string(nil), p.tail...) }

// Oops returns the console lines from the first kernel oops or warning on (at most OopsLines), or nil.
func (p *Parser) Oops() []string { return append([]string(nil), p.oops...) }

// Panic returns the kernel panic seen on the console, or nil.
func (p *Parser) Panic() *PanicError { return p.panicked }

// Result returns the verified result once the console is complete (after Close). The error is one of ErrNoBegin,
// ErrNoResult, ErrBadChecksum, ErrOutput or a *PanicError (a panic wins over a missing result, since it explains it).
// A missing END with a verified result is not an error: END only marks that the guest got as far as powering off.
func (p *Parser) Result() (*Result, error) {
	if len(p.errs) > 0 {
		return nil, p.errs[0]
	}
	if p.result == nil {
		switch {
		case p.panicked != nil:
			return nil, p.panicked
		case !p.began:
			return nil, ErrNoBegin
		default:
			return nil, ErrNoResult
		}
	}
	if got := hex.EncodeToString(p.hash.Sum(nil)); got != p.result.StdoutSHA256 || p.lines != p.result.Lines {
		return nil, fmt.Errorf("%w: host saw %d lines (sha256 %.12s), guest sent %d (sha256 %.12s)",
			ErrOutput, p.lines, got, p.result.Lines, p.result.StdoutSHA256)
	}
	return p.result, nil
}
