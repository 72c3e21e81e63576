#!/usr/bin/env bash
# Launch overhead, paired in one run (this machine is noisy, so only ratios taken in the same run mean anything):
#   bare   /bin/true
#   floor  a static Go program that only execs /bin/true: the floor for any Go launcher
#   confine --worktree W -- /bin/true
#   bwrap  --ro-bind / / --dev /dev --bind W W /bin/true: the equivalent bubblewrap policy
# each as root and, when run as root, as nobody (the common case: an editor extension runs as its user).
# Variants run interleaved, round by round; the median round is reported, as wall and CPU time per launch.
# bwrap is taken from PATH, else from Debian's package, unpacked into $CACHE/bench (never installed).
# usage: scripts/bench-launcher.sh path/to/confine [runs-per-round] [rounds] [baseline-confine]
set -euo pipefail
confine=${1:?usage: $0 path/to/confine [runs] [rounds] [baseline-confine]}
runs=${2:-200}
rounds=${3:-7}
baseline=${4:-}
cache=${CACHE:-$HOME/.cache/confine}/bench
work=$(mktemp -d /var/tmp/confine-bench.XXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/w" "$cache"
chmod 777 "$work/w"
cp "$confine" "$work/confine"
[[ -z $baseline ]] || cp "$baseline" "$work/baseline"

# The floor: stdlib only, built static and stripped like the launcher.
mkdir -p "$work/floor-src"
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

bwrap=$(command -v bwrap || true)
if [[ -z $bwrap ]]; then
	if [[ ! -x $cache/bwrap/usr/bin/bwrap ]]; then
		(cd "$cache" && rm -f bubblewrap_*.deb && apt-get download bubblewrap >/dev/null 2>&1 &&
			dpkg-deb -x bubblewrap_*.deb bwrap) || true
	fi
	[[ -x $cache/bwrap/usr/bin/bwrap ]] && bwrap=$cache/bwrap/usr/bin/bwrap
fi
[[ -z $bwrap ]] || cp "$bwrap" "$work/bwrap"
chmod -R a+rX "$work"

W=$work/w
declare -A cmd=(
	[bare]="/bin/true"
	[floor]="$work/floor /bin/true"
	[confine]="$work/confine --worktree $W -- /bin/true"
)
[[ -z $baseline ]] || cmd[baseline]="$work/baseline --worktree $W -- /bin/true"
[[ -z $bwrap ]] || cmd[bwrap]="$work/bwrap --ro-bind / / --dev /dev --bind $W $W /bin/true"

users=("$(id -un)")
[[ $(id -u) != 0 ]] || users+=(nobody)
as() { if [[ $1 == root ]]; then shift; "$@"; else local u=$1; shift; setpriv --reuid="$u" --regid="$(id -gn "$u")" --clear-groups "$@"; fi; }
# loop USER N cmd...: "wall-ns cpu-ticks" for N sequential runs (CPU: cutime+cstime of the looping shell).
loop() {
	local u=$1 n=$2; shift 2
	as "$u" bash -c 't0=$(date +%s%N); for ((i = 0; i < $0; i++)); do "$@" >/dev/null; done
		read -ra st < /proc/$$/stat; echo $(( $(date +%s%N) - t0 )) $(( st[15] + st[16] ))' "$n" "$@"
}
for u in "${users[@]}"; do
	for v in "${!cmd[@]}"; do
		# shellcheck disable=SC2086
		as "$u" ${cmd[$v]} || { echo "bench: $v cannot run as $u here" >&2; exit 1; }
	done
done

declare -A wall cpu
for ((r = 0; r < rounds; r++)); do
	for u in "${users[@]}"; do
		for v in bare floor confine baseline bwrap; do
			[[ -n ${cmd[$v]:-} ]] || continue
			# shellcheck disable=SC2086
			read -r w c < <(loop "$u" "$runs" ${cmd[$v]})
			wall[$u.$v]+="$w " cpu[$u.$v]+="$c "
		done
	done
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
hz=$(getconf CLK_TCK)
printf 'runs: %d x %d rounds, interleaved (median round)\n' "$runs" "$rounds"
for u in "${users[@]}"; do
	for v in bare floor confine baseline bwrap; do
		[[ -n ${wall[$u.$v]:-} ]] || continue
		mw=$(median "${wall[$u.$v]}") mc=$(median "${cpu[$u.$v]}")
		declare "W_${u}_$v=$mw" "C_${u}_$v=$mc"
		awk -v u="$u" -v v="$v" -v w="$mw" -v c="$mc" -v n="$runs" -v hz="$hz" \
			'BEGIN { printf "%-7s %-9s %8.1f us/launch wall %8.1f us/launch cpu\n", u, v, w/n/1000, c/hz/n*1e6 }'
	done
done
ratio() { # ratio LABEL USER A B
	local a="W_${2}_$3" b="W_${2}_$4" ca="C_${2}_$3" cb="C_${2}_$4"
	[[ -n ${!a:-} && -n ${!b:-} ]] || return 0
	awk -v l="$1" -v a="${!a}" -v b="${!b}" -v ca="${!ca}" -v cb="${!cb}" \
		'BEGIN { printf "%-44s %5.2fx wall %5.2fx cpu\n", l, a/b, (cb > 0 ? ca/cb : 0) }'
}
echo "ratios (same run):"
for u in "${users[@]}"; do
	ratio "$u: confine / floor (target <= 1.25 as root)" "$u" confine floor
	ratio "$u: confine / bwrap (target <= 1.00 non-root)" "$u" confine bwrap
	ratio "$u: confine / bare" "$u" confine bare
	ratio "$u: floor / bare" "$u" floor bare
	ratio "$u: baseline / floor" "$u" baseline floor
	ratio "$u: baseline / bwrap" "$u" baseline bwrap
	ratio "$u: confine / baseline" "$u" confine baseline
done
size=$(stat -c %s "$confine")
awk -v s="$size" 'BEGIN { printf "binary size (stripped, static): %d bytes (%.2f MiB; target <= 2.00)\n", s, s/1048576 }'
