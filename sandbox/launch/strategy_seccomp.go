package launch

import (
	"runtime"

	"github.com/confine-dev/confine/sandbox/pathfd"
)

// seccompDeny is SeccompDeny: no mount layer and no listener, so seccomp denies metadata changes everywhere, and
// the command is executed in place.
type seccompDeny struct{}

func (seccompDeny) start(*runner) (int, error) { return pathfd.Here, nil }

func (seccompDeny) finish(r *runner, g Guard) error {
	runtime.LockOSThread() // the Landlock domain and the seccomp filter are this thread's, until execve
	r.p.dropShm()          // no private tmpfs: the host's /dev/shm stays read-only
	prog, err := r.guard(g)
	if err != nil {
		return err
	}
	return r.tail(prog, execIt(nil))
}

func (seccompDeny) abort() {}
