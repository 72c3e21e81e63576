package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/sandbox/launch"
	"github.com/confine-dev/confine/sandbox/report"
)

func TestParseRejects(t *testing.T) {
	cases := map[string]struct {
		args   string
		reason report.Reason
	}{
		"nothing":                {"", report.Usage},
		"unknown flag":           {"--worktree /w --frobnicate -- true", report.Usage},
		"single dash flag":       {"-worktree /w -- true", report.Usage},
		"missing --":             {"--worktree /w true", report.Usage},
		"missing -- no command":  {"--worktree /w", report.Usage},
		"empty command":          {"--worktree /w --", report.Usage},
		"relative worktree":      {"--worktree w -- true", report.BadRoot},
		"dot-dot worktree":       {"--worktree /w/../etc -- true", report.BadRoot},
		"trailing slash":         {"--worktree /w/ -- true", report.BadRoot},
		"root is /":              {"--worktree / -- true", report.BadRoot},
		"allow is /":             {"--worktree /w --allow / -- true", report.BadRoot},
		"relative allow":         {"--worktree /w --allow x -- true", report.BadRoot},
		"worktree twice":         {"--worktree /w --worktree /v -- true", report.Usage},
		"mode twice":             {"--worktree /w --mode read-only --mode read-only -- true", report.Usage},
		"backend twice":          {"--worktree /w --backend auto --backend=auto -- true", report.Usage},
		"tty twice":              {"--worktree /w --tty --tty -- true", report.Usage},
		"tty with value":         {"--worktree /w --tty=yes -- true", report.Usage},
		"no-git twice":           {"--worktree /w --no-git --no-git -- true", report.Usage},
		"no-git with value":      {"--worktree /w --no-git=1 -- true", report.Usage},
		"allow twice":            {"--worktree /w --allow /a --allow /a -- true", report.Usage},
		"allow-socket twice":     {"--worktree /w --allow-socket /s --allow-socket /s -- true", report.Usage},
		"relative allow-socket":  {"--worktree /w --allow-socket s -- true", report.BadRoot},
		"allow repeats worktree": {"--worktree /w --allow /w -- true", report.Usage},
		"bad mode":               {"--worktree /w --mode write -- true", report.Usage},
		"bad backend":            {"--worktree /w --backend seatbelt -- true", report.Usage},
		"missing value":          {"--worktree -- true", report.Usage},
		"value is a flag":        {"--worktree --tty -- true", report.Usage},
		"empty value":            {"--worktree= -- true", report.Usage},
		"no worktree":            {"-- true", report.Usage},
		"allow in read-only":     {"--mode read-only --allow /a -- true", report.Usage},
		"report-fd stdout":       {"--worktree /w --report-fd 1 -- true", report.BadReportFD},
		"report-fd not a number": {"--worktree /w --report-fd x -- true", report.BadReportFD},
		"report-fd padded":       {"--worktree /w --report-fd 03 -- true", report.BadReportFD},
		"report-fd twice":        {"--worktree /w --report-fd 3 --report-fd 4 -- true", report.Usage},
		"probe extra":            {"probe --yaml", report.Usage},
		"version extra":          {"version now", report.Usage},
		"bare --":                {"--worktree /w -- ", report.Usage},
	}
	for name, c := range cases {
		_, _, err := Parse(strings.Fields(c.args))
		require.Error(t, err, name)
		require.Equal(t, c.reason, report.ReasonOf(err), "%s: %v", name, err)
		require.NotContains(t, err.Error(), "\n", "%s: one line", name)
	}
	_, _, err := Parse([]string{"--worktree", "/w", "--", ""})
	require.Equal(t, report.Usage, report.ReasonOf(err), "empty argv[0]")
}

func TestParseAccepts(t *testing.T) {
	kind, cfg, err := Parse(strings.Fields("--worktree /w --allow /a --allow=/b --tty --no-git --report-fd=7 -- sh -c x --worktree"))
	require.NoError(t, err)
	require.Equal(t, Run, kind)
	require.Equal(t, launch.Config{Worktree: "/w", Allow: []string{"/a", "/b"}, Mode: launch.WorkspaceWrite,
		Backend: launch.Auto, ReportFD: 7, TTY: true, NoGit: true, Argv: []string{"sh", "-c", "x", "--worktree"}}, cfg)

	_, cfg, err = Parse(strings.Fields("--mode read-only -- true"))
	require.NoError(t, err)
	require.Equal(t, launch.ReadOnly, cfg.Mode)
	require.Equal(t, -1, cfg.ReportFD)

	for args, want := range map[string]Kind{"probe": Probe, "probe --json": ProbeJSON, "version": PrintVersion,
		"--help": Help, "probe --help": Help, "probe -h": Help} {
		kind, _, err := Parse(strings.Fields(args))
		require.NoError(t, err, args)
		require.Equal(t, want, kind, args)
	}
}

func TestParseKeepsReportFDForTheRefusal(t *testing.T) {
	for _, args := range []string{"--report-fd 9 --bogus -- true", "--bogus --report-fd 9 -- true",
		"--mode nope --report-fd=9 -- true", "--worktree rel --tty --report-fd 9"} {
		_, cfg, err := Parse(strings.Fields(args))
		require.Error(t, err, args)
		require.Equal(t, 9, cfg.ReportFD, args)
	}
	_, cfg, err := Parse(strings.Fields("--bogus -- x --report-fd 9"))
	require.Error(t, err)
	require.Equal(t, -1, cfg.ReportFD, "a --report-fd after -- belongs to the command")
}

// FuzzParse checks that the parser never panics, and that whatever it accepts is well-formed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"--worktree /w -- true", "--mode read-only -- sh -c x", "probe --json",
		"--worktree=/a/b --allow /c --tty --report-fd 3 -- x", "--worktree /w --allow /w -- y", "-- --"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, " ")
		kind, cfg, err := Parse(args)
		if err != nil {
			require.NotContains(t, err.Error(), "\n")
			require.NotEqual(t, report.Internal, report.ReasonOf(err), "parse errors have a reason: %v", err)
			return
		}
		if kind != Run {
			return
		}
		require.NotEmpty(t, cfg.Argv)
		require.NotEmpty(t, cfg.Argv[0])
		require.Contains(t, []launch.Mode{launch.WorkspaceWrite, launch.ReadOnly}, cfg.Mode)
		if cfg.Mode == launch.WorkspaceWrite {
			require.NotEmpty(t, cfg.Worktree)
		} else {
			require.Empty(t, cfg.Allow)
		}
		for _, p := range append([]string{cfg.Worktree}, cfg.Allow...) {
			if p != "" {
				require.True(t, strings.HasPrefix(p, "/") && p != "/", "root %q", p)
			}
		}
		require.True(t, cfg.ReportFD == -1 || cfg.ReportFD >= 3)
	})
}

func TestParseProfilesAndConfig(t *testing.T) {
	old := getenv
	t.Cleanup(func() { getenv = old })
	getenv = func(k string) string { return map[string]string{"HOME": "/h", "GOCACHE": "/c/go"}[k] }

	_, in, err := parse(strings.Fields("--worktree /w --profile npm,go --profile npm --profile=toolchains -- x"))
	require.NoError(t, err)
	require.Equal(t, []string{"npm", "go", "toolchains"}, in.profiles)
	require.Equal(t, "/c/go", in.grants[3].Path, "in profile order: npm, pip, cargo, go")
	require.Equal(t, "profile go: GOCACHE", in.grants[3].Reason)
	require.True(t, in.grants[3].Explicit)
	require.False(t, in.grants[1].Explicit, "pip comes from toolchains only")
	require.Empty(t, in.cfg.Allow, "Main adds them once prepared")

	// --config: the command line's single-valued flags win, --allow and --profile add up, switches set.
	dir := t.TempDir()
	cfg := dir + "/c"
	require.NoError(t, os.WriteFile(cfg, []byte("# x\n--worktree /file\n--mode=read-only\n  --allow /a  \n--profile pip\n--tty\n\n"), 0o644))
	_, in, err = parse(strings.Fields("--config " + cfg + " --worktree /w --mode workspace-write --allow /b --allow /a -- x"))
	require.NoError(t, err)
	require.Equal(t, "/w", in.cfg.Worktree)
	require.Equal(t, launch.WorkspaceWrite, in.cfg.Mode)
	require.Equal(t, []string{"/b", "/a"}, in.cfg.Allow)
	require.Equal(t, []string{"pip"}, in.profiles)
	require.True(t, in.cfg.TTY)
	_, in, err = parse(strings.Fields("--config " + cfg + " -- x"))
	require.ErrorContains(t, err, "--allow conflicts with --mode read-only", "the file's flags apply when the command line has none")

	for content, want := range map[string]string{
		"--mode read-only\n--mode read-only\n": cfg + ":2: --mode given twice",
		"--=x\n":                               cfg + ":1: expected --flag [value]",
		"worktree /w\n":                        cfg + ":1: expected --flag [value]",
		"---x\n":                               cfg + ":1: expected --flag [value]",
		"--tty=1\n":                            cfg + ":1: --tty takes no value",
		"--profile\n":                          cfg + ":1: --profile needs a value",
		"--profile npm,nope\n":                 cfg + `:1: --profile: unknown profile "nope"`,
		"--config /x\n":                        cfg + ":1: --config cannot be given in a --config file",
		"--allow /a/../b\n":                    cfg + ":1: --allow: ",
		"--":                                   cfg + ":1: expected --flag [value]",
	} {
		require.NoError(t, os.WriteFile(cfg, []byte(content), 0o644))
		_, _, err := Parse(strings.Fields("--config " + cfg + " --worktree /w -- x"))
		require.ErrorContains(t, err, "--config "+want, "%q", content)
		require.NotEqual(t, report.Internal, report.ReasonOf(err))
	}
	_, _, err = Parse(strings.Fields("--config " + dir + "/missing --worktree /w -- x"))
	require.ErrorContains(t, err, "no such file")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Repeat("#", maxConfig+1)), 0o644))
	_, _, err = Parse(strings.Fields("--config " + cfg + " --worktree /w -- x"))
	require.ErrorContains(t, err, "longer than 64 KiB")
}

// FuzzParseConfig checks that the --config reader never panics, keeps errors on one line with a reason, and
// hands on only flag names without dashes or '='.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"--worktree /w\n--allow=/a\n# c\n\n--tty\n", "--profile npm,go\r\n", "x\n", "--\n", "--a b c\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		err := ParseConfig([]byte(data), func(name, value string, hasValue bool) error {
			require.NotEmpty(t, name)
			require.False(t, strings.ContainsAny(name, "= \t\n") || strings.HasPrefix(name, "-"), "name %q", name)
			require.False(t, !hasValue && value != "")
			if name == "bad" {
				return usageErr("bad flag")
			}
			return nil
		})
		if err != nil {
			require.NotContains(t, err.Error(), "\n")
			require.Equal(t, report.Usage, report.ReasonOf(err))
		}
	})
}

// A --config file's flags apply under the command line's, whether the worktree comes from one or the other, and
// Parse passes on the file's kernel name: launch.Run refuses it beneath any writable root
// (cmd/confine's TestConfigBeneathAnyWritableRootIsRefused).
func TestConfigFileIsPassedOn(t *testing.T) {
	w, other := t.TempDir(), t.TempDir()
	outside := other + "/confine.conf"
	require.NoError(t, os.WriteFile(outside, []byte("--allow "+w+"\n"), 0o644))
	third := t.TempDir()
	_, cfg, err := Parse([]string{"--worktree", third, "--config", outside, "--", "true"})
	require.NoError(t, err)
	require.Equal(t, []string{w}, cfg.Allow)
	require.Equal(t, outside, cfg.ConfigFile)
}
