#!/usr/bin/env bash
# Runs the launcher's fake-kernel and host integration tests again as nobody, when run as root: users run
# confine as themselves, and the non-root path (the layered child, or the seccomp fallback) differs from root's.
# usage: scripts/sandbox-test-nobody.sh path/to/confine
set -euo pipefail
confine=${1:?usage: $0 path/to/confine}
if [[ $(id -u) != 0 ]]; then
	echo "sandbox-test-nobody: SKIP: not root, so the tests above already ran unprivileged"
	exit 0
fi
work=$(mktemp -d /var/tmp/confine-nobody.XXXX)
trap 'rm -rf "$work"' EXIT
(cd sandbox && CGO_ENABLED=0 go test -c -o "$work/cli.test" ./internal/cli &&
	CGO_ENABLED=0 go test -c -o "$work/confine.test" ./cmd/confine)
cp "$confine" "$work/confine"
cp -r sandbox/internal/cli/testdata "$work/testdata"
chmod -R a+rX "$work" && chmod 1777 "$work"
for t in cli confine; do
	echo "== $t tests as nobody"
	(cd "$work" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env HOME="$work" TMPDIR="$work" CONFINE_BIN="$work/confine" "./$t.test" -test.count=1 -test.v) |
		tee "$work/$t.log" | grep -E '^(--- |ok|PASS|FAIL)' || true
	grep -q '^PASS$' "$work/$t.log" || { echo "sandbox-test-nobody: $t tests failed as nobody" >&2; exit 1; }
	echo "$t as nobody: $(grep -c '^--- PASS' "$work/$t.log") passed, $(grep -c '^--- FAIL' "$work/$t.log") failed, $(grep -c '^--- SKIP' "$work/$t.log") skipped"
done
