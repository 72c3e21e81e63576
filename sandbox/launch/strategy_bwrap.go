package launch

import (
	"errors"
	"strings"

	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
)

// bwrapStrategy is BwrapChild: the roots are opened here, bwrap binds them read-write over a read-only root, and
// a bwrap child inside (bwrap.go) runs the command as the init of its PID namespace. It has no fallback: a bwrap
// that cannot be started is a backend-unavailable refusal.
type bwrapStrategy struct{}

func (bwrapStrategy) start(*runner) (int, error) { return pathfd.Here, nil }

func (bwrapStrategy) finish(r *runner, g Guard) error {
	p := r.p
	fd, err := openBwrap(p.bwrap, p.rules, p.euid != 0) // open until this process ends (close-on-exec)
	if err != nil {
		return report.Refuse(report.BackendUnavailable, err.Error())
	}
	p.pidNS = true
	prog, err := r.guard(g) // before bwrap starts: a refusal (--strict) leaves nothing to end
	if err != nil {
		return err
	}
	child, err := startBwrap(p.bwrap, fd, p, p.bwrapBinds(), r.cfg.ReportFD)
	if err == nil {
		status, rerr := child.Run(p.handoff(prog, r.cfg.ReportFD))
		if err = rerr; err == nil {
			err = &ChildExit{Status: status}
		}
	}
	if errors.Is(err, ErrLayerUnavailable) { // bwrap could not be started, or never started the bwrap child
		return report.Refuse(report.BackendUnavailable, strings.TrimPrefix(err.Error(), ErrLayerUnavailable.Error()+": "))
	}
	return r.childEnded(err)
}

func (bwrapStrategy) abort() {}
