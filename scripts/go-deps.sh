#!/usr/bin/env bash
# Makes sure a Go of at least go.work's version (the go line: the toolchain every module here is built and tested
# with) is on the Makefile's PATH. A `go` on PATH that is new enough is used as it is. Otherwise the toolchain is
# fetched from the Go module proxy, as the module golang.org/toolchain@v0.0.1-go<V>.linux-<arch> (the form
# GOTOOLCHAIN switching downloads; `go install golang.org/dl/go<V>` needs golang.org itself), checked against the
# sha256 pinned below and unpacked into CACHE/go, which the Makefile puts first on PATH. No go at all is needed
# for that: curl and python3 (or unzip). On this machine (2026-12): 71.7 MB, about 4 s from the proxy.
# usage: scripts/go-deps.sh CACHE
set -euo pipefail
cache=${1:?usage: $0 CACHE}
want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.work)
[[ -n $want ]] || { echo "go-deps: no go line in go.work" >&2; exit 2; }
# sha256 of the proxy's golang.org/toolchain zips of the version go.work names (a new go line needs new pins).
declare -A pins=(
	[1.26.8/amd64]=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7
	[1.26.8/arm64]=02b36b6787b3ac767668f630e2998df45a3b1f9ffee08d1bf3ef6487cd658d99
)

# at_least HAVE WANT: HAVE >= WANT as versions (1.26.10 > 1.26.8).
at_least() { [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1) == "$2" ]]; }

have=
if command -v go >/dev/null; then
	have=$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null || true)
	have=${have#go}
	if [[ -n $have ]] && at_least "${have%%[a-z]*}" "$want"; then
		echo "go-deps: go$have at $(command -v go) (go.work wants >= $want)"
		exit 0
	fi
fi
case $(uname -m) in
x86_64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) echo "go-deps: no pinned Go toolchain for $(uname -m); install Go >= $want from https://go.dev/dl/ and put it on PATH" >&2; exit 2 ;;
esac
pin=${pins[$want/$arch]:-}
if [[ -z $pin ]]; then
	echo "go-deps: go.work wants Go $want, and scripts/go-deps.sh pins no toolchain zip for it ($arch): add its sha256, or install Go >= $want from https://go.dev/dl/" >&2
	exit 2
fi
found="no go on PATH"
[[ -n $have ]] && found="go$have on PATH is older"
echo "go-deps: $found, go.work wants >= $want: installing go$want ($arch) into $cache/go"
proxy=${GOPROXY:-https://proxy.golang.org}
proxy=${proxy%%[,|]*}
[[ $proxy == direct || $proxy == off ]] && proxy=https://proxy.golang.org
mod=v0.0.1-go$want.linux-$arch
tmp=$(mktemp -d "${TMPDIR:-/tmp}/go-deps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
command -v curl >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends curl ca-certificates; }
curl -sSfL --retry 2 -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/$mod.zip"
got=$(sha256sum "$tmp/go.zip" | cut -d' ' -f1)
if [[ $got != "$pin" ]]; then
	echo "go-deps: $proxy/golang.org/toolchain/@v/$mod.zip has sha256 $got, pinned $pin: not installed" >&2
	exit 1
fi
if command -v python3 >/dev/null; then
	python3 -m zipfile -e "$tmp/go.zip" "$tmp/x"
else
	command -v unzip >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends unzip; }
	unzip -q "$tmp/go.zip" -d "$tmp/x"
fi
root=$tmp/x/golang.org/toolchain@$mod
# A module zip keeps no file modes: make the commands executable, as the go command does for a toolchain it
# switches to.
chmod +x "$root"/bin/* "$root"/pkg/tool/*/*
mkdir -p "$cache"
rm -rf "$cache/go"
mv "$root" "$cache/go"
echo "go-deps: $("$cache/go/bin/go" version) in $cache/go/bin (first on the Makefile's PATH)"
