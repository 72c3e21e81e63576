#!/usr/bin/env bash
# scripts/release-deps.sh: what the release tooling needs beyond Go: Debian's docker-registry (the real
# registry the OCI tests and `make release` start on loopback; its packaged service is not used) and
# node/npm (the npm package tests); and an AppArmor 4 parser for the profile's syntax check (below).
# Idempotent.
set -euo pipefail

# packaging/apparmor/confine needs AppArmor 4 (abi/4.0, the `userns` rule); bookworm's apparmor is 3.0.8.
# Where the host has no parser of 4 or later, take trixie's apparmor and libc6 packages with apt-get
# (a private sources list and state under the cache: the host's apt setup is not touched), unpack them
# under $CACHE/apparmor and write $CACHE/apparmor/apparmor_parser, which runs trixie's parser with
# trixie's loader and libc and its own abi/ and tunables/ (--base, -I). release-test finds it there.
apparmor_parser4() {
  local cache=${CACHE:-$HOME/.cache/confine}/apparmor v
  v=$(apparmor_parser --version 2>/dev/null | sed -n '1s/.*version \([0-9]*\).*/\1/p' || true) # none: 127
  if [ "${v:-0}" -ge 4 ] || [ -x "$cache/apparmor_parser" ]; then return 0; fi
  echo "release-deps: fetching trixie's apparmor (a parser of AppArmor 4) into $cache"
  local apt=$cache/apt arch
  arch=$(dpkg --print-architecture)
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$cache/pkgs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$apt/sources.list"
  local o=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=- -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache=$apt" -o "APT::Architecture=$arch" -o APT::Sandbox::User=root)
  apt-get "${o[@]}" update -qq
  (cd "$cache/pkgs" && apt-get "${o[@]}" download -qq apparmor libc6)
  rm -rf "$cache/root"
  for d in "$cache"/pkgs/*.deb; do dpkg-deb -x "$d" "$cache/root"; done
  local lib loader
  lib=$(dirname "$(find "$cache/root/usr/lib" -name 'libc.so.6' | head -1)")
  loader=$(find "$lib" -name 'ld-linux*.so.*' | head -1)
  cat >"$cache/apparmor_parser.tmp" <<WRAP
#!/bin/sh
# trixie's apparmor_parser with trixie's libc (scripts/release-deps.sh)
exec "$loader" --library-path "$lib" "$cache/root/usr/sbin/apparmor_parser" --base "$cache/root/etc/apparmor.d" -I "$cache/root/etc/apparmor.d" "\$@"
WRAP
  chmod 755 "$cache/apparmor_parser.tmp"
  "$cache/apparmor_parser.tmp" --version | head -1
  mv "$cache/apparmor_parser.tmp" "$cache/apparmor_parser"
}
apparmor_parser4
need=()
command -v docker-registry >/dev/null || need+=(docker-registry)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
[ "${#need[@]}" -eq 0 ] && exit 0
echo "release-deps: installing ${need[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
