// Package verify checks one release artifact against its entry in platforms/platforms.json: the ELF
// class and machine, static linking (no PT_INTERP, PT_DYNAMIC or DT_NEEDED), stripping (no .symtab, no
// DWARF), the version stamp, and the size budget. Each check gives one Result; every check runs, so one
// call reports every problem.
package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/confine-dev/confine/release/elfcheck"
	"github.com/confine-dev/confine/release/platforms"
)

// The check names, in the order Artifact reports them.
const (
	CheckFile     = "file"
	CheckMachine  = elfcheck.CheckMachine
	CheckStatic   = elfcheck.CheckStatic
	CheckStripped = elfcheck.CheckStripped
	CheckVersion  = "version"
	CheckSize     = "size"
)

// Release is what the artifact must be stamped with.
type Release struct {
	// Version is the stamp linked into sandbox/internal/cli.Version (`git describe --tags --always
	// --dirty`, e.g. "v1.2.0" or "e49ce93"): `confine version` must print "confine <Version>".
	Version string
	// Commit is the git commit (full or abbreviated hex) being released; Version must contain its first
	// 7 characters. "" skips that part of the version check.
	Commit string
}

// Result is the outcome of one check on one artifact.
type Result struct {
	Check  string
	OK     bool
	Detail string
}

// String is the one line verify prints: "ok   <check>: <detail>" or "FAIL <check>: <detail>".
func (r Result) String() string {
	status := "ok  "
	if !r.OK {
		status = "FAIL"
	}
	return fmt.Sprintf("%s %-8s %s", status, r.Check, r.Detail)
}

// Failed reports whether any result failed.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if !r.OK {
			return true
		}
	}
	return false
}

// versionTimeout bounds `confine version`.
const versionTimeout = 10 * time.Second

// Artifact checks the file at path against platform p and release rel. It returns one Result per
// check: file (a readable regular file, non-empty), machine (ELFCLASS64, ET_EXEC, p's e_machine),
// static, stripped, version and size (at most p.MaxBytes bytes). When the file is missing or not ELF, it
// returns the file check (or the file and machine checks) alone: the other checks have nothing to read.
//
// The version check runs `<path> version` when the file's ELF machine is this machine's (and the OS is
// Linux); otherwise it cannot run the binary and looks for the exact stamp bytes in the file instead, and
// says so in its detail.
func Artifact(path string, p platforms.Platform, rel Release) []Result {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return []Result{{CheckFile, false, fmt.Sprintf("%s: %v", path, err)}}
	case !st.Mode().IsRegular():
		return []Result{{CheckFile, false, fmt.Sprintf("%s: not a regular file (%v)", path, st.Mode().Type())}}
	case st.Size() == 0:
		return []Result{{CheckFile, false, path + ": empty"}}
	}
	rs := []Result{{CheckFile, true, fmt.Sprintf("%s, %d bytes", path, st.Size())}}
	rep, err := elfcheck.Inspect(path)
	if err != nil {
		return append(rs, Result{CheckMachine, false, "not a readable ELF file: " + err.Error()})
	}
	found := map[string][]string{}
	for _, f := range rep.Findings(p.GOARCH) {
		found[f.Check] = append(found[f.Check], f.Text)
	}
	ok := map[string]string{
		CheckMachine:  fmt.Sprintf("%v %v %v", rep.Class, rep.Type, rep.Machine),
		CheckStatic:   "no PT_INTERP, no PT_DYNAMIC, no DT_NEEDED",
		CheckStripped: "no .symtab, no DWARF",
	}
	for _, c := range []string{CheckMachine, CheckStatic, CheckStripped} {
		if f := found[c]; len(f) > 0 {
			rs = append(rs, Result{c, false, strings.Join(f, "; ")})
		} else {
			rs = append(rs, Result{c, true, ok[c]})
		}
	}
	rs = append(rs, version(path, rep, rel))
	if st.Size() > p.MaxBytes {
		rs = append(rs, Result{CheckSize, false, fmt.Sprintf("%d bytes, over the budget of %d", st.Size(), p.MaxBytes)})
	} else {
		rs = append(rs, Result{CheckSize, true, fmt.Sprintf("%d bytes, budget %d", st.Size(), p.MaxBytes)})
	}
	return rs
}

// version is the version check of Artifact.
func version(path string, rep elfcheck.Report, rel Release) Result {
	if rel.Version == "" {
		return Result{CheckVersion, false, "no release version given"}
	}
	if c := rel.Commit; c != "" {
		if len(c) > 7 {
			c = c[:7]
		}
		if !strings.Contains(rel.Version, c) {
			return Result{CheckVersion, false, fmt.Sprintf("release version %q does not name commit %s", rel.Version, c)}
		}
	}
	want := "confine " + rel.Version
	host, err := elfcheck.MachineFor(runtime.GOARCH)
	if err != nil || rep.Machine != host || runtime.GOOS != "linux" {
		b, err := os.ReadFile(path)
		if err != nil {
			return Result{CheckVersion, false, err.Error()}
		}
		how := fmt.Sprintf("(not run: %v binary on a %s/%s host; stamp searched in the file)", rep.Machine, runtime.GOOS, runtime.GOARCH)
		if !bytes.Contains(b, []byte(rel.Version)) {
			return Result{CheckVersion, false, fmt.Sprintf("stamp %q not found in the file %s", rel.Version, how)}
		}
		return Result{CheckVersion, true, fmt.Sprintf("stamp %q found %s", rel.Version, how)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version").Output()
	got := strings.TrimSpace(string(out))
	switch {
	case err != nil:
		return Result{CheckVersion, false, fmt.Sprintf("`%s version`: %v (output %q)", path, err, got)}
	case got != want:
		return Result{CheckVersion, false, fmt.Sprintf("`confine version` printed %q, want %q", got, want)}
	}
	return Result{CheckVersion, true, fmt.Sprintf("`confine version` printed %q", got)}
}
