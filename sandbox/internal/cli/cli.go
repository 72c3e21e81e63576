// Package cli parses confine's command line strictly and maps outcomes to exit statuses. It holds no
// confinement logic: that is package launch.
package cli

import (
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/launch"
	"github.com/confine-dev/confine/sandbox/pathfd"
	"github.com/confine-dev/confine/sandbox/profile"
	"github.com/confine-dev/confine/sandbox/report"
)

// Version is the launcher's version, stamped at link time (-X or Bazel's x_defs).
var Version = "dev"

// Usage is printed by --help.
const Usage = `usage: confine [--worktree DIR] [--allow PATH]... [--allow-socket PATH]... [--protect PATH]... [--profile NAME[,NAME]]... [--config FILE]
               [--mode workspace-write|read-only] [--backend auto|landlock|bwrap] [--report-fd N] [--tty]
               [--strict] [--no-git] [--allow-interop] -- CMD [ARGS...]
       confine probe [--json] [--worktree DIR]
       confine version
Runs CMD so that it can write only under DIR, the git directories of a linked worktree at DIR (not with
--no-git), the --allow roots, /tmp and /dev/null (read-only mode: /tmp and /dev/null only). Exit status 125:
confine refused or failed and nothing ran; 126: CMD could not be executed; 127: CMD was not found; otherwise
CMD's own status. --strict refuses (125) if any side channel stays open on this host; confine probe lists them.
--profile grants a tool's cache directories: npm, pip, cargo, go, gradle, maven, yarn, pnpm, git-global (git's
global config: code later git runs execute), or toolchains for all but git-global. --config FILE reads flags from FILE, one per line (# comments); the command line wins.
--allow-socket PATH lets CMD connect to the pathname unix socket PATH (an ssh-agent's or gpg-agent's), which
Landlock ABI 9 (Linux 7.1) and later deny outside the writable roots; it grants no write.
--protect PATH keeps PATH, an existing file or directory beneath a writable root (.vscode, .envrc), read-only
(a read-only bind mount: refused where confine can build no mount layer).
--tty lets CMD open terminals (/dev/tty, new ptys) and use job control (bash -i, stty cols N); without it the
caller's terminal works through descriptors 0 to 2, but resizing it or taking its foreground fails (EPERM).
On WSL2, Windows interop is closed inside the sandbox; --allow-interop leaves it open (reported).
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

// usageErr is a usage refusal.
func usageErr(parts ...any) error { return report.Refuse(report.Usage, parts...) }

// Parse parses args (without the program name). On error the returned Config still carries a valid
// --report-fd if one appears anywhere before --, so that the refusal can be reported whatever the flag order.
// Errors are *report.Refusal with reason usage, bad-root or bad-report-fd, one line each.
// Profiles are resolved from the environment but their directories not yet prepared (see Main): cfg.Allow
// lacks them.
func Parse(args []string) (Kind, launch.Config, error) {
	kind, in, err := parse(args)
	return kind, in.cfg, err
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

func parse(args []string) (Kind, *invocation, error) {
	kind, in, err := parseArgs(args)
	if err != nil && in.cfg.ReportFD < 0 {
		in.cfg.ReportFD = scanReportFD(args)
	}
	return kind, in, err
}

func parseArgs(args []string) (Kind, *invocation, error) {
	in := &invocation{cfg: launch.Config{ReportFD: -1}, seen: map[string]bool{}}
	if len(args) == 0 {
		return Run, in, usageErr("missing -- and a command (see confine --help)")
	}
	switch args[0] {
	case "--help", "-h", "help":
		if len(args) > 1 {
			return Help, in, usageErr(args[0], " takes no arguments")
		}
		return Help, in, nil
	case "version", "--version":
		if len(args) > 1 {
			return PrintVersion, in, usageErr(args[0], " takes no arguments")
		}
		return PrintVersion, in, nil
	case "probe":
		kind := Probe
		for i := 1; i < len(args); i++ {
			switch a := args[i]; {
			case len(args) == 2 && (a == "--help" || a == "-h"):
				return Help, in, nil
			case a == "--json" && kind == Probe:
				kind = ProbeJSON
			case a == "--worktree" && i+1 < len(args) && in.cfg.Worktree == "":
				i++
				in.cfg.Worktree = args[i]
			case strings.HasPrefix(a, "--worktree=") && in.cfg.Worktree == "":
				in.cfg.Worktree = strings.TrimPrefix(a, "--worktree=")
			default:
				return Probe, in, usageErr("probe takes only --json and --worktree DIR, got ", msg.Quoted(strings.Join(args[1:], " ")))
			}
		}
		if in.cfg.Worktree != "" && !strings.HasPrefix(in.cfg.Worktree, "/") {
			return kind, in, usageErr("probe --worktree needs an absolute path, got ", msg.Quoted(in.cfg.Worktree))
		}
		return kind, in, nil
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			in.cfg.Argv = args[i+1:]
			if in.config != "" {
				if err := in.readConfig(); err != nil {
					return Run, in, err
				}
			}
			return Run, in, in.finish()
		}
		if !strings.HasPrefix(arg, "--") || len(arg) == 2 {
			return Run, in, usageErr("unexpected argument ", msg.Quoted(arg), " before -- (flags are --name, the command follows --)")
		}
		name, value, hasValue := strings.Cut(arg[2:], "=")
		if !hasValue && !isSwitch(name) && i+1 < len(args) && args[i+1] != "--" && !strings.HasPrefix(args[i+1], "-") {
			i++
			value, hasValue = args[i], true
		}
		if err := in.flag(name, value, hasValue, false); err != nil {
			return Run, in, err
		}
	}
	return Run, in, usageErr("missing -- before the command")
}

// invocation is a parse in progress: the command line's flags, then the --config file's.
type invocation struct {
	cfg      launch.Config
	seen     map[string]bool // flags given, for "given twice"
	fromCLI  map[string]bool // single-valued flags the command line gave: the file's are ignored
	config   string          // --config FILE
	profiles []string        // --profile names, each once
	grants   []profile.Grant // their directories, resolved by finish, prepared by Main
}

// adds says whether flag name may be given more than once, each adding to the last.
func adds(name string) bool {
	return name == "allow" || name == "allow-socket" || name == "protect" || name == "profile"
}

func isSwitch(name string) bool {
	return name == "tty" || name == "strict" || name == "no-git" || name == "allow-interop"
}

// flag applies one --name[=value]; fromFile: a line of the --config file, where the command line wins.
func (in *invocation) flag(name, value string, hasValue, fromFile bool) error {
	if isSwitch(name) {
		if hasValue {
			return usageErr("--", name, " takes no value")
		}
		if in.seen[name] && !fromFile {
			return usageErr("--", name, " given twice")
		}
		in.seen[name] = true
		switch name {
		case "tty":
			in.cfg.TTY = true
		case "strict":
			in.cfg.Strict = true
		case "allow-interop":
			in.cfg.AllowInterop = true
		default:
			in.cfg.NoGit = true
		}
		return nil
	}
	switch name {
	case "worktree", "allow", "allow-socket", "protect", "mode", "backend", "report-fd", "profile", "config":
	default:
		return usageErr("unknown flag --", name)
	}
	switch {
	case !hasValue:
		return usageErr("--", name, " needs a value")
	case value == "":
		return usageErr("--", name, " needs a non-empty value")
	case fromFile && name == "config":
		return usageErr("--config cannot be given in a --config file")
	case fromFile && in.fromCLI[name] && !adds(name):
		return nil // the command line overrides the file; --allow, --allow-socket, --protect and --profile add to it
	case in.seen[name] && !adds(name):
		return usageErr("--", name, " given twice")
	}
	in.seen[name] = true
	switch name {
	case "config":
		in.config = value
	case "profile":
		for _, p := range strings.Split(value, ",") {
			if !profile.Known(p) {
				return usageErr("--profile: unknown profile ", msg.Quoted(p), " (known: ", profile.Names, ")")
			}
			if !slices.Contains(in.profiles, p) {
				in.profiles = append(in.profiles, p)
			}
		}
	case "allow", "allow-socket", "protect":
		list := in.cfg.Allow
		switch name {
		case "allow-socket":
			list = in.cfg.AllowSocket
		case "protect":
			list = in.cfg.Protect
		}
		if fromFile && slices.Contains(list, value) {
			return nil // the command line gave it already
		}
		return set(&in.cfg, name, value)
	default:
		return set(&in.cfg, name, value)
	}
	return nil
}

// maxConfig bounds the --config file: it is a list of flags.
const maxConfig = 64 << 10

// readConfig applies the --config file's flags under the command line's. It is read from the path given,
// never looked for: a file inside a writable root could be rewritten by the command it confines.
func (in *invocation) readConfig() error {
	data, real, err := readConfigFile(in.config)
	if err != nil {
		return usageErr("--config ", in.config, ": ", err)
	}
	in.fromCLI = map[string]bool{}
	for name := range in.seen {
		in.fromCLI[name] = true
	}
	err = ParseConfig(data, func(name, value string, hasValue bool) error { return in.flag(name, value, hasValue, true) })
	if err != nil {
		return report.Refuse(report.ReasonOf(err), "--config ", in.config, ":", err.Error())
	}
	in.cfg.ConfigFile = real // launch.Run refuses it beneath a writable rule: the command could rewrite it
	return nil
}

// readConfigFile reads at most maxConfig+1 bytes of the regular file at path (os.ReadFile links in sync.Map: 10
// KB), not through a symlink at its end, and returns its kernel name (/proc/self/fd, which resolves the symlinks
// on the way). A file with more than one hard link is refused: another of its names could be beneath a writable
// root, where the command could rewrite it.
func readConfigFile(path string) ([]byte, string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err == unix.ELOOP {
		return nil, "", errors.New("is a symlink: name the file itself")
	}
	if err != nil {
		return nil, "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, "", err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, "", errors.New("not a regular file")
	case st.Nlink > 1:
		return nil, "", errors.New("has other hard links, one of which could be beneath a writable root: use a file of its own")
	}
	real, err := pathfd.KernelName(fd)
	if err != nil || !strings.HasPrefix(real, "/") {
		return nil, "", errors.New("its path cannot be known (is /proc mounted?)")
	}
	// The kernel names a file reached through another mount namespace (/proc/PID/root/...) in that namespace's
	// terms, which the checks of the writable roots cannot place here (the attack review's route).
	var here unix.Stat_t
	if unix.Stat(real, &here) != nil || here.Dev != st.Dev || here.Ino != st.Ino {
		return nil, "", errors.New("is not at " + real + " in this mount namespace (reached through /proc/PID/root?): name it here")
	}
	data, err := io.ReadAll(io.LimitReader(fdReader(fd), maxConfig+1))
	if err == nil && len(data) > maxConfig {
		err = errors.New("longer than 64 KiB")
	}
	return data, real, err
}

type fdReader int

func (f fdReader) Read(b []byte) (int, error) {
	n, err := unix.Read(int(f), b)
	if n == 0 && err == nil {
		return 0, io.EOF
	}
	return max(n, 0), err
}

// ParseConfig reads a --config file: one flag per line as on the command line (--name, --name value or
// --name=value; the value is the rest of the line, spaces kept, trailing blanks trimmed), blank lines and lines
// starting with # ignored. Each flag goes to apply. An error (a line that is not a flag, or apply's) is a
// *report.Refusal starting with the line number: "3: unknown flag --x".
func ParseConfig(data []byte, apply func(name, value string, hasValue bool) error) error {
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		rest, ok := strings.CutPrefix(line, "--")
		cut := strings.IndexAny(rest, "= \t")
		name, value, hasValue := rest, "", cut >= 0
		if hasValue {
			name, value = rest[:cut], strings.TrimSpace(rest[cut+1:])
		}
		if !ok || name == "" || name[0] == '-' {
			return usageErr(i+1, ": expected --flag [value], got ", msg.Quoted(line))
		}
		if err := apply(name, value, hasValue); err != nil {
			return report.Refuse(report.ReasonOf(err), i+1, ": ", err.Error())
		}
	}
	return nil
}

func set(cfg *launch.Config, name, value string) error {
	if name == "worktree" || name == "allow" || name == "allow-socket" || name == "protect" {
		if err := pathfd.Check(value); err != nil {
			return report.Refuse(report.BadRoot, "--", name, ": ", err.Error())
		}
	}
	switch name {
	case "worktree":
		cfg.Worktree = value
	case "allow":
		for _, a := range cfg.Allow {
			if a == value {
				return usageErr("--allow ", value, " given twice")
			}
		}
		cfg.Allow = append(cfg.Allow, value)
	case "allow-socket":
		if slices.Contains(cfg.AllowSocket, value) {
			return usageErr("--allow-socket ", value, " given twice")
		}
		cfg.AllowSocket = append(cfg.AllowSocket, value)
	case "protect":
		if slices.Contains(cfg.Protect, value) {
			return usageErr("--protect ", value, " given twice")
		}
		cfg.Protect = append(cfg.Protect, value)
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
		if err != nil || fd < 3 || fd > 1<<20 || msg.Itoa(fd) != value {
			return report.Refuse(report.BadReportFD, "--report-fd must be a descriptor number >= 3, got ", msg.Quoted(value))
		}
		cfg.ReportFD = fd
	}
	return nil
}

// finish applies defaults, checks the flags against each other and resolves the profiles (from the
// environment only: Main prepares their directories).
func (in *invocation) finish() error {
	cfg := &in.cfg
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
	if len(in.profiles) == 0 {
		return nil
	}
	if cfg.Mode == launch.ReadOnly {
		return usageErr("--profile conflicts with --mode read-only")
	}
	var err error
	in.grants, err = profile.Resolve(in.profiles, getenv)
	return err
}

// getenv is the environment profiles are read from (tests replace it).
var getenv = os.Getenv

// prepare makes the profiles' directories (profile.Prepare) and adds them to cfg.Allow, each with its reason,
// except one already writable as the worktree or an --allow root.
func (in *invocation) prepare() error {
	grants, notes, err := profile.Prepare(in.grants, getenv)
	if err != nil {
		return err
	}
	cfg := &in.cfg
	cfg.Why, cfg.Notes = map[string]string{}, notes
	for _, g := range grants {
		if g.Path != cfg.Worktree && !slices.Contains(cfg.Allow, g.Path) {
			cfg.Allow = append(cfg.Allow, g.Path)
			cfg.Why[g.Path] = g.Reason
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
	if launch.IsBwrapProbe() {
		return launch.BwrapProbe()
	}
	if launch.IsLayerChild() {
		if err := launch.RunChild(s); !errors.Is(err, launch.ErrToldParent) {
			fail(stderr, err)
		}
		return launch.ExitRefused
	}
	kind, in, err := parse(args)
	if err == nil && len(in.grants) > 0 {
		err = in.prepare()
	}
	cfg := in.cfg
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
		if cfg.Worktree != "" {
			p.Warnings = append(p.Warnings, launch.GitWarnings(cfg.Worktree)...)
		}
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
		ll += " (" + p.Errno + ")"
	}
	b := line(nil, "kernel:   ", p.Kernel, " (", p.Arch, ")")
	b = line(b, "landlock: ", ll)
	b = line(b, "auto:     ", p.AutoBackend, ": ", p.AutoReason)
	if p.Bwrap != "" {
		b = line(b, "bwrap:    ", p.Bwrap)
	}
	b = line(b, "wsl:      ", msg.Itoa(p.WSL))
	if len(p.Strategies) > 0 {
		b = line(b, "strategy: ", strings.Join(p.Strategies, ", then "))
	}
	if p.MetadataWhy != "" {
		b = line(b, "metadata: ", p.Metadata, " (", p.MetadataWhy, ")")
	} else if p.Metadata != "" {
		b = line(b, "metadata: ", p.Metadata)
	}
	if len(p.Handled) > 0 {
		b = line(b, "handled:  ", strings.Join(p.Handled, " "))
		b = line(b, "seccomp:  ", strings.Join(p.Seccomp, " "))
	}
	for _, name := range report.SortedNames(p.Channels) {
		c := p.Channels[name]
		b = line(b, "channel:  ", name, ": ", c.Status, " (", c.How, ")")
	}
	for _, warn := range p.Warnings {
		b = line(b, "warning:  ", warn)
	}
	w.Write(b)
}

// line is b with parts and a newline appended.
func line(b []byte, parts ...string) []byte {
	for _, s := range parts {
		b = append(b, s...)
	}
	return append(b, '\n')
}
