#!/usr/bin/env bash
# Benchmarks the VM runner on the default matrix: a bare boot of every kernel (payload /bin/true) as the baseline,
# then the suite payload, both measured in this run. Prints total wall time, per-boot time and the ratio of suite
# time to bare-boot time. Usage: vm-bench.sh VM PAYLOAD-DIR GUEST-CMD [ARGS...]   (env: VM_BENCH_ARGS, e.g.
# "--arch amd64" or "--jobs 1", passed to both runs)
set -euo pipefail
vm=$1 payload=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/empty"
read -ra extra <<<"${VM_BENCH_ARGS:-}"

# run NAME ARGS...: runs vm run, prints its table to stderr, echoes "wall sum kernels".
run() {
	local name=$1
	shift
	local start end code=0
	start=$(date +%s.%N)
	"$vm" run "${extra[@]}" --results "$tmp/$name" "$@" >"$tmp/$name.table" 2>"$tmp/$name.log" || code=$?
	end=$(date +%s.%N)
	cat "$tmp/$name.table" >&2
	if ((code != 0)); then
		echo "vm-bench: $name run exited $code (results kept in the log below)" >&2
		tail -5 "$tmp/$name.log" >&2
	fi
	# Summary line: "N kernels: ... wall W, sum of boots S"
	awk -v start="$start" -v end="$end" '/kernels:.*sum of boots/ {
		n=$1; s=$NF; sub(/s$/, "", s); printf "%.2f %.2f %d\n", end-start, s, n }' "$tmp/$name.table"
}

full=$("$vm" kernels | tail -n +2 | wc -l) # kernels in the default matrix (the manifest)
echo "vm-bench: load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" >&2
echo "vm-bench: bare boots (payload /bin/true)" >&2
read -r bare_wall bare_sum n < <(run bare --payload "$tmp/empty" -- /bin/true)
echo "vm-bench: suite ($*)" >&2
read -r suite_wall suite_sum n2 < <(run suite --payload "$payload" -- "$@")

awk -v bw="$bare_wall" -v bs="$bare_sum" -v sw="$suite_wall" -v ss="$suite_sum" -v n="$n" -v n2="$n2" -v full="$full" 'BEGIN {
	printf "\n%-28s %10s %10s\n", "", "bare boot", "suite"
	printf "%-28s %10d %10d\n", "kernels", n, n2
	printf "%-28s %9.1fs %9.1fs\n", "total wall time", bw, sw
	printf "%-28s %9.2fs %9.2fs\n", "per boot (mean QEMU time)", bs / n, ss / n2
	printf "ratio suite/bare (wall)      %.2f\n", sw / bw
	printf "ratio suite/bare (per boot)  %.2f\n", (ss / n2) / (bs / n)
	if (n2 == full)
		printf "goal: full matrix <= 90s on 2 cores under TCG: %s (%.1fs)\n", (sw <= 90 ? "met" : "missed"), sw
	else
		printf "goal (full matrix <= 90s) not judged: %d of the %d kernels ran\n", n2, full
}'
