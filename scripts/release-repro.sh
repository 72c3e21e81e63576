#!/usr/bin/env bash
# scripts/release-repro.sh A B: the reproducibility check of the build of record. Builds
# //:release_binaries in this tree into A/<platform>/confine (scripts/bazel-dist.sh), then again from a
# copy of the tree at another path, in a fresh, empty output base, into B, and compares them. On any
# difference it names the differing ELF sections of each launcher (`confine-release sections`) and exits 1.
# Prints A's table (platform, bytes, sha256) and the cold build time. The copy and the output base live
# in $REPRO_WORK (default $CACHE/bazel/work/repro-<hash of this checkout's path>: the offline chroot sees
# $CACHE/bazel/work at the same path, and checkouts that share $CACHE must not clobber each other's); they
# are removed at exit unless REPRO_KEEP=1 (scripts/bazel-test.sh step 7 builds in them again and removes
# them itself). Environment: CACHE, OUT, CONFINE_VERSION as in scripts/bazel-test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
a=$(realpath -m "$1") b=$(realpath -m "$2")
CACHE=${CACHE:-$HOME/.cache/confine}
OUT=${OUT:-$PWD/out}
R=${REPRO_WORK:-$CACHE/bazel/work/repro-$(printf %s "$PWD" | sha256sum | cut -c1-12)}
copy=$R/ws fresh=$R/output-base
# The copy has no .git to compute the stamp from: one stamp for both builds.
CONFINE_VERSION=${CONFINE_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}
export CONFINE_VERSION
rmrf() { chmod -R u+w "$@" 2>/dev/null || true; rm -rf "$@"; }
cleanup() {
  [ -x "$copy/tools/bazel" ] && "$copy/tools/bazel" --output_base="$fresh" shutdown >/dev/null 2>&1 || true
  rmrf "$R"
}
[ "${REPRO_KEEP:-}" = 1 ] || trap cleanup EXIT
cleanup
mkdir -p "$copy" "$OUT"
git ls-files -co --exclude-standard -z | tar -c --null -T - --ignore-failed-read -f - 2>/dev/null | tar -x -C "$copy"
scripts/bazel-dist.sh "$a" >"$OUT/repro-a.txt"
t=$(date +%s)
(cd "$copy" && scripts/bazel-dist.sh "$b" --output_base="$fresh") >"$OUT/repro-b.txt"
cold=$(( $(date +%s) - t ))
cat "$OUT/repro-a.txt"
if ! diff <(tail -n +2 "$OUT/repro-a.txt") <(tail -n +2 "$OUT/repro-b.txt") >&2; then
  while read -r platform _; do
    (cd release && go run ./cmd/confine-release sections "$a/$platform/confine" "$b/$platform/confine") >&2 || true
  done < <(tail -n +2 "$OUT/repro-a.txt")
  echo "FAIL: release binaries differ between the two clean builds (above: $PWD vs a copy in a fresh output base)" >&2
  exit 1
fi
echo "reproducible: $(( $(wc -l <"$OUT/repro-a.txt") - 1 )) release binaries byte-identical (cold build ${cold}s)"
