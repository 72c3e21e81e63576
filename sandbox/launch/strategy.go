package launch

import (
	"errors"
	"maps"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/report"
)

// A strategy runs the command one way (Strategy), from the parent's side: one implementation a file
// (strategy_*.go), all ending in the same tail (confineAndExec). Run makes a fresh one for each attempt.
type strategy interface {
	// start makes what the roots are opened in, and returns its root directory: pathfd.Here, or a layered
	// child's. It is called only while no root is open. An error wrapping ErrLayerUnavailable says the host does
	// not allow this strategy; nothing was started then.
	start(r *runner) (root int, err error)
	// finish runs the command on the open roots, guarded by g. It returns only on failure, or when the command
	// ran as a child (a *ChildExit). An error wrapping ErrLayerUnavailable or ErrSupervisorUnavailable says the
	// host turned out not to allow it: nothing ran, and the roots stay open for the next strategy.
	finish(r *runner, g Guard) error
	// abort ends what start made, where the roots could not be opened.
	abort()
}

// newStrategy is a fresh strategy of kind k.
func newStrategy(k Strategy) strategy {
	switch k {
	case BwrapChild:
		return &bwrapStrategy{}
	case PIDNSChild:
		return &childStrategy{pidNS: true}
	case UserChild:
		return &childStrategy{}
	case InPlace:
		return &inPlace{}
	case Supervised:
		return &supervised{}
	}
	return &seccompDeny{}
}

// runner is one launch as Run executes it: the decision, what it learned of the host, the plan, the report.
type runner struct {
	cfg      Config
	s        System
	host     HostShape
	d        Decision
	p        *plan // made with the first decision that does not refuse
	rep      *report.Report
	opened   bool // the roots are open (in the namespace of the first strategy that started)
	reported bool // the report was written (the tail, or a layered child): a failure now is not reported again
}

// run decides, and runs the first strategy of the decision; where the host turns out not to allow it (learn),
// it decides again. The error is what Run returns.
func (r *runner) run(f Facts) error {
	for {
		r.d = Decide(r.cfg, r.host)
		r.fillDecision()
		if r.d.Refusal != nil {
			return r.d.Refusal
		}
		if r.p == nil {
			r.p = newPlan(r.cfg, f, &r.d, r.rep)
		}
		k := r.d.Order[0]
		st := newStrategy(k)
		if !r.opened {
			root, err := st.start(r)
			if r.learn(k, err) {
				continue
			}
			if err != nil {
				return err
			}
			if err := r.p.open(r.cfg, root); err != nil {
				st.abort()
				return err
			}
			r.opened = true
		} else if k != Supervised && k != SeccompDeny {
			// Only a missing mount layer or listener is learned once the roots are open, and neither leaves a
			// strategy that starts something.
			return report.Refuse(report.Internal, "BUG(confine): strategy ", string(k), " after the roots were opened")
		}
		err := st.finish(r, r.d.Guard(k))
		if !r.learn(k, err) {
			return err
		}
	}
}

// learn records in the host shape what err says the host does not allow, and says whether to decide again:
// strategy k could not be had, and nothing ran. A layered child in a PID namespace that could not be started says
// nothing of the mount layer; one that started but could not build the layer does.
func (r *runner) learn(k Strategy, err error) bool {
	switch {
	case err == nil:
		return false
	case k == Supervised && errors.Is(err, ErrSupervisorUnavailable):
		r.host.Listener = err
	case k != PIDNSChild && k != InPlace && k != UserChild || !errors.Is(err, ErrLayerUnavailable):
		return false
	case k == PIDNSChild && !r.opened:
		r.host.PIDNS = err
	default:
		r.host.Layer = err
	}
	return true
}

// guard applies g to the launch: its refusals, the report's guard fields (fillGuard), and the seccomp program.
func (r *runner) guard(g Guard) ([]unix.SockFilter, error) {
	if g.LayerRefusal != nil {
		return nil, g.LayerRefusal
	}
	prog, err := g.Policy.Program()
	if err != nil {
		return nil, report.Refuse(report.Seccomp, err.Error())
	}
	var git *report.Channel
	switch {
	case r.cfg.Mode == ReadOnly && r.cfg.Worktree != "" && len(r.p.gitGaps) == 0: // readOnlyHeld checked where it lies
		git = &report.Channel{Status: report.Closed, How: gitReadOnly}
	case r.cfg.Mode == ReadOnly && r.cfg.Worktree != "":
		git = &report.Channel{Status: report.Open, How: strings.Join(r.p.gitGaps, "; ") + ". Else: " + gitReadOnly}
	case len(r.p.gitGaps) > 0: // what the plan found that its guards cannot hold
		c := gitChannel(g.Metadata, r.p.gitGaps)
		git = &c
	}
	if git != nil && len(g.Channels) > 0 {
		g.Channels = maps.Clone(g.Channels)
		g.Channels["git-metadata"] = *git
		if r.cfg.Strict {
			g.StrictRefusal = strictRefusal(g.Channels)
		}
	}
	r.fillGuard(g)
	if g.StrictRefusal != nil {
		return nil, g.StrictRefusal
	}
	return prog, nil
}

// fillDecision writes the decision's part of the report: Landlock's answer, the backend, the rights handled, WSL2
// interop. With fillGuard, the roots' rules (plan.grant) and the tail's outcome, it is the whole report.
func (r *runner) fillDecision() {
	d, rep := &r.d, r.rep
	if d.Landlock.State != "" { // none for WSL1, refused before Landlock is asked
		rep.Landlock, rep.ABI, rep.Errata = string(d.Landlock.State), d.Landlock.ABI, d.Landlock.Errata
	}
	rep.WSLInterop = d.Interop
	switch {
	case d.Backend == Bwrap && d.Bwrap != "":
		rep.Backend, rep.Bwrap, rep.Handled = string(Bwrap), d.Bwrap, []string{}
	case d.Backend == Landlock:
		rep.Backend, rep.Handled = string(Landlock), d.Handled.Names()
	}
}

// fillGuard writes the guard's part of the report: metadata, seccomp, channels, and the warnings in their order:
// the ABI's and mechanism's, the roots' notes, the temporary directories, why there is no mount layer, WSL2
// interop.
func (r *runner) fillGuard(g Guard) {
	r.fillRules()
	p, rep := r.p, r.rep
	rep.Metadata, rep.Seccomp = string(g.Metadata), g.Policy.Denied()
	rep.Warnings = append(append([]string{}, g.Warnings...), p.notes...)
	if p.tempWarn = tempOutside(p.env, p.rules); p.tempWarn != "" {
		rep.Warnings = append(rep.Warnings, p.tempWarn)
	}
	if g.Instead != "" {
		rep.Warnings = append(rep.Warnings, g.Instead)
	}
	rep.Channels = g.Channels
	if g.Metadata == MetadataMountLayer { // elsewhere --protect is refused (LayerRefusal) before this
		rep.Protected = p.protected
	}
	if g.Interop != "" {
		rep.Warnings = append(rep.Warnings, g.Interop)
	}
	if p.euid == 0 { // the tail cuts root's capabilities (a user's command has none outside its user namespace)
		rep.Warnings = append(rep.Warnings, "root: the command keeps only the capabilities "+rootCapNames())
	}
}

// fillRules writes the report's rules: the plan's, as they stand (a refusal reports the ones granted so far).
func (r *runner) fillRules() {
	p, rules := r.p, []report.Rule{}
	for i, rule := range p.rules {
		typ := "file"
		switch {
		case rule.Dir:
			typ = "dir"
		case rule.Connect:
			typ = "socket"
		}
		rules = append(rules, report.Rule{Path: rule.Path, Type: typ, Rights: rule.Rights(p.handled).Names(),
			Reason: p.ruleWhy[i]})
	}
	r.rep.Rules = rules
}

// tail runs the shared tail in this process, with prog (nil where the supervisor's filter is in place already),
// ending as finish says.
func (r *runner) tail(prog []unix.SockFilter, finish finisher) error {
	p := r.p
	t := &tail{domain: true, handled: p.handled, scoped: p.scoped, rules: p.rules, prog: prog, path: p.path,
		argv: p.argv, env: p.env, root: p.euid == 0, reportFD: r.cfg.ReportFD, reportName: r.cfg.ReportFD, warn: p.tempWarn}
	if t.reportFD >= 0 {
		t.report = execReport(r.rep, p.path, p.argv)
	}
	reported, err := t.confineAndExec(r.s, finish)
	r.reported = reported
	return err
}

// childEnded is what a child strategy returns once its child stopped: the command ran (a *ChildExit) or its
// execve failed (the child wrote the report either way), or err as it is.
func (r *runner) childEnded(err error) error {
	var ee *ExecError
	var ce *ChildExit
	if errors.As(err, &ce) || errors.As(err, &ee) {
		r.reported = true
	}
	return err
}
