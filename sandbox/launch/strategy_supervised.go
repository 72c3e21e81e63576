package launch

import (
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/supervisor"
)

// supervised is Supervised: no mount layer, so this process stays as the command's supervisor (package
// supervisor), answering the listener of the command's filter from a thread other than the confined one.
type supervised struct{}

func (supervised) start(*runner) (int, error) { return pathfd.Here, nil }

// finish asks for the listener first, before anything else confines this thread, so that where there is none
// (EBUSY under another supervisor) nothing is undone: an error wrapping ErrSupervisorUnavailable, and a note.
func (supervised) finish(r *runner, g Guard) error {
	prog, err := r.guardNoLayer(g)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil { // a filter needs it (Landlock sets it too)
		return r.noListener(msg.Err(ErrSupervisorUnavailable, ": prctl(PR_SET_NO_NEW_PRIVS): ", err))
	}
	listener, err := r.s.SetSeccompListener(prog)
	if err != nil {
		return r.noListener(msg.Err(ErrSupervisorUnavailable, ": seccomp(SET_MODE_FILTER, NEW_LISTENER): ", err))
	}
	sup := supervisor.New(listener, r.p.supervisedRoots()) // read only where we are root
	signals := catchSignals()                              // while the rest of the tail runs
	return r.tail(nil, supervise(sup, signals))
}

// guardNoLayer is guard for a strategy without a mount layer, on this thread, which it locks: the Landlock domain
// and the seccomp filter are this thread's, until execve. There is no private tmpfs: the host's /dev/shm is
// granted instead (shareShm).
func (r *runner) guardNoLayer(g Guard) ([]unix.SockFilter, error) {
	runtime.LockOSThread()
	r.p.shareShm()
	return r.guard(g)
}

// noListener notes err for the report of the next strategy, and returns it.
func (r *runner) noListener(err error) error {
	r.p.notes = append(r.p.notes, err.Error())
	return err
}

func (supervised) abort() {}
