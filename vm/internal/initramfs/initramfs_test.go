package initramfs

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/u-root/u-root/pkg/cpio"
	"golang.org/x/sys/unix"
)

func payloadDir(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "data.txt"), []byte("fixture"), 0o640))
	require.NoError(t, os.Symlink("../tool", filepath.Join(dir, "sub", "link")))
	return dir
}

func TestReproducible(t *testing.T) {
	dir := payloadDir(t)
	recs1, err := Payload(dir)
	require.NoError(t, err)
	a, err := Bytes(recs1)
	require.NoError(t, err)
	// Different mtimes on disk must not change the archive.
	require.NoError(t, os.Chtimes(filepath.Join(dir, "tool"), time.Unix(1, 0), time.Unix(1, 0)))
	recs2, err := Payload(dir)
	require.NoError(t, err)
	b, err := Bytes(recs2)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	c, err := Bytes(Base([]byte("init"), []byte("bb")))
	require.NoError(t, err)
	d, err := Bytes(Base([]byte("init"), []byte("bb")))
	require.NoError(t, err)
	assert.Equal(t, c, d)
}

// TestReadBackUroot reads the archive with u-root's newc reader and checks names, modes and contents.
func TestReadBackUroot(t *testing.T) {
	recs, err := Payload(payloadDir(t))
	require.NoError(t, err)
	recs = append(recs, Base([]byte("INIT"), []byte("BUSYBOX"))...)
	recs = append(recs, File("vm/run.json", []byte("cfg"), 0o644))
	got := readBack(t, recs)
	byName := map[string]cpio.Record{}
	var order []string
	for _, r := range got {
		byName[r.Name] = r
		order = append(order, r.Name)
	}
	content := func(name string) string {
		r, ok := byName[name]
		require.True(t, ok, "missing %s in %v", name, order)
		b, err := io.ReadAll(io.NewSectionReader(r.ReaderAt, 0, int64(r.FileSize)))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "INIT", content("init"))
	assert.Equal(t, uint64(cpio.S_IFREG|0o755), byName["init"].Mode)
	assert.Equal(t, "#!/bin/sh\necho hi\n", content("payload/tool"))
	assert.Equal(t, uint64(cpio.S_IFREG|0o755), byName["payload/tool"].Mode)
	assert.Equal(t, "fixture", content("payload/sub/data.txt"))
	assert.Equal(t, uint64(cpio.S_IFREG|0o640), byName["payload/sub/data.txt"].Mode)
	assert.Equal(t, "../tool", content("payload/sub/link"))
	assert.Equal(t, "cfg", content("vm/run.json"))
	assert.Equal(t, uint64(cpio.S_IFCHR|0o600), byName["dev/console"].Mode)
	assert.Equal(t, uint64(5), byName["dev/console"].Rmajor)
	assert.Equal(t, uint64(cpio.S_IFDIR|0o1777), byName["tmp"].Mode)
	// Parents come before children: the kernel does not create missing directories.
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	assert.Less(t, pos["payload"], pos["payload/sub"])
	assert.Less(t, pos["payload/sub"], pos["payload/sub/data.txt"])
}

// TestReadBackGNUCpio extracts the archive with GNU cpio, an independent reader (installed by make vm-deps).
func TestReadBackGNUCpio(t *testing.T) {
	bin, err := exec.LookPath("cpio")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("GNU cpio not found; make vm-deps installs it")
		}
		t.Skip("skipped: GNU cpio not found (make vm-deps installs it)")
	}
	recs, err := Payload(payloadDir(t))
	require.NoError(t, err)
	gz, err := Bytes(append(recs, File("vm/run.json", []byte("cfg"), 0o644)))
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	out := t.TempDir()
	cmd := exec.Command(bin, "-i", "-d", "--no-absolute-filenames", "--quiet")
	cmd.Dir = out
	cmd.Stdin = zr
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, string(msg))
	b, err := os.ReadFile(filepath.Join(out, "payload", "tool"))
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\necho hi\n", string(b))
	st, err := os.Stat(filepath.Join(out, "payload", "tool"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
	target, err := os.Readlink(filepath.Join(out, "payload", "sub", "link"))
	require.NoError(t, err)
	assert.Equal(t, "../tool", target)
	b, err = os.ReadFile(filepath.Join(out, "vm", "run.json"))
	require.NoError(t, err)
	assert.Equal(t, "cfg", string(b))
}

func TestPayloadRejectsFifo(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	_, err := Payload(dir)
	assert.ErrorContains(t, err, "not a regular file")
}

// Parent directories the archive adds are 0755, and the root is never one of them: the kernel chmods a
// directory it already has to each record's mode, so a 0777 parent in a later archive (the guest tools') would
// leave /usr/bin writable by everyone, where the launcher refuses to trust bwrap.
func TestAddedParentsAreNotWritableByOthers(t *testing.T) {
	got := readBack(t, []cpio.Record{File("usr/lib/x86_64-linux-gnu/libc.so.6", []byte("x"), 0o644), File("init", []byte("i"), 0o755)})
	dirs := map[string]uint64{}
	for _, r := range got {
		if r.Mode&cpio.S_IFMT == cpio.S_IFDIR {
			dirs[r.Name] = r.Mode &^ cpio.S_IFMT
		}
	}
	require.Equal(t, map[string]uint64{"usr": 0o755, "usr/lib": 0o755, "usr/lib/x86_64-linux-gnu": 0o755}, dirs)
}

// readBack writes recs as an archive (Bytes) and reads its records back with u-root's reader.
func readBack(t *testing.T, recs []cpio.Record) []cpio.Record {
	t.Helper()
	gz, err := Bytes(recs)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	got, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(raw)))
	require.NoError(t, err)
	return got
}
