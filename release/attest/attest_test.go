package attest

import (
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

const (
	commit = "0123456789abcdef0123456789abcdef01234567"
	sumA   = "aa00000000000000000000000000000000000000000000000000000000000000"
	sumB   = "bb00000000000000000000000000000000000000000000000000000000000000"
	sumR   = "cc00000000000000000000000000000000000000000000000000000000000000"
)

func build() Build {
	return Build{Version: "v1.2.3", Commit: commit, BazelVersion: "7.7.1", ModuleLock: File{Path: "MODULE.bazel.lock", Absent: true},
		Module: File{Path: "MODULE.bazel", SHA256: sumB}, Report: File{Path: "reports/matrix.json", SHA256: sumR},
		BuilderID: "https://example.invalid/make-release"}
}

// TestStatementRoundTrip: a written statement reads back, validates, names the subject, the commit, the
// Bazel version and the digests of MODULE.bazel and the report; MODULE.bazel.lock is recorded absent.
func TestStatementRoundTrip(t *testing.T) {
	st, err := Statement(Subject{Name: "linux_amd64/confine", SHA256: sumA}, build())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"_type": "https://in-toto.io/Statement/v1"`, `"predicateType": "https://slsa.dev/provenance/v1"`,
		`"gitCommit": "` + commit + `"`, `"bazelVersion": "7.7.1"`, `"buildDefinition"`, `"resolvedDependencies"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("statement lacks %s:\n%s", want, b)
		}
	}
	again, _ := Marshal(st)
	if string(again) != string(b) {
		t.Errorf("Marshal of one statement gave different bytes:\n%s\n%s", b, again)
	}
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadStatement(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(back, "linux_amd64/confine", sumA, commit[:7]); err != nil {
		t.Fatalf("the statement does not check against its own subject: %v", err)
	}
	p, err := Provenance(back)
	if err != nil {
		t.Fatal(err)
	}
	if got := Dependency(p, DepReport); got != sumR {
		t.Errorf("report digest %q, want %s", got, sumR)
	}
	if got := Dependency(p, DepModule); got != sumB {
		t.Errorf("MODULE.bazel digest %q, want %s", got, sumB)
	}
	if got := Dependency(p, DepModuleLock); got != "" {
		t.Errorf("absent MODULE.bazel.lock has digest %q", got)
	}
	if !strings.Contains(string(b), `"absent": true`) {
		t.Errorf("the absent lock file is not recorded as absent:\n%s", b)
	}
}

// TestCheckFails: a statement checked against another digest, another name or another commit fails, each
// with a line that says what the statement says instead.
func TestCheckFails(t *testing.T) {
	st, err := Statement(Subject{Name: "linux_amd64/confine", SHA256: sumA}, build())
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ name, sum, commit, want string }{
		"another digest": {"linux_amd64/confine", sumB, "", "the statement is for sha256 " + sumA},
		"another name":   {"linux_arm64/confine", sumA, "", `is for "linux_amd64/confine"`},
		"another commit": {"linux_amd64/confine", sumA, "fedcba9", "the provenance says commit " + commit},
	} {
		err := Check(st, c.name, c.sum, c.commit)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", name, err, c.want)
		}
	}
}

func TestStatementRefusesBadInput(t *testing.T) {
	b := build()
	b.Commit = "abc1234"
	if _, err := Statement(Subject{Name: "x", SHA256: sumA}, b); err == nil {
		t.Error("an abbreviated commit was accepted")
	}
	if _, err := Statement(Subject{Name: "x", SHA256: "nothex"}, build()); err == nil {
		t.Error("a non-hex sha256 was accepted")
	}
	path := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(path, []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[]}`), 0o644)
	if _, err := ReadStatement(path); err == nil {
		t.Error("a statement without a subject was read")
	}
}

// TestSignVerify: a signature over the checksums file verifies with the signer's public key and fails,
// one line each, with another key, after the file changed, when the signature is missing or garbage.
func TestSignVerify(t *testing.T) {
	dir := t.TempDir()
	sums := filepath.Join(dir, ChecksumsFile)
	if err := WriteChecksums(sums, map[string]string{"linux_amd64/confine": sumA, "linux_arm64/confine": sumB}); err != nil {
		t.Fatal(err)
	}
	priv, pub, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sig, pub2, err := SignFile(priv, sums)
	if err != nil {
		t.Fatal(err)
	}
	if string(pub) != string(pub2) {
		t.Fatalf("SignFile's public key differs from GenerateKey's")
	}
	sigPath := filepath.Join(dir, SignatureFile)
	if err := os.WriteFile(sigPath, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := VerifyFile(pub, sums, sigPath); err != nil {
		t.Fatalf("a good signature does not verify: %v", err)
	}
	got, err := ReadChecksums(sums)
	if err != nil || got["linux_amd64/confine"] != sumA || len(got) != 2 {
		t.Fatalf("ReadChecksums: %v %v", got, err)
	}

	_, otherPub, _ := GenerateKey()
	oneLine := func(name string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", name, err, want)
		}
	}
	oneLine("wrong key", VerifyFile(otherPub, sums, sigPath), "does not verify")

	tampered := filepath.Join(dir, "tampered.txt")
	b, _ := os.ReadFile(sums)
	os.WriteFile(tampered, []byte(strings.Replace(string(b), sumA, sumB, 1)), 0o644)
	oneLine("changed file", VerifyFile(pub, tampered, sigPath), "does not verify")

	err = VerifyFile(pub, sums, filepath.Join(dir, "nope.sig"))
	if !errors.Is(err, ErrNoSignature) {
		t.Errorf("missing signature: %v, want ErrNoSignature", err)
	}
	garbage := filepath.Join(dir, "garbage.sig")
	os.WriteFile(garbage, []byte("not base64 !!"), 0o644)
	oneLine("garbage signature", VerifyFile(pub, sums, garbage), "not a base64 signature")
}

func TestReadChecksumsRefusesMalformed(t *testing.T) {
	for name, body := range map[string]string{
		"short sum": "abc  x\n",
		"twice":     sumA + "  x\n" + sumB + "  x\n",
		"no name":   sumA + "\n",
	} {
		p := filepath.Join(t.TempDir(), "c.txt")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := ReadChecksums(p); err == nil {
			t.Errorf("%s: accepted %q", name, body)
		}
	}
}

// TestSignatureIsPlainECDSA: the signature is what cosign sign-blob --key writes and verify-blob --key
// checks, plain ECDSA P-256 over SHA-256 in ASN.1 DER, base64: openssl, an independent implementation,
// verifies it with the PEM public key, and refuses it over a changed file. Skips without openssl.
func TestSignatureIsPlainECDSA(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("skipped: needs openssl to check the signature with an independent implementation")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, ChecksumsFile)
	if err := WriteChecksums(file, map[string]string{"linux_amd64/confine": sumA}); err != nil {
		t.Fatal(err)
	}
	priv, pub, _ := GenerateKey()
	sig, _, err := SignFile(priv, file)
	if err != nil {
		t.Fatal(err)
	}
	der, err := base64.StdEncoding.DecodeString(string(sig))
	if err != nil {
		t.Fatal(err)
	}
	pubPath, derPath := filepath.Join(dir, "cosign.pub"), filepath.Join(dir, "sig.der")
	os.WriteFile(pubPath, pub, 0o644)
	os.WriteFile(derPath, der, 0o644)
	if b, err := exec.Command(openssl, "dgst", "-sha256", "-verify", pubPath, "-signature", derPath, file).CombinedOutput(); err != nil {
		t.Fatalf("openssl does not verify the signature: %v\n%s", err, b)
	}
	changed := filepath.Join(dir, "changed.txt")
	os.WriteFile(changed, []byte(sumB+"  linux_amd64/confine\n"), 0o644)
	if b, err := exec.Command(openssl, "dgst", "-sha256", "-verify", pubPath, "-signature", derPath, changed).CombinedOutput(); err == nil {
		t.Fatalf("openssl verified the signature over a changed file:\n%s", b)
	}
}

// TestEncryptedKey: a key encrypted as `cosign generate-key-pair` writes it ("ENCRYPTED SIGSTORE PRIVATE
// KEY") signs with $COSIGN_PASSWORD, and a wrong password is an error, not a signature.
func TestEncryptedKey(t *testing.T) {
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(),
		func(bool) ([]byte, error) { return []byte("correct horse"), nil })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(priv), "ENCRYPTED SIGSTORE PRIVATE KEY") {
		t.Fatalf("not a cosign-encrypted key:\n%s", priv)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, ChecksumsFile)
	if err := WriteChecksums(file, map[string]string{"x": sumA}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COSIGN_PASSWORD", "wrong")
	if _, _, err := SignFile(priv, file); err == nil {
		t.Fatal("signed with the wrong password")
	}
	t.Setenv("COSIGN_PASSWORD", "correct horse")
	sig, _, err := SignFile(priv, file)
	if err != nil {
		t.Fatal(err)
	}
	sigPath := filepath.Join(dir, SignatureFile)
	os.WriteFile(sigPath, sig, 0o644)
	if err := VerifyFile(pub, file, sigPath); err != nil {
		t.Fatalf("the signature of the encrypted key does not verify: %v", err)
	}
}
