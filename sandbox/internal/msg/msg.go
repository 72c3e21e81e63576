// Package msg builds the launcher's error and warning messages without fmt, which costs the stripped static
// binary about 180 KB (reflect, fmtsort, time formatting) (measured against a 2 MiB budget per artifact, issue 8; the budget is 2.5 MiB since issue 26).
//
// A message is its parts, concatenated. A part is a string, an error, a Stringer, an int, int32, int64, uint32,
// uint64 or uintptr (in decimal), a Hex, an Oct, or a Quoted. Err wraps every error part (errors.Is and errors.As see each one, as with several %w in
// fmt.Errorf); to quote an error's text without wrapping it, pass err.Error().
package msg

import (
	"strconv"
)

// Hex prints as 0x followed by lower-case hex digits, as fmt's %#x does.
type Hex uint64

// Oct prints as 0 followed by octal digits (0 alone for zero), as fmt's %#o does (file modes).
type Oct uint64

// Quoted prints as a Go double-quoted string, as fmt's %q does.
type Quoted string

// Str returns the parts concatenated. A part of any other type panics: that is a bug in the caller.
func Str(parts ...any) string {
	return string(appendParts(nil, parts))
}

// Err returns an error whose text is Str(parts...) and which wraps each error among parts.
func Err(parts ...any) error {
	e := &wrapped{text: Str(parts...)}
	for _, p := range parts {
		if err, ok := p.(error); ok {
			e.errs = append(e.errs, err)
		}
	}
	return e
}

type wrapped struct {
	text string
	errs []error
}

func (e *wrapped) Error() string   { return e.text }
func (e *wrapped) Unwrap() []error { return e.errs }

func appendParts(b []byte, parts []any) []byte {
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b = append(b, v...)
		case error:
			b = append(b, v.Error()...)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case int32:
			b = strconv.AppendInt(b, int64(v), 10)
		case uint32:
			b = strconv.AppendUint(b, uint64(v), 10)
		case uint64:
			b = strconv.AppendUint(b, v, 10)
		case uintptr:
			b = strconv.AppendUint(b, uint64(v), 10)
		case interface{ String() string }:
			b = append(b, v.String()...)
		case Hex:
			b = strconv.AppendUint(append(b, "0x"...), uint64(v), 16)
		case Oct:
			if v != 0 {
				b = append(b, '0')
			}
			b = strconv.AppendUint(b, uint64(v), 8)
		case Quoted:
			b = strconv.AppendQuote(b, string(v))
		default:
			panic("msg: unsupported part type")
		}
	}
	return b
}

// Itoa is strconv.Itoa.
func Itoa(i int) string { return strconv.Itoa(i) }
