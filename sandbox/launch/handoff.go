package launch

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/report"
)

// HandoffKind says which child a Handoff is for, and so which of its parts it carries. The child checks it
// against what it was started as (checkLayerChild), and refuses a Handoff of the other kind.
type HandoffKind uint8

// The kinds.
const (
	// HandoffLayered is for a layered child (UserChild, PIDNSChild): it builds the mount layer on the rules'
	// descriptors (Handoff.Layered).
	HandoffLayered HandoffKind = 1
	// HandoffBwrap is for a bwrap child (BwrapChild): bwrap built the layer, which the child seals and checks
	// against what was bound (Handoff.Bwrap). No Landlock domain is asked for.
	HandoffBwrap HandoffKind = 2
)

// Handoff is the plan as a child receives it: everything decided, with the guard chosen. The shared part comes
// first; each kind's own part is set for that kind only.
type Handoff struct {
	Kind       HandoffKind
	Path       string // the command, resolved
	Argv       []string
	Env        []string
	Handled    landlock.Access
	Scoped     landlock.Scope
	Filter     []unix.SockFilter // the seccomp program
	ReportFD   int               // the report's descriptor in the child, or -1
	ReportName int               // the caller's number for it (--report-fd), for messages
	Report     []byte            // the report, outcome "exec", written to ReportFD just before execve
	Init       bool              // the child is the init of a new PID namespace: it runs the command as its child
	Warn       string            // a warning for stderr, printed just before execve, or ""
	Ignored    uint64            // the signals the caller ignored (bit N: signal N), which the child ignores too

	Layered *LayeredPart // Kind HandoffLayered
	Bwrap   *BwrapPart   // Kind HandoffBwrap

	fds []int // the parent's descriptor of each rule
}

// LayeredPart is a layered child's part of its Handoff.
type LayeredPart struct {
	Rules   []HandoffRule // their descriptors travel beside the Handoff, in the same order
	Interop bool          // close WSL2's interop in the mount layer (Private.Interop)
	Guards  []MountGuard  // the git metadata the layer binds (Private.Guards)
}

// BwrapPart is a bwrap child's part of its Handoff.
type BwrapPart struct {
	Binds    []Bind       // what bwrap was asked to bind read-write
	UID, GID int          // for a user's bwrap child (uid 0 in bwrap's user namespace): the caller's, which the command gets back; else -1
	Guards   []MountGuard // the git metadata the child binds over bwrap's binds (guards.go)
	// WD is the identity of confine's working directory, the caller's (Path unused; Dev 0 and Ino 0: it could
	// not be read, or lies beneath /dev or /proc, which bwrap mounts anew): bwrap enters it again by name, so the
	// child checks that it landed there (checkWD).
	WD Bind
}

// Bind is a root bwrap binds read-write: its path and the identity of the directory or file validated there.
type Bind struct {
	Path     string
	Dev, Ino uint64
}

// HandoffRule is one path-beneath rule; its descriptor travels beside the Handoff, in the same order.
type HandoffRule struct {
	Path     string
	Dir      bool // from fstat on the descriptor, in the parent
	Writable bool // gets a writable clone in the mount layer
	Devpts   bool // /dev/pts with --tty: the layer mounts a private devpts instance and the rule moves to it
	Shm      bool // /dev/shm: the layer mounts a private tmpfs on this descriptor and the rule moves to it
	Terminal bool // the caller's terminal: the layer binds it over /dev/tty (Private.Terminal)
	Connect  bool // a connect-only rule for a pathname unix socket (landlock.Rule.Connect)
	// NoSpecial: a git directory's rule, which grants no symlink, FIFO or socket (landlock.Rule.NoSpecial)
	NoSpecial bool
}

// rules are h's rules: a layered child's, else none.
func (h *Handoff) rules() []HandoffRule {
	if h.Layered == nil {
		return nil
	}
	return h.Layered.Rules
}

// handoff is p, guarded by prog, as its child receives it: a bwrap child's under the bwrap backend, else a
// layered child's.
func (p *plan) handoff(prog []unix.SockFilter, callerReportFD int) *Handoff {
	h := &Handoff{Kind: HandoffLayered, Path: p.path, Argv: p.argv, Env: p.env, Handled: p.handled, Scoped: p.scoped,
		Filter: prog, Init: p.pidNS, ReportFD: -1, ReportName: callerReportFD, Warn: p.tempWarn, Ignored: ignoredMask()}
	if callerReportFD >= 0 {
		h.ReportFD, h.Report = reportFD, execReport(p.rep, p.path, p.argv)
	}
	if p.bwrap != "" { // bwrap binds the roots, and there is no Landlock rule to add
		h.Kind, h.Bwrap = HandoffBwrap, &BwrapPart{Binds: p.binds, UID: -1, GID: -1, Guards: p.mountGuards()}
		if p.euid != 0 {
			h.Bwrap.UID, h.Bwrap.GID = p.euid, os.Getegid()
		}
		// Beneath /dev and /proc bwrap mounts its own, where the same directory has another identity.
		var st unix.Stat_t
		if wd, err := os.Getwd(); err == nil && !beneath(wd, "/dev") && !beneath(wd, "/proc") && unix.Stat(".", &st) == nil {
			h.Bwrap.WD = Bind{Dev: st.Dev, Ino: st.Ino}
		}
		return h
	}
	h.Layered = &LayeredPart{Interop: p.closeWSL, Guards: p.mountGuards()}
	writable := map[int]bool{}
	for _, r := range p.writable {
		writable[r.FD] = true
	}
	for i, r := range p.rules {
		h.Layered.Rules = append(h.Layered.Rules, HandoffRule{Path: r.Path, Dir: r.Dir, Writable: writable[r.FD], Devpts: i == p.devpts, Shm: i == p.shm, Terminal: i == p.term, Connect: r.Connect, NoSpecial: r.NoSpecial})
		h.fds = append(h.fds, r.FD)
	}
	return h
}

// execReport is rep as the command runs: outcome "exec" and the command resolved, marshalled. rep itself stays
// as it is, for a refusal or a fallback.
func execReport(rep *report.Report, path string, argv []string) []byte {
	r := *rep
	r.Outcome, r.Command = "exec", append([]string{path}, argv[1:]...)
	return r.Marshal()
}

func (h *Handoff) marshal() []byte {
	var e encoder
	e.num(uint64(h.Kind))
	e.str(h.Path)
	e.strs(h.Argv)
	e.strs(h.Env)
	e.num(uint64(h.Handled))
	e.num(uint64(h.Scoped))
	e.num(uint64(len(h.Filter)))
	for _, in := range h.Filter {
		e.num(uint64(in.Code) | uint64(in.Jt)<<16 | uint64(in.Jf)<<24 | uint64(in.K)<<32)
	}
	e.num(uint64(int64(h.ReportFD)))
	e.num(uint64(int64(h.ReportName)))
	e.bytes(h.Report)
	e.num(uint64(flag(h.Init)))
	e.str(h.Warn)
	e.num(h.Ignored)
	switch h.Kind {
	case HandoffLayered:
		e.num(uint64(len(h.Layered.Rules)))
		for _, r := range h.Layered.Rules {
			e.str(r.Path)
			e.num(uint64(flag(r.Dir) | flag(r.Writable)<<1 | flag(r.Devpts)<<2 | flag(r.Shm)<<3 | flag(r.Terminal)<<4 | flag(r.Connect)<<5 | flag(r.NoSpecial)<<6))
		}
		e.num(uint64(flag(h.Layered.Interop)))
		e.guards(h.Layered.Guards)
	case HandoffBwrap:
		e.num(uint64(len(h.Bwrap.Binds)))
		for _, b := range h.Bwrap.Binds {
			e.str(b.Path)
			e.num(b.Dev)
			e.num(b.Ino)
		}
		e.num(uint64(int64(h.Bwrap.UID)))
		e.num(uint64(int64(h.Bwrap.GID)))
		e.guards(h.Bwrap.Guards)
		e.num(h.Bwrap.WD.Dev)
		e.num(h.Bwrap.WD.Ino)
	}
	return e.b
}

func unmarshalHandoff(b []byte) (*Handoff, error) {
	d := decoder{b: b}
	h := &Handoff{Kind: HandoffKind(d.num()), Path: d.str(), Argv: d.strs(), Env: d.strs(), Handled: landlock.Access(d.num()),
		Scoped: landlock.Scope(d.num())}
	h.Filter = make([]unix.SockFilter, d.count())
	for i := range h.Filter {
		v := d.num()
		h.Filter[i] = unix.SockFilter{Code: uint16(v), Jt: uint8(v >> 16), Jf: uint8(v >> 24), K: uint32(v >> 32)}
	}
	h.ReportFD = int(int64(d.num()))
	h.ReportName = int(int64(d.num()))
	h.Report = d.bytes()
	h.Init = d.num()&1 != 0
	h.Warn = d.str()
	h.Ignored = d.num()
	switch h.Kind {
	case HandoffLayered:
		h.Layered = &LayeredPart{Rules: make([]HandoffRule, d.count())}
		for i := range h.Layered.Rules {
			r := &h.Layered.Rules[i]
			r.Path = d.str()
			f := d.num()
			r.Dir, r.Writable, r.Devpts, r.Shm, r.Terminal, r.Connect = f&1 != 0, f&2 != 0, f&4 != 0, f&8 != 0, f&16 != 0, f&32 != 0
			r.NoSpecial = f&64 != 0
		}
		h.Layered.Interop = d.num()&1 != 0
		h.Layered.Guards = d.guards()
	case HandoffBwrap:
		h.Bwrap = &BwrapPart{Binds: make([]Bind, d.count())}
		for i := range h.Bwrap.Binds {
			h.Bwrap.Binds[i] = Bind{Path: d.str(), Dev: d.num(), Ino: d.num()}
		}
		h.Bwrap.UID = int(int64(d.num()))
		h.Bwrap.GID = int(int64(d.num()))
		h.Bwrap.Guards = d.guards()
		h.Bwrap.WD = Bind{Dev: d.num(), Ino: d.num()}
	default:
		if d.err == nil {
			d.err = errBadKind
		}
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = errShort
	}
	return h, d.err
}

func flag(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// The parent/child protocol of a layered child (and a bwrap child, bwrap.go): every message, in order. "sock" is
// the handoff socket (handoffFD in the child), "sync" the sync pipe (syncFD in the child, close-on-exec).
//
//	| # | who -> whom    | on   | what                                              | when                                    | the reader does                                              |
//	|---|----------------|------|---------------------------------------------------|-----------------------------------------|--------------------------------------------------------------|
//	| 1 | child -> parent| sock | 1 byte with SCM_CREDENTIALS (peerPID)             | a bwrap child only, as it starts        | learns the child's PID in its own PID namespace, for signals |
//	| 2 | parent -> child| sock | 8-byte LE length + SCM_RIGHTS (the rules' fds),   | once the roots are open (layered.send); | the child decodes the Handoff (receive); EOF or a short or   |
//	|   |                |      | then the Handoff's bytes (marshal); SHUT_WR       | nothing else is ever sent               | malformed one: refusal (125), nothing runs                   |
//	| 3a| child -> parent| sync | execMark                                          | just before execve (not an init)        | waits for EOF (close-on-exec): the command was executed      |
//	| 3b| child -> parent| sync | execMark, then a syncMsg                          | execve failed                           | an *ExecError (the child wrote the report's second record)   |
//	| 3c| child -> parent| sync | a syncMsg; the child exits 125                    | it stopped before execve                | Layer: ErrLayerUnavailable (the next strategy, in place);    |
//	|   |                |      |                                                   |                                         | else a refusal or an *ExecError, reported by the parent      |
//	| 3d| child -> parent| sync | nothing: EOF without execMark                     | the child died                          | refusal (internal), naming how it ended                      |
//	| 4 | init -> parent | sync | execMark once the command runs; then, once it     | an init: Handoff.Init (pidns, bwrap)    | forwards signals until the child exits; then mirrors the     |
//	|   |                |      | ended, its 4-byte LE wait status; the init exits 0|                                         | command's wait status, not the init's                        |
//
// Signals: the parent catches the ones in forwarded from the child's start, and forwards them (by pidfd where
// it has one) once the child said execMark; where the command never ran, it delivers them to itself again
// (redeliver). A parent that dies takes the child with it (Pdeathsig).
//
// syncMsg is what a layered child says on the sync pipe when it stops before execve (3b, 3c).
type syncMsg struct {
	Layer  bool          // the mount layer could not be built: the parent falls back
	Reason report.Reason // a refusal: the parent reports it
	Exec   int           // execve failed with this exit status (the report and the exec-failed record are written)
	Error  string
}

// execMark is the one byte a layered child writes on the sync pipe just before its execve (3a, 3b), or an init
// once its command runs (4).
const execMark = 'x'

func (m syncMsg) marshal() []byte {
	var e encoder
	e.num(uint64(flag(m.Layer)))
	e.str(string(m.Reason))
	e.num(uint64(m.Exec))
	e.str(m.Error)
	return e.b
}

func unmarshalSync(b []byte) (syncMsg, error) {
	d := decoder{b: b}
	m := syncMsg{Layer: d.num() != 0, Reason: report.Reason(d.str()), Exec: int(d.num()), Error: d.str()}
	return m, d.err
}
