//go:build vmintegration

// Real boots (tag vmintegration, run by `make vm-test`): one normal boot, the guest timeout, and the host's
// no-output watchdog on a payload that sleeps forever. One small kernel (VM_IT_KERNEL, default 7.3-arm64: a 12 MB
// package that boots in about 3 s under TCG) keeps the budget near a minute.
package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/vm"
	"github.com/confine-dev/confine/vm/internal/fetch"
)

var (
	itBuild          sync.Once
	itBin, itPayload string
	itBuildErr       error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if itBin != "" {
		os.RemoveAll(filepath.Dir(itBin))
	}
	os.Exit(code)
}

func itSetup(t *testing.T) (Options, Target) {
	t.Helper()
	id := os.Getenv("VM_IT_KERNEL")
	if id == "" {
		id = "7.3-arm64"
	}
	m, err := vm.Load()
	require.NoError(t, err)
	ks, err := m.Select([]string{id}, nil)
	require.NoError(t, err)
	k := ks[0]
	itBuild.Do(func() {
		dir, err := os.MkdirTemp("", "vm-it-")
		if err != nil {
			itBuildErr = err
			return
		}
		itBin, itPayload = filepath.Join(dir, "bin"), filepath.Join(dir, "payload")
		for _, b := range []struct{ pkg, out string }{
			{"../../cmd/vm", filepath.Join(itBin, "vm-linux-"+k.Arch)},
			{"../../cmd/abiprobe", filepath.Join(itPayload, "abiprobe")},
		} {
			cmd := exec.Command("go", "build", "-trimpath", "-o", b.out, b.pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+k.Arch)
			if out, err := cmd.CombinedOutput(); err != nil {
				itBuildErr = fmt.Errorf("go build %s: %v: %s", b.pkg, err, out)
				return
			}
		}
	})
	require.NoError(t, itBuildErr)
	bin, payload := itBin, itPayload
	return Options{
		Targets: []Target{{Kernel: k}}, Payload: payload, Jobs: 1, Accel: "auto", Results: t.TempDir(), Keep: true,
		InitDir: bin, Cache: &fetch.Cache{Root: fetch.DefaultRoot(), Sources: m.AptSources, Log: t.Logf},
		Busybox: m.Busybox, Progress: testWriter{t},
	}, Target{Kernel: k}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func TestIntegrationBoot(t *testing.T) {
	o, k := itSetup(t)
	o.Argv = []string{"/payload/abiprobe"}
	recs, err := Run(context.Background(), o)
	require.NoError(t, err)
	r := recs[0]
	require.Equal(t, OK, r.Result, "%s: %s\n%s", r.Kernel, r.Error, strings.Join(r.ConsoleTail, "\n"))
	assert.Equal(t, k.Landlock, r.Landlock)
	assert.Equal(t, k.ABI, r.ABI)
	release := strings.TrimPrefix(strings.TrimPrefix(k.Package, "linux-binary-"), "linux-image-")
	assert.Equal(t, release, r.Release, "uname -r in the guest names the pinned package")
	sum, err := os.ReadFile(r.Image + ".sha256")
	require.NoError(t, err, "the cache records the image's sha256")
	assert.Equal(t, strings.TrimSpace(string(sum)), r.ImageSHA256)
	out, err := os.ReadFile(filepath.Join(o.Results, k.ID+".out"))
	require.NoError(t, err)
	assert.Contains(t, string(out), `"landlock":"`+k.Landlock+`"`)
	assert.FileExists(t, filepath.Join(o.Results, k.ID+".json"))
	assert.FileExists(t, filepath.Join(o.Results, k.ID+".junit.xml"))
}

func TestIntegrationGuestTimeout(t *testing.T) {
	o, _ := itSetup(t)
	o.Argv = []string{"/bin/sh", "-c", "echo started; exec sleep 1000"}
	o.Timeout = 3 * time.Second
	recs, err := Run(context.Background(), o)
	require.NoError(t, err)
	r := recs[0]
	assert.Equal(t, Fail, r.Result, r.Error)
	assert.Contains(t, r.Error, "guest timeout")
	out, err := os.ReadFile(filepath.Join(o.Results, r.Kernel+".out"))
	require.NoError(t, err)
	assert.Equal(t, "started\n", string(out), "output before the timeout still comes back")
}

// TestIntegrationWatchdog plants a guest that goes silent (a payload that sleeps, printing nothing): the watchdog
// asks the guest kernel for its task states before it kills QEMU, the run is INFRA with that evidence, and it is
// retried once, the first run kept in the record.
func TestIntegrationWatchdog(t *testing.T) {
	o, _ := itSetup(t)
	o.Argv = []string{"/bin/sleep", "1000"} // silent forever; the guest timeout is far away
	o.Timeout = 10 * time.Minute
	o.Silence = 20 * time.Second // the boot before BEGIN is silent too: keep well above a slow boot (~10 s seen under load)
	o.Retries = 1
	start := time.Now()
	recs, err := Run(context.Background(), o)
	require.NoError(t, err)
	r := recs[0]
	assert.Equal(t, Infra, r.Result)
	assert.Contains(t, r.Error, "watchdog: no console output for 20s")
	assert.Contains(t, r.Error, "payload started", "the watchdog fired during the payload, not during boot")
	assert.Less(t, time.Since(start), 8*time.Minute, "neither the guest timeout nor the host deadline ended it")
	assert.NotEmpty(t, r.ConsoleTail)
	require.Len(t, r.Retries, 1, "an infra run is retried once")
	assert.Contains(t, r.Retries[0].Error, "watchdog: no console output")
	for _, ev := range [][]string{r.Evidence, r.Retries[0].Evidence} {
		all := strings.Join(ev, "\n")
		assert.Contains(t, all, "sysrq: Show State", "the watchdog's sysrq t reached the guest kernel")
		assert.Contains(t, all, "sleep", "the task dump names the silent payload's task")
	}
	b, err := os.ReadFile(filepath.Join(o.Results, r.Kernel+".json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"retries"`)
	assert.Contains(t, string(b), `"evidence"`)
}

// TestIntegrationPasses boots two entries of one kernel that differ only in host_emulation: they share one VM,
// as two passes, each with its own environment, stdout and record; a process the first pass left running in a
// session of its own, a read-only mount it made and a file it left in /tmp are gone before the second starts.
func TestIntegrationPasses(t *testing.T) {
	o, k := itSetup(t)
	second := k
	second.ID, second.HostEmulation = k.ID+"-emulated", "no-namespaces"
	o.Targets = append(o.Targets, second)
	o.Argv = []string{"/bin/sh", "-c", `echo "$VM_KERNEL_ID ${VM_HOST_EMULATION:-none} $(pidof sleep || echo no-sleep) $(grep -c ' /var/tmp/ro ' /proc/self/mountinfo) $(ls /tmp)"
		setsid sleep 1000 </dev/null >/dev/null 2>&1 &
		mkdir -p /var/tmp/ro && mount -t tmpfs -o ro none /var/tmp/ro && touch /tmp/left-behind`}
	recs, err := Run(context.Background(), o)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	for i, want := range []string{k.ID + " none no-sleep 0 \n", second.ID + " no-namespaces no-sleep 0 \n"} {
		r := recs[i]
		require.Equal(t, OK, r.Result, "%s: %s\n%s", r.Kernel, r.Error, strings.Join(r.ConsoleTail, "\n"))
		assert.Equal(t, k.ID, r.Boot, "one boot")
		out, err := os.ReadFile(filepath.Join(o.Results, r.Kernel+".out"))
		require.NoError(t, err)
		assert.Equal(t, want, string(out))
	}
	assert.Equal(t, recs[0].BootSeconds, recs[1].BootSeconds)
	assert.InDelta(t, recs[0].BootSeconds, recs[0].Seconds+recs[1].Seconds, 0.01, "the passes' shares sum to the boot")
	assert.Equal(t, recs[1].GuestSeconds, recs[1].Seconds, "the boot's own time is the first pass's")
}
