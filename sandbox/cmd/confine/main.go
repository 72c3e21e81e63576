//go:build linux

// Command confine runs a command whose writes are confined to its worktree. See sandbox/README.md.
package main

import (
	"os"

	"github.com/confine-dev/confine/sandbox/internal/cli"
	"github.com/confine-dev/confine/sandbox/launch"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], launch.ReadFacts(), launch.Host{}, os.Stdout, os.Stderr))
}
