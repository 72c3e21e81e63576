#!/usr/bin/env bash
# scripts/bazel-test.sh: the Bazel half of `make test` (through tools/bazel, offline when no Bazel is
# installed):
#   1. bazel test //...             every go_test, plus the release artifact checks, in -c fastbuild;
#   2. the artifact checks again in -c opt (stripped in every compilation mode);
#   3. reproducibility: //:release_binaries built in a fresh, empty output base must be byte-identical
#      to the ones from the usual output base (sha256 compared). The fresh build is also the cold-build
#      time, printed.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-$HOME/.cache/confine}
OUT=${OUT:-$PWD/out}
ts() { date +%s; }

t=$(ts); echo "== bazel test //... (-c fastbuild)"
tools/bazel test //...
echo "== bazel test //... took $(( $(ts) - t ))s"

t=$(ts); echo "== release artifacts in -c opt"
tools/bazel test -c opt //release/artifacts:artifacts_test
echo "== -c opt took $(( $(ts) - t ))s"

echo "== reproducibility: a clean build in a fresh output base"
a=$OUT/repro/a b=$OUT/repro/b fresh=$CACHE/bazel/work/repro-output-base
rm -rf "$a" "$b"; chmod -R u+w "$fresh" 2>/dev/null || true; rm -rf "$fresh"
scripts/bazel-dist.sh "$a" >"$OUT/repro-a.txt"
t=$(ts)
scripts/bazel-dist.sh "$b" --output_base="$fresh" >"$OUT/repro-b.txt"
cold=$(( $(ts) - t ))
tools/bazel --output_base="$fresh" shutdown >/dev/null 2>&1 || true
chmod -R u+w "$fresh" 2>/dev/null || true; rm -rf "$fresh"
cat "$OUT/repro-a.txt"
if ! diff <(tail -n +2 "$OUT/repro-a.txt") <(tail -n +2 "$OUT/repro-b.txt"); then
  echo "FAIL: release binaries differ between two clean builds (above: usual output base vs fresh)" >&2
  exit 1
fi
n=$(( $(wc -l <"$OUT/repro-a.txt") - 1 ))
echo "reproducible: $n release binaries byte-identical across two output bases (cold build ${cold}s)"
