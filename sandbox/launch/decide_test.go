package launch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/report"
)

// The host shapes of the decision table: what a host allows, as HostShape's errors say it.
var (
	mountsDenied = msg.Err(ErrLayerUnavailable, ": open_tree in new namespaces: permission denied")      // userns fine, mounts denied (Ubuntu 24.04's AppArmor)
	nsBlocked    = msg.Err(ErrLayerUnavailable, ": starting the layered child: operation not permitted") // user namespaces blocked (sysctl, a container's seccomp)
	listenerHeld = msg.Err(ErrSupervisorUnavailable, ": seccomp(SET_MODE_FILTER, NEW_LISTENER): device or resource busy")
	pidnsBlocked = msg.Err(ErrLayerUnavailable, ": starting the layered child: CLONE_NEWPID: operation not permitted")
	noBwrapHere  = errors.New("bwrap is not installed")
)

const user = 1000

func abi(n int) landlock.Status { return landlock.Status{State: landlock.Available, ABI: n} }

var (
	absent   = landlock.Status{State: landlock.Absent, Errno: unix.ENOSYS}
	disabled = landlock.Status{State: landlock.Disabled, Errno: unix.EOPNOTSUPP}
)

// row is one host shape and what the decision must make of it: the strategies in order, the refusal's reason
// if it refuses, and the first strategy's metadata and open channels (a run with a report, no --tty, no --strict).
type row struct {
	cfg     Config
	host    HostShape
	order   []Strategy
	refusal report.Reason
	open    []string // the first strategy's open channels; nil: not checked
}

var (
	auto    = Config{Mode: WorkspaceWrite, Backend: Auto, ReportFD: 3}
	protect = Config{Mode: WorkspaceWrite, Backend: Auto, ReportFD: 3, Protect: []string{"/w/.vscode"}}
)

// decisionTable is the decision per host shape. Read a row as: on this host, this config tries these strategies
// in order; the first the host allows runs (and where HostShape already says what the host refuses, it is the
// first). The open channels are the first strategy's.
var decisionTable = map[string]row{
	// Ubuntu 24.04, kernel 6.8 (Landlock ABI 4), an unprivileged user, bwrap installed: AppArmor lets the user
	// namespace be made but denies mounts in it, so there is no mount layer; Landlock is there, so auto never
	// runs bwrap; the supervisor runs. Nothing below ABI 6 scopes signals, and without the layered child there is
	// no PID namespace: the supervisor sends the command's signals, to its descendants only, so signals are
	// closed; without the layer's nodev clones, device nodes stay open.
	"ubuntu-24.04-6.8-user-bwrap": {cfg: auto, host: HostShape{EUID: user, Landlock: abi(4), Layer: mountsDenied, Bwrap: "/usr/bin/bwrap"},
		order: []Strategy{Supervised, SeccompDeny}, open: []string{"abstract-unix", "atime", "device-nodes", "git-metadata", "locks", "shm", "unix-pathname"}},
	// The same host inside another supervisor (a listener held already): no supervisor either, so seccomp denies
	// metadata everywhere, and nothing sends or checks signals: open.
	"ubuntu-24.04-6.8-user-nested-supervisor": {cfg: auto, host: HostShape{EUID: user, Landlock: abi(4), Layer: mountsDenied, Listener: listenerHeld},
		order: []Strategy{SeccompDeny}, open: []string{"abstract-unix", "atime", "device-nodes", "git-metadata", "locks", "shm", "signals", "unix-pathname"}},
	// The same host where confine's own AppArmor profile is loaded (packaging/apparmor/confine, installed by the
	// deb and rpm): user namespaces with mounts are allowed to confine, so the PID-namespace child runs.
	"ubuntu-24.04-6.8-user-bwrap-apparmor-profile": {cfg: auto, host: HostShape{EUID: user, Landlock: abi(4), Bwrap: "/usr/bin/bwrap"},
		order: []Strategy{PIDNSChild, UserChild, Supervised, SeccompDeny}, open: []string{"abstract-unix", "locks", "unix-pathname"}},
	"ubuntu-24.04-6.8-root":        {cfg: auto, host: HostShape{EUID: 0, Landlock: abi(4)}, order: []Strategy{PIDNSChild, InPlace, Supervised, SeccompDeny}, open: []string{"abstract-unix", "locks", "unix-pathname"}},
	"user-abi4-unknown":            {cfg: auto, host: HostShape{EUID: user, Landlock: abi(4)}, order: []Strategy{PIDNSChild, UserChild, Supervised, SeccompDeny}, open: []string{"abstract-unix", "locks", "unix-pathname"}},
	"user-abi4-pidns-blocked":      {cfg: auto, host: HostShape{EUID: user, Landlock: abi(4), PIDNS: pidnsBlocked}, order: []Strategy{UserChild, Supervised, SeccompDeny}, open: []string{"abstract-unix", "locks", "signals", "unix-pathname"}},
	"root-abi4-pidns-blocked":      {cfg: auto, host: HostShape{EUID: 0, Landlock: abi(4), PIDNS: pidnsBlocked}, order: []Strategy{InPlace, Supervised, SeccompDeny}},
	"user-abi6-userns-fine":        {cfg: auto, host: HostShape{EUID: user, Landlock: abi(6)}, order: []Strategy{UserChild, Supervised, SeccompDeny}, open: []string{"locks", "unix-pathname"}},
	"user-abi6-mounts-denied":      {cfg: auto, host: HostShape{EUID: user, Landlock: abi(6), Layer: mountsDenied}, order: []Strategy{Supervised, SeccompDeny}, open: []string{"atime", "device-nodes", "git-metadata", "locks", "shm", "unix-pathname"}},
	"user-abi6-namespaces-blocked": {cfg: auto, host: HostShape{EUID: user, Landlock: abi(6), Layer: nsBlocked}, order: []Strategy{Supervised, SeccompDeny}},
	"user-abi6-no-layer-listener-held": {cfg: auto, host: HostShape{EUID: user, Landlock: abi(6), Layer: nsBlocked, Listener: listenerHeld},
		order: []Strategy{SeccompDeny}, open: []string{"atime", "device-nodes", "git-metadata", "locks", "shm", "unix-pathname"}},
	"user-abi6-listener-held-layer-fine": {cfg: auto, host: HostShape{EUID: user, Landlock: abi(6), Listener: listenerHeld}, order: []Strategy{UserChild, SeccompDeny}},
	"root-abi6":                          {cfg: auto, host: HostShape{EUID: 0, Landlock: abi(6)}, order: []Strategy{InPlace, Supervised, SeccompDeny}, open: []string{"locks", "unix-pathname"}},
	"root-abi9":                          {cfg: auto, host: HostShape{EUID: 0, Landlock: abi(9)}, order: []Strategy{InPlace, Supervised, SeccompDeny}, open: []string{"locks"}},
	"user-abi11":                         {cfg: auto, host: HostShape{EUID: user, Landlock: abi(11)}, order: []Strategy{UserChild, Supervised, SeccompDeny}, open: []string{"locks"}},
	"user-abi1-mounts-denied":            {cfg: auto, host: HostShape{EUID: user, Landlock: abi(1), Layer: mountsDenied}, order: []Strategy{Supervised, SeccompDeny}},
	"root-abi1-namespaces-blocked":       {cfg: auto, host: HostShape{EUID: 0, Landlock: abi(1), Layer: nsBlocked}, order: []Strategy{Supervised, SeccompDeny}},
	"user-abi0-absent-bwrap":             {cfg: auto, host: HostShape{EUID: user, Landlock: absent, Bwrap: "/usr/bin/bwrap"}, order: []Strategy{BwrapChild}, open: []string{"abstract-unix", "fifo", "locks", "unix-pathname"}},
	"root-abi0-disabled-bwrap":           {cfg: auto, host: HostShape{EUID: 0, Landlock: disabled, Bwrap: "/usr/bin/bwrap"}, order: []Strategy{BwrapChild}},
	"user-abi0-absent-no-bwrap":          {cfg: auto, host: HostShape{EUID: user, Landlock: absent, BwrapErr: noBwrapHere}, refusal: report.LandlockAbsent},
	"user-abi0-disabled-no-bwrap":        {cfg: auto, host: HostShape{EUID: user, Landlock: disabled, BwrapErr: noBwrapHere}, refusal: report.LandlockDisabled},
	"bad-CONFINE_BWRAP":                  {cfg: auto, host: HostShape{EUID: user, Landlock: absent, BwrapErr: report.Refuse(report.BackendUnavailable, "CONFINE_BWRAP is empty")}, refusal: report.BackendUnavailable},
	"backend-landlock-absent":            {cfg: Config{Mode: WorkspaceWrite, Backend: Landlock}, host: HostShape{EUID: user, Landlock: absent, Bwrap: "/usr/bin/bwrap"}, refusal: report.LandlockAbsent},
	"backend-bwrap-abi6":                 {cfg: Config{Mode: WorkspaceWrite, Backend: Bwrap}, host: HostShape{EUID: user, Landlock: abi(6), Bwrap: "/usr/bin/bwrap"}, order: []Strategy{BwrapChild}},
	"backend-bwrap-absent":               {cfg: Config{Mode: WorkspaceWrite, Backend: Bwrap}, host: HostShape{EUID: user, Landlock: abi(6), BwrapErr: noBwrapHere}, refusal: report.BackendUnavailable},
	"wsl1":                               {cfg: auto, host: HostShape{EUID: user, WSL: WSL1, Landlock: absent, Bwrap: "/usr/bin/bwrap"}, refusal: report.WSL1},
	"wsl2-abi3-interop-disabled":         {cfg: auto, host: HostShape{EUID: user, WSL: WSL2, Interop: InteropDisabled, Landlock: abi(3)}, order: []Strategy{PIDNSChild, UserChild, Supervised, SeccompDeny}},
	"wsl2-abi3-interop-on":               {cfg: auto, host: HostShape{EUID: user, WSL: WSL2, Interop: InteropEnabled, Landlock: abi(3)}, order: []Strategy{PIDNSChild, UserChild, Supervised, SeccompDeny}},
	"wsl2-abi3-interop-on-no-layer":      {cfg: auto, host: HostShape{EUID: user, WSL: WSL2, Interop: InteropEnabled, Landlock: abi(3), Layer: nsBlocked}, order: []Strategy{Supervised, SeccompDeny}, refusal: report.WSL2Interop},
	"wsl2-absent-bwrap-interop-on":       {cfg: auto, host: HostShape{EUID: user, WSL: WSL2, Interop: InteropEnabled, Landlock: absent, Bwrap: "/usr/bin/bwrap"}, refusal: report.WSL2Interop},
	"wsl2-absent-bwrap-interop-off":      {cfg: auto, host: HostShape{EUID: user, WSL: WSL2, Interop: InteropDisabled, Landlock: absent, Bwrap: "/usr/bin/bwrap"}, order: []Strategy{BwrapChild}},
	// --protect: only a mount layer holds a path beneath a writable root read-only, so where there is none the
	// first strategy's guard refuses; where there is one (the layered child, bwrap) it runs.
	"protect-user-abi4-layer":    {cfg: protect, host: HostShape{EUID: user, Landlock: abi(4)}, order: []Strategy{PIDNSChild, UserChild, Supervised, SeccompDeny}},
	"protect-user-abi4-no-layer": {cfg: protect, host: HostShape{EUID: user, Landlock: abi(4), Layer: mountsDenied}, order: []Strategy{Supervised, SeccompDeny}, refusal: report.ProtectUnavailable},
	"protect-root-abi7-no-layer": {cfg: protect, host: HostShape{EUID: 0, Landlock: abi(7), Layer: nsBlocked, Listener: listenerHeld}, order: []Strategy{SeccompDeny}, refusal: report.ProtectUnavailable},
	"protect-absent-bwrap":       {cfg: protect, host: HostShape{EUID: user, Landlock: absent, Bwrap: "/usr/bin/bwrap"}, order: []Strategy{BwrapChild}},
}

// TestDecisionTable checks each host shape's decision: the order, or the refusal; and the first strategy's
// metadata and open channels. A refusal that comes from the first strategy's guard (WSL2 interop without a
// layer) is checked there.
func TestDecisionTable(t *testing.T) {
	for name, c := range decisionTable {
		t.Run(name, func(t *testing.T) {
			d := Decide(c.cfg, c.host)
			if !slices.Equal(d.Order, c.order) {
				t.Fatalf("order %v, want %v", d.Order, c.order)
			}
			if len(d.Order) == 0 {
				if c.refusal == "" || report.ReasonOf(d.Refusal) != c.refusal {
					t.Fatalf("refusal %v, want reason %q", d.Refusal, c.refusal)
				}
				return
			}
			if d.Refusal != nil {
				t.Fatalf("refused (%v) with strategies to try", d.Refusal)
			}
			g := d.Guard(d.Order[0])
			if g.Metadata != d.Order[0].Metadata() {
				t.Fatalf("metadata %s for %s", g.Metadata, d.Order[0])
			}
			if c.refusal != "" {
				if report.ReasonOf(g.LayerRefusal) != c.refusal {
					t.Fatalf("the first strategy's guard refuses with %v, want reason %q", g.LayerRefusal, c.refusal)
				}
				return
			}
			if g.LayerRefusal != nil || g.StrictRefusal != nil {
				t.Fatalf("the guard refuses: %v %v", g.LayerRefusal, g.StrictRefusal)
			}
			if got := openChannels(g.Channels); c.open != nil && !slices.Equal(got, c.open) {
				t.Fatalf("open channels %v, want %v", got, c.open)
			}
		})
	}
}

// TestDecisionEveryABI sweeps ABI 1 to 11 for root and a user, with user namespaces fine, mounts denied and
// namespaces blocked, a listener free or held, and checks the rules the order follows: a PID namespace first
// exactly below ABI 6 where the layer can be had; root's layer in place and a user's in a child; the supervisor
// exactly where a listener can be had; seccomp's denial last; and signals closed by ABI 6's scope, the PID
// namespace or the supervisor (which then supervises them: seccomp's SuperviseSignals), open otherwise.
func TestDecisionEveryABI(t *testing.T) {
	for n := 1; n <= 11; n++ {
		for _, euid := range []int{0, user} {
			for _, layer := range []error{nil, mountsDenied, nsBlocked} {
				for _, listener := range []error{nil, listenerHeld} {
					h := HostShape{EUID: euid, Landlock: abi(n), Layer: layer, Listener: listener}
					d := Decide(auto, h)
					var want []Strategy
					if n < 6 && layer == nil {
						want = append(want, PIDNSChild)
					}
					switch {
					case layer == nil && euid == 0:
						want = append(want, InPlace)
					case layer == nil:
						want = append(want, UserChild)
					}
					if listener == nil {
						want = append(want, Supervised)
					}
					want = append(want, SeccompDeny)
					if !slices.Equal(d.Order, want) || d.ABI != n || d.Backend != Landlock {
						t.Fatalf("%+v: order %v (abi %d, %s), want %v", h, d.Order, d.ABI, d.Backend, want)
					}
					g := d.Guard(d.Order[0])
					signalsOpen := g.Channels["signals"].Status == report.Open
					if signalsOpen != (n < 6 && d.Order[0] != PIDNSChild && d.Order[0] != Supervised) {
						t.Fatalf("%+v: signals %s under %s", h, g.Channels["signals"].Status, d.Order[0])
					}
					for _, k := range d.Order {
						if got, want := d.Guard(k).Policy.SuperviseSignals, n < 6 && k == Supervised; got != want {
							t.Fatalf("%+v: SuperviseSignals %v under %s", h, got, k)
						}
					}
					if (g.Instead != "") != (layer != nil) {
						t.Fatalf("%+v: the warning on the missing layer is %q", h, g.Instead)
					}
					// /dev/shm: a private tmpfs with the layer; without, the host's is granted, and said open.
					if shmOpen := g.Channels["shm"].Status == report.Open; shmOpen != (g.Metadata != MetadataMountLayer) {
						t.Fatalf("%+v: shm %s under %s", h, g.Channels["shm"].Status, d.Order[0])
					}
				}
			}
		}
	}
}

// simulateRun plays Run's loop on a host whose truth is shape, as Run learns it by trying: it starts with nothing
// known, and each strategy the truth refuses fails as it would (a PID namespace at start, a layer at start or in
// the child, a listener at finish) and is learned (runner.learn). It returns the strategy that runs and the
// shape Run ends up knowing.
func simulateRun(cfg Config, truth HostShape) (Strategy, HostShape) {
	r := &runner{cfg: cfg, host: truth}
	r.host.Layer, r.host.PIDNS, r.host.Listener = nil, nil, nil
	for {
		d := Decide(cfg, r.host)
		if d.Refusal != nil {
			return "", r.host
		}
		k := d.Order[0]
		var err error
		switch {
		case k == PIDNSChild && truth.PIDNS != nil && !r.opened:
			err = truth.PIDNS
		case (k == PIDNSChild || k == InPlace || k == UserChild) && truth.Layer != nil:
			err = truth.Layer
		case k == Supervised && truth.Listener != nil:
			err = truth.Listener
		}
		if err == nil {
			return k, r.host
		}
		if k != PIDNSChild || truth.PIDNS == nil {
			r.opened = true // a layer fails once the child (or the namespace) started: the roots are open
		}
		if !r.learn(k, err) {
			return "", r.host
		}
	}
}

// TestProbeAndRunAgree: for every row of the decision table, probe's decision (made once, with the host asked
// beforehand) and Run's (learned by trying, from nothing known) run the same strategy, with the same guard.
func TestProbeAndRunAgree(t *testing.T) {
	for name, c := range decisionTable {
		t.Run(name, func(t *testing.T) {
			probe := Decide(c.cfg, c.host)
			ran, learned := simulateRun(c.cfg, c.host)
			if len(probe.Order) == 0 {
				if ran != "" {
					t.Fatalf("probe refuses, Run runs %s", ran)
				}
				return
			}
			if ran != probe.Order[0] {
				t.Fatalf("probe says %s, Run runs %s (it learned %+v)", probe.Order[0], ran, learned)
			}
			run := Decide(c.cfg, learned)
			pg, rg := probe.Guard(ran), run.Guard(ran)
			if pg.Metadata != rg.Metadata || !slices.Equal(pg.Policy.Denied(), rg.Policy.Denied()) ||
				!slices.Equal(openChannels(pg.Channels), openChannels(rg.Channels)) || !slices.Equal(pg.Warnings, rg.Warnings) ||
				(pg.LayerRefusal == nil) != (rg.LayerRefusal == nil) {
				t.Fatalf("guards differ:\nprobe %+v\nrun   %+v", pg, rg)
			}
			if (pg.Instead == "") != (rg.Instead == "") || !strings.HasPrefix(rg.Instead, ErrLayerUnavailable.Error()) && rg.Instead != "" {
				t.Fatalf("the missing layer's warning: probe %q, Run %q", pg.Instead, rg.Instead)
			}
		})
	}
}

// TestWSL1RefusesBeforeLandlock: WSL1 is refused whatever Landlock and bwrap say, and the decision records no
// Landlock answer (the report keeps "unknown", as it did when the launcher refused before asking).
func TestWSL1RefusesBeforeLandlock(t *testing.T) {
	d := Decide(auto, HostShape{EUID: user, WSL: WSL1, Landlock: abi(6), Bwrap: "/usr/bin/bwrap"})
	if report.ReasonOf(d.Refusal) != report.WSL1 || d.Landlock.State != "" || len(d.Order) != 0 {
		t.Fatalf("WSL1: %+v", d)
	}
}

// TestDecideIsPure: the same input gives the same decision, and Decide reads nothing but its arguments (a
// HostShape naming a bwrap that does not exist is taken at its word).
func TestDecideIsPure(t *testing.T) {
	h := HostShape{EUID: user, Landlock: absent, Bwrap: "/nonexistent/bwrap"}
	a, b := Decide(auto, h), Decide(auto, h)
	if !slices.Equal(a.Order, b.Order) || a.Bwrap != "/nonexistent/bwrap" || a.Order[0] != BwrapChild {
		t.Fatalf("decisions %+v and %+v", a, b)
	}
}

// A caller's terminal on descriptors 0 to 2 is a warning exactly where /dev/tty cannot be bound to it: with
// no mount layer, and under bwrap; never with --tty, never without a terminal.
func TestTerminalWarning(t *testing.T) {
	hasWarning := func(g Guard) bool {
		return slices.ContainsFunc(g.Warnings, func(w string) bool { return strings.Contains(w, "writes to /dev/tty") })
	}
	cfg := auto
	for _, c := range []struct {
		name     string
		tty      bool
		host     HostShape
		strategy Strategy
		want     bool
	}{
		{"layer", false, HostShape{EUID: user, Landlock: abi(7), Terminal: true}, UserChild, false},
		{"root's layer", false, HostShape{EUID: 0, Landlock: abi(7), Terminal: true}, InPlace, false},
		{"supervisor", false, HostShape{EUID: user, Landlock: abi(7), Layer: mountsDenied, Terminal: true}, Supervised, true},
		{"seccomp-deny", false, HostShape{EUID: 0, Landlock: abi(3), Layer: nsBlocked, Listener: listenerHeld, Terminal: true}, SeccompDeny, true},
		{"bwrap", false, HostShape{EUID: user, Landlock: absent, Bwrap: "/usr/bin/bwrap", Terminal: true}, BwrapChild, true},
		{"supervisor, --tty", true, HostShape{EUID: user, Landlock: abi(7), Layer: mountsDenied, Terminal: true}, Supervised, false},
		{"supervisor, no terminal", false, HostShape{EUID: user, Landlock: abi(7), Layer: mountsDenied}, Supervised, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg.TTY = c.tty
			d := Decide(cfg, c.host)
			if d.Refusal != nil || d.Order[0] != c.strategy {
				t.Fatalf("decision: %v, %v; want %s first", d.Refusal, d.Order, c.strategy)
			}
			if got := hasWarning(d.Guard(c.strategy)); got != c.want {
				t.Errorf("terminal warning: %v, want %v", got, c.want)
			}
		})
	}
}

// decisionSteps are the ABIs at which the decision changes for some host shape and config. The kernel matrix's
// planner (conformance/internal/plan, ABISteps) runs a case once per step rather than once per ABI, so the two
// lists must be the same: a change here means a column the matrix no longer tells apart.
var decisionSteps = []int{1, 2, 3, 5, 6, 9}

// TestDecisionSteps finds the ABIs at which the decision changes: what is handled and scoped, the strategies,
// and each strategy's metadata, seccomp policy, PID namespace, channel statuses, the number of warnings and the
// refusals. The messages are left out: they name the ABI itself. Outside Decide and Guard the launch reads the ABI
// through Decision.Handled (its rules, --allow-socket) and in messages only, so a new use of the ABI number there
// must come with a step here too.
func TestDecisionSteps(t *testing.T) {
	fingerprint := func(n int) string {
		var b strings.Builder
		for _, euid := range []int{0, user} {
			for _, layer := range []error{nil, mountsDenied} {
				for _, listener := range []error{nil, listenerHeld} {
					for _, strict := range []bool{false, true} {
						for _, tty := range []bool{false, true} {
							cfg := Config{Mode: WorkspaceWrite, Backend: Auto, ReportFD: 3, Strict: strict, TTY: tty}
							d := Decide(cfg, HostShape{EUID: euid, Landlock: abi(n), Layer: layer, Listener: listener})
							fmt.Fprintf(&b, "%s %v %v %v %v|", d.Backend, d.Handled, d.Scoped, d.Order, d.Refusal != nil)
							for _, k := range d.Order {
								g := d.Guard(k)
								var chans []string
								for name, c := range g.Channels {
									chans = append(chans, name+"="+string(c.Status))
								}
								slices.Sort(chans)
								fmt.Fprintf(&b, "%s %+v %v %v %d %v %v|", g.Metadata, g.Policy, g.PIDNS, chans,
									len(g.Warnings), g.Instead != "", g.StrictRefusal != nil)
							}
						}
					}
				}
			}
		}
		return b.String()
	}
	steps, last := []int{1}, fingerprint(1)
	for n := 2; n <= landlock.HighestKnownABI+1; n++ {
		if fp := fingerprint(n); fp != last {
			steps, last = append(steps, n), fp
		}
	}
	if !slices.Equal(steps, decisionSteps) {
		t.Fatalf("the decision changes at ABIs %v, not %v: update decisionSteps and conformance/internal/plan's "+
			"ABISteps together", steps, decisionSteps)
	}
}
