package launch

import "errors"

// childStrategy is UserChild, and with pidNS PIDNSChild: a layered child (child.go) started in new namespaces,
// the roots opened through its root directory, and the plan handed to it as a Handoff; it builds the mount layer
// and runs the tail. With pidNS it stays as the command's init, whose end ends every process left in its
// namespace. Without, this process is a child subreaper and ends them itself. It waits, forwarding signals.
type childStrategy struct {
	pidNS bool
	child LayeredChild
}

func (c *childStrategy) start(r *runner) (int, error) {
	if !c.pidNS { // the command's orphans come to this process, which ends them once it has ended (orphans.go)
		if err := becomeSubreaper(); err != nil {
			return 0, err
		}
	}
	child, err := r.s.StartLayered(r.cfg.ReportFD, c.pidNS)
	if err != nil {
		return 0, err
	}
	c.child, r.p.pidNS = child, c.pidNS
	return child.Root(), nil
}

// finish hands the plan, guarded, to the child and waits for the command. An error wrapping ErrLayerUnavailable
// says the child could not build the layer: nothing ran, and the next strategy goes on in this process, where the
// descriptors (on the child's mounts) still name the roots.
func (c *childStrategy) finish(r *runner, g Guard) error {
	prog, err := r.guard(g)
	if err != nil {
		c.child.Abort()
		return err
	}
	status, err := c.child.Run(r.p.handoff(prog, r.cfg.ReportFD))
	if err == nil {
		endDescendants() // in a PID namespace, none is left: the init's end ended them
		err = &ChildExit{Status: status}
	}
	if errors.Is(err, ErrLayerUnavailable) {
		r.p.pidNS = false
	}
	return r.childEnded(err)
}

func (c *childStrategy) abort() { c.child.Abort() }
