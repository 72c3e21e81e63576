package launch

import (
	"runtime"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
)

// inPlace is root's InPlace: new mount and IPC namespaces for this locked thread, the mount layer built in them
// on the roots' descriptors, and the command run from that thread as a child of this process (asChild), which
// ends what it leaves behind. back returns the thread to its old mount namespace (System.UnshareMountNS).
type inPlace struct{ back func() error }

func (s *inPlace) start(r *runner) (int, error) {
	runtime.LockOSThread() // the new mount namespace is this thread's, until execve
	back, err := r.s.UnshareMountNS()
	if err != nil {
		return 0, msg.Err(ErrLayerUnavailable, ": unshare(CLONE_NEWNS|CLONE_NEWIPC): ", err.Error())
	}
	s.back = back
	return pathfd.Here, nil
}

func (s *inPlace) finish(r *runner, g Guard) error {
	m, committed, err := r.s.BuildMountLayer(r.p.writable, r.p.private())
	switch {
	case refuses(err): // a guard or a nested root changed since the plan: refused as any root that changed is
		return report.Refuse(report.BadRoot, err.Error())
	case committed && err != nil:
		return report.Refuse(report.Internal, "the mount layer failed half-built: ", err.Error())
	case err != nil:
		// Nothing changed. The next strategy goes on in the old mount namespace, where the supervisor's thread
		// is: a command left in the new one would hold descriptors on mounts the supervisor never matches (a
		// root's touch failed EPERM where unshare was allowed and mounts were not, as in newer Docker profiles).
		if berr := s.back(); berr != nil {
			return report.Refuse(report.Internal, "setns back to the mount namespace confine started in, after the "+
				"mount layer failed (", err.Error(), "): ", berr.Error())
		}
		return msg.Err(ErrLayerUnavailable, ": ", err.Error())
	}
	r.p.useMounted(m)
	prog, err := r.guard(g)
	if err != nil {
		return err
	}
	return r.tail(prog, asChild(catchSignals()))
}

func (*inPlace) abort() {}
