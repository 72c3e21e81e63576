#!/usr/bin/env bash
# scripts/release-vsix-test.sh CONFINE_RELEASE DIST WORK: for every VS Code target, lay out confine with
# `confine-release package` into a minimal extension under WORK, run the real `vsce package --target`
# (@vscode/vsce, installed once from the npm registry into $CACHE/vsce), unpack the .vsix and check that
# both launchers are there, byte for byte DIST's, with mode 0755, and that manifest.json names the target.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=$(realpath "$1") dist=$(realpath "$2") work=$(realpath -m "$3")
CACHE=${CACHE:-$HOME/.cache/confine}
VSCE_VERSION=3.7.1
vsce=$CACHE/vsce/node_modules/.bin/vsce
if [ ! -x "$vsce" ] || [ "$("$vsce" --version)" != "$VSCE_VERSION" ]; then
  mkdir -p "$CACHE/vsce" && echo '{"private":true}' >"$CACHE/vsce/package.json"
  (cd "$CACHE/vsce" && npm install --silent --no-audit --no-fund "@vscode/vsce@$VSCE_VERSION")
fi
version=$(git describe --tags --always --dirty 2>/dev/null || echo unknown)
rm -rf "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
for target in linux-x64 linux-arm64 alpine-x64 alpine-arm64; do
  ext=$work/$target/ext
  mkdir -p "$ext"
  printf '{"name":"confine-demo","publisher":"confine-dev","version":"0.0.1","engines":{"vscode":"^1.90.0"},"main":"extension.js","activationEvents":["onStartupFinished"],"files":["extension.js","confine/**"],"license":"UNLICENSED"}\n' >"$ext/package.json"
  echo 'exports.activate = () => {};' >"$ext/extension.js"
  "$tool" package --target "$target" --dist "$dist" --version "$version" --out "$ext/confine" >/dev/null
  (cd "$ext" && "$vsce" package --target "$target" --skip-license --allow-missing-repository -o "$work/$target/demo.vsix" >/dev/null)
  mkdir -p "$work/$target/unpacked" && (cd "$work/$target/unpacked" && unzip -q ../demo.vsix)
  grep -q "TargetPlatform=\"$target\"" "$work/$target/unpacked/extension.vsixmanifest" || fail "$target: the .vsix is not for $target"
  m=$work/$target/unpacked/extension/confine/manifest.json
  grep -q "\"target\": \"$target\"" "$m" || fail "$target: manifest.json does not name the target"
  case $target in *-x64) arch=amd64 ;; *) arch=arm64 ;; esac
  for pair in confine:linux confine-wsl2:wsl2; do
    f=$work/$target/unpacked/extension/confine/bin/${pair%%:*}
    [ "$(stat -c %a "$f")" = 755 ] || fail "$target: $f has mode $(stat -c %a "$f"), want 755"
    cmp -s "$f" "$dist/${pair##*:}_$arch/confine" || fail "$target: $f is not $dist/${pair##*:}_$arch/confine"
  done
  echo "$target: $(stat -c %s "$work/$target/demo.vsix") bytes, bin/confine and bin/confine-wsl2 = ${arch} launchers, mode 755"
done
