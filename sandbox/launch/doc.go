// Package launch turns a validated Config into a confined execve: it negotiates the Landlock ABI, opens each
// writable root once, builds the ruleset and the seccomp filter, writes the report, and executes the command
// on the same locked OS thread. It never runs the command less confined than asked: every failure before
// execve is a *report.Refusal (exit 125).
package launch
