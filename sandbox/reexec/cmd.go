package reexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"

	"github.com/confine-dev/confine/sandbox/internal/cli"
	"github.com/confine-dev/confine/sandbox/launch"
	"github.com/confine-dev/confine/sandbox/report"
)

// Kind is how a confined run ended.
type Kind string

// The kinds, as the npm package's run() names them (release/npm/confine/index.d.ts).
const (
	OK         Kind = "ok"          // the command ran and exited 0
	Failed     Kind = "failed"      // the command ran and exited non-zero, or was killed by a signal
	Refused    Kind = "refused"     // confine refused (exit 125) and nothing ran; Reason says why
	ExecFailed Kind = "exec-failed" // the command could not be executed (126) or found (127); nothing ran
)

// Result is a finished run, decided from the exit status and the report descriptor's records only.
type Result struct {
	Kind       Kind
	ExitCode   int                // the launcher's exit status (the command's own when it ran); -1 when killed
	Signal     syscall.Signal     // the signal that ended the command, or 0
	Reason     report.Reason      // Refused and ExecFailed: the report's reason; "unknown" for a refusal with no report
	Report     *report.Report     // confine.report/v1 (its Channels say which side channels stay open); nil if none
	ExecRecord *report.ExecFailed // confine.exec-failed/v1, when execve failed after the report; else nil
}

// ErrNoReport is Wait's error when the launcher exited without a refusal's status and wrote no report: nothing
// says the command was confined. confine writes its report before the command runs, so this is not confine.
var ErrNoReport = errors.New("reexec: the launcher wrote no report, so nothing says the command was confined")

// Cmd is a confined command: an *exec.Cmd that starts this executable as the launcher, with the report on a
// pipe the Cmd owns (the launcher's fd 3). Set Stdin, Stdout, Stderr, Dir (default: the worktree) and Env
// before Start; leave ExtraFiles empty. Start, Wait, Run, Output and CombinedOutput replace exec.Cmd's. Killing
// Process ends the launcher and the command, not what the command left running in the background (still
// confined): set SysProcAttr.Setpgid and signal the process group to end them all.
type Cmd struct {
	*exec.Cmd
	records chan []byte // the report descriptor's bytes, once the launcher and the command closed it
	policy  Policy
}

// Command returns a Cmd that runs argv (argv[0] is looked up on PATH by the launcher, as confine does) confined
// by p. A policy the launcher would refuse is its refusal (report.Refusal). Start refuses (ErrUntrusted) when
// this executable lies where a confined command could replace it: beneath p's roots, /tmp, /dev/shm or a
// directory a profile may grant, by path or under another name (a bind mount, an overlay), owned by neither
// root nor this user, writable by anyone else, or with another hard link. `go run` and `go test` build into
// /tmp, so a program started by them is refused: build it with `go build -o` outside.
func (p Policy) Command(argv ...string) (*Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("reexec: Command needs a command")
	}
	if !mainCalled {
		return nil, errNoMain
	}
	// The launcher's parser first: a bad policy (a relative worktree, an empty entry, an unknown profile) is
	// its one-line refusal (report.Refusal: usage or bad-root), before the trust check compares any root.
	flags := append(p.Args(), "--report-fd=3", "--")
	if _, _, err := cli.ParseProfiles(slices.Concat(flags, argv)); err != nil {
		return nil, err
	}
	args := slices.Concat([]string{os.Args[0], Entry}, flags, argv)
	// /proc/self/exe in the new process is the file this process runs, whatever is at its path since.
	c := &Cmd{Cmd: &exec.Cmd{Path: "/proc/self/exe", Args: args}, policy: p}
	if fi, err := os.Stat(p.Worktree); err == nil && fi.IsDir() {
		c.Dir = p.Worktree
	}
	return c, nil
}

// Start checks this executable (see Command), starts the launcher and reads its report descriptor in the
// background.
func (c *Cmd) Start() error {
	if len(c.ExtraFiles) > 0 {
		return errors.New("reexec: Cmd.ExtraFiles must be empty: the launcher's fd 3 is the report")
	}
	if err := trustedSelf(c.policy, c.Env); err != nil { // at Start, once Env is set: the launcher's profiles read it
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	c.ExtraFiles = []*os.File{w}
	err = c.Cmd.Start()
	w.Close()
	c.ExtraFiles = nil
	if err != nil {
		r.Close()
		return err
	}
	c.records = make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		r.Close()
		c.records <- b
	}()
	return nil
}

// Wait waits for the launcher, then for the report descriptor to close, and decides the Result. The error is
// nil for every Kind; it is ErrNoReport, a malformed report, or exec.Cmd's own (Start not called, output
// copying).
func (c *Cmd) Wait() (*Result, error) {
	if c.records == nil {
		return nil, errors.New("reexec: Wait before Start")
	}
	err := c.Cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, err
	}
	b := <-c.records
	ws := c.ProcessState.Sys().(syscall.WaitStatus)
	sig := syscall.Signal(0)
	if ws.Signaled() {
		sig = ws.Signal()
	}
	return classify(c.ProcessState.ExitCode(), sig, b)
}

// Run is Start, then Wait.
func (c *Cmd) Run() (*Result, error) {
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c.Wait()
}

// Output is Run with the command's stdout collected (exec.Cmd's own Output would start the launcher without
// its report pipe, and the launcher refuses).
func (c *Cmd) Output() ([]byte, *Result, error) {
	var b bytes.Buffer
	c.Stdout = &b
	r, err := c.Run()
	return b.Bytes(), r, err
}

// CombinedOutput is Run with the command's stdout and stderr collected together (confine's own refusal
// lines among them).
func (c *Cmd) CombinedOutput() ([]byte, *Result, error) {
	var b bytes.Buffer
	c.Stdout, c.Stderr = &b, &b
	r, err := c.Run()
	return b.Bytes(), r, err
}

// execReasons are the exec-failed record's reasons (refusals found before anything runs use the first two).
var execReasons = map[report.Reason]bool{report.CommandNotFound: true, report.CommandNotExec: true,
	report.WrongArch: true, report.InterpreterMissing: true}

// classify decides the Result from the launcher's exit (code, or the signal that ended it) and the report
// descriptor's bytes (one JSON line, the report; a second, the exec-failed record), as the npm package's
// classify does.
func classify(code int, sig syscall.Signal, records []byte) (*Result, error) {
	r := &Result{ExitCode: code, Signal: sig}
	lines := bytes.Split(bytes.TrimSpace(records), []byte("\n"))
	if len(lines) > 2 {
		return nil, errors.New("reexec: more than two records on the report descriptor")
	}
	for i, l := range lines {
		if len(l) == 0 {
			continue
		}
		var err error
		if i == 0 {
			r.Report = &report.Report{}
			err = json.Unmarshal(l, r.Report)
			if err == nil && r.Report.Schema != report.Schema {
				err = errors.New("schema " + r.Report.Schema)
			}
		} else {
			r.ExecRecord = &report.ExecFailed{}
			err = json.Unmarshal(l, r.ExecRecord)
			if err == nil && r.ExecRecord.Schema != report.ExecFailedSchema {
				err = errors.New("schema " + r.ExecRecord.Schema)
			}
		}
		if err != nil {
			return nil, errors.New("reexec: record " + strconv.Itoa(i+1) + " on the report descriptor is not confine's: " + err.Error())
		}
	}
	ran := r.Report != nil && r.Report.Outcome == "exec" // the launcher got as far as execve
	switch {
	case r.ExecRecord != nil:
		r.Reason = r.ExecRecord.Reason
	case r.Report != nil && r.Report.Outcome == "refused":
		r.Reason = r.Report.Reason
	}
	switch {
	case sig == 0 && code == launch.ExitRefused && r.Reason != "" && !execReasons[r.Reason]:
		r.Kind = Refused
	case sig == 0 && (code == launch.ExitCannotExec || code == launch.ExitNotFound) && execReasons[r.Reason]:
		r.Kind = ExecFailed
	case sig == 0 && code == launch.ExitRefused && !ran:
		r.Kind, r.Reason = Refused, "unknown" // confine could not even write its report
	case !ran:
		return nil, ErrNoReport
	case sig == 0 && code == 0:
		r.Kind = OK
	default:
		r.Kind = Failed
	}
	return r, nil
}
