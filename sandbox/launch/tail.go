package launch

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/report"
	"github.com/confine-dev/confine/sandbox/supervisor"
)

// tail is the shared last step's input: the confinement and the command. How the run then ends is the
// strategy's finisher; nothing here depends on the strategy. A child rebuilds it from its Handoff.
type tail struct {
	domain     bool // a Landlock domain is asked for: every backend but bwrap's, whose read-only mounts bwrap built
	handled    landlock.Access
	scoped     landlock.Scope
	rules      []landlock.Rule
	prog       []unix.SockFilter // the seccomp program; nil where it is in place already (the supervisor's)
	path       string
	argv       []string
	env        []string
	root       bool   // the command runs as root: cut its capabilities
	report     []byte // the report, outcome "exec", written to reportFD once the thread is confined
	reportFD   int    // or -1
	reportName int    // the caller's number for reportFD, for messages
	warn       string // a warning for stderr, printed just before the command runs (confine: warning: ...), or ""
}

// A finisher ends the tail once the thread is confined and the report written: it executes the command, or runs
// it as a child. It returns only on failure (a *report.Refusal, or an *ExecError after recording it on
// reportFD), or, for a child, with its end (a *ChildExit).
type finisher func(t *tail, s System) error

// confineAndExec is the shared tail: restrict the thread with the Landlock ruleset, cut root's capabilities,
// install the seccomp filter, write the report, then finish. It returns what finish returns, or a refusal from
// before it (nothing ran then; reported is false unless the report was written). The report's descriptor stays
// open (close-on-exec) until execve, so that a failed execve can be explained on it by a second record
// (execFailed).
func (t *tail) confineAndExec(s System, finish finisher) (reported bool, err error) {
	if !t.domain {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil { // Landlock sets it otherwise
			return false, report.Refuse(report.Internal, "prctl(PR_SET_NO_NEW_PRIVS): ", err.Error())
		}
	} else if err := landlock.Restrict(s, t.handled, t.scoped, t.rules); err != nil {
		return false, &report.Refusal{Reason: report.Ruleset, Err: err}
	}
	if t.root {
		if err := s.LimitRootCaps(); err != nil {
			return false, report.Refuse(report.Ruleset, "limiting root's capabilities: ", err.Error())
		}
	}
	if err := isolate(); err != nil {
		return false, report.Refuse(report.Internal, err.Error())
	}
	if t.prog != nil {
		if err := s.SetSeccomp(t.prog); err != nil {
			return false, report.Refuse(report.Seccomp, "seccomp(SET_MODE_FILTER): ", err.Error())
		}
	}
	// From here on the thread is confined; a failure still runs nothing.
	if t.reportFD >= 0 {
		if err := writeAll(t.reportFD, t.report); err != nil {
			unix.Close(t.reportFD)
			return true, report.Refuse(report.BadReportFD, "writing the report to --report-fd ", t.reportName, ": ", err.Error())
		}
	}
	if err := cloexecFrom(3); err != nil { // the report's descriptor among them: execve closes it
		return true, report.Refuse(report.Internal, "marking inherited descriptors close-on-exec: ", err.Error())
	}
	if t.warn != "" { // only now, when nothing can refuse any more: a refusal is one line
		writeAll(2, []byte("confine: warning: "+report.OneLine(t.warn)+"\n"))
	}
	return true, finish(t, s)
}

// execIt executes the command in place (s.Exec), first calling before if it is set (a layered child tells its
// parent, execMark).
func execIt(before func() error) finisher {
	return func(t *tail, s System) error {
		if before != nil {
			if err := before(); err != nil {
				return report.Refuse(report.Internal, "telling the parent: ", err.Error())
			}
		}
		return execFailed(t.path, t.argv, s.Exec(t.path, t.argv, t.env), t.reportFD)
	}
}

// asInit runs the command as the only child of this process, the init of a new PID namespace (runInit), as
// owner (nil: as this process is) with the signals caught for it.
func asInit(owner *syscall.SysProcAttr, signals *signalCatcher) finisher {
	return func(t *tail, _ System) error {
		return runInit(t.path, t.argv, t.env, t.reportFD, owner, signals)
	}
}

// asChild runs the command as a child of this process, a child subreaper, with the signals caught for it, and
// ends what the command leaves behind once it has ended (endDescendants): a *ChildExit, or the *ExecError if it
// could not be executed. It is how the strategies without a PID namespace whose confined thread is this
// process's (in place, seccomp-deny) finish: executing in place would leave no process to end the command's
// orphans.
func asChild(signals *signalCatcher) finisher {
	return func(t *tail, _ System) error {
		if err := becomeSubreaper(); err != nil {
			return err
		}
		return childEnd(runCommand(t.path, t.argv, t.env, t.reportFD, nil, nil, signals))
	}
}

// childEnd ends what the command left behind, once it has ended, and returns its *ChildExit, or err.
func childEnd(status syscall.WaitStatus, err error) error {
	if err != nil {
		return err
	}
	endDescendants()
	return &ChildExit{Status: status}
}

// supervise runs the command as a child of this process and answers its filter's notifications from another
// thread (package supervisor), until the command ends: a *ChildExit, or the *ExecError if it could not be
// executed. This process becomes a child subreaper (PR_SET_CHILD_SUBREAPER, 3.4), so that the command's orphans
// stay its descendants, whose memory it may read where Yama's ptrace_scope is 1, and are ended with the command
// (endDescendants) instead of living on unsupervised.
func supervise(sup *supervisor.Supervisor, signals *signalCatcher) finisher {
	return func(t *tail, _ System) error {
		if err := becomeSubreaper(); err != nil {
			return err
		}
		go sup.Serve()
		return childEnd(runCommand(t.path, t.argv, t.env, t.reportFD, nil, nil, signals))
	}
}

// bwrapOwner is how a user's bwrap child, uid 0 in bwrap's user namespace (so that it could seal the layer),
// starts the command: in a user namespace of its own where the caller's uid and gid map to that 0, as bwrap
// itself does it. The command then has its caller's IDs and, at execve, no capability; the mounts are locked to
// it. nil for root's bwrap child (uid < 0).
func bwrapOwner(uid, gid int) *syscall.SysProcAttr {
	if uid < 0 {
		return nil
	}
	return &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: 0, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: 0, Size: 1}}}
}
