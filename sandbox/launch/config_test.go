package launch

import (
	"os"
	"path/filepath"
	"testing"

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
	if r, at := configAliased(cfg, alias, nil); r != "/srv/alias" || at != "/srv/alias" {
		t.Errorf("a rule on the config's directory under another name: got (%q, %q)", r, at)
	}
	if r, _ := configAliased(filepath.Join(base, "gone", "ci.conf"), alias, nil); r != "" {
		t.Errorf("a config whose directory is gone was found beneath %s", r)
	}
}
