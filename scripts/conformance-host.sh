#!/usr/bin/env bash
# Runs the conformance suite on the host kernel, as the current user and, when that is root, once more as an
# unprivileged user (nobody): the runner must work as both. Then the report gates both runs on
# conformance/expected.yaml and writes OUT/matrix.{json,html} and one JUnit per run.
# usage: scripts/conformance-host.sh CONFINE RUNNER OUT TOCTOU_ATTEMPTS
set -euo pipefail
confine=$(realpath "$1") runner=$(realpath "$2") out=$3 attempts=$4
mkdir -p "$out"
hosts=()

run() { # NAME [PREFIX...]: run the suite with an optional privilege-dropping prefix
	local name=$1 rc=0
	shift
	echo "conformance-host: running the suite as $name ($attempts toctou attempts per race case)"
	"$@" "$runner" --confine "$confine" --json --toctou-attempts "$attempts" >"$out/$name.jsonl" || rc=$?
	if [ "$rc" -gt 1 ]; then
		echo "conformance-host: the suite could not start as $name (exit $rc)" >&2
		exit 2
	fi
	hosts+=(--host "$out/$name.jsonl")
}

run "$(id -un)"
if [ "$(id -u)" = 0 ]; then
	if command -v setpriv >/dev/null; then
		run nobody setpriv --reuid=nobody --regid=nogroup --clear-groups --
	else
		echo "conformance-host: setpriv not found: the unprivileged run is skipped" >&2
	fi
fi
"$runner" report "${hosts[@]}" --expect conformance/expected.yaml --out "$out"
