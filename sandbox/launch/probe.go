package launch

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/gitdir"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
)

// Probe answers `confine probe`: what this kernel offers and what `--backend auto` would do. It asks the host
// beforehand what Run learns by trying (the layer's namespaces and mounts, a seccomp listener, a working bwrap),
// then makes Run's decision (Decide) for a run with a report and prints its strategies and the first one's guard.
// It is asked afresh on every call, so no cached verdict can ever make a command run less confined.
func Probe(f Facts, s System) report.Probe {
	p := report.Probe{Schema: report.ProbeSchema, Kernel: f.Release, Arch: f.Machine, WSL: int(f.WSL),
		Handled: []string{}, Seccomp: []string{}, Warnings: []string{}, Strategies: []string{}}
	st, err := landlock.Query(s)
	switch {
	case err != nil:
		p.Landlock, p.AutoBackend, p.AutoReason = "unknown", "none", err.Error()
		return p
	case f.WSL == WSL1:
		p.Landlock, p.AutoBackend, p.AutoReason = string(st.State), "none", "WSL1 has no Landlock: confine refuses"
		return p
	case f.WSL == WSL2:
		p.WSLInterop = string(f.Interop)
	}
	p.Landlock, p.ABI, p.Errata = string(st.State), st.ABI, st.Errata
	h := hostShape(f, st)
	if st.State != landlock.Available {
		p.Errno = st.Errno.Error()
		if name := errnoName(st.Errno); name != "" {
			p.Errno = name
		}
		p.AutoBackend = "none"
		path, fd, err := trustedBwrap(f)
		if err == nil {
			err = probeBwrap(path, fd)
			unix.Close(fd)
		}
		if err != nil {
			p.AutoReason = msg.Str("Landlock is ", string(st.State), " (", p.Errno, "), and bwrap cannot be used: ", err, ": confine refuses")
			return p
		}
		h.Bwrap = path
		d := Decide(probeConfig, h)
		p.AutoBackend, p.Bwrap = "bwrap", path
		p.AutoReason = msg.Str("Landlock is ", string(st.State), " (", p.Errno, "); ", path, " ran a test command in which / was read-only and a write outside failed with EROFS")
		probeGuard(&p, &d, d.Guard(BwrapChild))
		if d.Refusal != nil { // WSL2's interop, which bwrap's layer cannot close
			p.AutoBackend, p.AutoReason = "none", interopProbeRefusal+interopBwrap
		}
		return p
	}
	p.AutoBackend = "landlock"
	if path, fd, err := trustedBwrap(f); err == nil {
		unix.Close(fd)
		p.Bwrap = path // what --backend bwrap would run (not tried here: auto does not need it)
	}
	p.AutoReason = msg.Str("Landlock ABI ", st.ABI, " is available")
	p.Handled = landlock.HandledWrites(st.ABI).Names()
	if h.Layer = s.LayerAvailable(false); h.Layer == nil && st.ABI < 6 {
		h.PIDNS = s.LayerAvailable(true) // Run's first try below ABI 6
	} else if h.Layer != nil {
		p.MetadataWhy = h.Layer.Error()
		if h.Listener = s.SupervisorAvailable(); h.Listener != nil {
			p.MetadataWhy += "; " + h.Listener.Error()
		}
		p.Warnings = append(p.Warnings, p.MetadataWhy)
	}
	d := Decide(probeConfig, h)
	g := d.Guard(d.Order[0])
	probeGuard(&p, &d, g)
	// A run without --allow-interop: WSL2's interop is closed in the mount layer, refused without one.
	if g.LayerRefusal != nil {
		p.AutoBackend, p.AutoReason = "none", interopProbeRefusal+p.MetadataWhy
	} else if d.CloseInterop {
		p.AutoReason += "; WSL2 interop is closed inside the sandbox (channel wsl-interop)"
	}
	return p
}

// probeConfig is the run probe answers for: --backend auto, with a report (so every channel is worked out),
// without --tty, --strict or --allow-interop.
var probeConfig = Config{Mode: WorkspaceWrite, Backend: Auto, ReportFD: 1}

// probeGuard fills probe's strategies, metadata, seccomp, channels and warnings from the decision and its first
// strategy's guard g.
func probeGuard(p *report.Probe, d *Decision, g Guard) {
	for _, k := range d.Order {
		p.Strategies = append(p.Strategies, string(k))
	}
	p.Metadata, p.Seccomp, p.Channels = string(g.Metadata), g.Policy.Denied(), g.Channels
	p.Warnings = append(p.Warnings, g.Warnings...)
	if g.Interop != "" {
		p.Warnings = append(p.Warnings, g.Interop)
	}
}

// errnoName is the uapi name of the errnos Landlock answers with.
func errnoName(e unix.Errno) string {
	switch e {
	case unix.ENOSYS:
		return "ENOSYS"
	case unix.EOPNOTSUPP:
		return "EOPNOTSUPP"
	}
	return ""
}

// trustedBwrap is the bwrap --backend bwrap would run here, found (findBwrap) and opened (openBwrap) against
// the writable roots of every launch (defaultRoots), by path and by identity: a bwrap beneath one could have been
// written by any earlier confined command, and probe has no worktree to hold it to (the second attack review
// had probe run, as root, a bwrap a confined command had put in /tmp; the third, one in a bind mount of /tmp).
func trustedBwrap(f Facts) (path string, fd int, err error) {
	if path, err = findBwrap(f); err != nil {
		return "", -1, err
	}
	var rules []landlock.Rule
	for _, d := range defaultRoots {
		r, _ := unix.Open(d, unix.O_PATH|unix.O_CLOEXEC, 0) // -1 where missing: then by path only
		rules = append(rules, landlock.Rule{Path: d, FD: r, Dir: d != "/dev/null"})
	}
	fd, err = openBwrap(path, rules, f.EUID != 0)
	for _, r := range rules {
		unix.Close(r.FD)
	}
	return path, fd, err
}

// GitWarnings are the warnings a launch with --worktree dir would give about its git directories (package gitdir):
// for a linked worktree, what git cannot do there under confine and why (gitdir.LinkedLimits); for a pointer a
// launch would refuse, that refusal. `confine probe --worktree DIR` prints them.
func GitWarnings(dir string) []string {
	wt, err := pathfd.Open(dir)
	if err != nil {
		return []string{msg.Str("git: --worktree ", dir, ": ", err, ": a launch there is refused")}
	}
	defer wt.Close()
	res, err := gitdir.Discover(pathfd.Here, wt, os.Getenv("HOME"))
	if err != nil {
		return []string{msg.Str("git: ", err, ": a launch there is refused (--no-git skips git discovery)")}
	}
	defer res.Close()
	if res.Separate != nil {
		return append(res.Notes, gitdir.SeparateNote(res.Separate.Path, wt.Path+"/.git"))
	}
	return res.Notes
}
