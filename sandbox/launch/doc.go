// Package launch turns a validated Config into a confined execve: it negotiates the Landlock ABI, opens each
// writable root once, builds the ruleset and the seccomp filter, writes the report, and starts the command as
// its child (tail.go). It never runs the command less confined than asked: every failure before
// execve is a *report.Refusal (exit 125).
//
// It is cut by role first, strategy second, as runc is:
//   - decide.go: Decide, the one decision, pure (no system call): the strategies to try in order and each
//     one's Guard. Run executes it (run.go, strategy.go) and Probe prints it (probe.go);
//   - strategy_*.go: the parent's side, one file a strategy (bwrap, PID-namespace and layered child, in place,
//     supervisor, seccomp's denial), behind one strategy interface;
//   - child.go and handoff.go: the child's side, one entry that switches on the Handoff's kind, and the
//     parent/child protocol as one table;
//   - tail.go: the shared tail (Landlock, capabilities, isolation, seccomp, report), with no strategy flag: a
//     finisher says how the run ends.
package launch
