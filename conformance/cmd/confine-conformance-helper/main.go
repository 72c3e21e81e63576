// Command confine-conformance-helper is the confined side of the conformance cases (internal/helper): the
// program each case runs under confine, as `confine-conformance-helper helper OPS-JSON`. It is a binary of its own,
// beside confine-conformance, because a column launches it over a thousand times and a Go program's start grows with
// its size: under TCG (7.3-amd64, one vCPU) a start of the 10 MB runner took 46-51 ms, this one's 25-29 ms, a bare
// Go program's 24-27 ms. confine-conformance runs it from its own directory, and runs itself as the helper where
// it is missing (`confine-conformance helper` stays).
package main

import (
	"fmt"
	"os"

	"github.com/confine-dev/confine/conformance/internal/helper"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "helper" {
		fmt.Fprintln(os.Stderr, "usage: confine-conformance-helper helper OPS-JSON (the confined side of a conformance case)")
		os.Exit(2)
	}
	os.Exit(helper.Main(os.Args[2:], os.Stdout, os.Stderr))
}
