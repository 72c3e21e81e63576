#!/usr/bin/env bash
# Mutation check of the conformance suite: each conformance/mutants/*.patch plants one deliberate bug in a scratch
# copy of sandbox/ (never in the tree). The script builds that confine, runs the suite against it where the patch
# says (the host, or one VM kernel), and requires every case named on its Caught-by: line to FAIL there while it
# does not fail with the unmodified confine. It prints, per mutant, the cases that caught it, and exits 1 if any
# mutant survived or a patch no longer applies.
# usage: scripts/conformance-mutants.sh CONFINE RUNNER VM WORKDIR TOCTOU_ATTEMPTS
set -euo pipefail
confine=$(realpath "$1") runner=$(realpath "$2") vm=$3 work=$4 attempts=$5
command -v patch >/dev/null || { echo "conformance-mutants: patch(1) is needed (apt-get install patch)" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work"

# failing CONFINE RUNNER LOG [vm ID]: run the suite, print the IDs of the failing cases.
failing() {
	local c=$1 r=$2 log=$3
	if [ "${4:-}" = vm ]; then
		local dir=$work/payload-$(basename "$log" .log) id=$5 arch=${5#*-}
		arch=${arch%%-*}
		mkdir -p "$dir/$arch"
		cp "$c" "$dir/$arch/confine"
		cp "$r" "$dir/$arch/confine-conformance"
		"$vm" run --kernels "$id" --results "$dir/results" --payload "$dir/{arch}" -- \
			/payload/confine-conformance --confine /payload/confine --toctou-attempts "$attempts" >"$log" 2>&1 || true
		cat "$dir/results/$id.out" >>"$log" 2>/dev/null || true
	else
		"$r" --confine "$c" --toctou-attempts "$attempts" >"$log" 2>&1 || true
	fi
	{ grep -oE '^--- FAIL: [^ ]+' "$log" || true; } | cut -d' ' -f3 | sort -u
}

# arch ID: the GOARCH of a kernel id like 6.12-amd64-disabled.
arch() { local a=${1#*-}; echo "${a%%-*}"; }

declare -A baseline
survived=0
printf '%-20s %-24s %s\n' mutant where "caught by (cases that FAIL only with the mutant)"
for patch in conformance/mutants/*.patch; do
	name=$(basename "$patch" .patch)
	where=$(sed -n 's/^Where: //p' "$patch")
	want=$(sed -n 's/^Caught-by: //p' "$patch")
	src=$work/$name
	mkdir -p "$src"
	cp -r sandbox "$src/sandbox"
	if ! patch -d "$src" -p1 --batch --forward --quiet <"$patch"; then
		echo "$name: the patch no longer applies to sandbox/: refresh it" >&2
		survived=1
		continue
	fi
	mode=host id=host goarch=$(go env GOARCH)
	if [[ $where == vm\ * ]]; then
		mode=vm id=${where#vm }
		goarch=$(arch "$id")
	fi
	(cd "$src/sandbox" && GOWORK=off CGO_ENABLED=0 GOARCH=$goarch go build -trimpath -o "$src/confine" ./cmd/confine)
	run=$runner base=$confine
	if [ "$mode" = vm ]; then
		run=$work/runner-$goarch base=$work/confine-$goarch
		[ -x "$run" ] || (cd conformance && GOARCH=$goarch CGO_ENABLED=0 go build -trimpath -o "$run" ./cmd/confine-conformance)
		[ -x "$base" ] || (cd sandbox && GOARCH=$goarch CGO_ENABLED=0 go build -trimpath -o "$base" ./cmd/confine)
	fi
	if [ -z "${baseline[$id]+x}" ]; then
		baseline[$id]=$(failing "$base" "$run" "$work/baseline-$id.log" "$mode" "$id" | tr '\n' ' ')
	fi
	got=$(failing "$src/confine" "$run" "$work/$name.log" "$mode" "$id" | tr '\n' ' ')
	caught=()
	for c in $got; do
		[[ " ${baseline[$id]} " == *" $c "* ]] || caught+=("$c")
	done
	missing=()
	for c in $want; do
		[[ " ${caught[*]:-} " == *" $c "* ]] || missing+=("$c")
	done
	printf '%-20s %-24s %s\n' "$name" "$where" "${caught[*]:-NONE}"
	if [ ${#caught[@]} -eq 0 ] || [ ${#missing[@]} -gt 0 ]; then
		echo "  $name survived: Caught-by names ${missing[*]:-cases}, which did not fail (log: $work/$name.log)" >&2
		survived=1
	fi
done
exit "$survived"
