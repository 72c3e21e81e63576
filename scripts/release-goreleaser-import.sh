#!/usr/bin/env bash
# scripts/release-goreleaser-import.sh build [FLAGS...] -o PATH MAIN: the `tool` of .goreleaser.yaml's
# builds. goreleaser OSS calls it where it would call `go build`; it compiles nothing: it copies the
# launcher Bazel built (the build of record, `make build`) for the target goreleaser asks for
# (GOOS/GOARCH from the environment, `-tags=wsl2` for the WSL2 build) from $CONFINE_DIST (default
# dist/bin)/<platform>/confine to PATH, and checks the copy's sha256. goreleaser's prebuilt builder,
# which does this natively, is GoReleaser Pro only.
set -euo pipefail
out= kind=linux
while [ $# -gt 0 ]; do
  case $1 in
    -o) out=$2; shift ;;
    -tags=*wsl2*) kind=wsl2 ;;
  esac
  shift
done
[ -n "$out" ] || { echo "release-goreleaser-import: no -o PATH in the build command" >&2; exit 2; }
[ "${GOOS:-}" = linux ] || { echo "release-goreleaser-import: GOOS ${GOOS:-unset}: confine ships linux only" >&2; exit 2; }
src=${CONFINE_DIST:-dist/bin}/${kind}_${GOARCH:?GOARCH unset}/confine
[ -f "$src" ] || { echo "release-goreleaser-import: $src is missing: run \`make build\` first" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
cp -f "$src" "$out" && chmod 0755 "$out"
want=$(sha256sum <"$src") got=$(sha256sum <"$out")
[ "$want" = "$got" ] || { echo "release-goreleaser-import: $out differs from $src after the copy" >&2; exit 1; }
