package launch

import (
	"encoding/binary"
	"errors"
)

// The handoff and the sync message travel in a small binary form, built and read here: every number is a
// little-endian uint64, every string and byte slice is its length then its bytes, every list is its length then
// its items. The launcher carries no reflection-based encoder (see report/json.go for why).

type encoder struct{ b []byte }

func (e *encoder) num(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }

func (e *encoder) str(s string) { e.num(uint64(len(s))); e.b = append(e.b, s...) }

func (e *encoder) bytes(b []byte) { e.num(uint64(len(b))); e.b = append(e.b, b...) }

func (e *encoder) strs(ss []string) {
	e.num(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

// errShort says a message ended early or claimed more than it held.
var errShort = errors.New("truncated or malformed message")

// errBadKind says a handoff names no kind this build knows.
var errBadKind = errors.New("a handoff of no known kind")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) num() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.err = errShort
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.num()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errShort
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string { return string(d.bytes()) }

// count reads a list length, which can be no more than the bytes left (each item takes at least one).
func (d *decoder) count() int {
	n := d.num()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errShort
		return 0
	}
	return int(n)
}

func (d *decoder) strs() []string {
	out := make([]string, d.count())
	for i := range out {
		out[i] = d.str()
	}
	return out
}
