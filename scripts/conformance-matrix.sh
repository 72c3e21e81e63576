#!/usr/bin/env bash
# Runs the conformance suite in every selected kernel of vm/kernels.json (both arches unless narrowed), then
# builds the kernel × case report: REPORTS/matrix.{json,html}, REPORTS/conformance/<kernel>.junit.xml and the
# printed table. Exits non-zero on any FAIL or deviation from conformance/expected.yaml.
# Each race case runs the attempts that catch its planted bug with probability RACE_POWER (from the payload's
# race-rates.json), at most RACE_MAX; TOCTOU_ATTEMPTS where no rate was measured. With PLAN set, a case runs only
# in the columns the plan gives it (conformance/internal/plan, over every kernel of the payload's kernels.json):
# for the whole manifest or one arch of it (mk/conformance.mk), since a subset of kernel entries may lack the column
# that stands for another.
# usage: scripts/conformance-matrix.sh VM PAYLOAD RUNNER REPORTS TOCTOU_ATTEMPTS JOBS [vm run flags...]
set -euo pipefail
vm=$1 payload=$2 runner=$3 reports=$4 attempts=$5 jobs=$6
shift 6
start=$(date +%s)
rm -rf "$reports/vm" "$reports/conformance"
mkdir -p "$reports/vm"
rc=0
# Each VM runs the suite twice, concurrently: as root and as uid 65534 (--also-as), except that a race case runs
# while the other pass runs no case (the runner's race gate, issue 27); a kernel entry with abi_cap
# runs the confine_abicap test build. Every case has its own bound (--case-timeout: time without progress, so a
# slow race case under load is never cut short) and prints heartbeats, so a
# silent console means the guest itself is stuck: the watchdog then collects its task states, and vm run retries
# that kernel once. The guest timeout is only a backstop (a case bounds itself): 7.3-arm64 took 14 min for both
# passes at load 10 on 2 cores.
"$vm" run --jobs "$jobs" --results "$reports/vm" --timeout "${MATRIX_GUEST_TIMEOUT:-40m}" "$@" --payload "$payload/{arch}" -- \
	/payload/confine-conformance --confine /payload/confine --abicap-confine /payload/confine-abicap \
	--wsl2-confine /payload/confine-wsl2 \
	--also-as 65534 --case-timeout "${MATRIX_CASE_TIMEOUT:-3m}" --json --toctou-attempts "$attempts" \
	${PLAN:+--plan /payload/kernels.json} --race-rates /payload/race-rates.json --race-power "${RACE_POWER:-0.999}" --race-max "${RACE_MAX:-20000}" \
	--expect /payload/expected.yaml || rc=$?
# In the guest the runner exits 0 when every outcome is the reviewed one, so vm run says ok per kernel; it exits
# non-zero when a payload deviated or a VM failed. The report below, over every kernel, is the verdict.
echo "vm run: exit $rc"
rep=0
"$runner" report --results "$reports/vm" --manifest vm/kernels.json --expect conformance/expected.yaml --out "$reports" || rep=$?
echo "matrix wall time: $(($(date +%s) - start)) s"
exit "$rep"
