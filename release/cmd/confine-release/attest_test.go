package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confine-dev/confine/release/attest"
	"github.com/confine-dev/confine/release/internal/fixture"
	"github.com/confine-dev/confine/release/platforms"
	"github.com/confine-dev/confine/release/registry"
)

const (
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testVersion = "v1.2.3-1-g0123456" // names testCommit, as git describe does one commit past a tag
)

// fixtureELF holds the fixture launcher of each GOARCH once built (tests here do not run in parallel).
var fixtureELF = map[string][]byte{}

// attestWorld builds real ELF stand-ins for the four launchers (fixture: static, stripped, stamped testVersion)
// and writes their statements, checksums.txt, its signature and cosign.pub under out, signed with a key
// the test makes. It returns the dist directory and out.
func attestWorld(t *testing.T) (dist, out string) {
	t.Helper()
	dir := t.TempDir()
	dist, out = filepath.Join(dir, "dist"), filepath.Join(dir, "out")
	for _, pl := range []string{"linux_amd64", "linux_arm64", "wsl2_amd64", "wsl2_arm64"} {
		arch := strings.TrimPrefix(strings.TrimPrefix(pl, "linux_"), "wsl2_")
		if fixtureELF[arch] == nil { // built once per test binary: a go build each is most of these tests' time
			b, err := os.ReadFile(fixture.Build(t, fixture.Spec{GOARCH: arch, Version: testVersion}))
			if err != nil {
				t.Fatal(err)
			}
			fixtureELF[arch] = b
		}
		b := fixtureELF[arch]
		if err := os.MkdirAll(filepath.Join(dist, pl), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dist, pl, "confine"), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	priv, _, err := attest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	ps, err := platforms.Load(filepath.Join(wd, "../../../platforms/platforms.json"))
	if err != nil {
		t.Fatal(err)
	}
	rf := releaseFlags{dist: dist, version: testVersion}
	sf := signFlags{sourceCommit: testCommit, key: write("cosign.key", string(priv)), builderID: "test",
		bazelVersion: write("bazelversion", "7.7.1\n"), module: write("MODULE.bazel", "module(name = \"x\")\n"),
		moduleLock: filepath.Join(dir, "no-lock")}
	if err := writeAttestations(io.Discard, out, &rf, &sf, ps, "", false); err != nil {
		t.Fatal(err)
	}
	return dist, out
}

// verifyAttested runs verify --provenance --signature on dist and out plus extra flags, and checks that it
// fails (exit 1) and that every FAIL line names bad (e.g. "linux_amd64/confine") and mentions want;
// bad "" expects it to pass.
func verifyAttested(t *testing.T, dist, out, bad, want string, extra ...string) {
	t.Helper()
	args := append([]string{"verify", "--dist", dist, "--version", testVersion, "--commit", testCommit[:7],
		"--provenance", filepath.Join(out, "provenance"), "--signature", filepath.Join(out, attest.SignatureFile)}, extra...)
	code, stdout, _ := confineRelease(t, args...)
	var fails []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, " FAIL ") || strings.HasPrefix(l, "FAIL") {
			fails = append(fails, l)
		}
	}
	if bad == "" {
		if code != exitOK || len(fails) > 0 {
			t.Fatalf("verify of an untouched release: exit %d, failures %q", code, fails)
		}
		if n := strings.Count(stdout, "ok   provenance"); n != 4 {
			t.Errorf("%d ok provenance lines, want 4", n)
		}
		if n := strings.Count(stdout, "ok   signature"); n != 8 {
			t.Errorf("%d ok signature lines, want 8 (four launchers, four statements)", n)
		}
		return
	}
	if code != exitFailed || len(fails) == 0 {
		t.Fatalf("exit %d, failures %q: want exit 1 with FAIL lines", code, fails)
	}
	for _, l := range fails {
		if !strings.Contains(l, bad) || !strings.Contains(l, want) {
			t.Errorf("FAIL line %q does not name %s and say %q", l, bad, want)
		}
	}
}

// TestVerifyAttestations: verify --provenance --signature passes on what the release writes and fails,
// naming the artifact on every FAIL line, on each planted problem.
func TestVerifyAttestations(t *testing.T) {
	t.Run("untouched", func(t *testing.T) {
		dist, out := attestWorld(t)
		verifyAttested(t, dist, out, "", "")
	})
	t.Run("tampered artifact", func(t *testing.T) {
		dist, out := attestWorld(t)
		f, err := os.OpenFile(filepath.Join(dist, "linux_amd64", "confine"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{0})
		f.Close()
		verifyAttested(t, dist, out, "linux_amd64/confine", "sha256")
	})
	t.Run("statement for another digest", func(t *testing.T) {
		dist, out := attestWorld(t)
		st, err := attest.Statement(attest.Subject{Name: "linux_arm64/confine", SHA256: strings.Repeat("ab", 32)},
			attest.Build{Version: testVersion, Commit: testCommit, BuilderID: "test"})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := attest.Marshal(st)
		if err := os.WriteFile(filepath.Join(out, "provenance", "linux_arm64.intoto.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		// Only --provenance: the statement's own checksum is the signature's business (next cases).
		code, stdout, _ := confineRelease(t, "verify", "--dist", dist, "--version", testVersion, "--provenance", filepath.Join(out, "provenance"))
		if code != exitFailed || strings.Count(stdout, "FAIL") != 1 ||
			!strings.Contains(stdout, "FAIL provenance linux_arm64/confine: the artifact has sha256 ") {
			t.Fatalf("exit %d, stdout %q: want one FAIL provenance line for linux_arm64/confine", code, stdout)
		}
		// With --signature too, the swapped statement no longer matches the signed checksums either.
		verifyAttested(t, dist, out, "linux_arm64", "sha256")
	})
	t.Run("wrong key", func(t *testing.T) {
		dist, out := attestWorld(t)
		_, pub, _ := attest.GenerateKey()
		other := filepath.Join(t.TempDir(), "other.pub")
		os.WriteFile(other, pub, 0o644)
		verifyAttested(t, dist, out, "FAIL signature", "does not verify", "--key", other)
	})
	t.Run("missing signature", func(t *testing.T) {
		dist, out := attestWorld(t)
		os.Remove(filepath.Join(out, attest.SignatureFile))
		verifyAttested(t, dist, out, "FAIL signature", "no signature: ")
	})
	t.Run("changed checksums", func(t *testing.T) {
		dist, out := attestWorld(t)
		c := filepath.Join(out, attest.ChecksumsFile)
		b, _ := os.ReadFile(c)
		os.WriteFile(c, append(b, []byte(strings.Repeat("0", 64)+"  extra\n")...), 0o644)
		verifyAttested(t, dist, out, "FAIL signature", "does not verify")
	})
}

// TestProvenanceCommand: `provenance` records a report only once the gate passes it, refuses one it
// fails (exit 1, nothing written), and without --signing-key writes checksums.txt but no signature.
func TestProvenanceCommand(t *testing.T) {
	dir := t.TempDir()
	bv := filepath.Join(dir, "bazelversion")
	os.WriteFile(bv, []byte("7.7.1\n"), 0o644)
	common := []string{"--version", "v1.2.3", "--source-commit", testCommit, "--bazelversion", bv,
		"--module", bv, "--module-lock", filepath.Join(dir, "absent")}

	dist, gf, report := gateWorld(t, nil)
	out := filepath.Join(dir, "out")
	args := append(append([]string{"provenance", "--dist", dist, "--report", report, "--out", out}, common...), gf...)
	if code, _, stderr := confineRelease(t, args...); code != exitOK {
		t.Fatalf("provenance with a passing report: exit %d, %s", code, stderr)
	}
	st, err := attest.ReadStatement(filepath.Join(out, "provenance", "linux_amd64.intoto.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := attest.Provenance(st)
	raw, _ := os.ReadFile(report)
	if got, want := attest.Dependency(p, attest.DepReport), fmt.Sprintf("%x", sha256.Sum256(raw)); got != want {
		t.Errorf("the statement records report %q, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(out, attest.ChecksumsFile)); err != nil {
		t.Errorf("no checksums.txt: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, attest.SignatureFile)); !os.IsNotExist(err) {
		t.Errorf("a signature was written without --signing-key (%v)", err)
	}

	dist, gf, report = gateWorld(t, func(m map[string]any) { m["results"] = []any{} })
	out = filepath.Join(dir, "refused")
	args = append(append([]string{"provenance", "--dist", dist, "--report", report, "--out", out}, common...), gf...)
	if code, _, stderr := confineRelease(t, args...); code != exitFailed || !strings.Contains(stderr, "refusing --report") {
		t.Fatalf("provenance with a failing report: exit %d, stderr %q; want 1, refusing", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written for a refused report (%v)", out, err)
	}
}

// TestReleaseAttests is `make release`'s acceptance offline: the whole release on fixture launchers (a real
// docker-registry on loopback) writes a statement per launcher, checksums.txt, its signature and the key,
// and verify --provenance --signature passes on them. Skips without docker-registry unless
// CONFINE_REQUIRE_REGISTRY=1 (make release-test).
func TestReleaseAttests(t *testing.T) {
	if _, err := os.Stat(registry.DefaultBinary); err != nil && os.Getenv("CONFINE_REQUIRE_REGISTRY") != "1" {
		t.Skipf("skipped: needs %s (make release-deps): %v", registry.DefaultBinary, err)
	}
	dist, _ := attestWorld(t)
	dir := t.TempDir()
	bv := filepath.Join(dir, "bazelversion")
	os.WriteFile(bv, []byte("7.7.1\n"), 0o644)
	out := filepath.Join(dir, "release")
	// The last release's sizes: a copy, which the release rewrites (never the repository's platforms/sizes.json).
	sizes := filepath.Join(dir, "sizes.json")
	if err := platforms.WriteSizes(sizes, platforms.Sizes{Version: "v0.0.1", Bytes: map[string]int64{"linux_amd64": 1}}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := confineRelease(t, "release", "--dist", dist, "--version", testVersion, "--commit", testCommit[:7],
		"--source-commit", testCommit, "--out", out, "--bazelversion", bv, "--module", bv, "--module-lock", filepath.Join(dir, "absent"),
		"--sizes", sizes)
	if code != exitOK {
		t.Fatalf("release: exit %d, stderr %q", code, stderr)
	}
	if rec, err := platforms.LoadSizes(sizes); err != nil || rec.Version != testVersion || len(rec.Bytes) != 4 {
		t.Errorf("the release did not record its sizes in %s: %+v, %v", sizes, rec, err)
	}
	for _, want := range []string{"== writing each launcher's provenance", "== verifying the provenance and the signature",
		"signing with a key made for this run", "change since v0.0.1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("release output lacks %q", want)
		}
	}
	for _, f := range []string{"provenance/linux_amd64.intoto.json", "provenance/wsl2_arm64.intoto.json", attest.ChecksumsFile,
		attest.SignatureFile, attest.PublicKeyFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("release wrote no %s: %v", f, err)
		}
	}
	if st, err := os.Stat(filepath.Join(out, "signing", "cosign.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the run's private key: %v, mode %v; want 0600", err, st)
	}
	verifyAttested(t, dist, out, "", "")
}
