// Package attest writes and checks what a release says about where each launcher came from: one in-toto
// Statement (https://in-toto.io/Statement/v1) per artifact carrying an SLSA provenance v1 predicate
// (https://slsa.dev/provenance/v1), built with in-toto's Go bindings (github.com/in-toto/attestation), and
// a signature over the release's checksums file in cosign's sign-blob format, made and checked with
// sigstore's signature package (github.com/sigstore/sigstore). Keyless signing (cosign with a CI
// workflow's OIDC identity) is done by the cosign tool in .github/workflows/release.yml, not here.
package attest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// PredicateType is the SLSA provenance v1 predicate type every statement carries.
const PredicateType = "https://slsa.dev/provenance/v1"

// BuildType names how confine's launchers are built: Bazel's //:release_binaries from the tagged commit
// (docs/bazel.md), checked by confine-release (release/README.md#provenance).
const BuildType = "https://github.com/confine-dev/confine/blob/main/release/README.md#provenance"

// Repository is the source repository a statement names with the commit.
const Repository = "git+https://github.com/confine-dev/confine"

// Names of the resolved dependencies a statement lists besides the source commit.
const (
	DepModuleLock = "MODULE.bazel.lock"
	DepModule     = "MODULE.bazel"
	DepReport     = "conformance report"
)

// File is a dependency identified by a file's path and its sha256 (hex). A zero SHA256 with Absent set
// says the file does not exist in the tree (it is recorded as absent, not left out silently).
type File struct {
	Path   string
	SHA256 string
	Absent bool
}

// HashFile returns the File for path: its sha256, or Absent when it does not exist. Errors: any other
// read error.
func HashFile(path string) (File, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return File{Path: path, Absent: true}, nil
	}
	if err != nil {
		return File{}, fmt.Errorf("attest: %w", err)
	}
	sum := sha256.Sum256(b)
	return File{Path: path, SHA256: hex.EncodeToString(sum[:])}, nil
}

// Build is what every statement of one release records.
type Build struct {
	Version string // the release stamp, e.g. "v1.2.0"
	Commit  string // the full git commit hex (40 characters) the artifacts were built from
	// BazelVersion is .bazelversion's content, the Bazel the build of record ran.
	BazelVersion string
	ModuleLock   File // MODULE.bazel.lock (absent in a tree that builds with --lockfile_mode=off)
	Module       File // MODULE.bazel
	// Report is the conformance report (reports/matrix.json) the release was gated on; its zero value
	// means the release was not gated, and the statement says so ("gated": false).
	Report File
	// BuilderID names who built: the workflow run in CI, "make release" on a host otherwise.
	BuilderID string
}

// Subject is one artifact: its name in the release (e.g. "linux_amd64/confine") and its sha256 (hex).
type Subject struct {
	Name, SHA256 string
}

// Statement returns the in-toto statement for sub: subject sub, SLSA provenance v1 predicate naming the
// source commit, the Bazel version, and the digests of MODULE.bazel(.lock) and of the gated report.
// Errors: b.Commit is not 40 hex characters; a digest is not sha256 hex; the statement does not validate.
func Statement(sub Subject, b Build) (*intoto.Statement, error) {
	if !isHex(b.Commit, 40) {
		return nil, fmt.Errorf("attest: commit %q is not a full 40-hex git commit", b.Commit)
	}
	if !isHex(sub.SHA256, 64) {
		return nil, fmt.Errorf("attest: %s: sha256 %q is not 64 hex characters", sub.Name, sub.SHA256)
	}
	deps := []*intoto.ResourceDescriptor{{
		Uri:    Repository + "@" + b.Version,
		Digest: map[string]string{"gitCommit": b.Commit},
	}}
	for _, d := range []struct {
		name string
		f    File
	}{{DepModuleLock, b.ModuleLock}, {DepModule, b.Module}, {DepReport, b.Report}} {
		switch {
		case d.f.Absent:
			a, _ := structpb.NewStruct(map[string]any{"absent": true})
			deps = append(deps, &intoto.ResourceDescriptor{Name: d.name, Annotations: a})
		case d.f.SHA256 != "":
			deps = append(deps, &intoto.ResourceDescriptor{Name: d.name, Uri: d.f.Path,
				Digest: map[string]string{"sha256": d.f.SHA256}})
		}
	}
	ext, err := structpb.NewStruct(map[string]any{"version": b.Version, "artifact": sub.Name})
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	internal, err := structpb.NewStruct(map[string]any{"bazelVersion": b.BazelVersion, "gated": b.Report.SHA256 != ""})
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	pred := &slsa.Provenance{
		BuildDefinition: &slsa.BuildDefinition{BuildType: BuildType, ExternalParameters: ext,
			InternalParameters: internal, ResolvedDependencies: deps},
		RunDetails: &slsa.RunDetails{Builder: &slsa.Builder{Id: b.BuilderID}},
	}
	if err := pred.Validate(); err != nil {
		return nil, fmt.Errorf("attest: provenance of %s: %w", sub.Name, err)
	}
	pj, err := protojson.Marshal(pred)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	predStruct := &structpb.Struct{}
	if err := protojson.Unmarshal(pj, predStruct); err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	st := &intoto.Statement{
		Type:          intoto.StatementTypeUri,
		Subject:       []*intoto.ResourceDescriptor{{Name: sub.Name, Digest: map[string]string{"sha256": sub.SHA256}}},
		PredicateType: PredicateType,
		Predicate:     predStruct,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("attest: statement of %s: %w", sub.Name, err)
	}
	return st, nil
}

// Marshal returns st as JSON indented by two spaces with a final newline, field names as the in-toto and
// SLSA specs spell them ("_type", "predicateType", "buildDefinition"). The same statement gives the same
// bytes: protojson's own indentation varies on purpose from build to build, so it is re-indented here.
func Marshal(st *intoto.Statement) ([]byte, error) {
	b, err := protojson.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// ReadStatement reads the statement at path. Errors: unreadable; not a statement (protojson rejects
// unknown fields); it does not validate (no subject, no digest, no predicate).
func ReadStatement(path string) (*intoto.Statement, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	st := &intoto.Statement{}
	if err := protojson.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("%s is not an in-toto statement: %w", path, err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// Provenance decodes st's predicate as SLSA provenance v1. Errors: another predicate type; a predicate
// that is not provenance v1 or does not validate.
func Provenance(st *intoto.Statement) (*slsa.Provenance, error) {
	if st.GetPredicateType() != PredicateType {
		return nil, fmt.Errorf("predicate type %q, want %q", st.GetPredicateType(), PredicateType)
	}
	b, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return nil, err
	}
	p := &slsa.Provenance{}
	if err := protojson.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("the predicate is not SLSA provenance v1: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("the provenance does not validate: %w", err)
	}
	return p, nil
}

// Check reports whether st is the provenance of an artifact named name whose sha256 is sum, built from a
// commit that starts with commit ("" skips that). The error is one line: what the statement says instead.
func Check(st *intoto.Statement, name, sum, commit string) error {
	if len(st.GetSubject()) != 1 {
		return fmt.Errorf("the statement has %d subjects, want 1", len(st.GetSubject()))
	}
	s := st.GetSubject()[0]
	if s.GetName() != name {
		return fmt.Errorf("the statement is for %q, not %q", s.GetName(), name)
	}
	if got := s.GetDigest()["sha256"]; got != sum {
		return fmt.Errorf("the artifact has sha256 %s, the statement is for sha256 %s", sum, got)
	}
	p, err := Provenance(st)
	if err != nil {
		return err
	}
	var src string
	for _, d := range p.GetBuildDefinition().GetResolvedDependencies() {
		if c, ok := d.GetDigest()["gitCommit"]; ok && strings.HasPrefix(d.GetUri(), Repository+"@") {
			src = c
		}
	}
	if src == "" {
		return fmt.Errorf("the provenance names no source commit of %s", Repository)
	}
	if commit != "" && !strings.HasPrefix(src, commit) {
		return fmt.Errorf("the provenance says commit %s, the release is %s", src, commit)
	}
	return nil
}

// Dependency returns the sha256 the provenance p records for the named resolved dependency (DepModuleLock,
// DepModule, DepReport), "" when it records none or records it absent.
func Dependency(p *slsa.Provenance, name string) string {
	for _, d := range p.GetBuildDefinition().GetResolvedDependencies() {
		if d.GetName() == name {
			return d.GetDigest()["sha256"]
		}
	}
	return ""
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && !bytes.ContainsAny([]byte(s), "ABCDEF")
}
