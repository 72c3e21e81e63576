#!/usr/bin/env bash
# Runs the conformance suite on the host kernel, as the current user and, when that is root, once more as an
# unprivileged user (nobody): the runner must work as both. Where confine finds bwrap (CONFINE_BWRAP, else /usr/bin,
# /bin, /usr/local/bin; never PATH), both runs are made again with
# the runner's --backend bwrap (every case's launch asks for the bwrap backend; columns host-*-bwrap), so the bwrap
# backend is proven on the host kernel too, not only on the VM's kernels without Landlock. Then the report gates
# every run on conformance/expected.yaml and writes OUT/matrix.{json,html} and one JUnit per run.
# The race cases run at least TOCTOU_ATTEMPTS attempts each, more where RATES (conformance/race-rates.json) says
# POWER needs more; the report records each one's power against its planted bug.
# usage: scripts/conformance-host.sh CONFINE RUNNER OUT TOCTOU_ATTEMPTS [RATES POWER]
set -euo pipefail
confine=$(realpath "$1") runner=$(realpath "$2") out=$3 attempts=$4
race=()
[ -n "${5:-}" ] && race=(--race-rates "$(realpath "$5")" --race-power "${6:-0.999}" --race-min "$attempts")
mkdir -p "$out"
hosts=()

run() { # NAME BACKEND [PREFIX...]: run the suite with --backend BACKEND and an optional privilege-dropping prefix
	local name=$1 backend=$2 rc=0
	shift 2
	echo "conformance-host: running the suite as $name, --backend $backend ($attempts toctou attempts per race case)"
	"$@" "$runner" --confine "$confine" --backend "$backend" --json --toctou-attempts "$attempts" "${race[@]}" >"$out/$name.jsonl" || rc=$?
	if [ "$rc" -gt 1 ]; then
		echo "conformance-host: the suite could not start as $name (exit $rc)" >&2
		exit 2
	fi
	hosts+=(--host "$out/$name.jsonl")
}

backends=(auto)
if [ -n "${CONFINE_BWRAP:-}" ] || [ -f /usr/bin/bwrap ] || [ -f /bin/bwrap ] || [ -f /usr/local/bin/bwrap ]; then
	backends+=(bwrap)
else
	echo "conformance-host: bwrap is not in /usr/bin, /bin or /usr/local/bin, and CONFINE_BWRAP is not set: the --backend bwrap runs are skipped (make deps installs bubblewrap)" >&2
fi
for b in "${backends[@]}"; do
	suffix=
	[ "$b" = auto ] || suffix=-$b
	run "$(id -un)$suffix" "$b"
	if [ "$(id -u)" = 0 ]; then
		if command -v setpriv >/dev/null; then
			run "nobody$suffix" "$b" setpriv --reuid=nobody --regid=nogroup --clear-groups --
		else
			echo "conformance-host: setpriv not found: the unprivileged run is skipped" >&2
		fi
	fi
done
"$runner" report "${hosts[@]}" --expect conformance/expected.yaml --out "$out"
