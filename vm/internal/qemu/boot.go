package qemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Hang errors: the host-side layers that end a boot the guest did not end itself.
var (
	ErrDeadline = errors.New("host deadline exceeded")
	ErrSilent   = errors.New("no console output")
)

// HangError says which host layer killed QEMU and after how long.
type HangError struct {
	Kind  error         // ErrDeadline or ErrSilent
	After time.Duration // the limit that was hit
	// Evidence is the console output after the watchdog asked the guest kernel for its task states (a serial
	// break, then sysrq t: "sysrq: Show State" and one block per task), before QEMU was killed.
	Evidence []string
}

// Evidence returns what the guest printed between the watchdog's sysrq request and QEMU's death (nil if it
// printed nothing or no evidence was asked for).
func (e *HangError) EvidenceLines() []string { return e.Evidence }

func (e *HangError) Error() string { return fmt.Sprintf("%v for %s: QEMU killed", e.Kind, e.After) }
func (e *HangError) Unwrap() error { return e.Kind }

// ExitError is QEMU exiting non-zero or dying of a signal (bad arguments, unusable accelerator, …).
type ExitError struct {
	Code   int    // exit status; -1 when killed by a signal
	Signal string // e.g. "SIGABRT" (a failed KVM assertion)
	Stderr string // last lines of QEMU's stderr
}

func (e *ExitError) Error() string {
	if e.Signal != "" {
		return fmt.Sprintf("QEMU killed by %s: %s", e.Signal, e.Stderr)
	}
	return fmt.Sprintf("QEMU exited with status %d: %s", e.Code, e.Stderr)
}

// Limits bound one boot.
type Limits struct {
	Deadline time.Duration // whole boot, QEMU start to exit; required (> 0)
	Silence  time.Duration // longest stretch with no console output; 0 disables the watchdog
	// Evidence is how long, at most, the watchdog collects the guest's task states (sysrq t over the serial
	// console) before it kills QEMU; 0 kills at once. Collection stops early after 2 s without output.
	Evidence time.Duration
}

// sysrqBreak is what the host types on the serial console before a sysrq key: QEMU's mux escape C-a b sends a
// break (Spec.Cmdline puts the serial port on mon:stdio), and the kernel reads the next character as the key. The
// kernel runs with sysrq_always_enabled (Debian's default mask, 438, leaves the task dump out). sysrqKeys: 9
// raises the console log level (the guest runs with loglevel=4, and the dump is KERN_INFO), t dumps every task's
// state and stack.
var sysrqBreak, sysrqKeys = []byte{0x01, 'b'}, []byte{'9', 't'}

// Boot runs QEMU for spec, copying the serial console to console until QEMU exits, and returns nil when it exits
// with status 0 (guest power-off, or a panic with panic=-1 and -no-reboot). Otherwise it returns a *HangError
// (QEMU killed by a host limit), an *ExitError, ctx's error, or a start error naming the binary.
// console is written from one goroutine.
func Boot(ctx context.Context, spec Spec, lim Limits, console io.Writer) error {
	bin, args, err := spec.Cmdline()
	if err != nil {
		return err
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return fmt.Errorf("%s not found (make vm-deps installs QEMU): %w", bin, err)
	}
	cmd := exec.Command(path, args...)
	var stderr tailBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stdin, err := cmd.StdinPipe() // the serial console's input: the watchdog's break and sysrq key
	if err != nil {
		return err
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}

	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var killedBy atomic.Pointer[error]
	var evMu sync.Mutex
	var evidence []byte
	collecting := false
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // deadline, silence and cancellation
		defer wg.Done()
		deadline := time.NewTimer(lim.Deadline)
		defer deadline.Stop()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		// collect asks the guest kernel for its task states and keeps what it prints, until 2 s pass without
		// output, lim.Evidence passes, QEMU exits or the context ends.
		collect := func(h *HangError) error {
			if lim.Evidence <= 0 {
				return h
			}
			evMu.Lock()
			collecting = true
			evMu.Unlock()
			for _, key := range sysrqKeys { // each key is one break, then the key
				stdin.Write(sysrqBreak)
				time.Sleep(300 * time.Millisecond)
				stdin.Write([]byte{key})
				time.Sleep(300 * time.Millisecond)
			}
			asked := time.Now()
			end := time.After(lim.Evidence)
		wait:
			for {
				select {
				case <-stop:
					break wait
				case <-ctx.Done():
					break wait
				case <-end:
					break wait
				case <-tick.C:
					if l := time.Unix(0, last.Load()); l.After(asked) && time.Since(l) > 2*time.Second {
						break wait
					}
				}
			}
			evMu.Lock()
			defer evMu.Unlock()
			collecting = false
			for _, l := range strings.Split(strings.ReplaceAll(string(evidence), "\r", ""), "\n") {
				if l = strings.TrimRight(l, " "); l != "" {
					h.Evidence = append(h.Evidence, l)
				}
			}
			return h
		}
		kill := func(e error) {
			killedBy.Store(&e)
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // QEMU keeps no state worth a clean shutdown
		}
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				kill(ctx.Err())
				return
			case <-deadline.C:
				kill(collect(&HangError{Kind: ErrDeadline, After: lim.Deadline}))
				return
			case <-tick.C:
				if lim.Silence > 0 && time.Since(time.Unix(0, last.Load())) > lim.Silence {
					kill(collect(&HangError{Kind: ErrSilent, After: lim.Silence}))
					return
				}
			}
		}
	}()
	buf := make([]byte, 32<<10)
	var werr error
	for {
		n, rerr := stdout.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			evMu.Lock()
			if collecting && len(evidence) < 1<<20 {
				evidence = append(evidence, buf[:n]...)
			}
			evMu.Unlock()
			if werr == nil {
				_, werr = console.Write(buf[:n])
			}
		}
		if rerr != nil {
			break
		}
	}
	err = cmd.Wait()
	close(stop)
	wg.Wait()
	if k := killedBy.Load(); k != nil {
		return *k
	}
	if werr != nil {
		return fmt.Errorf("console: %w", werr)
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			xe := &ExitError{Code: ee.ExitCode(), Stderr: stderr.tail(3)}
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				xe.Signal = unix.SignalName(ws.Signal())
			}
			return xe
		}
		return err
	}
	return nil
}

// KVMUsable reports whether a KVM boot is worth probing for a guest arch: same arch as the host and /dev/kvm
// opens read-write. It does not prove KVM can run the guest (a nested or paravirtual /dev/kvm may not): only a
// probe boot does.
func KVMUsable(arch string) (bool, string) {
	if arch != runtime.GOARCH {
		return false, fmt.Sprintf("guest %s on a %s host", arch, runtime.GOARCH)
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Sprintf("/dev/kvm: %v", err)
	}
	f.Close()
	return true, ""
}

// tailBuffer keeps the last 64 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 64<<10 {
		t.b = t.b[len(t.b)-64<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(bytes.TrimSpace(t.b))), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
