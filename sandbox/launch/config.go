package launch

// Mode is what the command may write.
type Mode string

// The modes.
const (
	// WorkspaceWrite allows the worktree, each --allow root, /tmp and /dev/null.
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly allows /tmp and /dev/null only.
	ReadOnly Mode = "read-only"
)

// Backend is how confinement is enforced.
type Backend string

// The backends.
const (
	Auto     Backend = "auto"     // Landlock where the kernel has it; else bwrap if it is installed; else refuse
	Landlock Backend = "landlock" // Landlock or refuse
	Bwrap    Backend = "bwrap"    // bubblewrap's read-only mounts (bwrap.go), even where Landlock is available; or refuse
)

// Config is one parsed invocation. The parser (internal/cli) has already checked its shape; Run checks it
// against the filesystem and the kernel.
type Config struct {
	Worktree string   // absolute, clean; required in WorkspaceWrite
	Allow    []string // more writable roots: directories or single files
	// Protect are paths beneath the writable roots held read-only (--protect): the mount layer binds each onto
	// itself, as the repository's own git metadata; a launch without a mount layer is refused.
	Protect []string
	// AllowSocket are pathname unix sockets the command may connect to (a connect-only rule each, ABI 9).
	AllowSocket []string
	Mode        Mode
	Backend     Backend
	ReportFD    int // -1 for none
	TTY         bool
	Strict      bool              // refuse when any channel (see channels.go) stays open
	NoGit       bool              // --no-git: grant no git directory found from the worktree
	Why         map[string]string // the report rule's reason for an Allow path, e.g. "profile npm: npm_config_cache"
	Notes       []string          // warnings for the report from before Run, e.g. a profile directory left out
	Argv        []string          // the command and its arguments, non-empty

	// ConfigFile is the kernel's name of the --config file the flags came from (symlinks resolved), or "".
	// Run refuses it where the command could rewrite it for the next launch: beneath any writable rule (the
	// worktree, an --allow root, /tmp, a profile's or git's directory).
	ConfigFile string

	// AllowInterop (--allow-interop) leaves WSL2's Windows interop open inside the sandbox: WSL_INTEROP is
	// kept and no interop closure (wsl.go) is made; the report says so (wsl_interop "allowed", channel
	// wsl-interop open). Without it, interop is closed where a mount layer can be had, and refused elsewhere.
	AllowInterop bool
}

// Default writable roots, in every mode. A missing one is a warning, not a refusal: it cannot be written
// anyway.
var defaultRoots = []string{"/tmp", "/dev/null", shmRoot}

// shmRoot is where the mount layer puts a private tmpfs, whose root gets the rule; without the layer the host's
// /dev/shm, shared with every process, is granted instead (plan.shareShm, channel shm).
const shmRoot = "/dev/shm"

// ttyRoots are added by --tty: interactive tools open the controlling terminal and new pseudo-terminals.
var ttyRoots = []string{"/dev/tty", "/dev/ptmx", "/dev/pts"}
