package reexec

// Policy is what a confined command may write: the confine CLI's flags (and a --config file's lines) as one
// value. Args turns it into those flags, which the launcher parses with the CLI's own parser, so the CLI and
// this package cannot disagree on a field (TestPolicyArgsMatchConfigFiles).
type Policy struct {
	Worktree     string   // --worktree: absolute; required unless Mode is "read-only"
	Allow        []string // --allow, each: more writable roots, directories or single files
	AllowSocket  []string // --allow-socket, each: pathname unix sockets the command may connect to
	Protect      []string // --protect, each: paths beneath the writable roots held read-only (needs a mount layer)
	Profiles     []string // --profile, each: npm, pip, cargo, go, gradle, maven, yarn, pnpm, git-global, toolchains
	Mode         string   // --mode: "workspace-write" (also when "") or "read-only"
	Backend      string   // --backend: "auto" (also when ""), "landlock" or "bwrap"
	TTY          bool     // --tty: the controlling terminal and new pseudo-terminals are writable, job control works
	Strict       bool     // --strict: refuse when any side channel stays open
	NoGit        bool     // --no-git: grant no git directory found from the worktree
	AllowInterop bool     // --allow-interop: leave WSL2's Windows interop open
}

// Args returns p as confine flags, without "--" and the command. An empty Worktree, Mode or Backend gives no
// flag, so the CLI's defaults apply; every list entry gives one, even an empty one (which the CLI refuses).
func (p Policy) Args() []string {
	var a []string
	add := func(name string, values ...string) {
		for _, v := range values {
			a = append(a, "--"+name+"="+v)
		}
	}
	for _, f := range []struct{ name, value string }{{"worktree", p.Worktree}, {"mode", p.Mode}, {"backend", p.Backend}} {
		if f.value != "" {
			add(f.name, f.value)
		}
	}
	add("allow", p.Allow...) // an empty entry is passed on, for the CLI to refuse
	add("allow-socket", p.AllowSocket...)
	add("protect", p.Protect...)
	add("profile", p.Profiles...)
	for _, s := range []struct {
		on   bool
		name string
	}{{p.TTY, "tty"}, {p.Strict, "strict"}, {p.NoGit, "no-git"}, {p.AllowInterop, "allow-interop"}} {
		if s.on {
			a = append(a, "--"+s.name)
		}
	}
	return a
}
