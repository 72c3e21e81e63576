//go:build linux

// Command confine runs a command whose writes are confined to its worktree. See sandbox/README.md.
package main

import (
	"os"
	"runtime"

	"github.com/confine-dev/confine/sandbox/internal/cli"
	"github.com/confine-dev/confine/sandbox/launch"
)

func main() {
	// The launcher does one thing at a time, then execs or waits in a system call: a second P only makes the
	// scheduler start and spin threads around those waits (measured in scripts/bench-launcher.sh).
	// A layered child is started with GOMAXPROCS=1, which the runtime read as it started.
	if os.Getenv("GOMAXPROCS") != "1" {
		runtime.GOMAXPROCS(1)
	}
	os.Exit(cli.Main(os.Args[1:], launch.ReadFacts(), launch.Host{}, os.Stdout, os.Stderr))
}
