package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guestStream builds what a guest writes for these stdout lines, and the result it reports.
func guestStream(m Markers, lines ...string) ([]byte, Result) {
	var b bytes.Buffer
	h := sha256.New()
	b.Write(m.Begin())
	for _, l := range lines {
		b.Write(m.Output([]byte(l)))
		h.Write([]byte(l + "\n"))
	}
	r := Result{Release: "6.12.117+deb13-amd64", Exit: 0, Lines: len(lines), StdoutSHA256: hex.EncodeToString(h.Sum(nil)), Landlock: "available", ABI: 6}
	b.Write(m.ResultLine(r))
	b.Write(m.End())
	return b.Bytes(), r
}

func parse(t *testing.T, stream []byte, chunk int) (*Parser, string) {
	t.Helper()
	var out bytes.Buffer
	p := NewParser("n0nce", &out)
	for len(stream) > 0 {
		n := min(chunk, len(stream))
		_, err := p.Write(stream[:n])
		require.NoError(t, err)
		stream = stream[n:]
	}
	require.NoError(t, p.Close())
	return p, out.String()
}

func TestParserNoiseAndSplitLines(t *testing.T) {
	m := NewMarkers("n0nce")
	lines := []string{`{"Action":"run","Test":"TestX"}`, "", "  spaces  ", `@@vm:n0nce:end looks like a marker`}
	body, want := guestStream(m, lines...)
	// SeaBIOS escape codes and "Probing EDD" on the same line as BEGIN; printk lines between payload lines.
	stream := append([]byte("\x1b[2J\x1b[01;01HSeaBIOS (version 1.16)\r\nProbing EDD (edd=off to disable)... ok"), body...)
	stream = bytes.Replace(stream, []byte("@@vm:n0nce:o   spaces"), []byte("[    2.1] random: crng init done\r\n@@vm:n0nce:o   spaces"), 1)
	for _, chunk := range []int{1, 7, 4096} {
		p, out := parse(t, stream, chunk)
		r, err := p.Result()
		require.NoError(t, err, "chunk %d", chunk)
		assert.Equal(t, want, *r)
		assert.Equal(t, strings.Join(lines, "\n")+"\n", out, "chunk %d", chunk)
		assert.True(t, p.Ended())
	}
}

func TestParserMissingEnd(t *testing.T) {
	body, _ := guestStream(NewMarkers("n0nce"), "a")
	body = bytes.TrimSuffix(body, NewMarkers("n0nce").End())
	p, out := parse(t, body, 100)
	r, err := p.Result()
	require.NoError(t, err, "a verified result without END is still a result")
	assert.Equal(t, 0, r.Exit)
	assert.False(t, p.Ended())
	assert.Equal(t, "a\n", out)
}

func TestParserMissingResult(t *testing.T) {
	m := NewMarkers("n0nce")
	p, _ := parse(t, append(m.Begin(), m.Output([]byte("partial"))...), 100)
	_, err := p.Result()
	assert.ErrorIs(t, err, ErrNoResult)
	assert.Equal(t, []string{"@@vm:n0nce:begin", "@@vm:n0nce:o partial"}, p.Tail())

	p, _ = parse(t, []byte("Booting the kernel.\n"), 100)
	_, err = p.Result()
	assert.ErrorIs(t, err, ErrNoBegin)
}

func TestParserBadChecksum(t *testing.T) {
	body, _ := guestStream(NewMarkers("n0nce"), "a")
	body = bytes.Replace(body, []byte(`"exit":0`), []byte(`"exit":1`), 1) // a flipped byte in transit
	p, _ := parse(t, body, 100)
	_, err := p.Result()
	assert.ErrorIs(t, err, ErrBadChecksum)
}

func TestParserCorruptedOutput(t *testing.T) {
	body, _ := guestStream(NewMarkers("n0nce"), "hello world")
	body = bytes.Replace(body, []byte("hello world"), []byte("hello[  3.0] x world"), 1)
	p, _ := parse(t, body, 100)
	_, err := p.Result()
	assert.ErrorIs(t, err, ErrOutput)
}

func TestParserPanic(t *testing.T) {
	m := NewMarkers("n0nce")
	stream := append(m.Begin(), "[    3.2] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000300\r\n[    3.2] ---[ end Kernel panic ]---\r\n"...)
	p, _ := parse(t, stream, 5)
	_, err := p.Result()
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Attempted to kill init! exitcode=0x00000300", pe.Reason)
	assert.Equal(t, "kernel panic: Attempted to kill init! exitcode=0x00000300", err.Error())
}

func TestParserIgnoresOtherNonce(t *testing.T) {
	body, _ := guestStream(NewMarkers("other"), "a")
	p, out := parse(t, body, 100)
	_, err := p.Result()
	assert.ErrorIs(t, err, ErrNoBegin)
	assert.Empty(t, out)
}

func TestParserTailBounded(t *testing.T) {
	p := NewParser("n", nil)
	for i := 0; i < 3*TailLines; i++ {
		_, _ = p.Write([]byte("line\n"))
	}
	assert.Len(t, p.Tail(), TailLines)
}

// TestParserOops keeps a panic's head (the oops line and what follows, bounded), which a long stack pushes out of
// the tail.
func TestParserOops(t *testing.T) {
	p := NewParser("n", nil)
	_, _ = p.Write([]byte("[    4.51] booted\n[    4.51] Oops: general protection fault, probably for non-canonical address 0xdead: 0000 [#1] SMP\n[    4.51] CPU: 0 UID: 0 PID: 93 Comm: confine\n"))
	for i := 0; i < 3*OopsLines; i++ {
		_, _ = p.Write([]byte("[    4.52]  stack line\n"))
	}
	oops := p.Oops()
	require.Len(t, oops, OopsLines)
	assert.Contains(t, oops[0], "Oops: general protection fault")
	assert.Contains(t, oops[1], "Comm: confine")
	assert.NotContains(t, strings.Join(p.Tail(), "\n"), "Oops:", "the tail alone has lost it")
	assert.Empty(t, NewParser("n", nil).Oops())
}
