package guest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/vm/internal/console"
)

// run is exercised on the host: it is plain process handling, the mounts are not.
func runOnHost(t *testing.T, timeout time.Duration, script string) (console.Result, []byte, *console.Parser) {
	t.Helper()
	m := console.NewMarkers("abc")
	var stream bytes.Buffer
	res := console.Result{Exit: -1}
	stream.Write(m.Begin())
	run([]string{"/bin/sh", "-c", script}, []string{"VM_ARCH=test"}, timeout, m, &stream, &res)
	stream.Write(m.ResultLine(res))
	var out bytes.Buffer
	p := console.NewParser("abc", &out)
	_, err := p.Write(stream.Bytes())
	require.NoError(t, err)
	require.NoError(t, p.Close())
	return res, out.Bytes(), p
}

func TestRunStreamsStdout(t *testing.T) {
	res, out, p := runOnHost(t, 10*time.Second, `echo "$VM_ARCH in $(pwd)"; echo to-stderr >&2; printf 'no newline'; exit 3`)
	assert.Equal(t, 3, res.Exit)
	assert.False(t, res.TimedOut)
	assert.Equal(t, 2, res.Lines)
	assert.Equal(t, "test in /tmp\nno newline\n", string(out))
	_, err := p.Result()
	assert.NoError(t, err, "the host verifies the guest's stdout checksum")
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	start := time.Now()
	// A background child keeps stdout open: the supervisor must still finish.
	res, out, _ := runOnHost(t, 500*time.Millisecond, `echo before; sleep 60 & sleep 60`)
	assert.True(t, res.TimedOut)
	assert.Equal(t, -1, res.Exit)
	assert.Equal(t, "SIGKILL", res.Signal)
	assert.Contains(t, res.Error, "guest timeout")
	assert.Equal(t, "before\n", string(out))
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestRunStragglerAfterExit(t *testing.T) {
	res, out, _ := runOnHost(t, 10*time.Second, `(sleep 60; echo late) & echo done`)
	assert.Equal(t, 0, res.Exit)
	assert.Equal(t, "done\n", string(out))
	assert.Empty(t, res.Error)
}

func TestRunMissingCommand(t *testing.T) {
	m := console.NewMarkers("abc")
	res := console.Result{Exit: -1}
	run([]string{"/payload/nope"}, nil, time.Second, m, &bytes.Buffer{}, &res)
	assert.Contains(t, res.Error, "start /payload/nope")
	assert.Equal(t, -1, res.Exit)
}

// TestRunPasses runs two passes of one boot into one console stream: each host parser (one per pass nonce) gets
// its own pass's stdout and result, and the step between passes runs after each.
func TestRunPasses(t *testing.T) {
	cfg := Config{Argv: []string{"/bin/sh", "-c", `echo "pass $PASS"; exit $PASS`}, Timeout: 10 * time.Second,
		Passes: []Pass{{Nonce: "aa1", Env: []string{"PASS=1"}}, {Nonce: "bb2", Env: []string{"PASS=2"}}}}
	var stream bytes.Buffer
	between := 0
	runPasses(cfg, console.Result{Exit: -1, Release: "r"}, nil, &stream, func() { between++ })
	assert.Equal(t, 2, between)
	for i, p := range cfg.Passes {
		var out bytes.Buffer
		parser := console.NewParser(p.Nonce, &out)
		_, err := parser.Write(stream.Bytes())
		require.NoError(t, err)
		require.NoError(t, parser.Close())
		res, err := parser.Result()
		require.NoError(t, err)
		assert.Equal(t, i+1, res.Exit)
		assert.Equal(t, "r", res.Release)
		assert.Equal(t, fmt.Sprintf("pass %d\n", i+1), out.String(), "a pass's parser sees its own output only")
		assert.True(t, parser.Ended())
	}
}

// TestRunPassesSetupFailed: no pass runs, and each reports the setup error.
func TestRunPassesSetupFailed(t *testing.T) {
	cfg := Config{Argv: []string{"/bin/sh", "-c", "echo ran"}, Timeout: time.Second,
		Passes: []Pass{{Nonce: "aa1"}, {Nonce: "bb2"}}}
	var stream bytes.Buffer
	runPasses(cfg, console.Result{Exit: -1}, errors.New("mount proc: EPERM"), &stream, func() { t.Error("between ran") })
	for _, p := range cfg.Passes {
		parser := console.NewParser(p.Nonce, nil)
		parser.Write(stream.Bytes())
		parser.Close()
		res, err := parser.Result()
		require.NoError(t, err)
		assert.Equal(t, -1, res.Exit)
		assert.Equal(t, "mount proc: EPERM", res.Error)
	}
	assert.NotContains(t, stream.String(), "ran")
}
