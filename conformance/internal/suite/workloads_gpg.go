package suite

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// gpgUID is the user ID of every key the gpg cases make.
const gpgUID = "wl <wl@example.invalid>"

// gpgGenKey, gpgSign and gpgVerifyArgv are gpg's commands: make a key without a passphrase, sign data.txt
// (detached, armored), and verify the signature with machine-readable status lines on stdout.
const (
	gpgGenKey = "gpg --batch --passphrase '' --quick-gen-key '" + gpgUID + "' default default never"
	gpgSign   = "gpg --batch --yes --detach-sign --armor data.txt"
)

var gpgVerifyArgv = []string{"gpg", "--batch", "--status-fd", "1", "--verify", "data.txt.asc", "data.txt"}

// gpgEnv is gpg's environment for the project in dir with the keyring home.
func gpgEnv(dir, home string) []string { return wlEnv(dir, "GNUPGHOME="+home) }

// gpgVerdict verifies dir/data.txt.asc (unconfined) with the keyring home and returns the verdict lines that do not
// depend on the key (GOODSIG's user ID, the trust) and whether the signing key is the keyring's own secret key.
func gpgVerdict(t *T, dir, home string) ([]string, error) {
	v := t.Unconfined(gpgVerifyArgv, Opts{Dir: dir, Env: gpgEnv(dir, home)})
	var out []string
	fpr := ""
	for _, l := range strings.Split(v.Stdout, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 2 && f[1] == "GOODSIG":
			out = append(out, "GOODSIG "+strings.Join(f[3:], " "))
		case len(f) > 2 && f[1] == "VALIDSIG":
			fpr = f[2]
		case len(f) > 1 && strings.HasPrefix(f[1], "TRUST_"):
			out = append(out, f[1])
		}
	}
	if v.Exit != 0 || fpr == "" {
		return nil, fmt.Errorf("the signature does not verify (exit %d): %s", v.Exit, firstLines(v.Stderr, 4))
	}
	keys := t.Unconfined([]string{"gpg", "--batch", "--with-colons", "--list-secret-keys"}, Opts{Dir: dir, Env: gpgEnv(dir, home)})
	return append(out, fmt.Sprintf("signed by the keyring's secret key: %v", strings.Contains(keys.Stdout, "fpr:::::::::"+fpr+":"))), nil
}

// gpgKillAgent stops the agent of the keyring home, if one runs (unconfined).
func gpgKillAgent(t *T, home string) {
	t.Unconfined([]string{"gpgconf", "--kill", "gpg-agent"}, Opts{Env: wlEnv(home, "GNUPGHOME="+home)})
}

// gpgInsideWorkload makes a key, signs and verifies with a keyring in the project: gpg starts its own agent there.
var gpgInsideWorkload = workload{
	name:  "gpg-keyring-inside",
	title: "gpg makes a key, signs and verifies with a keyring in the worktree: the signature verifies, by that key",
	rationale: "With GNUPGHOME in the worktree (a project's own signing key, or a CI job's throwaway one), gpg locks " +
		"and rewrites its keyring there and starts gpg-agent, whose sockets go in GNUPGHOME too (no " +
		"/run/user/UID here), so everything it writes is writable; the agent is a daemon the command leaves " +
		"behind, which confine ends with it. The script makes a key without a passphrase, signs data.txt " +
		"(detached, armored) and verifies it; the runner then verifies the signature again, unconfined, and " +
		"checks that the key that signed is the keyring's own secret key.",
	effect: "`GOODSIG " + gpgUID + "`, ultimate trust, signed by the keyring's secret key",
	tools:  []string{"gpg", "gpgconf"},
	project: func(t *T, dir string) {
		t.WriteFile(dir+"/data.txt", "data to sign\n", 0o644)
		if err := os.Mkdir(dir+"/.gnupg", 0o700); err != nil {
			t.Fatalf("fixture: %v", err)
		}
	},
	script: gpgGenKey + " && " + gpgSign + " && gpg --batch --verify data.txt.asc data.txt",
	env:    func(t *T, dir string) []string { return gpgEnv(dir, dir+"/.gnupg") },
	observe: func(t *T, dir string, r Run) ([]string, error) {
		defer gpgKillAgent(t, dir+"/.gnupg")
		return gpgVerdict(t, dir, dir+"/.gnupg")
	},
}

// gpgFingerprint is a keyring's state that a confined signature must not change: the content and mtime of its
// key and trust files, and the names in private-keys-v1.d.
func gpgFingerprint(home string) string {
	var b strings.Builder
	for _, name := range []string{"pubring.kbx", "trustdb.gpg"} {
		raw, err := os.ReadFile(home + "/" + name)
		st, _ := os.Stat(home + "/" + name)
		if err != nil || st == nil {
			fmt.Fprintf(&b, "%s: %v; ", name, err)
			continue
		}
		fmt.Fprintf(&b, "%s: %x %s; ", name, sha256.Sum256(raw), st.ModTime())
	}
	keys, _ := filepath.Glob(home + "/private-keys-v1.d/*")
	fmt.Fprintf(&b, "private keys: %d", len(keys))
	return b.String()
}

var gpgAgentCase = Case{
	ID:    "workloads/gpg-agent-outside",
	Title: "gpg signs with the user's keyring outside the worktree through an agent started before confine, and the keyring is unchanged",
	Rationale: "The README's recipe (Signing and agents): the keys stay outside the sandbox, an agent started " +
		"before confine holds them, and the command asks it to sign; --allow-socket names the agent's socket " +
		"(needed from Landlock ABI 9). The keyring (GNUPGHOME outside the writable set, made by the runner) cannot " +
		"be written: with the mount layer gpg's lock file fails with EROFS and gpg goes on; without it (Landlock's " +
		"EACCES) gpg gives up unless it runs with --lock-never, which the README documents. The runner signs " +
		"data.txt unconfined (the control), then confined in each mode with plain gpg; where that fails without a " +
		"mount layer, the case checks the documented failure and runs the documented `gpg --lock-never`, which " +
		"must sign. Every signature must verify by the keyring's key, and the keyring's files must be as they " +
		"were. " + wlModesText,
	Expect: []Expect{{"ABI ≥ 1, mount-layer", "plain gpg signs; `GOODSIG " + gpgUID + "`; the keyring unchanged"},
		{"ABI ≥ 1, supervisor", "plain gpg fails with \"can't allocate lock\" (its lock file: EACCES); `gpg --lock-never` signs, and the signature verifies; the keyring unchanged"},
		{"bwrap (no Landlock, or --backend bwrap)", "as with the mount layer"},
		{"`gpg` absent", "SKIP, with the reason"}, {"a VM guest", "SKIP: runs in the host suite only"}},
	Needs: Needs{Confined: true, Shell: true, Tools: []string{"gpg", "gpgconf"}, HostOnly: wlHostOnly},
	Setup: func(t *T) {
		home := t.Base + "/gnupg"
		t.Mkdir(t.Base + "/control")
		if err := os.Mkdir(home, 0o700); err != nil {
			t.Fatalf("fixture: %v", err)
		}
		env := gpgEnv(t.Base+"/control", home)
		for _, argv := range [][]string{{"/bin/sh", "-c", gpgGenKey}, {"gpgconf", "--launch", "gpg-agent"}} {
			if r := t.Unconfined(argv, Opts{Dir: t.Base, Env: env}); r.Exit != 0 {
				t.Skipf("gpg cannot make a key or start its agent without confine (%s: exit %d): %s", argv[len(argv)-1], r.Exit, firstLines(r.Stderr, 4))
			}
		}
		// The agent, which runs outside confine, may write in its home: the keyring's own files are checked instead.
		t.Unwatch(t.Base+"/control", home)
	},
	Run: func(t *T) {
		home := t.Base + "/gnupg"
		defer gpgKillAgent(t, home)
		sock := strings.TrimSpace(t.Unconfined([]string{"gpgconf", "--list-dirs", "agent-socket"}, Opts{Env: gpgEnv(t.Base, home)}).Stdout)
		ctlDir := t.Base + "/control"
		t.WriteFile(ctlDir+"/data.txt", "data to sign\n", 0o644)
		if r := t.Unconfined([]string{"/bin/sh", "-c", gpgSign}, Opts{Dir: ctlDir, Env: gpgEnv(ctlDir, home)}); r.Exit != 0 {
			t.Skipf("gpg cannot sign without confine (exit %d): %s", r.Exit, firstLines(r.Stderr, 4))
		}
		want, err := gpgVerdict(t, ctlDir, home)
		if err != nil {
			t.Skipf("control: %v", err)
		}
		t.Logf("control (unconfined): %s; agent socket %s", strings.Join(want, "; "), sock)
		before := gpgFingerprint(home)
		for _, m := range wlModes(t) {
			dir := t.WT + "/" + m.dir
			t.WriteFile(dir+"/data.txt", "data to sign\n", 0o644)
			t.Mkdir(dir + "/.home")
			o := Opts{Dir: dir, Env: gpgEnv(dir, home), NoNamespaces: m.noNS}
			flags := t.Flags("--allow-socket", sock)
			r := t.Confine(flags, []string{"/bin/sh", "-c", gpgSign}, o)
			if r.Report == nil || r.Report.Outcome != "exec" {
				t.Errorf("%s: confine did not run gpg (exit %d): %s", m.name, r.Exit, firstLines(r.Stderr, 4))
				continue
			}
			mode := wlModeOf(r)
			t.Logf("%s (%s): plain gpg: exit %d, stderr %q", m.name, mode, r.Exit, firstLines(r.Stderr, 4))
			if r.Exit != 0 && !r.Report.MountLayer() && r.Report.Backend != BackendBwrap {
				// Documented (sandbox/README.md, Signing and agents): without a mount layer gpg's lock file
				// fails with EACCES, and gpg gives up; --lock-never is the workaround.
				if !strings.Contains(r.Stderr, "can't allocate lock") {
					t.Errorf("%s: plain gpg failed, but not on its lock file (\"can't allocate lock\"): %s", mode, firstLines(r.Stderr, 4))
				}
				r = t.Confine(flags, []string{"/bin/sh", "-c", strings.Replace(gpgSign, "gpg ", "gpg --lock-never ", 1)}, o)
				t.Logf("%s: note: plain gpg fails without a mount layer, as documented; gpg --lock-never: exit %d, stderr %q", mode, r.Exit, firstLines(r.Stderr, 4))
			}
			if r.Exit != 0 {
				t.Errorf("%s: gpg could not sign through the agent (exit %d): %s", mode, r.Exit, firstLines(r.Stderr, 4))
				continue
			}
			got, err := gpgVerdict(t, dir, home)
			switch {
			case err != nil:
				t.Errorf("%s: gpg exited 0, but %v", mode, err)
			case diffLines(want, got) != "":
				t.Errorf("%s: the verdict differs from the control's: %s", mode, diffLines(want, got))
			}
		}
		if after := gpgFingerprint(home); after != before {
			t.Errorf("the keyring outside changed: before %s, after %s", before, after)
		}
	},
}
