#!/usr/bin/env bash
# scripts/examples-test.sh: the Go embedding example's tests (examples/go-agent, and sandbox/reexec's that start
# a launcher) as root and as nobody, each with the mount layer this host gives and without one (conformance's host emulation
# no-namespaces: Docker's default seccomp profile, so the launcher runs its supervisor). The agents are built
# once, as root, outside /tmp (reexec refuses an executable a confined command could replace); the runs as
# nobody use them. Run as another user, only that user's two passes run.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /var/tmp/examples-test.XXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
(cd examples/go-agent && CGO_ENABLED=0 go test -c -o "$work/agent.test" .)
# reexec's own tests that start a launcher: go test's binary lies in /tmp, which Command refuses.
(cd sandbox && CGO_ENABLED=0 go test -c -o "$work/reexec.test" ./reexec)
(cd conformance && CGO_ENABLED=0 go build -o "$work/confine-conformance" ./cmd/confine-conformance)
users=(root)
if [[ $(id -u) != 0 ]]; then users=("$(id -un)"); else users+=(nobody); fi
for u in "${users[@]}"; do
	for emu in none no-namespaces; do
		run=(env GO_AGENT_OUT="$work" sh -c '"$1/reexec.test" -test.count=1 -test.v -test.run "^TestCommandRuns" && exec "$1/agent.test" -test.count=1 -test.v' sh "$work")
		[[ $emu == none ]] || run=("$work/confine-conformance" host-emulation "$emu" -- "${run[@]}")
		[[ $u == root || $(id -u) != 0 ]] || run=(setpriv --reuid=nobody --regid=nogroup --clear-groups "${run[@]}")
		echo "== examples/go-agent as $u, host emulation: $emu"
		log="$work/$u-$emu.log"
		(cd examples/go-agent && HOME="$work" "${run[@]}") >"$log" 2>&1 || true
		grep -E -B1 '^(--- |CONFINE )' "$log" | grep -E '^(--- |CONFINE )|^\s+agent_test.go:[0-9]+: unshare' || true
		if grep -q -E '^(--- FAIL|FAIL)' "$log" || [[ $(grep -c '^PASS$' "$log") != 2 ]]; then
			cat "$log" >&2
			echo "examples-test: examples/go-agent failed as $u (host emulation: $emu)" >&2
			exit 1
		fi
		echo "examples-test as $u ($emu): $(grep -c '^--- PASS' "$log") passed, $(grep -c '^--- FAIL' "$log") failed, $(grep -c '^--- SKIP' "$log") skipped"
	done
done
