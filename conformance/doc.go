// Package conformance is the confine conformance suite: named security cases (CASES.md) that run against a real
// confine binary on the host kernel and on every kernel of the VM matrix, the reviewed expectations they are
// gated on (expected.yaml), and the kernel × case report. The runner is cmd/confine-conformance; everything else
// is internal. This package holds only the repository-level checks (the CI workflow) in its tests.
package conformance
