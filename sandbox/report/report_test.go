package report

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hand-written encoder must give exactly what encoding/json gives for the same struct.
func TestMarshalMatchesEncodingJSON(t *testing.T) {
	odd := "a\"b\\c\n\r\t\x01<>&\u2028\u2029é\xff\xfe/漢"
	full := New("workspace-write")
	full.Outcome, full.Reason, full.Error, full.Backend, full.Metadata = "refused", BadRoot, odd, "landlock", "mount-layer"
	full.ABI, full.Errata, full.Landlock = 7, 3, "available"
	full.Handled, full.Seccomp, full.Command, full.Warnings = []string{"WRITE_FILE"}, []string{"mount"}, []string{odd}, []string{odd, ""}
	full.Channels = map[string]Channel{"signals": {Closed, odd}, "atime": {Open, ""}, "ipc": {}}
	full.Rules = []Rule{{Path: odd, Type: "dir", Rights: []string{"A", "B"}, Reason: odd}, {Path: "/dev/null", Type: "file", Rights: nil}}
	full.WSLInterop, full.Bwrap = "closed", odd
	for name, r := range map[string]*Report{"new": New("read-only"), "full": full, "zero": {}} {
		want, err := json.Marshal(r)
		require.NoError(t, err)
		require.Equal(t, string(want)+"\n", string(r.Marshal()), name)
	}
	for name, r := range map[string]*ExecFailed{"zero": {}, "full": {Schema: ExecFailedSchema, Outcome: "exec-failed",
		Reason: WrongArch, Error: odd, Errno: "ENOEXEC", Status: 126, Command: []string{odd}, Machine: "aarch64",
		Host: "x86_64", Interpreter: odd}} {
		want, err := json.Marshal(r)
		require.NoError(t, err)
		require.Equal(t, string(want)+"\n", string(r.Marshal()), name)
	}
	for name, p := range map[string]*Probe{"zero": {}, "full": {Schema: ProbeSchema, Kernel: odd, Errno: "ENOSYS",
		WSL: 2, WSLInterop: "enabled", Bwrap: odd, Handled: []string{}, Warnings: []string{odd},
		Channels: map[string]Channel{"tty": {Open, odd}, "caps": {Closed, "x"}}}} {
		want, err := json.Marshal(p)
		require.NoError(t, err)
		require.Equal(t, string(want), string(p.Marshal()), name)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\x00\x1f\x7f", "<&>", "\u2028", "\xff", "é\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendString(nil, s)))
	})
}

func TestSortedNamesOrdersAsEncodingJSON(t *testing.T) {
	ch := map[string]Channel{}
	for _, n := range []string{"tty", "abstract-unix", "ipc", "signals", "keyring", "unix-pathname", "setuid", "stdio", "a", "Z"} {
		ch[n] = Channel{}
	}
	require.Equal(t, []string{"Z", "a", "abstract-unix", "ipc", "keyring", "setuid", "signals", "stdio", "tty", "unix-pathname"},
		SortedNames(ch))
	require.Empty(t, SortedNames(nil))
}
