#!/usr/bin/env bash
# Launch overhead: `confine -- /bin/true` against bare `/bin/true`, interleaved in one run (this machine is
# noisy, so only the ratio is meaningful), and the size of the stripped static binary.
# usage: scripts/bench-launcher.sh path/to/confine [runs-per-round] [rounds]
set -euo pipefail
confine=${1:?usage: $0 path/to/confine [runs] [rounds]}
runs=${2:-300}
rounds=${3:-5}
work=$(mktemp -d /var/tmp/confine-bench.XXXX)
trap 'rm -rf "$work"' EXIT

ns() { date +%s%N; }
loop() { # loop N cmd...: total ns for N sequential runs
  local n=$1; shift
  local t0; t0=$(ns)
  for ((i = 0; i < n; i++)); do "$@" >/dev/null; done
  echo $(( $(ns) - t0 ))
}
"$confine" --worktree "$work" -- /bin/true || { echo "confine cannot run here: see 'confine probe'" >&2; exit 1; }

bare=() conf=()
for ((r = 0; r < rounds; r++)); do
  bare+=("$(loop "$runs" /bin/true)")
  conf+=("$(loop "$runs" "$confine" --worktree "$work" -- /bin/true)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mb=$(median "${bare[@]}"); mc=$(median "${conf[@]}")
size=$(stat -c %s "$confine")
awk -v mb="$mb" -v mc="$mc" -v n="$runs" -v r="$rounds" -v size="$size" 'BEGIN {
  printf "runs: %d x %d rounds (median round)\n", n, r
  printf "bare /bin/true:            %8.1f us/run\n", mb / n / 1000
  printf "confine -- /bin/true:      %8.1f us/run\n", mc / n / 1000
  printf "ratio confine/bare:        %8.2f\n", mc / mb
  printf "overhead per launch:       %8.1f us\n", (mc - mb) / n / 1000
  printf "binary size (stripped):    %8d bytes (%.2f MiB)\n", size, size / 1048576
}'
file "$confine" 2>/dev/null | sed 's/^/file: /' || true
