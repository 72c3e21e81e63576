package launch

import (
	"runtime"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
)

// inPlace is root's InPlace: new mount and IPC namespaces for this locked thread, the mount layer built in them
// on the roots' descriptors, and the command executed with our PID.
type inPlace struct{}

func (inPlace) start(r *runner) (int, error) {
	runtime.LockOSThread() // the new mount namespace is this thread's, until execve
	if err := r.s.UnshareMountNS(); err != nil {
		return 0, msg.Err(ErrLayerUnavailable, ": unshare(CLONE_NEWNS|CLONE_NEWIPC): ", err.Error())
	}
	return pathfd.Here, nil
}

func (inPlace) finish(r *runner, g Guard) error {
	m, committed, err := r.s.BuildMountLayer(r.p.writable, r.p.private())
	switch {
	case committed && err != nil:
		return report.Refuse(report.Internal, "the mount layer failed half-built: ", err.Error())
	case err != nil: // nothing changed: the next strategy goes on here, in the new mount namespace
		return msg.Err(ErrLayerUnavailable, ": ", err.Error())
	}
	r.p.useMounted(m)
	prog, err := r.guard(g)
	if err != nil {
		return err
	}
	return r.tail(prog, execIt(nil))
}

func (inPlace) abort() {}
