#!/usr/bin/env bash
# Launch overhead, paired in one run (this machine is noisy, so only ratios taken in the same run mean anything):
#   bare     /bin/true
#   floor    a static Go program that only execs /bin/true: the floor for any Go launcher
#   confine  confine --worktree W -- /bin/true
#   bwrap    bwrap --ro-bind / / --dev /dev --bind W W /bin/true: the equivalent bubblewrap policy
#   confine-bwrap  confine --backend bwrap --worktree W -- /bin/true (the backend of kernels without Landlock)
#   bwrap-as-backend  bwrap with the flags that backend passes (new /proc, PID and IPC namespaces, /tmp bound),
#            running /bin/true itself: the floor for confine-bwrap
#   baseline the same confine command with another build (optional 4th argument), e.g. the last release
#   landlock-ref  a minimal Landlock-only launcher on go-landlock (what landrun does: RODirs /, RWDirs W and
#            /tmp, RWFiles /dev/null, best effort, then exec), built here in a module of its own from the Go
#            module proxy (skipped where that cannot be had), so that sandbox/ keeps x/sys alone
# as root and, when run as root, as nobody (the common case: an editor extension runs as its user). The
# variants run interleaved round by round (sandbox/internal/launchbench); medians of wall and CPU time per launch.
# bwrap is the one confine finds (CONFINE_BWRAP, else /usr/bin, /bin, /usr/local/bin; never PATH), else Debian's
# package, unpacked into $CACHE/bench (never installed).
# usage: scripts/bench-launcher.sh path/to/confine [runs-per-round] [rounds] [baseline-confine]
set -euo pipefail
confine=${1:?usage: $0 path/to/confine [runs] [rounds] [baseline-confine]}
runs=${2:-40}
rounds=${3:-7}
baseline=${4:-}
cache=${CACHE:-$HOME/.cache/confine}/bench
work=$(mktemp -d /var/tmp/confine-bench.XXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/w" "$work/floor-src" "$cache"
cp "$confine" "$work/confine"
[[ -z $baseline ]] || cp "$baseline" "$work/baseline"

# The floor: stdlib only, built static and stripped like the launcher.
cat >"$work/floor-src/main.go" <<'GO'
package main

import (
	"os"
	"syscall"
)

func main() { syscall.Exec(os.Args[1], os.Args[1:], os.Environ()) }
GO
printf 'module floor\ngo 1.22\n' >"$work/floor-src/go.mod"
(cd "$work/floor-src" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/floor" .)
(cd sandbox && go build -o "$work/launchbench" ./internal/launchbench)

# The landrun-style reference, pinned: go-landlock v0.11.2.
mkdir -p "$work/llref-src"
cat >"$work/llref-src/main.go" <<'GO'
package main

import (
	"os"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
)

func main() {
	err := landlock.V6.BestEffort().RestrictPaths(landlock.RODirs("/"), landlock.RWDirs(os.Args[1], "/tmp"), landlock.RWFiles("/dev/null"))
	if err != nil {
		os.Stderr.WriteString("llref: " + err.Error() + "\n")
		os.Exit(125)
	}
	syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
	os.Exit(127)
}
GO
printf 'module llref\ngo 1.22\n\nrequire github.com/landlock-lsm/go-landlock v0.11.2\n' >"$work/llref-src/go.mod"
llref=$work/llref
(cd "$work/llref-src" && GOWORK=off GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 &&
	GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$llref" .) ||
	{ echo "bench: the go-landlock reference could not be built (no Go module proxy?): skipping it" >&2; llref=; }

bwrap=${CONFINE_BWRAP:-}
for d in /usr/bin /bin /usr/local/bin; do
	[[ -n $bwrap ]] || [[ ! -f $d/bwrap ]] || bwrap=$d/bwrap
done
if [[ -z $bwrap ]]; then
	if [[ ! -x $cache/bwrap/usr/bin/bwrap ]]; then
		(cd "$cache" && rm -f bubblewrap_*.deb && apt-get download bubblewrap >/dev/null 2>&1 &&
			dpkg-deb -x bubblewrap_*.deb bwrap) || echo "bench: no bwrap installed and none fetched: skipping it" >&2
	fi
	[[ -x $cache/bwrap/usr/bin/bwrap ]] && bwrap=$cache/bwrap/usr/bin/bwrap
fi
[[ -z $bwrap ]] || cp "$bwrap" "$work/bwrap"
chmod -R a+rX "$work" && chmod 777 "$work/w"

W=$work/w
variants=(bare=/bin/true "floor=$work/floor /bin/true" "confine=$work/confine --worktree $W -- /bin/true")
[[ -z $baseline ]] || variants+=("baseline=$work/baseline --worktree $W -- /bin/true")
[[ -z $llref ]] || variants+=("landlock-ref=$llref $W /bin/true")
[[ -z $bwrap ]] || variants+=("bwrap=$work/bwrap --ro-bind / / --dev /dev --bind $W $W /bin/true"
	"confine-bwrap=$work/confine --backend bwrap --worktree $W -- /bin/true"
	"bwrap-as-backend=$work/bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-ipc --as-pid-1 --die-with-parent --new-session --bind $W $W --bind /tmp /tmp -- /bin/true")
ratios=(-ratio confine/floor -ratio confine/bwrap -ratio confine/bare -ratio floor/bare)
[[ -z $bwrap ]] || ratios+=(-ratio confine-bwrap/bwrap-as-backend)
[[ -z $baseline ]] || ratios+=(-ratio confine/baseline -ratio baseline/floor -ratio baseline/bwrap)
[[ -z $llref ]] || ratios+=(-ratio confine/landlock-ref)

echo "launches: $runs per variant x $rounds rounds, interleaved; medians per launch (microseconds)"
echo "targets: root confine/floor <= 1.25; non-root confine/bwrap <= 1.00"
export CONFINE_BWRAP=$work/bwrap # confine --backend bwrap runs the same bwrap (a copy: root-owned, in a root-owned directory)
echo "as $(id -un):"
"$work/launchbench" -runs "$runs" -rounds "$rounds" "${ratios[@]}" "${variants[@]}"
if [[ $(id -u) == 0 ]]; then
	echo "as nobody:"
	"$work/launchbench" -runs "$runs" -rounds "$rounds" -uid 65534 -gid 65534 "${ratios[@]}" "${variants[@]}"
fi
size=$(stat -c %s "$confine")
awk -v s="$size" 'BEGIN { printf "binary size (stripped, static): %d bytes (%.2f MiB; budget 2.50, platforms/platforms.json max_bytes)\n", s, s/1048576 }'
