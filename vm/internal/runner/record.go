package runner

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Results of one kernel.
const (
	OK    = "ok"    // the payload exited 0 and the kernel reported the expected Landlock state
	Fail  = "fail"  // the payload failed, timed out in the guest, or the Landlock state differs from the manifest
	Infra = "infra" // the outcome is unknown: no verified result came back (hang, panic, QEMU error, corruption)
	Skip  = "skip"  // nothing to test: a kernel without an expected Landlock state reported no Landlock
)

// Record is <id>.json: what happened on one kernel. Schema confine.vm.result/v1.
type Record struct {
	Schema           string `json:"schema"`
	Kernel           string `json:"kernel"`  // manifest id, or custom-<arch> for --kernel PATH
	Package          string `json:"package"` // Debian package and version; empty for --kernel PATH or a non-Debian image
	Version          string `json:"version"`
	Image            string `json:"image"` // kernel image path (in the cache, or --kernel PATH)
	ImageSHA256      string `json:"image_sha256"`
	ImageRef         string `json:"image_ref,omitempty"`    // OCI reference the kernel was pulled from
	ImageDigest      string `json:"image_digest,omitempty"` // its image manifest digest
	Release          string `json:"release"`                // uname -r in the guest
	Arch             string `json:"arch"`
	Accel            string `json:"accel"` // kvm or tcg
	CmdlineExtra     string `json:"cmdline_extra"`
	ExpectedLandlock string `json:"expected_landlock"` // from the manifest or image labels; empty for --kernel PATH
	ExpectedABI      int    `json:"expected_abi"`
	Landlock         string `json:"landlock"` // what the guest supervisor's probe found
	ABI              int    `json:"abi"`
	Exit             int    `json:"exit"` // payload exit status; -1 if it did not exit normally
	Result           string `json:"result"`
	// Seconds is this entry's share of its boot's host wall time (QEMU start to exit): its payload's run time,
	// and for the boot's first entry also what no entry accounts for (boot, unpacking, power-off, an entry with
	// no result). A boot's entries' Seconds sum to its BootSeconds.
	Seconds      float64 `json:"seconds"`
	GuestSeconds float64 `json:"guest_seconds"` // payload run time in the guest
	// Boot is the id of the entry whose VM this entry ran in (its own id when it ran first or alone): the
	// entries of a kernel that differ only in abi_cap or host_emulation share one boot, one after the other.
	Boot        string   `json:"boot"`
	BootSeconds float64  `json:"boot_seconds"` // that VM's wall time, QEMU start to exit
	Error       string   `json:"error,omitempty"`
	ConsoleTail []string `json:"console_tail,omitempty"` // last console lines (payload stderr included), unless ok
	// Evidence is what the watchdog collected before it killed QEMU: the guest kernel's task states (sysrq t).
	Evidence []string `json:"evidence,omitempty"`
	// Retries are the earlier runs of this kernel that ended infra and were retried (Options.Retries).
	Retries []Retry `json:"retries,omitempty"`
	// PinnedVersion is the manifest's pin ("package=version") when another package ran: the pin left the archive
	// and the newest package of the same series (Package, Version) ran instead (fetch.Cache.Newest).
	PinnedVersion string `json:"pinned_version,omitempty"`
	ABICap        int    `json:"abi_cap,omitempty"` // the manifest's abi_cap (VM_ABI_CAP in the guest)
	// HostEmulation is the manifest's host_emulation (VM_HOST_EMULATION in the guest), "" for none.
	HostEmulation string `json:"host_emulation,omitempty"`
	CPUs          int    `json:"cpus"`
}

// Retry is one run that ended infra before the recorded one.
type Retry struct {
	Error       string   `json:"error"`
	Seconds     float64  `json:"seconds"`
	Evidence    []string `json:"evidence,omitempty"`
	ConsoleTail []string `json:"console_tail,omitempty"`
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitProblem `xml:"failure,omitempty"`
	Error   *junitProblem `xml:"error,omitempty"`
	Skipped *junitProblem `xml:"skipped,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit renders r as a one-case JUnit report: a failure for Fail, an error for Infra, skipped for Skip.
func (r Record) JUnit() ([]byte, error) {
	t := fmt.Sprintf("%.3f", r.Seconds)
	c := junitCase{Class: "vm." + r.Arch, Name: r.Kernel, Time: t}
	s := junitSuite{Name: "vm/" + r.Kernel, Tests: 1, Time: t}
	detail := r.Error
	if len(r.ConsoleTail) > 0 {
		detail += "\n--- last console lines ---\n" + strings.Join(r.ConsoleTail, "\n")
	}
	switch r.Result {
	case Fail:
		c.Failure, s.Failures = &junitProblem{Message: r.Error, Text: detail}, 1
	case Infra:
		c.Error, s.Errors = &junitProblem{Message: r.Error, Text: detail}, 1
	case Skip:
		c.Skipped, s.Skipped = &junitProblem{Message: r.Error, Text: detail}, 1
	}
	s.Cases = []junitCase{c}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	return append([]byte(xml.Header), append(b, '\n')...), err
}

// clean removes the result files of every id from dir, so a reader never mixes runs.
func clean(dir string, ids []string) error {
	for _, id := range ids {
		for _, ext := range []string{".json", ".out", ".junit.xml", ".console.log", ".evidence.log"} {
			if err := os.Remove(filepath.Join(dir, id+ext)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}
