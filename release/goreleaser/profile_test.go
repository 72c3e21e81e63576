package goreleaser

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// profileFile is the AppArmor profile the packages install (packaging/apparmor/confine).
const profileFile = "../../packaging/apparmor/confine"

// TestProfileGrants reads the profile's rules: one profile, named confine, attached to LauncherPath,
// flags=(unconfined), whose only rule is `userns,` (and the local include). A rule added here widens
// what every packaged confine may do on Ubuntu; it must be argued in the file's comment first.
func TestProfileGrants(t *testing.T) {
	b, err := os.ReadFile(profileFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			rules = append(rules, l)
		}
	}
	want := []string{
		"abi <abi/4.0>,",
		"include <tunables/global>",
		"profile confine " + LauncherPath + " flags=(unconfined) {",
		"userns,",
		"include if exists <local/confine>",
		"}",
	}
	if strings.Join(rules, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the profile's rules are\n%s\nwant\n%s", strings.Join(rules, "\n"), strings.Join(want, "\n"))
	}
}

// apparmorParser finds an apparmor_parser of AppArmor 4 or later (the profile needs abi/4.0 and the
// userns rule): $CONFINE_APPARMOR_PARSER, the one scripts/release-deps.sh unpacks into the cache, or
// the host's. It returns "" and why when there is none.
func apparmorParser() (string, string) {
	var tried []string
	cands := []string{os.Getenv("CONFINE_APPARMOR_PARSER")}
	cache := os.Getenv("CACHE")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache", "confine")
		}
	}
	cands = append(cands, filepath.Join(cache, "apparmor", "apparmor_parser"))
	if p, err := exec.LookPath("apparmor_parser"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/sbin/apparmor_parser", "/sbin/apparmor_parser")
	major := regexp.MustCompile(`version (\d+)\.`)
	for _, c := range cands {
		if c == "" {
			continue
		}
		out, err := exec.Command(c, "--version").Output()
		m := major.FindSubmatch(out)
		switch {
		case err != nil:
			tried = append(tried, c+": "+err.Error())
		case m == nil || string(m[1]) < "4":
			tried = append(tried, c+": "+strings.SplitN(string(out), "\n", 2)[0]+", want 4 or later")
		default:
			return c, ""
		}
	}
	return "", "no apparmor_parser of AppArmor 4 or later (make release-deps unpacks trixie's into the cache); tried: " + strings.Join(tried, "; ")
}

// TestProfileParses compiles the profile with a real apparmor_parser, loading nothing (-Q: no kernel
// load, -K: no cache), and a copy with a bad rule, which must fail (so the check can fail). Skipped,
// with the reason, where no parser of AppArmor 4 runs; CONFINE_REQUIRE_APPARMOR=1 (make release-test)
// makes that a failure. The kernel's userns mediation itself (Ubuntu 23.10 and later) is not tested.
func TestProfileParses(t *testing.T) {
	parser, why := apparmorParser()
	if parser == "" {
		if os.Getenv("CONFINE_REQUIRE_APPARMOR") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	abs, err := filepath.Abs(profileFile)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(parser, "-Q", "-K", "-N", abs).CombinedOutput()
	t.Logf("%s -Q -K -N %s:\n%s", parser, abs, out)
	if err != nil {
		t.Fatalf("apparmor_parser rejects the profile: %v", err)
	}
	if !regexp.MustCompile(`(?m)^confine$`).Match(out) {
		t.Errorf("apparmor_parser -N names no profile confine")
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "confine")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(b), "\n  userns,\n", "\n  userns, nosuchrule,\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(parser, "-Q", "-K", bad).CombinedOutput(); err == nil {
		t.Fatalf("apparmor_parser accepts a profile with a bad rule:\n%s", out)
	}
}
