package launch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/landlock"
)

// TestConfigAliased: a --config file whose directory, or an ancestor of it, a writable rule shows under another
// name (the rule itself, or a mount beneath it) is found, with where; a sibling's alias and an unrelated rule are
// not. The mount is simulated by a symlink at the mount point (stat follows it to the same identity a bind mount
// gives), and the rule's own alias by opening the config's directory under the rule's name.
func TestConfigAliased(t *testing.T) {
	base := t.TempDir()
	mk := func(p string) string {
		p = filepath.Join(base, p)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfgDir, sibling, writable := mk("etc/confine"), mk("etc/other"), mk("w")
	cfg := filepath.Join(cfgDir, "ci.conf")
	if err := os.WriteFile(cfg, []byte("--no-git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(p string) int {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	rules := []landlock.Rule{{Path: writable, FD: open(writable), Dir: true}}
	link := func(target, at string) mount {
		if err := os.Symlink(target, filepath.Join(writable, at)); err != nil {
			t.Fatal(err)
		}
		return mount{point: filepath.Join(writable, at)}
	}
	if r, at := configAliased(cfg, rules, []mount{link(sibling, "sib")}); r != "" {
		t.Fatalf("a sibling's alias beneath %s was taken for the config's (%s)", r, at)
	}
	for _, m := range []mount{link(cfgDir, "dir"), link(filepath.Dir(cfgDir), "parent")} {
		if r, at := configAliased(cfg, rules, []mount{m}); r != writable || at != m.point {
			t.Errorf("an alias at %s: got (%q, %q), want (%q, %q)", m.point, r, at, writable, m.point)
		}
		hidden := m
		hidden.hidden = true
		if r, _ := configAliased(cfg, rules, []mount{hidden}); r != "" {
			t.Errorf("a hidden mount at %s was taken as a path to the config", m.point)
		}
	}
	alias := []landlock.Rule{{Path: "/srv/alias", FD: open(cfgDir), Dir: true}}
	if r, at := configAliased(cfg, alias, nil); r != "/srv/alias" || at != cfgDir { // the rule is shown at cfgDir
		t.Errorf("a rule on the config's directory under another name: got (%q, %q)", r, at)
	}
	if r, _ := configAliased(filepath.Join(base, "gone", "ci.conf"), alias, nil); r != "" {
		t.Errorf("a config whose directory is gone was found beneath %s", r)
	}
}

// TestShownAt: what mountinfo says shows a file under a writable directory's other name, from a synthetic mount
// table: a directory beneath the rule bound elsewhere (where the file lies), and an overlay with a layer in the
// rule or a layer that holds the rule where the file is (an overlay has a device of its own, so its layers are
// compared by path); not an unrelated bind, a layer outside, or a mount no path reaches (attack review of the npm
// check, issue 43 finding 3: the launcher's --config check had the same gaps).
func TestShownAt(t *testing.T) {
	base, none := t.TempDir(), map[[2]uint64]bool{}
	wt, low := base+"/wt", base+"/low" // the rule (by path only), and a layer outside it that exists
	require.NoError(t, os.Mkdir(low, 0o755))
	root := mount{dev: "8:1", root: "/", point: "/"}
	bind := func(src, at string) []mount { return []mount{root, {dev: "8:1", root: src, point: at}} }
	ov := func(layers ...string) []mount {
		return []mount{root, {dev: "0:99", root: "/", point: "/mnt/ov", fstype: "overlay", layers: layers}}
	}
	for _, c := range []struct {
		path   string
		mounts []mount
		want   string
	}{
		{"/srv/alias/ci.conf", bind(wt+"/sub", "/srv/alias"), "/srv/alias"},
		{"/srv/alias/deep/ci.conf", bind(wt, "/srv/alias"), "/srv/alias"},
		{"/srv/alias/ci.conf", bind(base+"/other", "/srv/alias"), ""},
		{"/mnt/ov/ci.conf", ov(low, wt+"/up"), "/mnt/ov"},
		{"/mnt/ov/wt/ci.conf", ov(base), "/mnt/ov"}, // the layer holds the rule where the file is
		{"/mnt/ov/other/ci.conf", ov(base), ""},
		{"/mnt/ov/ci.conf", ov(low), ""},
		{"/mnt/ov/ci.conf", ov("up", "/var/lib/docker/overlay2/x/diff"), ""}, // a container's root: passed over
		{"/etc/confine/ci.conf", ov(wt + "/up"), ""},
		{"/etc/confine/ci.conf", []mount{root}, ""},
	} {
		require.Equal(t, c.want, shownAt(c.path, none, wt, [2]uint64{1, 1}, c.mounts), "%s through %+v", c.path, c.mounts)
		hidden := append([]mount{}, c.mounts...)
		hidden[len(hidden)-1].hidden = true
		if len(hidden) > 1 {
			require.Empty(t, shownAt(c.path, none, wt, [2]uint64{1, 1}, hidden), "%s through a hidden mount", c.path)
		}
	}
	require.Equal(t, []string{"/l 1", "/l2", "/u", "/d"},
		overlayLayers(`rw,lowerdir=/l\0401:/l2,upperdir=/u,workdir=/w,datadir+=/d,xino=off`))
}
