package launch

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
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

func TestInteropState(t *testing.T) {
	for _, c := range []struct {
		f       Facts
		allow   bool
		state   string
		closeIt bool
	}{
		{Facts{WSL: NotWSL, Interop: InteropDisabled}, false, "", false},
		{Facts{WSL: NotWSL, Interop: InteropDisabled}, true, "", false},
		{Facts{WSL: WSL2, Interop: InteropDisabled}, false, "disabled", false},
		{Facts{WSL: WSL2, Interop: InteropDisabled}, true, "disabled", false},
		{Facts{WSL: WSL2, Interop: InteropEnabled}, false, "closed", true},
		{Facts{WSL: WSL2, Interop: InteropUnknown}, false, "closed", true},
		{Facts{WSL: WSL2, Interop: InteropEnabled}, true, "allowed", false},
		{Facts{WSL: WSL2, Interop: InteropUnknown}, true, "allowed", false},
	} {
		state, closeIt := interopState(c.f, c.allow)
		require.Equal(t, c.state, state, "%+v allow=%v", c.f, c.allow)
		require.Equal(t, c.closeIt, closeIt, "%+v allow=%v", c.f, c.allow)
		chans := map[string]report.Channel{}
		w := interopNotes(state, chans, nil)
		ch, ok := chans["wsl-interop"]
		require.Equal(t, state != "", ok)
		require.Equal(t, state == "allowed", ok && ch.Status == report.Open, "only --allow-interop leaves the channel open")
		require.Equal(t, state != "", len(w) == 1 && w[0] == ch.How, "one warning, the channel's how")
	}
}

// The mount-layer part of the closure on this host, as root: in a new mount namespace of a locked thread, a
// directory standing for /run/WSL with a live interop socket, and a tmpfs standing for a Windows drive (the
// driveFS seam: no 9p drive here), go through buildMountLayer with Private.Interop. Users are covered by the
// VM family wsl-interop, which needs no seam.
func TestInteropLayerHidesTheSocketsAndMakesDrivesNoexec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, for unshare(CLONE_NEWNS) and mounts on a locked thread (found euid ", os.Geteuid(), ")")
	}
	dir := t.TempDir()
	run, drive, wt := filepath.Join(dir, "run", "WSL"), filepath.Join(dir, "mnt", "c"), filepath.Join(dir, "wt")
	for _, d := range []string{run, drive, wt} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	sock := filepath.Join(run, "7_interop")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	oldDir, oldDrives := interopDir, drivesDir
	interopDir, drivesDir, driveFS = run, filepath.Dir(drive), unix.TMPFS_MAGIC
	t.Cleanup(func() { interopDir, drivesDir, driveFS = oldDir, oldDrives, unix.V9FS_MAGIC })

	type seen struct {
		connect, driveExec, wtWrite, wtExec error
		runFS, driveFlags                   int64
		err                                 error
	}
	done := make(chan seen)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, and its mount namespace, end with the goroutine
		var s seen
		defer func() { done <- s }()
		if s.err = unix.Unshare(unix.CLONE_NEWNS); s.err != nil {
			return
		}
		if s.err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); s.err != nil {
			return
		}
		if s.err = unix.Mount("drive", drive, "tmpfs", 0, "mode=0755"); s.err != nil {
			return
		}
		if s.err = os.WriteFile(filepath.Join(drive, "cmd.exe"), []byte("MZ"), 0o755); s.err != nil {
			return
		}
		root, err := pathfd.OpenIn(pathfd.Here, wt)
		if s.err = err; err != nil {
			return
		}
		defer root.Close()
		if _, _, s.err = buildMountLayer([]*pathfd.Root{root}, Private{Shm: -1, Terminal: -1, Interop: true}); s.err != nil {
			return
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if s.err = err; err != nil {
			return
		}
		s.connect = unix.Connect(fd, &unix.SockaddrUnix{Name: sock})
		unix.Close(fd)
		var st unix.Statfs_t
		if s.err = unix.Statfs(run, &st); s.err != nil {
			return
		}
		s.runFS = st.Type
		if s.err = unix.Statfs(drive, &st); s.err != nil {
			return
		}
		s.driveFlags = st.Flags
		s.driveExec = unix.Access(filepath.Join(drive, "cmd.exe"), unix.X_OK)
		s.wtWrite = os.WriteFile(filepath.Join(wt, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
		s.wtExec = unix.Access(filepath.Join(wt, "run.sh"), unix.X_OK)
	}()
	s := <-done
	require.NoError(t, s.err)
	require.ErrorIs(t, s.connect, unix.ENOENT, "the interop socket is hidden")
	require.Equal(t, int64(unix.TMPFS_MAGIC), s.runFS, "an empty tmpfs covers the interop directory")
	require.NotZero(t, s.driveFlags&unix.ST_NOEXEC, "the drive is noexec")
	require.ErrorIs(t, s.driveExec, unix.EACCES, "so its programs do not run in place")
	require.NoError(t, s.wtWrite, "the worktree stays writable")
	require.NoError(t, s.wtExec, "and executable")
	// Control: outside that namespace the socket is live.
	c, err := net.Dial("unix", sock)
	require.NoError(t, err, "control: the socket is reachable outside the layer")
	c.Close()
}
