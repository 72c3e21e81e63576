#!/usr/bin/env bash
# scripts/release-goreleaser.sh [GORELEASER ARGS...]: run the goreleaser pinned in release/tools/go.mod
# (a `go tool` of that module, outside go.work) from the repository root, with the pinned
# cyclonedx-gomod on PATH for .goreleaser.yaml's SBOMs. Default arguments: release --snapshot --clean
# (offline; publishes nothing). Environment: CONFINE_VERSION (default git describe), CONFINE_DIST.
set -euo pipefail
cd "$(dirname "$0")/.."
tool() { (cd release/tools && GOWORK=off GOFLAGS=-mod=mod go tool -n "$1"); }
gr=$(tool goreleaser) cx=$(tool cyclonedx-gomod)
bin=$(mktemp -d); trap 'rm -rf "$bin"' EXIT
ln -s "$cx" "$bin/cyclonedx-gomod"
CONFINE_VERSION=${CONFINE_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}
CONFINE_ROOT=$PWD  # .goreleaser.yaml: the SBOM tool runs in goreleaser's dist folder
export CONFINE_VERSION CONFINE_ROOT
[ $# -gt 0 ] || set -- release --snapshot --clean
# GOPROXY=off: nothing goreleaser or the SBOM tool runs may fetch a module (the tools are built above).
PATH=$bin:$PATH GOPROXY=off "$gr" "$@"
