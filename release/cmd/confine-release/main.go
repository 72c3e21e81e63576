// Command confine-release proves and ships the confine launchers that Bazel built (`make build`):
//
//	confine-release verify   check artifacts against platforms/platforms.json, one line per check
//	confine-release sections name the ELF sections in which two builds of a launcher differ
//	confine-release package  lay out one VS Code target (vsce package --target) with manifest.json
//	confine-release npm      build the npm platform packages and the root package
//	confine-release oci      push the multi-arch index to a registry and an OCI layout, or pull a child
//	confine-release provenance  write each launcher's in-toto SLSA provenance statement and checksums.txt
//	confine-release release  all of it against a loopback registry, then the artifact table
//
// Exit status: 0 success; 1 a check failed (verify, sections, the release's checks); 2 bad usage;
// 3 an operation failed (a missing artifact, a registry that refuses or is down, I/O).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	exitError  = 3
)

// errChecksFailed is returned by a command whose checks ran and at least one failed; what failed has
// been printed.
var errChecksFailed = errors.New("checks failed")

// usageError is bad usage: an unknown flag value or a missing argument.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// command is one subcommand.
type command struct {
	name, summary string
	run           func(args []string, stdout io.Writer) error
}

func commands() []command {
	return []command{
		{"verify", "check artifacts against platforms/platforms.json, one line per check", runVerify},
		{"sections", "A B: name the ELF sections in which two launchers differ (exit 1 when any)", runSections},
		{"package", "lay out one VS Code extension target (bin/, manifest.json)", runPackage},

		{"npm", "build the npm platform packages and the root package (npm pack-able folders)", runNPM},
		{"oci", "push the multi-arch index (push) or extract one child (pull)", runOCI},
		{"goreleaser-check", "prove goreleaser's snapshot (artifacts.json) holds Bazel's launchers, SBOMs and checksums", runGoreleaserCheck},
		{"provenance", "write each launcher's in-toto SLSA provenance and checksums.txt (signed with --signing-key)", runProvenance},
		{"gate", "fail unless reports/matrix.json is as expected on every kernel, with the released launchers", runGate},
		{"release", "verify, package, push to a loopback registry, pull back, verify, print the table", runRelease},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, "usage: confine-release <command> [flags]; commands:")
		for _, c := range commands() {
			fmt.Fprintf(stderr, "  %-16s %s\n", c.name, c.summary)
		}
	}
	if len(args) == 0 {
		usage()
		return exitUsage
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout)
		var u usageError
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.Is(err, errChecksFailed):
			fmt.Fprintf(stderr, "confine-release %s: %v\n", c.name, err)
			return exitFailed
		case errors.As(err, &u):
			fmt.Fprintf(stderr, "confine-release %s: %v\n", c.name, err)
			return exitUsage
		default:
			fmt.Fprintf(stderr, "confine-release %s: %v\n", c.name, err)
			return exitError
		}
	}
	fmt.Fprintf(stderr, "confine-release: unknown command %q\n", args[0])
	usage()
	return exitUsage
}

// parse parses args with fs, turning flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fs.PrintDefaults()
			return err
		}
		return usagef("%v", err)
	}
	return nil
}

// required fails with a usage error naming the first flag among names whose value is empty.
func required(fs *flag.FlagSet, names ...string) error {
	var missing []string
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usagef("missing %s", strings.Join(missing, ", "))
	}
	return nil
}
