package launch

import "github.com/confine-dev/confine/sandbox/pathfd"

// seccompDeny is SeccompDeny: no mount layer and no listener, so seccomp denies metadata changes everywhere; the
// command runs as a child of this process (asChild), which ends what it leaves behind.
type seccompDeny struct{}

func (seccompDeny) start(*runner) (int, error) { return pathfd.Here, nil }

func (seccompDeny) finish(r *runner, g Guard) error {
	prog, err := r.guardNoLayer(g)
	if err != nil {
		return err
	}
	return r.tail(prog, asChild(catchSignals()))
}

func (seccompDeny) abort() {}
