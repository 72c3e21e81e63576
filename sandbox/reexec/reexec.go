// Package reexec runs confine inside a Go program, so that an agent ships as one static binary: the program
// re-executes its own executable as the launcher. Three lines do it:
//
//	func main() {
//		reexec.Main() // first: when this process is the launcher, it runs confine and never returns
//		...
//		cmd, err := reexec.Policy{Worktree: wt}.Command("bash", "-c", script)
//		res, err := cmd.Run() // res.Kind: ok, failed, refused or exec-failed; res.Report: confine.report/v1
//	}
//
// The launcher is the confine binary's own code (the same parser, decision, report and exit statuses); only
// the executable differs. The result is read from the exit status and the report, never from the command's
// output. The executable must lie where no confined command could replace it (see Command).
package reexec

import (
	"errors"
	"os"
	"runtime"
	"sync"

	"github.com/confine-dev/confine/sandbox/internal/cli"
	"github.com/confine-dev/confine/sandbox/launch"
	"github.com/confine-dev/confine/sandbox/report"
)

// Entry is the first argument that makes a process the launcher: Command starts this executable as
// `PROGRAM __confine-launch FLAGS... -- CMD ARGS...`, the flags being the confine CLI's.
const Entry = "__confine-launch"

// Main runs confine and exits with its status when this process was started as the launcher (by Command, with
// Entry as its first argument; or by the launcher itself, which starts its own executable again for the mount
// layer's child and for its probes, marked in the environment). Otherwise it returns at once: it reads os.Args
// and three environment variables. Call it first in main, before anything that starts the command's work.
func Main() {
	mainCalled = true
	switch {
	case len(os.Args) > 1 && os.Args[1] == Entry:
		run(os.Args[2:])
	case launch.IsLayerChild(), launch.IsLayerProbe(), launch.IsBwrapProbe():
		run(nil) // cli.Main tells these apart before it parses anything
	}
}

// mainCalled says Main ran in this process: Command refuses otherwise, since the launcher it starts would
// then be the program's own main, given confine's flags (and, were it to call Command, starting itself again).
var mainCalled bool

// errNoMain is Command's error, and Probe's panic, when Main was not called.
var errNoMain = errors.New("reexec: Main was not called: call reexec.Main() first in main (and in TestMain), or the " +
	"launcher and the probes this package starts run this program's own main")

// run is the confine binary's main (sandbox/cmd/confine).
func run(args []string) {
	if os.Getenv("GOMAXPROCS") != "1" {
		runtime.GOMAXPROCS(1)
	}
	os.Exit(cli.Main(args, launch.ReadFacts(), launch.Host{}, os.Stdout, os.Stderr))
}

var (
	probeOnce sync.Once
	probed    report.Probe
	probes    int // how many times the host was probed (tests)
)

// Probe is what `confine probe --json` prints for this host (report.Probe), asked once per process and kept:
// it is for showing the plan. Every Command still decides afresh in its launcher, so a kept verdict never
// makes a command run less confined. It panics when Main was not called.
func Probe() report.Probe {
	if !mainCalled {
		panic(errNoMain) // its probes start this executable again, which would run main instead
	}
	probeOnce.Do(func() {
		probes++
		probed = launch.Probe(launch.ReadFacts(), launch.Host{})
	})
	return probed
}
