// Package cli parses confine's command line strictly and maps outcomes to exit statuses. It holds no
// confinement logic: that is package launch.
package cli

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/launch"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/report"
)

// Version is the launcher's version, stamped at link time (-X or Bazel's x_defs).
var Version = "dev"

// Usage is printed by --help.
const Usage = `usage: confine [--worktree DIR] [--allow PATH]... [--mode workspace-write|read-only]
               [--backend auto|landlock|bwrap] [--report-fd N] [--tty] [--strict] [--no-git] -- CMD [ARGS...]
       confine probe [--json]
       confine version
Runs CMD so that it can write only under DIR, the git directories of a linked worktree at DIR (not with
--no-git), the --allow roots, /tmp and /dev/null (read-only mode: /tmp and /dev/null only). Exit status 125:
confine refused or failed and nothing ran; 126: CMD could not be executed; 127: CMD was not found; otherwise
CMD's own status. --strict refuses (125) if any side channel stays open on this host; confine probe lists them.
`

// Kind is what an invocation asks for.
type Kind int

// The kinds of invocation.
const (
	Run Kind = iota
	Probe
	ProbeJSON
	PrintVersion
	Help
)

func usageErr(parts ...any) error { return report.Refuse(report.Usage, parts...) }

// Parse parses args (without the program name). On error the returned Config still carries a valid
// --report-fd if one appears anywhere before --, so that the refusal can be reported whatever the flag order.
// Errors are *report.Refusal with reason usage, bad-root or bad-report-fd, one line each.
func Parse(args []string) (Kind, launch.Config, error) {
	kind, cfg, err := parse(args)
	if err != nil && cfg.ReportFD < 0 {
		cfg.ReportFD = scanReportFD(args)
	}
	return kind, cfg, err
}

// scanReportFD finds a well-formed --report-fd among the flags (before --), or returns -1.
func scanReportFD(args []string) int {
	for i, arg := range args {
		if arg == "--" {
			break
		}
		value, ok := strings.CutPrefix(arg, "--report-fd=")
		if !ok && arg == "--report-fd" && i+1 < len(args) {
			value, ok = args[i+1], true
		}
		var cfg launch.Config
		if ok && set(&cfg, "report-fd", value) == nil {
			return cfg.ReportFD
		}
	}
	return -1
}

func parse(args []string) (Kind, launch.Config, error) {
	cfg := launch.Config{ReportFD: -1}
	if len(args) == 0 {
		return Run, cfg, usageErr("missing -- and a command (see confine --help)")
	}
	switch args[0] {
	case "--help", "-h", "help":
		if len(args) > 1 {
			return Help, cfg, usageErr(args[0], " takes no arguments")
		}
		return Help, cfg, nil
	case "version", "--version":
		if len(args) > 1 {
			return PrintVersion, cfg, usageErr(args[0], " takes no arguments")
		}
		return PrintVersion, cfg, nil
	case "probe":
		switch {
		case len(args) == 1:
			return Probe, cfg, nil
		case len(args) == 2 && args[1] == "--json":
			return ProbeJSON, cfg, nil
		}
		return Probe, cfg, usageErr("probe takes only --json, got ", msg.Quoted(strings.Join(args[1:], " ")))
	}
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			cfg.Argv = args[i+1:]
			return Run, cfg, finish(&cfg, seen)
		}
		if !strings.HasPrefix(arg, "--") || len(arg) == 2 {
			return Run, cfg, usageErr("unexpected argument ", msg.Quoted(arg), " before -- (flags are --name, the command follows --)")
		}
		name, value, hasValue := strings.Cut(arg[2:], "=")
		if name == "tty" || name == "strict" || name == "no-git" {
			if hasValue {
				return Run, cfg, usageErr("--", name, " takes no value")
			}
			if seen[name] {
				return Run, cfg, usageErr("--", name, " given twice")
			}
			seen[name] = true
			switch name {
			case "tty":
				cfg.TTY = true
			case "strict":
				cfg.Strict = true
			default:
				cfg.NoGit = true
			}
			continue
		}
		switch name {
		case "worktree", "allow", "mode", "backend", "report-fd":
		default:
			return Run, cfg, usageErr("unknown flag --", name)
		}
		if !hasValue {
			if i+1 >= len(args) || args[i+1] == "--" || strings.HasPrefix(args[i+1], "-") {
				return Run, cfg, usageErr("--", name, " needs a value")
			}
			i++
			value = args[i]
		}
		if value == "" {
			return Run, cfg, usageErr("--", name, " needs a non-empty value")
		}
		if seen[name] && name != "allow" {
			return Run, cfg, usageErr("--", name, " given twice")
		}
		seen[name] = true
		if err := set(&cfg, name, value); err != nil {
			return Run, cfg, err
		}
	}
	return Run, cfg, usageErr("missing -- before the command")
}

func set(cfg *launch.Config, name, value string) error {
	switch name {
	case "worktree":
		if err := pathfd.Check(value); err != nil {
			return report.Refuse(report.BadRoot, "--worktree: ", err.Error())
		}
		cfg.Worktree = value
	case "allow":
		if err := pathfd.Check(value); err != nil {
			return report.Refuse(report.BadRoot, "--allow: ", err.Error())
		}
		for _, a := range cfg.Allow {
			if a == value {
				return usageErr("--allow ", value, " given twice")
			}
		}
		cfg.Allow = append(cfg.Allow, value)
	case "mode":
		switch m := launch.Mode(value); m {
		case launch.WorkspaceWrite, launch.ReadOnly:
			cfg.Mode = m
		default:
			return usageErr("--mode must be workspace-write or read-only, got ", msg.Quoted(value))
		}
	case "backend":
		switch b := launch.Backend(value); b {
		case launch.Auto, launch.Landlock, launch.Bwrap:
			cfg.Backend = b
		default:
			return usageErr("--backend must be auto, landlock or bwrap, got ", msg.Quoted(value))
		}
	case "report-fd":
		fd, err := strconv.Atoi(value)
		if err != nil || fd < 3 || fd > 1<<20 || strconv.Itoa(fd) != value {
			return report.Refuse(report.BadReportFD, "--report-fd must be a descriptor number >= 3, got ", msg.Quoted(value))
		}
		cfg.ReportFD = fd
	}
	return nil
}

// finish applies defaults and checks the flags against each other.
func finish(cfg *launch.Config, seen map[string]bool) error {
	if cfg.Mode == "" {
		cfg.Mode = launch.WorkspaceWrite
	}
	if cfg.Backend == "" {
		cfg.Backend = launch.Auto
	}
	switch {
	case len(cfg.Argv) == 0:
		return usageErr("missing command after --")
	case cfg.Argv[0] == "":
		return usageErr("empty command after --")
	case cfg.Mode == launch.WorkspaceWrite && cfg.Worktree == "":
		return usageErr("--worktree is required in workspace-write mode")
	case cfg.Mode == launch.ReadOnly && len(cfg.Allow) > 0:
		return usageErr("--allow conflicts with --mode read-only")
	}
	for _, a := range cfg.Allow {
		if a == cfg.Worktree {
			return usageErr("--allow ", a, " repeats --worktree")
		}
	}
	return nil
}

// Main runs confine with args (without the program name) on a host described by f, acting through s, and returns
// the exit status. A layered child (launch.IsLayerChild) parses nothing: it runs the plan it was handed.
func Main(args []string, f launch.Facts, s launch.System, stdout, stderr io.Writer) int {
	if launch.IsLayerProbe() {
		return launch.LayerProbe()
	}
	if launch.IsLayerChild() {
		if err := launch.RunChild(s); !errors.Is(err, launch.ErrToldParent) {
			fail(stderr, err)
		}
		return launch.ExitRefused
	}
	kind, cfg, err := Parse(args)
	if err != nil {
		fail(stderr, err)
		if cfg.ReportFD >= 0 && report.ReasonOf(err) != report.BadReportFD {
			rep := report.New(string(cfg.Mode))
			rep.Refused(err)
			if _, werr := unix.Write(cfg.ReportFD, rep.Marshal()); werr == nil {
				unix.Close(cfg.ReportFD)
			}
		}
		return launch.ExitRefused
	}
	switch kind {
	case Help:
		io.WriteString(stdout, Usage)
		return 0
	case PrintVersion:
		io.WriteString(stdout, "confine "+Version+"\n")
		return 0
	case Probe, ProbeJSON:
		p := launch.Probe(f, s)
		if kind == ProbeJSON {
			stdout.Write(append(p.Marshal(), '\n'))
		} else {
			printProbe(stdout, p)
		}
		return 0
	}
	err = launch.Run(cfg, f, s)
	var child *launch.ChildExit
	if errors.As(err, &child) {
		return mirror(child.Status)
	}
	fail(stderr, err)
	var ee *launch.ExecError
	if errors.As(err, &ee) {
		return ee.Status
	}
	return launch.ExitRefused
}

// mirror ends this process the way the layered child ended: with its exit status, or by its signal, so a
// caller sees the same signal death; else (a signal whose default is not to die) 128+N, as a shell would.
func mirror(ws syscall.WaitStatus) int {
	if !ws.Signaled() {
		return ws.ExitStatus()
	}
	// The command may have dumped core; this unconfined process must not, in a working directory outside.
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 1, Max: 1}) // 1, not 0: no core_pattern pipe either
	launch.DieBy(ws.Signal())
	return 128 + int(ws.Signal())
}

// fail prints err as one line prefixed "confine: ".
func fail(w io.Writer, err error) {
	io.WriteString(w, "confine: "+report.OneLine(err.Error())+"\n")
}

func printProbe(w io.Writer, p report.Probe) {
	ll := p.Landlock
	switch {
	case p.ABI > 0:
		ll = msg.Str(ll, ", ABI ", p.ABI, ", errata ", msg.Hex(p.Errata))
	case p.Errno != "":
		ll = msg.Str(ll, " (", p.Errno, ")")
	}
	b := []byte(msg.Str("kernel:   ", p.Kernel, " (", p.Arch, ")\nlandlock: ", ll, "\nauto:     ", p.AutoBackend, ": ",
		p.AutoReason, "\nwsl:      ", p.WSL, "\n"))
	if p.MetadataWhy != "" {
		b = append(b, "metadata: "+p.Metadata+" ("+p.MetadataWhy+")\n"...)
	} else if p.Metadata != "" {
		b = append(b, "metadata: "+p.Metadata+"\n"...)
	}
	if len(p.Handled) > 0 {
		b = append(b, "handled:  "+strings.Join(p.Handled, " ")+"\nseccomp:  "+strings.Join(p.Seccomp, " ")+"\n"...)
	}
	for _, name := range report.SortedNames(p.Channels) {
		c := p.Channels[name]
		b = append(b, "channel:  "+name+": "+c.Status+" ("+c.How+")\n"...)
	}
	for _, warn := range p.Warnings {
		b = append(b, "warning:  "+warn+"\n"...)
	}
	w.Write(b)
}
