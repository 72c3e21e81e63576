#!/usr/bin/env bash
# scripts/bazel-dist.sh [DEST] [BAZEL STARTUP OPTIONS...]: `bazel build //:release_binaries` (through
# tools/bazel, so offline when no Bazel is installed), then copy each launcher to
# DEST/<platform>/confine (DEST defaults to dist/bin) and print its platform, size and sha256.
# Extra bazel build flags: BAZEL_BUILD_FLAGS (e.g. "-c opt").
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-dist/bin}; shift || true
B=(tools/bazel "$@")
# shellcheck disable=SC2086
"${B[@]}" build ${BAZEL_BUILD_FLAGS:-} //:release_binaries
# shellcheck disable=SC2086
execroot=$("${B[@]}" info ${BAZEL_BUILD_FLAGS:-} execution_root 2>/dev/null)
# shellcheck disable=SC2086
mapfile -t files < <("${B[@]}" cquery ${BAZEL_BUILD_FLAGS:-} --output=files //:release_binaries 2>/dev/null)
[ "${#files[@]}" -gt 0 ] || { echo "bazel-dist: //:release_binaries produced no files" >&2; exit 1; }
printf '%-12s %10s  %s\n' platform bytes sha256
for f in "${files[@]}"; do
  name=$(basename "$f"); platform=${name#confine_}
  [ "$name" != "$platform" ] || { echo "bazel-dist: unexpected output $f" >&2; exit 1; }
  mkdir -p "$dest/$platform"
  cp -fL "$execroot/$f" "$dest/$platform/confine.tmp" && chmod 0755 "$dest/$platform/confine.tmp"
  mv -f "$dest/$platform/confine.tmp" "$dest/$platform/confine"
  printf '%-12s %10s  %s\n' "$platform" "$(stat -c %s "$dest/$platform/confine")" \
    "$(sha256sum "$dest/$platform/confine" | cut -d' ' -f1)"
done
