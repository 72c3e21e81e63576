package report

import (
	"strconv"
	"unicode/utf8"
)

// The launcher writes its JSON by hand rather than with encoding/json, which with its reflection would be about
// a sixth of the static binary. The output is byte for byte what encoding/json.Marshal gives for the same
// struct (report_test.go checks that, and fuzzes the string escaping): fields in declaration order, lists never
// null, HTML-safe escaping, invalid UTF-8 as U+FFFD.

// jsonObject appends one object's fields, in order.
type jsonObject struct {
	b     []byte
	first bool
}

func newObject() *jsonObject { return &jsonObject{b: []byte{'{'}, first: true} }

func (o *jsonObject) key(k string) {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = appendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) { o.key(k); o.b = appendString(o.b, v) }
func (o *jsonObject) num(k string, v int) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, int64(v), 10)
}
func (o *jsonObject) strs(k string, vs []string) { o.key(k); o.b = appendStrings(o.b, vs) }

func (o *jsonObject) raw(k string, v []byte) { o.key(k); o.b = append(o.b, v...) }
func (o *jsonObject) end() []byte            { return append(o.b, '}') }

// appendStrings appends vs as a JSON array; nil is null, as encoding/json has it.
func appendStrings(b []byte, vs []string) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, v)
	}
	return append(b, ']')
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json escapes it (RFC 8259, plus <, >, & and
// U+2028/U+2029 as \u escapes; invalid UTF-8 becomes U+FFFD).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
