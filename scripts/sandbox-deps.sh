#!/usr/bin/env bash
# scripts/sandbox-deps.sh: what the launcher's host acceptance tests run besides Go: npm (a local tarball) and
# python3 with pip (a local wheel) under --profile, and bubblewrap for the bwrap backend, where confine looks for
# it (/usr/bin: the package's; the tests that need it absent or broken name their own by CONFINE_BWRAP); and for the
# conformance workloads family (issue 28, item 9), python3's venv, pytest, less and gpg (small; go, npm, cc and make
# are there already, cargo is optional: its case skips without it). Debian's packages, so nobody can run them too (a
# pyenv or rustup under root's home is not). Idempotent.
set -euo pipefail
need=()
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
[ -f /usr/bin/bwrap ] || [ -f /bin/bwrap ] || [ -f /usr/local/bin/bwrap ] || need+=(bubblewrap)
{ [ -x /usr/bin/python3 ] && /usr/bin/python3 -m pip --version >/dev/null 2>&1; } || need+=(python3 python3-pip)
{ [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1; } || need+=(python3-venv)
{ [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import pytest' >/dev/null 2>&1; } || need+=(python3-pytest)
command -v less >/dev/null || need+=(less)
{ command -v gpg >/dev/null && command -v gpgconf >/dev/null; } || need+=(gnupg)
[ "${#need[@]}" -eq 0 ] && exit 0
echo "sandbox-deps: installing ${need[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
