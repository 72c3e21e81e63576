package gitdir

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/confine-dev/confine/sandbox/pathfd"
)

// guards runs Guards on the worktree wt after Discover, and returns them by path, with the gaps.
func guards(t *testing.T, wt string) (map[string]Guard, []string) {
	t.Helper()
	res, err := discover(t, wt, "")
	require.NoError(t, err)
	r, err := pathfd.Open(wt)
	require.NoError(t, err)
	defer r.Close()
	gs, gaps, err := Guards(r, res, true, nil)
	require.NoError(t, err)
	byPath := map[string]Guard{}
	for i, g := range gs {
		for _, parent := range gs[i:] { // parents first: nothing after a guard lies above it
			require.False(t, strings.HasPrefix(g.Path, parent.Path+"/"), "%s before its parent %s", g.Path, parent.Path)
		}
		byPath[g.Path] = g
	}
	return byPath, gaps
}

func keys(m map[string]Guard) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestGuardsMainCheckout: a main checkout's .git is pinned, its config, commondir, config.worktree and hooks/
// are held, the missing ones made as placeholders git reads as missing (a second run makes none), each other
// checkout's registration and each submodule git directory are guarded too, and Discover still accepts the
// checkout.
func TestGuardsMainCheckout(t *testing.T) {
	d := repo(t)
	g := d + "/main/.git"
	require.NoError(t, os.MkdirAll(g+"/modules/lib/a/hooks", 0o755))
	require.NoError(t, os.WriteFile(g+"/modules/lib/a/HEAD", []byte("ref: refs/heads/main\n"), 0o644))
	require.NoError(t, os.WriteFile(g+"/modules/lib/a/config", nil, 0o644))
	got, gaps := guards(t, d+"/main")
	require.Len(t, gaps, 3)
	require.Equal(t, []string{PlainSpecialGap(g), GitlinkGap(g + "/index")}, gaps[:2])
	require.Contains(t, gaps[2], "no commondir placeholder in "+g+"/modules/lib/a")
	require.Equal(t, []string{g, g + "/commondir", g + "/config", g + "/config.worktree", g + "/hooks",
		g + "/modules", g + "/modules/lib", g + "/modules/lib/a", g + "/modules/lib/a/config", g + "/modules/lib/a/config.worktree", g + "/modules/lib/a/hooks",
		g + "/worktrees", g + "/worktrees/wt", g + "/worktrees/wt/commondir", g + "/worktrees/wt/config.worktree",
		g + "/worktrees/wt/gitdir"}, keys(got))
	for _, pin := range []string{g, g + "/modules", g + "/modules/lib/a", g + "/worktrees/wt"} {
		require.True(t, got[pin].Pin, pin)
	}
	require.False(t, got[g+"/config"].Pin)
	require.True(t, got[g+"/commondir"].Made)
	require.False(t, got[g+"/config"].Made)
	b, err := os.ReadFile(g + "/commondir")
	require.NoError(t, err)
	require.Equal(t, ".\n", string(b))
	git(t, d+"/main", "status", "--short") // git reads the placeholder as the git directory itself
	again, _ := guards(t, d+"/main")
	for p, x := range again {
		require.False(t, x.Made, p)
		require.Equal(t, got[p].Ino, x.Ino, p)
	}
}

// TestGuardsLinked: a linked worktree's .git file is held, and in its registration commondir and gitdir, and
// config.worktree, made where missing; nothing of the common directory (not writable) is listed.
func TestGuardsLinked(t *testing.T) {
	d := repo(t)
	reg := d + "/main/.git/worktrees/wt"
	got, gaps := guards(t, d+"/wt")
	require.Equal(t, []string{GitlinkGap(reg + "/index")}, gaps)
	require.Equal(t, []string{reg + "/commondir", reg + "/config.worktree", reg + "/gitdir", d + "/wt/.git"}, keys(got))
	require.True(t, got[reg+"/config.worktree"].Made)
	require.False(t, got[d+"/wt/.git"].Dir)
}

// TestGuardsGaps: a symlink where a guarded file or directory is cannot be held by a mount: it is a gap, named.
func TestGuardsGaps(t *testing.T) {
	d := repo(t)
	g := d + "/main/.git"
	require.NoError(t, os.RemoveAll(g+"/hooks"))
	require.NoError(t, os.Symlink(d+"/elsewhere", g+"/hooks"))
	got, gaps := guards(t, d+"/main")
	require.NotContains(t, got, g+"/hooks")
	require.Len(t, gaps, 3) // PlainSpecialGap, GitlinkGap, and the symlink
	require.Contains(t, gaps[2], g+"/hooks is a symlink")
}

// TestGuardsHooksPath: core.hooksPath inside the worktree (husky's .husky, .husky/_) is a gap, not held (the
// project's own files, which checkout changes); so is one outside it (it may lie in /tmp, which the command
// writes); .git/hooks is neither.
func TestGuardsHooksPath(t *testing.T) {
	d := repo(t)
	for _, c := range []struct {
		value string
		gap   bool
	}{{".husky/_", true}, {".husky", true}, {".", true}, {d + "/hooks-outside", true}, {".git/hooks", false}, {"~/hooks", true}} {
		git(t, d+"/main", "config", "core.hooksPath", c.value)
		got, gaps := guards(t, d+"/main")
		require.Len(t, gaps, map[bool]int{false: 2, true: 3}[c.gap], c.value) // PlainSpecialGap, GitlinkGap, and this
		for p := range got {
			require.NotContains(t, p, "husky", c.value)
		}
		if c.gap {
			require.Contains(t, gaps[2], "core.hooksPath", c.value)
		}
	}
}

// TestGuardsSubmoduleCommondir: a submodule git directory (core.worktree set) gets no commondir placeholder,
// which would make git ignore its core.worktree; its missing commondir is a gap. The main .git gets one.
func TestGuardsSubmoduleCommondir(t *testing.T) {
	d := repo(t)
	mod := d + "/main/.git/modules/sub"
	require.NoError(t, os.MkdirAll(mod, 0o755))
	require.NoError(t, os.WriteFile(mod+"/HEAD", []byte("ref: refs/heads/main\n"), 0o644))
	require.NoError(t, os.WriteFile(mod+"/config", []byte("[core]\n\tworktree = ../../../sub\n"), 0o644))
	got, gaps := guards(t, d+"/main")
	require.Contains(t, got, mod+"/config")
	require.NotContains(t, got, mod+"/commondir")
	require.NoFileExists(t, mod+"/commondir")
	require.True(t, got[d+"/main/.git/commondir"].Made)
	require.Len(t, gaps, 3)
	require.Contains(t, gaps[2], "no commondir placeholder in "+mod)
}

func TestConfigValue(t *testing.T) {
	for _, c := range []struct {
		text, want string
		ok         bool
	}{
		{"[core]\n\thooksPath = .husky/_\n", ".husky/_", true},
		{"[Core]\nHOOKSPATH=a\nhookspath = \"b c\" # comment\n", "b c", true},
		{"[core] hooksPath = x ; c\n", "x", true},
		{"[core \"sub\"]\nhooksPath = x\n", "", false},
		{"[other]\nhooksPath = x\n[core]\nbare = false\n", "", false},
		{"[core]\nhooksPath\n", "true", true},
		{"[core]\nhooksPath = a\\\"b\n", "a\"b", true},
	} {
		v, ok := ConfigValue([]byte(c.text), "core", "hookspath")
		require.Equal(t, c.ok, ok, c.text)
		require.Equal(t, c.want, v, c.text)
	}
}

// TestGuardsReportWhatIsNotHeld: includes in a config, submodules nested past maxModuleDepth, a linked
// worktree's own submodule git directories, and a relative core.hooksPath in the user's config are gaps, named.
func TestGuardsReportWhatIsNotHeld(t *testing.T) {
	d := repo(t)
	git(t, d+"/main", "config", "include.path", "../.repo-gitconfig")
	_, gaps := guards(t, d+"/main")
	require.Len(t, gaps, 3)
	require.Contains(t, gaps[2], "includes other files")

	g := d + "/main/.git"
	deep := g
	for i := 0; i <= maxModuleDepth; i++ {
		deep += "/modules/s"
		require.NoError(t, os.MkdirAll(deep, 0o755))
		require.NoError(t, os.WriteFile(deep+"/HEAD", []byte("ref: refs/heads/main\n"), 0o644))
	}
	_, gaps = guards(t, d+"/main")
	require.Contains(t, strings.Join(gaps, "\n"), "nested deeper than 4 levels")

	reg := g + "/worktrees/wt"
	require.NoError(t, os.MkdirAll(reg+"/modules/sub", 0o755))
	_, gaps = guards(t, d+"/wt")
	require.Contains(t, strings.Join(gaps, "\n"), reg+"/modules holds submodule git directories")

	user := d + "/user-gitconfig"
	require.NoError(t, os.WriteFile(user, []byte("[core]\n\thooksPath = .githooks\n"), 0o644))
	res, err := discover(t, d+"/wt", "")
	require.NoError(t, err)
	r, err := pathfd.Open(d + "/wt")
	require.NoError(t, err)
	defer r.Close()
	_, gaps, err = Guards(r, res, false, []string{user, d + "/missing"})
	require.NoError(t, err)
	require.Contains(t, strings.Join(gaps, "\n"), "core.hooksPath names "+d+"/wt/.githooks")
}

// TestGuardsLargeConfigWithWorktree: a main checkout's config over MaxPointer (4 KiB) that sets core.worktree
// still gets no commondir placeholder (the config is read up to 1 MiB, once).
func TestGuardsLargeConfigWithWorktree(t *testing.T) {
	d := repo(t)
	git(t, d+"/main", "config", "core.worktree", d+"/main")
	for i := 0; i < 120; i++ {
		git(t, d+"/main", "config", "remote.r"+strings.Repeat("x", 3)+string(rune('a'+i%26))+strings.Repeat("y", i%7)+".url", "https://example.invalid/"+strings.Repeat("z", 20))
	}
	st, err := os.Stat(d + "/main/.git/config")
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(MaxPointer))
	got, gaps := guards(t, d+"/main")
	require.NotContains(t, got, d+"/main/.git/commondir")
	require.NoFileExists(t, d+"/main/.git/commondir")
	require.Contains(t, strings.Join(gaps, "\n"), "no commondir placeholder in "+d+"/main/.git")
}
