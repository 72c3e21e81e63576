package launch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDetectWSL(t *testing.T) {
	for release, want := range map[string]WSL{
		"6.12.117+deb13-amd64":               NotWSL,
		"4.4.0-19041-Microsoft":              WSL1,
		"4.4.0-22621-Microsoft":              WSL1,
		"5.15.153.1-microsoft-standard-WSL2": WSL2,
		"6.6.36.6-microsoft-standard-WSL2+":  WSL2,
	} {
		if wsl2Build && want == NotWSL {
			want = WSL2
		}
		require.Equal(t, want, DetectWSL(release), release)
	}
}

func TestReadWSLInterop(t *testing.T) {
	dir := t.TempDir()
	old := binfmtDir
	binfmtDir = dir
	t.Cleanup(func() { binfmtDir = old })
	require.Equal(t, InteropUnknown, readWSLInterop(), "binfmt_misc not mounted")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status"), []byte("enabled\n"), 0o644))
	require.Equal(t, InteropDisabled, readWSLInterop(), "no entries")
	entry := filepath.Join(dir, "WSLInterop")
	require.NoError(t, os.WriteFile(entry, []byte("disabled\ninterpreter /init\nflags: PF\noffset 0\nmagic 4d5a\n"), 0o644))
	require.Equal(t, InteropDisabled, readWSLInterop())
	require.NoError(t, os.WriteFile(entry, []byte("enabled\ninterpreter /init\nflags: PF\noffset 0\nmagic 4d5a\n"), 0o644))
	require.Equal(t, InteropEnabled, readWSLInterop())
}
