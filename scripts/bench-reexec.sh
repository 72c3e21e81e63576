#!/usr/bin/env bash
# scripts/bench-reexec.sh [RUNS] [ROUNDS]: the launch cost of the Go embedding (examples/go-agent, package
# sandbox/reexec) against the confine binary, paired in one run: each round times RUNS launches of each, in
# turn, of `bash -c true` in the same worktree, as root and as nobody; the medians of the rounds' per-launch
# means are printed with the ratio. The agent's own start-up (its usage error: a larger Go binary that execs
# nothing) is printed beside it. Both are built here, stripped, outside /tmp.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-40} rounds=${2:-7}
work=$(mktemp -d /var/tmp/bench-reexec.XXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
flags=(-trimpath -ldflags='-s -w -buildid=')
(cd sandbox && CGO_ENABLED=0 go build "${flags[@]}" -o "$work/confine" ./cmd/confine)
(cd examples/go-agent && CGO_ENABLED=0 go build "${flags[@]}" -o "$work/go-agent" .)
mkdir -m 777 "$work/wt"
echo "sizes: confine $(stat -c %s "$work/confine") B, go-agent $(stat -c %s "$work/go-agent") B"
# mean ms per launch of RUNS launches of "$@"
mean() { local s e; s=$(date +%s%N); for ((i = 0; i < runs; i++)); do "$@" >/dev/null 2>&1 || true; done; e=$(date +%s%N); echo $(( (e - s) / runs / 1000 )); }
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for user in root nobody; do
	as=()
	[[ $user == root ]] || as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	: >"$work/c" ; : >"$work/g"; : >"$work/u"
	for ((r = 0; r < rounds; r++)); do
		mean "${as[@]}" "$work/confine" --worktree "$work/wt" -- bash -c true >>"$work/c"
		mean "${as[@]}" "$work/go-agent" "$work/wt" true >>"$work/g"
		mean "${as[@]}" "$work/go-agent" >>"$work/u"
	done
	c=$(median <"$work/c") g=$(median <"$work/g") u=$(median <"$work/u")
	awk -v user="$user" -v c="$c" -v g="$g" -v u="$u" 'BEGIN {
		printf "%-6s confine %.2f ms, go-agent %.2f ms: %.2fx; the agent starting alone (usage error) %.2f ms\n", user, c/1000, g/1000, g/c, u/1000 }'
done
