#!/usr/bin/env bash
# scripts/release-deps.sh: what the release tooling needs beyond Go: Debian's docker-registry (the real
# registry the OCI tests and `make release` start on loopback; its packaged service is not used) and
# node/npm (the npm package tests). Idempotent.
set -euo pipefail
need=()
command -v docker-registry >/dev/null || need+=(docker-registry)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
[ "${#need[@]}" -eq 0 ] && exit 0
echo "release-deps: installing ${need[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
