package launch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/gitdir"
	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
	"github.com/confine-dev/confine/sandbox/seccomp"
	"github.com/confine-dev/confine/sandbox/supervisor"
)

// A plan is everything decided before anything is restricted. The first process makes it once; a layered
// child receives it as a Handoff and never parses argv or opens a path again. Its roots are O_PATH descriptors
// opened once and validated; the Landlock rules and the mount layer use exactly those descriptors.
type plan struct {
	bwrap     string // the bwrap executable, for the bwrap backend (bwrap.go); "" for Landlock
	binds     []Bind // what bwrap binds read-write, once it is started (sealBwrapLayer checks them)
	abi       int
	wsl       WSL
	euid      int
	tty       bool
	strict    bool
	report    bool // a report is wanted (--report-fd): the channels are worked out only for it or --strict
	handled   landlock.Access
	scoped    landlock.Scope
	roots     []*pathfd.Root // every root opened, in Config order; closed by close
	rules     []landlock.Rule
	ruleWhy   []string       // each rule's reason in the report ("" but for git's and profiles' directories)
	writable  []*pathfd.Root // the roots the mount layer keeps writable
	devpts    int            // with --tty, the index in rules of /dev/pts, which the layer replaces; else -1
	shm       int            // the index in rules of /dev/shm, which the layer's private tmpfs replaces; else -1
	terminal  Terminal       // the caller's terminal, which gets a rule and, in the layer, is bound over /dev/tty
	term      int            // the index in rules of terminal; else -1
	pidNS     bool           // the command runs in a PID namespace of its own, under a layered child as init
	path      string         // the command, resolved through PATH
	argv      []string
	env       []string
	rep       *report.Report
	notes     []string       // warnings from opening the roots
	tempWarn  string         // the temporary-directory variables that point outside the writable set, or ""
	interop   string         // on WSL2, the report's wsl_interop (wsl.go); else ""
	closeWSL  bool           // close WSL2's interop in the mount layer; without one, refuse (guard)
	guards    []gitdir.Guard // the repository's own git metadata, which a mount layer binds (guards.go)
	protected []string       // the --protect paths, guarded too (protect.go): the report's protected
	gitGaps   []string       // what of it cannot be guarded, and why: the channel git-metadata is then open
}

// private is what the mount layer adds for this plan.
func (p *plan) private() Private {
	priv := Private{Devpts: p.devpts >= 0, Shm: -1, Terminal: -1, Interop: p.closeWSL, Guards: p.mountGuards()}
	if p.shm >= 0 {
		priv.Shm = p.rules[p.shm].FD
	}
	if p.term >= 0 {
		priv.Terminal = p.rules[p.term].FD
	}
	return priv
}

// useMounted points the /dev/pts and /dev/shm rules at the layer's private mounts (which close closes).
func (p *plan) useMounted(m Mounted) {
	for _, u := range []struct {
		i, fd int
		path  string
	}{{p.devpts, m.Devpts, "/dev/pts"}, {p.shm, m.Shm, "/dev/shm"}} {
		if u.i >= 0 && u.fd >= 0 {
			p.rules[u.i].FD = u.fd
			p.roots = append(p.roots, &pathfd.Root{Path: u.path, FD: u.fd, Kind: pathfd.Dir})
		}
	}
}

// shareShm is what becomes of the /dev/shm rule where there is no mount layer, and so no private tmpfs: the
// host's /dev/shm, shared with every process, stays granted (and a root the supervisor makes metadata changes
// beneath), so that POSIX shared memory and semaphores work, as /tmp is shared; the channel shm says what that
// opens. (--strict, which refuses for an open channel, refuses there anyway: atime is open without the layer.)
func (p *plan) shareShm() {
	if p.shm < 0 {
		return
	}
	for _, r := range p.roots {
		if r.FD == p.rules[p.shm].FD {
			p.writable = append(p.writable, r)
		}
	}
	p.shm = -1
	p.notes = append(p.notes, "no mount layer, so no private /dev/shm: the host's is writable (POSIX shared memory "+
		"and semaphores work), and the command can change the shm objects of the caller's other processes there "+
		"(channel shm)")
}

// supervisedRoots are the writable roots as the supervisor compares them (the mount layer's writable set), each
// opened again here, in this process's mount namespace, which is the command's: where a layered child failed,
// the plan's descriptors lie on that child's mounts, and the supervisor compares mounts too. A root that is no
// longer the same file here (device and inode) is left out: nothing is changed beneath it. The descriptors
// are the plan's (closed with it), and keep the mounts, and so their IDs, alive while the supervisor runs.
func (p *plan) supervisedRoots() []supervisor.Root {
	var roots []supervisor.Root
	for _, r := range p.writable {
		here, err := pathfd.Open(r.Path)
		if err != nil {
			continue
		}
		p.roots = append(p.roots, here)
		var a, b unix.Stat_t
		if unix.Fstat(r.FD, &a) != nil || unix.Fstat(here.FD, &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
			continue
		}
		if root, err := supervisor.RootOf(here.FD, here.Path); err == nil {
			roots = append(roots, root)
		}
	}
	return roots
}

func (p *plan) close() {
	for _, r := range p.roots {
		r.Close()
	}
}

// newPlan is the plan of a decision d, before any root is opened: the roots are opened next (open), once the
// strategy has chosen in which mount namespace; the guard, and with it the seccomp program, comes last.
func newPlan(cfg Config, f Facts, d *Decision, rep *report.Report) *plan {
	return &plan{bwrap: d.Bwrap, abi: d.ABI, wsl: f.WSL, euid: f.EUID, tty: cfg.TTY, strict: cfg.Strict,
		report: cfg.ReportFD >= 0, handled: d.Handled, scoped: d.Scoped, devpts: -1, shm: -1, term: -1, argv: cfg.Argv,
		env: environ(f.WSL == WSL2 && !cfg.AllowInterop), rep: rep, interop: d.Interop, closeWSL: d.CloseInterop,
		terminal: terminalRule(cfg, f, d)}
}

// terminalRule is the caller's terminal where it gets a rule: without --tty (which grants /dev/tty itself) and
// under Landlock (bwrap's synthetic /dev has a /dev/tty of its own).
func terminalRule(cfg Config, f Facts, d *Decision) Terminal {
	if cfg.TTY || d.Bwrap != "" {
		return Terminal{}
	}
	return f.Terminal
}

// stdioRefusal refuses a directory on descriptor 0, 1 or 2: the command could change files beneath it.
func stdioRefusal() error {
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return report.Refuse(report.BadStdio, "descriptor ", fd, " is a directory: the command could change files beneath it; pass a file, a pipe or a terminal")
		}
	}
	return nil
}

// landlockReason is the refusal's reason for a Landlock that is not available.
func landlockReason(state landlock.State) report.Reason {
	if state == landlock.Disabled {
		return report.LandlockDisabled
	}
	return report.LandlockAbsent
}

// landlockState says why Landlock cannot be used, or that it could: "Landlock is absent (ENOSYS: kernel 5.10.0
// was built without it)".
func landlockState(st landlock.Status, release string) string {
	switch st.State {
	case landlock.Absent:
		return msg.Str("Landlock is absent (ENOSYS: kernel ", release, " was built without it)")
	case landlock.Disabled:
		return "Landlock is disabled (EOPNOTSUPP: built in but not in lsm=)"
	}
	return msg.Str("Landlock ABI ", st.ABI, " is available")
}

// policy is the seccomp filter for an ABI: with the mount layer, read-only mounts already stop metadata
// changes and truncate(2) outside, and the layer's IPC namespace is private, so only what no mount can stop is
// denied. Without it, the supervisor makes the metadata changes beneath the writable roots (and below ABI 6,
// where Landlock does not scope signals, sends the command's signals to its own descendants only), or seccomp
// denies them everywhere. No command may make set-ID files: they would outlive it, and act as their owner for anyone. --strict
// also denies advisory locks.
func policy(abi int, metadata Metadata, strict bool) seccomp.Policy {
	switch metadata {
	case MetadataMountLayer:
		return seccomp.Policy{NoSetID: true, DenyLocks: strict}
	case MetadataSupervisor: // below ABI 6 the supervisor sends the command's signals too: nothing scopes them
		return seccomp.Policy{Supervise: true, SuperviseSignals: abi < 6, DenyTruncate: abi < 3, DenyIPC: true,
			NoSetID: true, DenyLocks: strict}
	}
	return seccomp.Policy{Metadata: true, DenyTruncate: abi < 3, DenyIPC: true, NoSetID: true, DenyLocks: strict}
}

// A rootSpec is one root a Config asks for.
type rootSpec struct {
	flag     string // the flag that asked for it ("--worktree", "--allow"), or "" for a default root
	path     string
	required bool // given by the user: it must exist
	grant    bool // writable (the worktree in read-only mode is validated but not writable)
}

func (cfg Config) roots() []rootSpec {
	var roots []rootSpec
	if cfg.Worktree != "" {
		roots = append(roots, rootSpec{"--worktree", cfg.Worktree, true, cfg.Mode == WorkspaceWrite})
	}
	for _, a := range cfg.Allow {
		roots = append(roots, rootSpec{"--allow", a, true, true})
	}
	defaults := defaultRoots
	if cfg.TTY {
		defaults = append(append([]string{}, defaultRoots...), ttyRoots...)
	}
	for _, d := range defaults {
		roots = append(roots, rootSpec{"", d, false, true})
	}
	return roots
}

// readOnlyHeld refuses (bad-root) read-only mode for a worktree that a writable root holds: one beneath /tmp or
// /dev/shm (--allow conflicts with read-only mode), or whose git directory (a .git file's, a linked worktree's
// common directory) lies in one. Read-only mode grants the worktree nothing, so it is not held read-only either:
// that root's rule and writable mount would let the command write it, its git config and hooks too (an attack
// review planted core.fsmonitor there, and the report said git-metadata closed). root is the mount namespace
// the pointers are opened in (plan.open); under --no-git the git directories are not looked for.
func (p *plan) readOnlyHeld(cfg Config, root int) error {
	if cfg.Mode != ReadOnly || cfg.Worktree == "" {
		return nil
	}
	held := func(path string) string {
		for _, r := range p.writable {
			if r.Path == path {
				return r.Path
			}
		}
		return p.nearestRoot(path)
	}
	refuse := func(what, path, in string) error {
		return report.Refuse(report.BadRoot, "--mode read-only: ", what, path, " lies in the writable ", in,
			", so the command could write it there (read-only mode cannot hold it): use workspace-write, which "+
				"holds its git metadata, or keep it out of ", in)
	}
	if in := held(cfg.Worktree); in != "" {
		return refuse("the worktree ", cfg.Worktree, in)
	}
	i := slices.IndexFunc(p.roots, func(r *pathfd.Root) bool { return r.Path == cfg.Worktree })
	if i < 0 {
		return nil
	}
	wt := p.roots[i]
	if cfg.NoGit {
		if unix.Faccessat(wt.FD, ".git", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW) == nil {
			p.gitGaps = append(p.gitGaps, "--no-git: where "+wt.Path+"/.git leads is not checked")
		}
		return nil
	}
	res, err := gitdir.Discover(root, wt, os.Getenv("HOME"))
	if err != nil {
		return report.Refuse(report.BadRoot, "git: ", err, " (--no-git skips git discovery)")
	}
	defer res.Close()
	for _, d := range []string{res.GitDir, res.Common} {
		if in := held(d); d != "" && in != "" {
			return refuse("the worktree's git directory ", d, in)
		}
	}
	conf := res.CommonDir // the config git reads: the common directory's, a separate one's, or .git's
	if conf == nil {
		conf = res.Separate
	}
	if fd, err := unix.Openat(wt.FD, ".git", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		defer unix.Close(fd)
		conf = &pathfd.Root{Path: wt.Path + "/.git", FD: fd, Kind: pathfd.Dir}
	}
	if conf != nil {
		p.gitGaps = append(p.gitGaps, gitdir.ReadOnlyGaps(conf)...)
	}
	return p.gitAliased(res)
}

// open opens every root once, in the mount namespace whose root directory is root (pathfd.Here: ours),
// records its rule, and resolves the command. User-given roots must exist; a missing default root is a warning.
// The error is a *report.Refusal or an *ExecError.
func (p *plan) open(cfg Config, root int) error {
	var wt *pathfd.Root
	for _, want := range cfg.roots() {
		r, err := pathfd.OpenIn(root, want.path)
		if err != nil {
			if want.required {
				return &report.Refusal{Reason: report.BadRoot, Err: msg.Err(want.flag, ": ", err)}
			}
			p.notes = append(p.notes, msg.Str("no rule for default root ", want.path, ": ", err))
			continue
		}
		p.roots = append(p.roots, r)
		if want.required {
			if err := userRootAllowed(r, want.path == cfg.Worktree); err != nil {
				return &report.Refusal{Reason: report.BadRoot, Err: msg.Err(want.flag, ": ", err)}
			}
		}
		if !want.grant {
			continue
		}
		if want.path == cfg.Worktree {
			wt = r
		}
		if cfg.TTY && !want.required && want.path == "/dev/pts" && r.Kind == pathfd.Dir {
			p.devpts = len(p.rules)
		}
		if !want.required && want.path == shmRoot {
			if r.Kind != pathfd.Dir {
				p.notes = append(p.notes, msg.Str("no private ", shmRoot, ": it is not a directory here"))
				continue
			}
			p.shm = len(p.rules)
		}
		p.grant(r, cfg.Why[want.path])
	}
	if err := p.readOnlyHeld(cfg, root); err != nil {
		return err
	}
	if err := p.worktreeAliased(cfg); err != nil {
		return err
	}
	p.openTerminal(root)
	if err := p.openSockets(root, cfg.AllowSocket); err != nil {
		return err
	}
	p.notes = append(p.notes, cfg.Notes...)
	if wt != nil && !cfg.NoGit {
		if err := p.openGit(root, wt, cfg.Protect); err != nil {
			return err
		}
	} else if wt != nil {
		var st unix.Stat_t
		if unix.Fstatat(wt.FD, ".git", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			p.gitGaps = append(p.gitGaps, "--no-git: "+wt.Path+"/.git is not guarded")
		}
	}
	if err := p.openProtected(root, cfg.Protect); err != nil {
		return err
	}
	if err := p.configOutside(cfg.ConfigFile); err != nil {
		return err
	}
	if err := checkSubmounts(p.writable); err != nil {
		return &report.Refusal{Reason: report.BadRoot, Err: err}
	}
	var err error
	p.path, err = lookPath(cfg.Argv[0])
	return err
}

// openTerminal grants the caller's terminal (p.terminal), opened in the mount namespace whose root directory is
// root, if the node found there is the same device: writes and ioctls on it are what the command can already
// do through its descriptors. A node that is gone or another device is a note, not a refusal.
func (p *plan) openTerminal(root int) {
	if p.terminal.Path == "" {
		return
	}
	r, err := pathfd.OpenIn(root, p.terminal.Path)
	if err != nil {
		p.notes = append(p.notes, msg.Str("no rule for the caller's terminal ", p.terminal.Path, ": ", err))
		return
	}
	var st unix.Stat_t
	if r.Kind != pathfd.CharDev || unix.Fstat(r.FD, &st) != nil || st.Rdev != p.terminal.Rdev {
		r.Close()
		p.notes = append(p.notes, msg.Str("no rule for the caller's terminal ", p.terminal.Path, ": the node there is another device"))
		return
	}
	p.roots = append(p.roots, r)
	p.term = len(p.rules)
	p.grant(r, "the caller's terminal, which a mount layer binds over /dev/tty")
}

// openSockets gives each --allow-socket a connect-only rule (ResolveUnix), opened like a root in the mount
// namespace whose root directory is root. Below ABI 9 connecting is not handled, so no rule is needed, and
// none is added: a rule must grant a handled right. A path that is not a socket is a bad-root refusal.
func (p *plan) openSockets(root int, paths []string) error {
	for _, path := range paths {
		r, err := pathfd.OpenSocketIn(root, path)
		if err != nil {
			return &report.Refusal{Reason: report.BadRoot, Err: msg.Err("--allow-socket: ", err)}
		}
		p.roots = append(p.roots, r)
		if p.handled&landlock.ResolveUnix == 0 {
			p.notes = append(p.notes, msg.Str("--allow-socket ", path, ": no rule needed: ", abiHere(p.abi),
				", where connecting to a pathname unix socket is not handled"))
			continue
		}
		p.rules = append(p.rules, landlock.Rule{Path: r.Path, FD: r.FD, Connect: true})
		p.ruleWhy = append(p.ruleWhy, "--allow-socket: connect only")
	}
	return nil
}

// worktreeAliased refuses (bad-root) a worktree whose .git a writable directory rule shows under another name
// (aliased), as --config is refused: there the command could write its config and hooks past the mount layer's
// guards, which hold the worktree's own name, and in read-only mode the worktree itself (an attack review: /tmp
// a bind of a directory that holds the worktree, or the worktree a bind of a checkout in /tmp). Asked in
// read-only mode, and in workspace-write where WORKTREE/.git exists (else nothing there is held: the worktree is
// writable anyway). The git directories a .git file leads to are asked the same (gitAliased).
func (p *plan) worktreeAliased(cfg Config) error {
	i := slices.IndexFunc(p.roots, func(r *pathfd.Root) bool { return r.Path == cfg.Worktree })
	if i < 0 {
		return nil
	}
	wt := p.roots[i]
	if cfg.Mode != ReadOnly && unix.Faccessat(wt.FD, ".git", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return nil
	}
	return p.aliased("the worktree ", wt, ".git")
}

// gitAliased asks aliased of the git directories outside the worktree that res (Discover's) found: a separate
// git directory, and a linked worktree's common directory, each whole.
func (p *plan) gitAliased(res *gitdir.Result) error {
	for _, d := range []*pathfd.Root{res.Separate, res.CommonDir} {
		if d == nil {
			continue
		}
		if err := p.aliased("the git directory ", d, ""); err != nil {
			return err
		}
	}
	return nil
}

// aliased refuses (bad-root, naming what dir is) where a writable directory rule shows dir/name (dir itself
// where name is "") under another name: shownAt (a bind mount of it or of a directory above it, an overlay, a
// loop device), or a mount beneath the rule of a directory at or beneath it (a bind of .git/hooks in /tmp). A
// rule that dir lies beneath by its name is the mount layer's to hold (nesting).
func (p *plan) aliased(what string, dir *pathfd.Root, name string) error {
	path := dir.Path
	if name != "" {
		path += "/" + name
	}
	ids, _ := ancestorIDs(dir.FD) // what the walk reached, where it stopped early
	mounts, _ := readMounts()     // none where /proc is missing: the identities are still compared
	places := placesOf(path, mounts)
	for _, r := range p.rules {
		var st unix.Stat_t
		if !r.Dir || beneath(dir.Path, r.Path) || unix.Fstat(r.FD, &st) != nil {
			continue
		}
		at := shownAt(path, ids, r.Path, [2]uint64{st.Dev, st.Ino}, mounts)
		for _, m := range mounts {
			if at == "" && !m.hidden && beneath(m.point, r.Path) && slices.ContainsFunc(places, func(q place) bool {
				return m.dev == q.dev && beneath(m.root, q.path)
			}) {
				at = m.point
			}
		}
		if at != "" {
			return report.Refuse(report.BadRoot, what, dir.Path, " is shown beneath the writable ", r.Path, " at ",
				at, " (a bind mount, an overlay or a loop device): the command could write its git metadata "+
					"there: keep it out of ", r.Path)
		}
	}
	return nil
}

// configOutside refuses (usage) the --config file at path (its kernel name; "" for none) where the command
// could rewrite it for the next launch: a rule's file, or beneath a rule's directory (each rule grants writes),
// by path; or where a rule's directory shows it under another name (a bind mount, an overlay or a loop device:
// configAliased).
func (p *plan) configOutside(path string) error {
	if path == "" {
		return nil
	}
	for _, r := range p.rules {
		if path == r.Path || strings.HasPrefix(path, r.Path+"/") {
			return report.Refuse(report.Usage, "--config ", path, " is beneath ", r.Path, ", which the command can write: keep it outside")
		}
	}
	mounts, _ := readMounts() // none where /proc is missing: the rules' own identities are still compared
	if r, shown := configAliased(path, p.rules, mounts); r != "" {
		return report.Refuse(report.Usage, "--config ", path, " is shown beneath ", r, " at ", shown,
			" (a bind mount, an overlay or a loop device), which the command can write: keep it outside")
	}
	return nil
}

// configAliased walks up ".." from the directory of the --config file at path, by descriptor, and collects the
// identity (st_dev, st_ino) of each directory on the way, up to the root. It returns the first directory rule
// that shows the file under another name (shownAt, with mounts from mountinfo), and where. It returns "" where
// none does, or where the walk cannot start (the file's directory is gone: the parser has read the file
// already, so the launch then refuses on its own later, or runs with a config no path reaches).
func configAliased(path string, rules []landlock.Rule, mounts []mount) (rule, shown string) {
	var ids map[[2]uint64]bool
	if fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		ids, _ = ancestorIDs(fd) // what the walk reached, where it stopped early
		unix.Close(fd)
	}
	for _, r := range rules {
		var st unix.Stat_t
		if !r.Dir || unix.Fstat(r.FD, &st) != nil {
			continue
		}
		if at := shownAt(path, ids, r.Path, [2]uint64{st.Dev, st.Ino}, mounts); at != "" {
			return r.Path, at
		}
	}
	return "", ""
}

// grant records r's rule (why: the report's reason, for a git directory) and its writable mount.
func (p *plan) grant(r *pathfd.Root, why string) {
	dir := r.Kind == pathfd.Dir
	p.rules = append(p.rules, landlock.Rule{Path: r.Path, FD: r.FD, Dir: dir})
	p.ruleWhy = append(p.ruleWhy, why)
	// The host's /dev/shm is never made writable: the layer's private tmpfs covers it.
	if needsWritableMount(r) && len(p.rules)-1 != p.shm {
		p.writable = append(p.writable, r)
	}
}

// openGit grants the git directories a linked worktree at wt writes outside it (package gitdir), opened
// through wt's descriptor and then, like every root, once and without symlinks in root's mount namespace.
// A refused pointer is a bad-root refusal: the git directories are roots, found rather than given.
// A separate git directory (Result.Separate) in a writable root is granted as a root of its own and held
// (Guards), unless it lies in one of the protect paths (--protect, absolute and clean), which holds all of it
// read-only already: a root there would be a writable mount inside that bind, and its placeholders confine's
// writes where the command can write nothing.
func (p *plan) openGit(root int, wt *pathfd.Root, protect []string) error {
	res, err := gitdir.Discover(root, wt, os.Getenv("HOME"))
	if err != nil {
		return report.Refuse(report.BadRoot, "git: ", err, " (--no-git skips git discovery)")
	}
	if err := p.trustRegistration(res); err != nil {
		res.Close()
		return err
	}
	if err := p.gitAliased(res); err != nil {
		res.Close()
		return err
	}
	p.notes = append(p.notes, res.Notes...)
	for i := range res.Grants {
		g := &res.Grants[i]
		r := &pathfd.Root{Path: g.Path, FD: g.FD, Kind: g.Kind}
		p.roots = append(p.roots, r) // closed with the plan
		if strings.HasPrefix(g.Path, wt.Path+"/") {
			continue // already writable with the worktree
		}
		p.grant(r, "git: "+g.Reason)
		p.rules[len(p.rules)-1].NoSpecial = true
	}
	if sep := res.Separate; sep != nil {
		in := p.nearestRoot(sep.Path)
		if slices.ContainsFunc(protect, func(x string) bool { return beneath(sep.Path, x) }) {
			in = "" // held read-only by --protect
		}
		if in != "" && unix.Faccessat(sep.FD, ".", unix.W_OK, unix.AT_EACCESS) != nil {
			// Not this user's to write (nor the command's): no placeholder can be made there, and what lies
			// in it is as its owner left it.
			p.gitGaps = append(p.gitGaps, "git: "+sep.Path+" lies in the writable "+in+", but this user cannot "+
				"write it: not held (what its owner lets others write there, the command can write)")
			in = ""
		}
		if in == "" {
			p.notes = append(p.notes, gitdir.SeparateNote(sep.Path, wt.Path+"/.git"))
			p.gitGaps = append(p.gitGaps, gitdir.SubmoduleGap(wt.Path))
			sep.Close()
			res.Separate = nil
		} else {
			// It lies in a writable root (/tmp, or the worktree), which lets the command write its config and
			// hooks: granted as a root of its own (adding no right), so that the layer holds them there, as a
			// main checkout's .git; its clone is attached on the root it lies in (nesting, openPinned).
			p.roots = append(p.roots, sep) // closed with the plan
			p.grant(sep, "git: this worktree's git directory, which lies in the writable "+in+": held as a "+
				"main checkout's .git")
		}
	}
	return p.guardGit(wt, res)
}

// trustRegistration refuses a linked worktree's registration (res.Registration, <common>/worktrees/<name>) that a
// confined command could have written, because it lies beneath a writable rule, while the common directory does
// not: one run could then plant the registration and point WORKTREE/.git at it, and the next would grant the
// common directory's objects, refs and logs, which no run could write before. git's own two-way link (the
// registration's gitdir file names this worktree) is checked by package gitdir, but a planted registration
// carries a planted back-pointer. Where the common directory is writable too, the grants add nothing.
func (p *plan) trustRegistration(res *gitdir.Result) error {
	if res.Registration == nil {
		return nil
	}
	reg, err := p.writableRuleAbove(res.Registration.FD)
	if err == nil && reg != "" {
		var common string
		if common, err = p.writableRuleAbove(res.CommonDir.FD); err == nil && common == "" {
			return report.Refuse(report.BadRoot, "git: ", res.Registration.Path, " lies beneath ", reg, ", which the "+
				"command can write, but its common directory ", res.Common, " does not: an earlier confined run could "+
				"have made this registration (--no-git skips git discovery)")
		}
	}
	if err != nil {
		return report.Refuse(report.BadRoot, "git: where ", res.Registration.Path, " lies cannot be known: ", err.Error())
	}
	return nil
}

// writableRuleAbove is the path of the writable directory rule that the directory open at fd is, or lies
// beneath (the nearest: the longest such path), or "" for none. It compares the identities up fd's ".." chain
// (ancestorIDs) with the rules' by device and inode, so a rule is found under any name (a bind mount) that shows
// the directory beneath it. The descriptors compared lie in one mount namespace (open's root).
func (p *plan) writableRuleAbove(fd int) (string, error) {
	ids, err := ancestorIDs(fd)
	if err != nil {
		return "", err
	}
	found := ""
	for _, r := range p.rules {
		var st unix.Stat_t
		if r.Dir && len(r.Path) > len(found) && unix.Fstat(r.FD, &st) == nil && ids[[2]uint64{st.Dev, st.Ino}] {
			found = r.Path
		}
	}
	return found, nil
}

// ancestorIDs is the identity (st_dev, st_ino) of the directory open at fd and of each directory up its ".."
// chain, to the top of its mount namespace (whose ".." is itself). On an error it returns what it reached too.
func ancestorIDs(fd int) (map[[2]uint64]bool, error) {
	ids := map[[2]uint64]bool{}
	cur, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	for depth := 0; err == nil; depth++ {
		var st unix.Stat_t
		if err = unix.Fstat(cur, &st); err != nil || ids[[2]uint64{st.Dev, st.Ino}] {
			break
		}
		if depth == unix.PathMax/2 {
			err = unix.ELOOP
			break
		}
		ids[[2]uint64{st.Dev, st.Ino}] = true
		var up int
		up, err = unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		cur = up
	}
	if cur >= 0 {
		unix.Close(cur)
	}
	return ids, err
}

// kernelTrees hold kernel and device state, not files: no user-given root may be one of them or inside one.
var kernelTrees = []string{"/proc", "/sys", "/dev"}

// userRootAllowed refuses a user-given root in a kernel tree, except a character device given with --allow
// (say /dev/kvm), and a worktree that is not a directory.
func userRootAllowed(r *pathfd.Root, worktree bool) error {
	if worktree && r.Kind != pathfd.Dir {
		return msg.Err(pathfd.ErrBadPath, ": ", r.Path, " is not a directory")
	}
	for _, t := range kernelTrees {
		if (r.Path == t || strings.HasPrefix(r.Path, t+"/")) && !(r.Kind == pathfd.CharDev && !worktree) {
			return msg.Err(pathfd.ErrBadPath, ": ", r.Path, " is in ", t, ", which holds kernel state, not files")
		}
	}
	return nil
}

// warnings says what an ABI and the metadata mechanism leave undone or change; under bwrap, what that backend
// does instead of Landlock. WSL2's interop adds its own (interopNotes).
func warnings(abi int, metadata Metadata, bwrap bool) []string {
	if bwrap {
		return []string{"backend bwrap: bubblewrap's read-only mounts stop writes outside the writable roots " +
			"(EROFS, where Landlock says EACCES), in new PID and IPC namespaces; no Landlock domain, so a FIFO " +
			"outside can be opened for writing, and abstract and pathname unix sockets outside stay reachable"}
	}
	var w []string
	switch metadata {
	case MetadataSeccomp:
		w = append(w, "metadata (chmod, chown, utimes, xattrs, inode flags) cannot be changed anywhere, "+
			"including inside the writable roots: Landlock has no right for it, so seccomp denies it (EPERM)")
	case MetadataSupervisor:
		w = append(w, "no mount layer: confine stays as the command's supervisor and makes its chmod, chown, "+
			"utimes and xattr changes beneath the writable roots (EPERM elsewhere); inode flags (chattr) are "+
			"denied everywhere, and setxattrat, removexattrat and file_setattr answer ENOSYS")
	}
	if metadata != MetadataMountLayer {
		if abi < 3 {
			w = append(w, msg.Str("ABI ", abi, ": truncate(2) by path is denied everywhere by seccomp (TRUNCATE needs ABI 3, kernel ", landlock.FirstKernel(3), ")"))
		}
	}
	if abi < 2 {
		w = append(w, msg.Str("ABI ", abi, ": cross-directory rename and link inside the worktree will fail with EXDEV (REFER needs ABI 2, kernel ", landlock.FirstKernel(2), ")"))
	}
	if abi < 5 {
		w = append(w, msg.Str("ABI ", abi, ": ioctls on devices opened before confinement are not handled (IOCTL_DEV needs ABI 5, kernel ", landlock.FirstKernel(5), ")"))
	}
	return w
}

// tempVars are the variables tools take a temporary directory from: TMPDIR (POSIX; mktemp, Python's tempfile,
// Go's os.TempDir), TMP and TEMP (Python's tempfile, many Windows-minded tools), GOTMPDIR (the go command's
// work directories) and XDG_RUNTIME_DIR (sockets and runtime files, XDG Base Directory spec).
var tempVars = []string{"TMPDIR", "TMP", "TEMP", "GOTMPDIR", "XDG_RUNTIME_DIR"}

// tempOutside says which of tempVars in env name a directory outside the writable directories of rules
// (compared after resolving symlinks where the directory exists), as one warning, or "" if none does: files
// made there fail with EROFS or EACCES, which a tool rarely explains.
func tempOutside(env []string, rules []landlock.Rule) string {
	var bad []string
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" || !isTempVar(name) {
			continue
		}
		dir, err := absolute(value)
		if err != nil {
			continue
		}
		if real := pathfd.Resolved(dir); real != "" {
			dir = real
		}
		inside := false
		for _, r := range rules {
			if r.Dir && (dir == r.Path || strings.HasPrefix(dir, r.Path+"/")) {
				inside = true
			}
		}
		if !inside {
			bad = append(bad, name+"="+value)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return strings.Join(bad, ", ") + ": outside the writable set, so temporary files made there fail " +
		"(EROFS or EACCES); point it at /tmp or inside the worktree"
}

func isTempVar(name string) bool {
	for _, v := range tempVars {
		if name == v {
			return true
		}
	}
	return false
}

// environ is the command's environment. dropInterop (WSL2, without --allow-interop) drops WSL_INTEROP, the
// socket through which a process asks the Windows side to start .exe files.
func environ(dropInterop bool) []string {
	env := os.Environ()
	if !dropInterop {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "WSL_INTEROP=") {
			out = append(out, kv)
		}
	}
	return out
}

// lookPath resolves name as a shell would: a name with a slash is that file; otherwise the first executable
// regular file in $PATH (default /usr/local/bin:/usr/bin:/bin). It returns an *ExecError with 127 when
// nothing is found, and 126 when only non-executable candidates exist.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		abs, err := absolute(name)
		if err != nil {
			return "", &ExecError{Status: ExitCannotExec, Err: err}
		}
		var st unix.Stat_t
		switch {
		case unix.Stat(abs, &st) != nil:
			return "", &ExecError{Status: ExitNotFound, Err: msg.Err(name, ": no such file")}
		case st.Mode&unix.S_IFMT == unix.S_IFDIR || unix.Access(abs, unix.X_OK) != nil:
			return "", &ExecError{Status: ExitCannotExec, Err: msg.Err(name, ": permission denied")}
		}
		return abs, nil
	}
	dirs := os.Getenv("PATH")
	if dirs == "" {
		dirs = "/usr/local/bin:/usr/bin:/bin"
	}
	denied := false
	for _, dir := range filepath.SplitList(dirs) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if unix.Access(p, unix.X_OK) != nil {
			denied = true
			continue
		}
		if abs, err := absolute(p); err == nil {
			p = abs
		}
		return p, nil
	}
	if denied {
		return "", &ExecError{Status: ExitCannotExec, Err: msg.Err(name, ": permission denied")}
	}
	return "", &ExecError{Status: ExitNotFound, Err: msg.Err(name, ": command not found")}
}

// absolute is filepath.Abs with the working directory from getcwd(2) itself.
func absolute(path string) (string, error) {
	if filepath.IsAbs(path) {
		return filepath.Clean(path), nil
	}
	wd, err := unix.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Join(wd, path), nil
}
