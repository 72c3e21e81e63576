#!/usr/bin/env bash
# Runs the launcher's fake-kernel and host integration tests again as nobody, when run as root: users run
# confine as themselves, and the non-root path (the layered child, or the seccomp fallback) differs from root's.
# TMPDIR is left unset (so /tmp): one outside the writable set would add confine's warning line to every run.
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
# The exec-failure tests need a binary for the other architecture: built here, where root's build cache is warm
# (nobody's is cold, and building Go's runtime for another GOARCH takes a minute on a loaded machine).
foreign_arch=arm64
[[ $(go env GOARCH) == arm64 ]] && foreign_arch=amd64
mkdir -p "$work/foreign-src"
printf 'package main\n\nfunc main() { println("ran") }\n' >"$work/foreign-src/main.go"
printf 'module foreign\n\ngo 1.22\n' >"$work/foreign-src/go.mod"
(cd "$work/foreign-src" && GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOARCH=$foreign_arch go build -o "$work/foreign-$foreign_arch" .)
cp -r sandbox/internal/cli/testdata "$work/testdata"
chmod -R a+rX "$work" && chmod 1777 "$work"
for t in cli confine; do
	echo "== $t tests as nobody"
	(cd "$work" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env -u TMPDIR HOME="$work" CONFINE_BIN="$work/confine" CONFINE_TEST_FOREIGN_BIN="$work/foreign-$foreign_arch" "./$t.test" -test.count=1 -test.v) |
		tee "$work/$t.log" | grep -E '^(--- |ok|PASS|FAIL)' || true
	if ! grep -q '^PASS$' "$work/$t.log"; then
		# The failing tests' own lines (their messages, or a panic's trace), from their "=== RUN" on.
		awk '/^=== RUN   [^\/]*$/ { buf = "" } { buf = buf $0 "\n" } /^--- FAIL: / { printf "%s", buf; buf = "" }
			END { if (buf !~ /^(PASS\n)?$/) printf "%s", buf }' "$work/$t.log" >&2
		echo "sandbox-test-nobody: $t tests failed as nobody" >&2
		exit 1
	fi
	echo "$t as nobody: $(grep -c '^--- PASS' "$work/$t.log") passed, $(grep -c '^--- FAIL' "$work/$t.log") failed, $(grep -c '^--- SKIP' "$work/$t.log") skipped"
done
