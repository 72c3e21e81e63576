package launch

import (
	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/report"
	"github.com/confine-dev/confine/sandbox/seccomp"
)

// Strategy is one way a launch runs the command confined. The decision (Decide) orders them; Run runs the first
// one the host allows (strategy.go), and probe prints the same order.
type Strategy string

// The strategies, in the order Decide considers them.
const (
	// BwrapChild is the bwrap backend (no Landlock): bwrap binds the writable roots over a read-only root, and a
	// bwrap child inside runs the command as the init of a new PID namespace (strategy_bwrap.go).
	BwrapChild Strategy = "bwrap"
	// PIDNSChild is below Landlock ABI 6, where nothing scopes signals: a layered child in new mount, IPC and PID
	// namespaces (and a user namespace, unless root) builds the mount layer and stays as the command's init, so
	// that no process outside is visible to it (strategy_child.go).
	PIDNSChild Strategy = "pidns-child"
	// InPlace is root's: the mount layer is built in new mount and IPC namespaces of this locked thread, and the
	// command runs from that thread as this process's child (strategy_inplace.go).
	InPlace Strategy = "in-place"
	// UserChild is a user's: a layered child in new user, mount and IPC namespaces builds the mount layer and
	// executes the command, while this process forwards signals and mirrors its exit (strategy_child.go).
	UserChild Strategy = "layered-child"
	// Supervised has no mount layer: this process stays as the command's parent and makes its metadata changes
	// beneath the writable roots, answering a seccomp listener (strategy_supervised.go).
	Supervised Strategy = "supervisor"
	// SeccompDeny has neither a mount layer nor a listener: seccomp denies metadata changes everywhere, and the
	// command runs as this process's child (strategy_seccomp.go). Nothing of the host is needed: it ends every
	// Landlock order.
	SeccompDeny Strategy = "seccomp-deny"
)

// Metadata is how the strategy stops metadata changes outside the writable roots.
func (k Strategy) Metadata() Metadata {
	switch k {
	case Supervised:
		return MetadataSupervisor
	case SeccompDeny:
		return MetadataSeccomp
	}
	return MetadataMountLayer
}

// HostShape is everything the decision knows of the host: the facts read once, Landlock's answer, and what the
// host allows. Each of Layer, PIDNS and Listener is nil where the host allows it or where that is not known yet
// (Run learns it by trying, then decides again with what it learned; probe asks beforehand), else why not.
type HostShape struct {
	EUID     int
	WSL      WSL
	Interop  Interop
	Release  string          // uname -r, for messages
	Landlock landlock.Status // landlock.Query's answer
	// Layer is why the mount layer cannot be had: its namespaces (a user namespace too, unless root: blocked
	// by a sysctl or a container's profile) or its mounts (denied inside them, as Ubuntu 24.04's AppArmor
	// restriction does). It wraps ErrLayerUnavailable.
	Layer error
	// PIDNS is why a new PID namespace cannot be had beside the layer's (asked below ABI 6 only).
	PIDNS error
	// Listener is why a seccomp listener cannot be had (EBUSY where one is held already, as under another
	// supervisor). It wraps ErrSupervisorUnavailable.
	Listener error
	// Bwrap is the bwrap the bwrap backend would run, found (findBwrap) where that backend is wanted
	// (wantsBwrap); "" with BwrapErr saying why where there is none: a *report.Refusal for a bad CONFINE_BWRAP.
	Bwrap    string
	BwrapErr error
	// Terminal says that one of descriptors 0 to 2 is the caller's controlling terminal (Facts.Terminal).
	Terminal bool
}

// Decision is what Decide makes of a Config and a HostShape: the backend, the ABI the launch acts on, and the
// strategies to try, in order. Guard gives each one's seccomp policy, channels, warnings and refusals.
type Decision struct {
	Refusal      error   // a *report.Refusal: nothing is tried, nothing runs
	Backend      Backend // Landlock or Bwrap
	Landlock     landlock.Status
	ABI          int // the ABI the launch acts on: 0 under bwrap
	Handled      landlock.Access
	Scoped       landlock.Scope
	Bwrap        string     // the bwrap to run, under BwrapChild
	Interop      string     // on WSL2, the report's wsl_interop (wsl.go); else ""
	CloseInterop bool       // close WSL2's interop in the mount layer; refused without one
	Order        []Strategy // the strategies the host may allow, first first; Run runs the first that works

	layerWhy error // why the mount layer is missing (HostShape.Layer), for the warnings and the interop refusal
	euid     int
	strict   bool
	protect  bool // --protect paths: only a mount layer holds them
	tty      bool
	terminal bool // HostShape.Terminal
	channels bool // the channels are worked out: a report is wanted, or --strict
}

// wantsBwrap says whether a backend asks for bwrap on a host with this Landlock: --backend bwrap, or auto where
// Landlock is not available. Only then does Run look for bwrap.
func wantsBwrap(b Backend, st landlock.Status) bool {
	return b == Bwrap || (b == Auto && st.State != landlock.Available)
}

// Decide is the launch's decision, made without a system call: which backend enforces cfg on host h, with which
// ABI, and which strategies to try in which order. Below Landlock ABI 6 a PID namespace comes first (it closes
// signals); then the mount layer, in place for root or in a layered child for anyone else; then the supervisor;
// seccomp's denial last. Strategies h says the host does not allow are left out. The refusals: WSL1; no
// Landlock and no bwrap (or --backend landlock without Landlock, --backend bwrap without bwrap); WSL2 interop
// under bwrap, whose mount layer cannot close it.
func Decide(cfg Config, h HostShape) Decision {
	st := h.Landlock
	d := Decision{layerWhy: h.Layer, euid: h.EUID, strict: cfg.Strict, protect: len(cfg.Protect) > 0, tty: cfg.TTY,
		terminal: h.Terminal, channels: cfg.ReportFD >= 0 || cfg.Strict}
	if h.WSL == WSL1 { // refused before Landlock is asked: the report says "unknown"
		d.Refusal = report.Refuse(report.WSL1, "WSL1 is not a Linux kernel and has no Landlock: use WSL2")
		return d
	}
	d.Landlock = st
	d.Interop, d.CloseInterop = interopState(Facts{WSL: h.WSL, Interop: h.Interop}, cfg.AllowInterop)
	if wantsBwrap(cfg.Backend, st) {
		// No Landlock: bwrap's mounts stop every write outside, so the ABI the launch acts on is 0.
		d.Backend, d.Bwrap = Bwrap, h.Bwrap
		switch r, bad := h.BwrapErr.(*report.Refusal); {
		case h.Bwrap != "":
		case bad: // a bad CONFINE_BWRAP, under auto too
			d.Refusal = r
		case cfg.Backend == Bwrap:
			d.Refusal = report.Refuse(report.BackendUnavailable, "--backend bwrap: ", h.BwrapErr.Error())
		default:
			d.Refusal = report.Refuse(landlockReason(st.State), landlockState(st, h.Release), ", and no other backend can enforce ",
				string(cfg.Mode), ": ", h.BwrapErr.Error())
		}
		if d.Refusal == nil && d.CloseInterop {
			d.Refusal = interopRefusal(interopBwrap)
		}
		if d.Refusal == nil {
			d.Order = []Strategy{BwrapChild}
		}
		return d
	}
	if st.State != landlock.Available {
		d.Refusal = report.Refuse(landlockReason(st.State), landlockState(st, h.Release), ", and --backend landlock allows no other ",
			"backend (--backend auto would try bwrap)")
		return d
	}
	d.Backend, d.ABI = Landlock, st.ABI
	d.Handled, d.Scoped = landlock.HandledWrites(st.ABI), landlock.Scopes(st.ABI)
	if d.ABI < 6 && h.Layer == nil && h.PIDNS == nil {
		d.Order = append(d.Order, PIDNSChild)
	}
	if h.Layer == nil && h.EUID == 0 {
		d.Order = append(d.Order, InPlace)
	} else if h.Layer == nil {
		d.Order = append(d.Order, UserChild)
	}
	if h.Listener == nil {
		d.Order = append(d.Order, Supervised)
	}
	d.Order = append(d.Order, SeccompDeny)
	return d
}

// Guard is how a strategy of a Decision guards the launch: what the report says of it and what may refuse it.
type Guard struct {
	Metadata Metadata
	Policy   seccomp.Policy
	PIDNS    bool                      // the command has a PID namespace of its own
	Channels map[string]report.Channel // every channel where the decision works them out, else wsl-interop's alone
	Warnings []string                  // what the ABI, the metadata mechanism or the backend leave undone (warnings)
	Instead  string                    // why the mount layer is missing and what is done instead, or ""
	Interop  string                    // WSL2's interop warning (interopWarning), or ""
	// LayerRefusal refuses before anything of the guard is reported: the launch needs a mount layer and this
	// strategy has none (WSL2 interop is on, and only the layer closes it; --protect paths, which only the layer
	// holds). StrictRefusal is --strict's, for an open channel.
	LayerRefusal, StrictRefusal error
}

// noTTYWarning is the warning for a caller whose terminal is on descriptors 0 to 2 and who did not pass --tty,
// where the terminal cannot be bound over /dev/tty: without a mount layer /dev/tty is the magic node (5, 0),
// which names whatever terminal the command controls when it opens it, so no rule can hold it to the caller's;
// under bwrap the command has a session of its own, with no controlling terminal.
func noTTYWarning(bwrap bool) string {
	why := "no mount layer binds the terminal over /dev/tty"
	if bwrap {
		why = "bwrap gives the command a session of its own, without a controlling terminal"
	}
	return "the caller's terminal works through descriptors 0 to 2 only: " + why + ", so a program that writes to " +
		"/dev/tty or sets the terminal's modes through it (a password prompt, some editors and pagers) fails there; " +
		"pass --tty where one does"
}

// Guard is strategy k's guard under d.
func (d *Decision) Guard(k Strategy) Guard {
	metadata := k.Metadata()
	g := Guard{Metadata: metadata, PIDNS: k == PIDNSChild || k == BwrapChild}
	switch {
	case metadata == MetadataMountLayer:
	case d.CloseInterop:
		g.LayerRefusal = interopRefusal(errText(d.layerWhy))
	case d.protect:
		g.LayerRefusal = protectRefusal(errText(d.layerWhy))
	}
	g.Policy = policy(d.ABI, metadata, d.strict)
	g.Policy.DenyVsock = d.CloseInterop || d.Interop == interopStateDisabled
	g.Policy.TerminalControl = d.tty
	g.Warnings = warnings(d.ABI, metadata, d.Backend == Bwrap)
	if d.terminal && !d.tty && (metadata != MetadataMountLayer || d.Backend == Bwrap) {
		g.Warnings = append(g.Warnings, noTTYWarning(d.Backend == Bwrap))
	}
	if metadata != MetadataMountLayer && d.layerWhy != nil {
		instead := ": metadata is denied everywhere instead"
		if metadata == MetadataSupervisor {
			instead = ": confine supervises metadata changes instead"
		}
		g.Instead = msg.Str(d.layerWhy, instead)
	}
	g.Channels = map[string]report.Channel{}
	if d.channels {
		g.Channels = channels(d.ABI, metadata, d.euid == 0, d.tty, g.PIDNS, d.strict)
	}
	if w := interopNotes(d.Interop, g.Channels, nil); len(w) > 0 {
		g.Interop = w[0]
	}
	if d.strict {
		g.StrictRefusal = strictRefusal(g.Channels)
	}
	return g
}

// errText is err's text, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
