//go:build !linux

// Command confine runs a command whose writes are confined to its worktree. It needs Linux's Landlock; on any
// other operating system it prints one line and exits 125, writing no report, and runs nothing.
package main

import (
	"fmt"
	"os"
	"runtime"
)

func main() {
	fmt.Fprintf(os.Stderr, "confine: %s is not supported: confine needs Linux (Landlock), and runs nothing here\n",
		runtime.GOOS)
	os.Exit(125)
}
