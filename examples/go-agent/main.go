// Command go-agent is the smallest agent that embeds confine (package reexec): one static binary that runs a
// shell script confined to a worktree and prints how it ended.
//
//	go-agent probe               what confine would do on this host (confine.probe/v1)
//	go-agent WORKTREE SCRIPT     bash -c SCRIPT, writable only under WORKTREE (and /tmp, /dev/null)
//
// The last line of a run is "go-agent: " and a JSON object: kind (ok, failed, refused, exec-failed), exit,
// signal, reason, backend and metadata (from the report). Exit status: the script's own; 2 when the agent
// could not start it.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/confine-dev/confine/sandbox/reexec"
)

func main() {
	reexec.Main() // first: as the launcher, this process runs confine and never returns
	switch {
	case len(os.Args) == 2 && os.Args[1] == "probe":
		p := reexec.Probe()
		json.NewEncoder(os.Stdout).Encode(&p)
		return
	case len(os.Args) != 3:
		fmt.Fprintln(os.Stderr, "usage: go-agent probe | go-agent WORKTREE SCRIPT")
		os.Exit(2)
	}
	cmd, err := reexec.Policy{Worktree: os.Args[1]}.Command("bash", "-c", os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-agent:", err)
		os.Exit(2)
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	res, err := cmd.Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-agent:", err)
		os.Exit(2)
	}
	out := map[string]any{"kind": res.Kind, "exit": res.ExitCode, "signal": int(res.Signal), "reason": res.Reason}
	if res.Report != nil {
		out["backend"], out["metadata"] = res.Report.Backend, res.Report.Metadata
	}
	line, _ := json.Marshal(out)
	fmt.Printf("go-agent: %s\n", line)
	os.Exit(max(res.ExitCode, 0))
}
