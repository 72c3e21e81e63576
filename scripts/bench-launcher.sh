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
# loop N cmd...: prints "wall-ns cpu-ticks" for N sequential runs. CPU time (user+sys of the children, from
# /proc/<pid>/stat cutime+cstime) holds up better than wall time on a loaded machine.
loop() {
  local n=$1; shift
  bash -c 't0=$(date +%s%N); for ((i = 0; i < $0; i++)); do "$@" >/dev/null; done
    read -ra st < /proc/$$/stat; echo $(( $(date +%s%N) - t0 )) $(( st[15] + st[16] ))' "$n" "$@"
}
"$confine" --worktree "$work" -- /bin/true || { echo "confine cannot run here: see 'confine probe'" >&2; exit 1; }

bare=() conf=() bcpu=() ccpu=()
for ((r = 0; r < rounds; r++)); do
  read -r w c < <(loop "$runs" /bin/true); bare+=("$w"); bcpu+=("$c")
  read -r w c < <(loop "$runs" "$confine" --worktree "$work" -- /bin/true); conf+=("$w"); ccpu+=("$c")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mb=$(median "${bare[@]}"); mc=$(median "${conf[@]}")
cb=$(median "${bcpu[@]}"); cc=$(median "${ccpu[@]}")
size=$(stat -c %s "$confine")
awk -v mb="$mb" -v mc="$mc" -v cb="$cb" -v cc="$cc" -v hz="$(getconf CLK_TCK)" -v n="$runs" -v r="$rounds" \
    -v size="$size" 'BEGIN {
  printf "runs: %d x %d rounds (median round)\n", n, r
  printf "bare /bin/true:            %8.1f us/run wall, %8.1f us/run cpu\n", mb / n / 1000, cb / hz / n * 1e6
  printf "confine -- /bin/true:      %8.1f us/run wall, %8.1f us/run cpu\n", mc / n / 1000, cc / hz / n * 1e6
  printf "ratio confine/bare:        %8.2f wall, %8.2f cpu\n", mc / mb, (cb > 0 ? cc / cb : 0)
  printf "overhead per launch:       %8.1f us wall\n", (mc - mb) / n / 1000
  printf "binary size (stripped):    %8d bytes (%.2f MiB)\n", size, size / 1048576
}'
file "$confine" 2>/dev/null | sed 's/^/file: /' || true
