#!/usr/bin/env bash
# scripts/release-npm-test.sh CONFINE_RELEASE DIST WORK: build the npm packages from the launchers in
# DIST/<platform>/confine (`make build`), `npm pack` them, install the tarballs into a scratch app under
# WORK (offline: npm reads only the local tarballs), and run release/npm/test with node's test runner
# against that installed copy and the real launcher. WORK must not be under /tmp: the tests write
# "outside" the worktree there, and confine always leaves /tmp writable.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=$(realpath "$1") dist=$(realpath "$2") work=$(realpath -m "$3")
case $work in /tmp|/tmp/*) echo "release-npm-test: WORK ($work) must not be under /tmp" >&2; exit 2 ;; esac
rm -rf "$work"; mkdir -p "$work/tarballs" "$work/app"
version=$(git describe --tags --always --dirty 2>/dev/null || echo unknown)
"$tool" npm --dist "$dist" --version "$version" --out "$work/pkgs" >/dev/null
(cd "$work/tarballs" && npm pack --silent "$work/pkgs"/confine-linux-x64 "$work/pkgs"/confine-linux-arm64 "$work/pkgs"/confine >/dev/null)
ls "$work/tarballs"
# The npm job of .github/workflows/release.yml, dry: npm publish --provenance of each tarball in the
# workflow's order (platform packages first), --offline, to a loopback address where nothing listens: nothing leaves
# this machine. npm checks the packages and accepts the flag; the provenance itself needs the workflow's
# OIDC identity and is made only in a real run.
for t in "$work"/tarballs/confine-dev-confine-linux-x64-*.tgz "$work"/tarballs/confine-dev-confine-linux-arm64-*.tgz \
         "$work"/tarballs/confine-dev-confine-[0-9]*.tgz; do
  # npm refuses a prerelease (this dev build's 0.0.0-dev.…, a tag's v1.2.0-rc.1) without a dist-tag.
  case $(basename "$t") in *-[0-9]*.[0-9]*.[0-9]*-*) dist_tag=next ;; *) dist_tag=latest ;; esac
  out=$(npm publish --dry-run --provenance --access public --tag "$dist_tag" --registry http://127.0.0.1:9/ --offline "$t" 2>&1) ||
    { printf '%s\n' "$out" >&2; echo "FAIL: npm publish --dry-run --provenance $t" >&2; exit 1; }
  grep -E '^\+ @confine-dev/confine(-linux-(x64|arm64))?@' <<<"$out" ||
    { printf '%s\n' "$out" >&2; echo "FAIL: npm publish --dry-run $t names no @confine-dev package" >&2; exit 1; }
done
# The root package and this host's platform package, as an extension's `npm install` would get them;
# npm itself must skip the other architecture's package (its "cpu" field), which the tests check.
arch=$(node -p process.arch)
(cd "$work/app" && echo '{"name":"app","version":"1.0.0","private":true}' >package.json &&
  npm install --offline --no-audit --no-fund --ignore-scripts --silent \
    "$work"/tarballs/confine-dev-confine-[0-9]*.tgz "$work"/tarballs/confine-dev-confine-linux-"$arch"-*.tgz)
CONFINE_NPM_APP=$work/app CONFINE_NPM_TARBALLS=$work/tarballs CONFINE_NPM_WORK=$work \
  node --test release/npm/test/
