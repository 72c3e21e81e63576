package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/confine-dev/confine/release/attest"
	"github.com/confine-dev/confine/release/pack"
	"github.com/confine-dev/confine/release/platforms"
	"github.com/confine-dev/confine/release/verify"
)

// The checks `verify --provenance` and `verify --signature` add, one line per artifact each.
const (
	checkProvenance = "provenance"
	checkSigned     = "signature"
)

// artifactName is a launcher's name in statements and in checksums.txt: "<platform>/confine".
func artifactName(platform string) string { return platform + "/confine" }

// statementName is the file of a launcher's statement under a provenance directory, and its name in
// checksums.txt under "provenance/".
func statementName(platform string) string { return platform + ".intoto.json" }

// attestFlags are the inputs of `verify --provenance/--signature`.
type attestFlags struct {
	provenance, signature, key, checksums string
}

func (a *attestFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.provenance, "provenance", "", "check each artifact against its in-toto statement `DIR`/<platform>.intoto.json (make release: out/release/provenance)")
	fs.StringVar(&a.signature, "signature", "", "check the cosign sign-blob signature `FILE` over the checksums file, and each artifact against the checksums")
	fs.StringVar(&a.key, "key", "", "--signature: the PEM public key (cosign.pub); default: cosign.pub beside the signature")
	fs.StringVar(&a.checksums, "checksums", "", "--signature: the signed checksums file; default: the signature's path without .sig")
}

// paths fills in the defaults of --key and --checksums.
func (a *attestFlags) paths() (checksums, key string) {
	checksums, key = a.checksums, a.key
	if checksums == "" {
		checksums = strings.TrimSuffix(a.signature, ".sig")
	}
	if key == "" {
		key = filepath.Join(filepath.Dir(a.signature), attest.PublicKeyFile)
	}
	return checksums, key
}

// provenanceResult checks the launcher of platform at path (sha256 sum) against its statement in dir:
// the statement's subject is this name and this sha256, its predicate SLSA provenance v1 naming a source
// commit that starts with commit ("" skips that).
func provenanceResult(dir, platform, sum, commit string) verify.Result {
	r := verify.Result{Check: checkProvenance}
	path := filepath.Join(dir, statementName(platform))
	st, err := attest.ReadStatement(path)
	if err != nil {
		r.Detail = fmt.Sprintf("%s: %v", artifactName(platform), err)
		return r
	}
	if err := attest.Check(st, artifactName(platform), sum, commit); err != nil {
		r.Detail = fmt.Sprintf("%s: %v (%s)", artifactName(platform), err, path)
		return r
	}
	p, _ := attest.Provenance(st)
	report := attest.Dependency(p, attest.DepReport)
	if report == "" {
		report = "none (not gated)"
	}
	r.OK = true
	r.Detail = fmt.Sprintf("%s: %s is for sha256 %s; conformance report %s", artifactName(platform), path, sum, report)
	return r
}

// signatureCheck verifies the signature once; results then names each artifact against the checksums.
type signatureCheck struct {
	checksums string
	sums      map[string]string // name → sha256 from the verified checksums file; nil when it did not verify
	err       error             // why the checksums file cannot be trusted: one line
}

func checkSignature(a attestFlags) signatureCheck {
	checksums, key := a.paths()
	sc := signatureCheck{checksums: checksums}
	pub, err := os.ReadFile(key)
	if err != nil {
		sc.err = fmt.Errorf("the public key: %w", err)
		return sc
	}
	if err := attest.VerifyFile(pub, checksums, a.signature); err != nil {
		sc.err = err // one line; attest.ErrNoSignature when the signature file is missing
		return sc
	}
	if sc.sums, err = attest.ReadChecksums(checksums); err != nil {
		sc.err = err
	}
	return sc
}

// result is the signature line of the artifact name whose sha256 is sum.
func (sc signatureCheck) result(name, sum string) verify.Result {
	r := verify.Result{Check: checkSigned}
	switch want, listed := sc.sums[name]; {
	case sc.err != nil:
		r.Detail = fmt.Sprintf("%s: %v", name, sc.err)
	case !listed:
		r.Detail = fmt.Sprintf("%s: not listed in the signed %s", name, sc.checksums)
	case want != sum:
		r.Detail = fmt.Sprintf("%s: sha256 %s, the signed %s lists %s (the artifact changed)", name, sum, sc.checksums, want)
	default:
		r.OK = true
		r.Detail = fmt.Sprintf("%s: sha256 %s as in the signed %s", name, sum, sc.checksums)
	}
	return r
}

// attestResults are the provenance and signature lines of one launcher (none when neither flag is set).
// A statement is itself checked against the signed checksums when both are given.
func attestResults(a attestFlags, sc *signatureCheck, platform, path, commit string) []verify.Result {
	if a.provenance == "" && a.signature == "" {
		return nil
	}
	sum, _, err := pack.SHA256(path)
	if err != nil {
		var rs []verify.Result
		for _, c := range []string{checkProvenance, checkSigned} {
			rs = append(rs, verify.Result{Check: c, Detail: fmt.Sprintf("%s: %v", artifactName(platform), err)})
		}
		return rs
	}
	var rs []verify.Result
	if a.provenance != "" {
		rs = append(rs, provenanceResult(a.provenance, platform, sum, commit))
	}
	if a.signature != "" {
		rs = append(rs, sc.result(artifactName(platform), sum))
		if a.provenance != "" {
			st := filepath.Join(a.provenance, statementName(platform))
			if ssum, _, err := pack.SHA256(st); err == nil {
				rs = append(rs, sc.result("provenance/"+statementName(platform), ssum))
			}
		}
	}
	return rs
}

// signFlags are the inputs of the provenance and signing stage of `release`.
type signFlags struct {
	sourceCommit, key, builderID, bazelVersion, module, moduleLock string
}

func (s *signFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.sourceCommit, "source-commit", "", "the full git commit the artifacts were built from (git rev-parse HEAD), for the provenance")
	fs.StringVar(&s.key, "signing-key", "", "the PEM ECDSA private key that signs checksums.txt (cosign generate-key-pair; $COSIGN_PASSWORD); default: a key made for this run, in `DIR`/signing")
	fs.StringVar(&s.builderID, "builder-id", "local:make-release", "the provenance's builder id (CI: the workflow run's URL)")
	fs.StringVar(&s.bazelVersion, "bazelversion", ".bazelversion", "the file naming the Bazel version of the build of record")
	fs.StringVar(&s.module, "module", "MODULE.bazel", "MODULE.bazel, whose sha256 the provenance records")
	fs.StringVar(&s.moduleLock, "module-lock", "MODULE.bazel.lock", "MODULE.bazel.lock, whose sha256 the provenance records (or that it is absent)")
}

// build is the attest.Build of a release whose gated report has sha256 reportSHA256 ("" not gated).
func (s *signFlags) build(rf *releaseFlags, reportSHA256 string) (attest.Build, error) {
	b := attest.Build{Version: rf.version, Commit: s.sourceCommit, BuilderID: s.builderID}
	bv, err := os.ReadFile(s.bazelVersion)
	if err != nil {
		return b, fmt.Errorf("the Bazel version: %w", err)
	}
	b.BazelVersion = strings.TrimSpace(string(bv))
	if b.Module, err = attest.HashFile(s.module); err != nil {
		return b, err
	}
	if b.ModuleLock, err = attest.HashFile(s.moduleLock); err != nil {
		return b, err
	}
	if reportSHA256 != "" {
		b.Report = attest.File{Path: rf.report, SHA256: reportSHA256}
	}
	return b, nil
}

// writeAttestations writes, under out: provenance/<platform>.intoto.json for every launcher of ps,
// checksums.txt (each launcher as <platform>/confine and each statement as provenance/<file>), and,
// when signing, its signature checksums.txt.sig and the public key cosign.pub. Without --signing-key
// it makes a key pair for this run in out/signing (the private key mode 0600) when ephemeral is set
// (make release), and otherwise signs nothing and says so (CI signs keyless with cosign).
func writeAttestations(w io.Writer, out string, rf *releaseFlags, s *signFlags, ps []platforms.Platform, reportSHA256 string, ephemeral bool) error {
	b, err := s.build(rf, reportSHA256)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, "provenance")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sums := map[string]string{}
	for _, p := range ps {
		sum, _, err := pack.SHA256(rf.binary(p.Name))
		if err != nil {
			return err
		}
		st, err := attest.Statement(attest.Subject{Name: artifactName(p.Name), SHA256: sum}, b)
		if err != nil {
			return err
		}
		js, err := attest.Marshal(st)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, statementName(p.Name))
		if err := os.WriteFile(path, js, 0o644); err != nil {
			return err
		}
		sums[artifactName(p.Name)] = sum
		if sums["provenance/"+statementName(p.Name)], _, err = pack.SHA256(path); err != nil {
			return err
		}
		fmt.Fprintf(w, "   %-11s %s (sha256 %s)\n", p.Name, path, sum)
	}
	checksums := filepath.Join(out, attest.ChecksumsFile)
	if err := attest.WriteChecksums(checksums, sums); err != nil {
		return err
	}
	keyPath := s.key
	if keyPath == "" && !ephemeral {
		fmt.Fprintf(w, "   wrote %s; not signed here (no --signing-key): sign it keyless, `cosign sign-blob --bundle`\n", checksums)
		return nil
	}
	if keyPath == "" {
		priv, _, err := attest.GenerateKey()
		if err != nil {
			return err
		}
		keyPath = filepath.Join(out, "signing", "cosign.key")
		if err := os.MkdirAll(filepath.Dir(keyPath), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(keyPath, priv, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(w, "   no --signing-key: signing with a key made for this run (%s); it proves the files, not who made them\n", keyPath)
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return fmt.Errorf("the signing key: %w", err)
	}
	sig, pub, err := attest.SignFile(key, checksums)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, attest.SignatureFile), sig, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, attest.PublicKeyFile), pub, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "   signed %s: %s, public key %s\n", checksums, filepath.Join(out, attest.SignatureFile), filepath.Join(out, attest.PublicKeyFile))
	return nil
}

func runProvenance(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("provenance", flag.ContinueOnError)
	var rf releaseFlags
	var g gateFlags
	var sf signFlags
	rf.register(fs)
	g.register(fs)
	sf.register(fs)
	out := fs.String("out", "", "the `DIR` to write provenance/, checksums.txt (and with --signing-key its signature and cosign.pub) into")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required(fs, "version", "source-commit", "out"); err != nil {
		return err
	}
	ps, err := rf.platforms()
	if err != nil {
		return err
	}
	src, err := gatedSource(&rf, g, ps) // a report goes into the provenance only once the gate passes it
	if err != nil {
		return err
	}
	return writeAttestations(stdout, *out, &rf, &sf, ps, src.ReportSHA256, false)
}
