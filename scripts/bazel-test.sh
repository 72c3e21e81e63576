#!/usr/bin/env bash
# scripts/bazel-test.sh: the Bazel half of `make test` (through tools/bazel, offline when no Bazel of the
# pinned version is installed). Each step prints what it checks and how long it took; any failure stops
# the run with a line starting "FAIL:".
#   1. gazelle -mode=diff: the checked-in BUILD files match the Go sources.
#   2. parity: every Go package that `go test` would test has a go_test, with at least its test files.
#   3. offline: the network namespace Bazel runs in has only loopback (offline bootstrap only).
#   4. bazel test //...: every go_test, plus the release artifact checks (//release/artifacts), -c fastbuild.
#   5. //:release_binaries in -c opt, checked by the same artifact tests (stripped in every compilation mode).
#   6. reproducibility: //:release_binaries built clean in a fresh output base, from a copy of the tree at
#      another path, is byte-identical to the binaries of step 4's build. Its time is the cold build.
#   7. edit: in that copy, one line of sandbox/ is changed (sandbox/launch/build_default.go: wsl2Build =
#      true); the Linux artifacts must change and the WSL2 ones, which do not compile that file, must not.
#      The line is put back and the artifacts must be the step-6 ones again.
# Environment: CACHE and OUT as in the Makefile.
set -euo pipefail
cd "$(dirname "$0")/.."
WS=$PWD
CACHE=${CACHE:-$HOME/.cache/confine}
OUT=${OUT:-$WS/out}
mkdir -p "$OUT"
# One version stamp for every build below (the copy in step 6 has no .git to compute it from).
CONFINE_VERSION=${CONFINE_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}
export CONFINE_VERSION
fail() { echo "FAIL: $*" >&2; exit 1; }
T=$(date +%s)
step() { echo "== [$(( $(date +%s) - T ))s] $*"; }

step "1. BUILD files up to date (gazelle -mode=diff)"
if ! tools/bazel run //:gazelle -- -mode=diff >"$OUT/bazel-gazelle-diff.txt" 2>&1; then
  grep -E '^[-+@]' "$OUT/bazel-gazelle-diff.txt" | head -40 >&2 || tail -20 "$OUT/bazel-gazelle-diff.txt" >&2
  fail "BUILD.bazel files are stale: run \`make gazelle\` and commit them (full output: $OUT/bazel-gazelle-diff.txt)"
fi

step "2. bazel test runs the tests go test runs"
go_pkgs=$OUT/bazel-parity-go.txt bz_pkgs=$OUT/bazel-parity-bazel.txt
go_files=$OUT/bazel-parity-go-files.txt bz_files=$OUT/bazel-parity-bazel-files.txt
: >"$go_pkgs"; : >"$go_files"
while IFS= read -r mod; do
  (cd "$mod" && go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{"\t"}}{{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}{{end}}' ./...) |
    while IFS=$'\t' read -r dir files; do
      [ -n "$dir" ] || continue
      rel=${dir#"$WS"/}
      echo "$rel" >>"$go_pkgs"
      for f in $files; do echo "$rel/$f" >>"$go_files"; done
    done
done < <(go list -m -f '{{.Dir}}')
sort -o "$go_pkgs" "$go_pkgs"; sort -o "$go_files" "$go_files"
tools/bazel query 'kind(go_test, //...)' --output=package 2>/dev/null | sort >"$bz_pkgs"
tools/bazel query 'labels(srcs, kind(go_test, //...))' 2>/dev/null |
  sed -E 's|^//||; s|:|/|; s|^/||' | sort >"$bz_files"
diff -u "$go_pkgs" "$bz_pkgs" >&2 || fail "packages with tests: go list (-) and bazel go_test (+) differ"
missing=$(comm -23 "$go_files" "$bz_files")
[ -z "$missing" ] || fail "test files go test compiles but no go_test lists: $missing"
echo "$(wc -l <"$bz_pkgs") packages, $(wc -l <"$go_files") test files: the same in go test and bazel test"

step "3. offline: the build's network namespace"
if CONFINE_BAZEL=real tools/bazel --version >/dev/null 2>&1; then
  echo "skipped: an installed Bazel is in use (not the offline bootstrap); this build may use the network"
else
  links=$(ip -n confine-bazel -o link show) || fail "no network namespace confine-bazel (tools/bazel makes it)"
  others=$(printf '%s\n' "$links" | awk -F': ' '{print $2}' | grep -vx lo || true)
  [ -z "$others" ] || fail "the build's network namespace has interfaces besides lo: $others"
  routes=$(ip -n confine-bazel route show; ip -n confine-bazel -6 route show | grep -v '^::1 ' || true)
  [ -z "$routes" ] || fail "the build's network namespace has routes: $routes"
  echo "only lo, no routes: any download inside the build fails"
fi

step "4. bazel test //... (-c fastbuild)"
tools/bazel test //...

step "5. release artifacts in -c opt"
# Built with -c opt and checked by the same test run on the host (go test): this needs only the four
# platforms' standard libraries in opt, not the host's and every test package's too.
BAZEL_BUILD_FLAGS="-c opt" scripts/bazel-dist.sh "$OUT/dist-opt"
(cd release && CONFINE_DIST="$OUT/dist-opt" go test -count=1 -v -run 'TestReleaseBinaries|TestWSL2|TestVersionStamped' ./artifacts/) ||
  fail "the -c opt artifacts failed their checks (above)"

step "6. reproducibility: a clean build from a copy of the tree in a fresh output base"
# scripts/release-repro.sh builds both and names the differing ELF sections on a mismatch; it keeps the
# copy and its output base for step 7, and the trap here removes them. One directory per checkout: two
# checkouts sharing $CACHE (git worktrees) ran into each other's copy when it was one fixed path.
R=$CACHE/bazel/work/repro-$(printf %s "$WS" | sha256sum | cut -c1-12)
copy=$R/ws fresh=$R/output-base
cleanup() {
  [ -x "$copy/tools/bazel" ] && "$copy/tools/bazel" --output_base="$fresh" shutdown >/dev/null 2>&1 || true
  chmod -R u+w "$R" 2>/dev/null || true; rm -rf "$R"
}
trap cleanup EXIT
REPRO_WORK=$R REPRO_KEEP=1 scripts/release-repro.sh "$OUT/repro/a" "$OUT/repro/b" ||
  fail "release binaries differ between the two clean builds (above)"

step "7. editing one line of sandbox/ changes the Linux artifacts, and only those"
f=$copy/sandbox/launch/build_default.go
grep -qx 'const wsl2Build = false' "$f" ||
  fail "the line this check edits ('const wsl2Build = false') is gone from sandbox/launch/build_default.go: update step 7"
sed -i 's/^const wsl2Build = false$/const wsl2Build = true/' "$f"
(cd "$copy" && scripts/bazel-dist.sh "$OUT/repro/c" --output_base="$fresh") >"$OUT/repro-c.txt"
sed -i 's/^const wsl2Build = true$/const wsl2Build = false/' "$f"
(cd "$copy" && scripts/bazel-dist.sh "$OUT/repro/d" --output_base="$fresh") >"$OUT/repro-d.txt"
cat "$OUT/repro-c.txt"
while read -r platform _ sum; do
  edited=$(awk -v p="$platform" '$1 == p {print $3}' "$OUT/repro-c.txt")
  case $platform in
    wsl2_*) [ "$edited" = "$sum" ] || fail "$platform changed, but it does not compile the edited file" ;;
    *) [ "$edited" != "$sum" ] || fail "$platform did not change after editing sandbox/launch/build_default.go" ;;
  esac
done < <(tail -n +2 "$OUT/repro-b.txt")
diff <(tail -n +2 "$OUT/repro-b.txt") <(tail -n +2 "$OUT/repro-d.txt") >&2 ||
  fail "putting the line back did not give the same artifacts again"
echo "edit: linux_* changed, wsl2_* unchanged; reverted: identical to the clean build again"
step "done"
