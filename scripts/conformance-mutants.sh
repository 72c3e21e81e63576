#!/usr/bin/env bash
# Mutation check of the conformance suite: each conformance/mutants/*.patch plants one deliberate bug in a scratch
# copy of sandbox/ (never in the tree). The script builds that confine, runs the suite against it where the patch
# says (Where: host; host nobody, as uid 65534, for a route only an unprivileged launch takes; or vm ID), and requires every case named on its Caught-by: line to FAIL there while it
# does not fail with the unmodified confine. The race cases run at the gate's counts: the attempts the reviewed
# win rates (RATES, conformance/race-rates.json) give for the power the matrix asks (99.9 %), the same
# computation `make matrix` makes per column; the plan and its power are printed per race case. It prints, per
# mutant, the cases that caught it, and exits 1 if any mutant survived or a patch no longer applies.
#
# With MEASURE > 0 it first measures the race cases' win rates against their mutants: each race case a host
# mutant's Caught-by names runs MEASURE attempts with --measure-races (every attempt counted, none stopping the
# case) as this user, as nobody when root, and with --backend bwrap where bwrap is installed; with
# MUTANTS_MEASURE_VM="ID ..." also in those VM kernels (root and nobody, one vCPU as in make matrix). The merged
# rates go to WORKDIR/race-rates.json, and with MUTANTS_RECORD=1 over RATES, for review like any change to
# expected.yaml.
# MUTANTS="name ..." narrows the run to those patches (default: every one).
# usage: scripts/conformance-mutants.sh CONFINE RUNNER VM WORKDIR TOCTOU_ATTEMPTS RATES [MEASURE]
set -euo pipefail
confine=$(realpath "$1") runner=$(realpath "$2") vm=$3 work=$(realpath -m "$4") attempts=$5 rates=$(realpath "$6") measure=${7:-0}
command -v patch >/dev/null || { echo "conformance-mutants: patch(1) is needed (apt-get install patch)" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work"
race=(--toctou-attempts "$attempts" --race-rates "$rates")
patches=()
for p in conformance/mutants/*.patch; do
	[[ -z ${MUTANTS:-} || " $MUTANTS " == *" $(basename "$p" .patch) "* ]] && patches+=("$p")
done
[ ${#patches[@]} -gt 0 ] || { echo "conformance-mutants: MUTANTS=\"$MUTANTS\" names no patch of conformance/mutants" >&2; exit 2; }

# payload DIR CONFINE RUNNER ARCH: a VM payload holding CONFINE and RUNNER, and the helper RUNNER runs under
# confine (built once per arch), as make payload has it: a race's win rate depends on the launch it races.
payload() {
	mkdir -p "$1/$4"
	cp "$2" "$1/$4/confine"
	cp "$3" "$1/$4/confine-conformance"
	[ -x "$work/helper-$4" ] || (cd conformance && GOARCH=$4 CGO_ENABLED=0 go build -trimpath -o "$work/helper-$4" ./cmd/confine-conformance-helper)
	cp "$work/helper-$4" "$1/$4/confine-conformance-helper"
}

# failing CONFINE RUNNER LOG [vm ID]: run the suite, print the IDs of the failing cases.
failing() {
	local c=$1 r=$2 log=$3
	if [ "${4:-}" = vm ]; then
		local dir=$work/payload-$(basename "$log" .log) id=$5 arch=${5#*-}
		arch=${arch%%-*}
		payload "$dir" "$c" "$r" "$arch"
		cp "$rates" "$dir/$arch/race-rates.json"
		# At the gate's counts: as make matrix runs it, each race case at most MATRIX_RACE_MAX attempts (without
		# the cap gitfile-swap's rate under TCG asks thousands, and the VM's watchdog ends the run).
		"$vm" run --kernels "$id" --results "$dir/results" --payload "$dir/{arch}" -- \
			/payload/confine-conformance --confine /payload/confine --toctou-attempts "$attempts" \
			--race-rates /payload/race-rates.json --race-max "${RACE_MAX:-200}" --case-timeout 3m >"$log" 2>&1 || true
		cat "$dir/results/$id.out" >>"$log" 2>/dev/null || true
	elif [ "${4:-}" = nobody ]; then
		setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$r" --confine "$c" "${race[@]}" --scratch /var/tmp >"$log" 2>&1 || true
	else
		"$r" --confine "$c" "${race[@]}" >"$log" 2>&1 || true
	fi
	{ grep -oE '^--- FAIL: [^ ]+' "$log" || true; } | cut -d' ' -f3 | sort -u
}

# arch ID: the GOARCH of a kernel id like 6.12-amd64-disabled.
arch() { local a=${1#*-}; echo "${a%%-*}"; }

# build NAME PATCH GOARCH: the mutant's confine at $work/NAME/confine, or 1 if the patch no longer applies.
build() {
	local src=$work/$1
	mkdir -p "$src"
	cp -r sandbox "$src/sandbox"
	if ! patch -d "$src" -p1 --batch --forward --quiet <"$2"; then
		echo "$1: the patch no longer applies to sandbox/: refresh it" >&2
		return 1
	fi
	(cd "$src/sandbox" && GOWORK=off CGO_ENABLED=0 GOARCH=$3 go build -trimpath -o "$src/confine" ./cmd/confine)
}

# keep FILE: add FILE to the measurements when a race case counted its wins there; a case that cannot run there
# (the fallbacks skip under bwrap) measures nothing, and race-rates would fail on the file.
keep() {
	if grep -q '"Measured":true' "$1"; then
		measured+=("$1")
	else
		echo "conformance-mutants: $name: nothing measured in $1 (the cases skipped or could not run there)" >&2
	fi
}

# The race cases a Caught-by line names (those of the toctou-symlink-swap family).
races() { local c; for c in $1; do [[ $c == toctou-symlink-swap/* ]] && echo "$c"; done; }

if [ "$measure" -gt 0 ]; then
	echo "measuring the race cases' win rates against their mutants ($measure attempts per case and column)"
	measured=()
	for patch in "${patches[@]}"; do
		name=$(basename "$patch" .patch)
		where=$(sed -n 's/^Where: //p' "$patch")
		cases=$(races "$(sed -n 's/^Caught-by: //p' "$patch")")
		[[ -n $cases && $where == host ]] || continue
		build "$name" "$patch" "$(go env GOARCH)" || exit 1
		args=()
		for c in $cases; do args+=(--case "$c"); done
		m=$work/measure-$name
		mkdir -p "$m"
		chmod 755 "$work" "$work/$name" "$m"
		"$runner" --confine "$work/$name/confine" "${args[@]}" --json --measure-races --toctou-attempts "$measure" >"$m/$(id -un).jsonl" || true
		measured+=(--mutant "$name")
		keep "$m/$(id -un).jsonl"
		if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
			setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$runner" --confine "$work/$name/confine" "${args[@]}" --json \
				--measure-races --toctou-attempts "$measure" --scratch /var/tmp >"$m/nobody.jsonl" || true
			keep "$m/nobody.jsonl"
		fi
		if [ -f /usr/bin/bwrap ] || [ -f /bin/bwrap ] || [ -f /usr/local/bin/bwrap ]; then
			"$runner" --confine "$work/$name/confine" "${args[@]}" --backend bwrap --json --measure-races --toctou-attempts "$measure" >"$m/bwrap.jsonl" || true
			keep "$m/bwrap.jsonl"
		fi
		for id in ${MUTANTS_MEASURE_VM:-}; do
			a=$(arch "$id")
			(cd "$work/$name/sandbox" && GOWORK=off CGO_ENABLED=0 GOARCH=$a go build -trimpath -o "$m/vm-confine-$a" ./cmd/confine)
			(cd conformance && GOARCH=$a CGO_ENABLED=0 go build -trimpath -o "$m/vm-runner-$a" ./cmd/confine-conformance)
			payload "$m/payload" "$m/vm-confine-$a" "$m/vm-runner-$a" "$a"
			# One vCPU, what make matrix's VMs get (VM_JOBS defaults to nproc): a race's win rate depends on it.
			"$vm" run --jobs 1 --cpus 1 --kernels "$id" --results "$m/vm" --payload "$m/payload/{arch}" -- \
				/payload/confine-conformance --confine /payload/confine "${args[@]}" --json --also-as 65534 \
				--measure-races --toctou-attempts "$measure" || true
			keep "$m/vm/$id.out"
		done
	done
	# One race-rates call per mutant: its files follow its --mutant.
	cp "$rates" "$work/race-rates.json"
	set -- "${measured[@]}"
	while [ $# -gt 0 ]; do
		[ "$1" = --mutant ] || { echo "conformance-mutants: internal: $1" >&2; exit 2; }
		mut=$2
		shift 2
		files=()
		while [ $# -gt 0 ] && [ "$1" != --mutant ]; do files+=("$1"); shift; done
		[ ${#files[@]} -gt 0 ] || { echo "conformance-mutants: $mut: no measurement to merge" >&2; continue; }
		"$runner" race-rates --mutant "$mut" --base "$work/race-rates.json" --out "$work/race-rates.json" "${files[@]}"
	done
	if [ "${MUTANTS_RECORD:-0}" = 1 ]; then
		cp "$work/race-rates.json" "$rates"
		echo "recorded the measured rates in $rates: review the diff (git diff $rates)"
	else
		echo "measured rates merged into $work/race-rates.json (MUTANTS_RECORD=1 writes them over $rates):"
		diff -u "$rates" "$work/race-rates.json" || true
	fi
	race=(--toctou-attempts "$attempts" --race-rates "$work/race-rates.json")
fi

declare -A baseline
survived=0
printf '%-24s %-24s %s\n' mutant where "caught by (cases that FAIL only with the mutant)"
for patch in "${patches[@]}"; do
	name=$(basename "$patch" .patch)
	where=$(sed -n 's/^Where: //p' "$patch")
	want=$(sed -n 's/^Caught-by: //p' "$patch")
	mode=host id=host goarch=$(go env GOARCH)
	if [[ $where == vm\ * ]]; then
		mode=vm id=${where#vm }
		goarch=$(arch "$id")
	elif [ "$where" = "host nobody" ]; then # a route only an unprivileged launch takes (the layered child)
		mode=nobody id=host-nobody
	fi
	rm -rf "${work:?}/$name"
	if ! build "$name" "$patch" "$goarch"; then
		survived=1
		continue
	fi
	run=$runner base=$confine
	if [ "$mode" = vm ]; then
		run=$work/runner-$goarch base=$work/confine-$goarch
		[ -x "$run" ] || (cd conformance && GOARCH=$goarch CGO_ENABLED=0 go build -trimpath -o "$run" ./cmd/confine-conformance)
		[ -x "$base" ] || (cd sandbox && GOARCH=$goarch CGO_ENABLED=0 go build -trimpath -o "$base" ./cmd/confine)
	fi
	if [ -z "${baseline[$id]+x}" ]; then
		baseline[$id]=$(failing "$base" "$run" "$work/baseline-$id.log" "$mode" "$id" | tr '\n' ' ')
	fi
	got=$(failing "$work/$name/confine" "$run" "$work/$name.log" "$mode" "$id" | tr '\n' ' ')
	caught=()
	for c in $got; do
		[[ " ${baseline[$id]} " == *" $c "* ]] || caught+=("$c")
	done
	missing=()
	for c in $want; do
		[[ " ${caught[*]:-} " == *" $c "* ]] || missing+=("$c")
	done
	printf '%-24s %-24s %s\n' "$name" "$where" "${caught[*]:-NONE}"
	# The race cases' plans in this run (the text log's "race plan:" line follows each case's attempts).
	for c in $(races "$want"); do
		plan=$(awk -v c="$c" '$0 ~ "^=== RUN   "c"$" {on=1} on && /race plan:/ {sub(/^ *race plan: /, ""); print; exit}' "$work/$name.log")
		printf '%-24s   %s: %s\n' "" "$c" "${plan:-a fixed count (no measured rate): power unknown}"
	done
	if [ ${#caught[@]} -eq 0 ] || [ ${#missing[@]} -gt 0 ]; then
		echo "  $name survived: Caught-by names ${missing[*]:-cases}, which did not fail (log: $work/$name.log)" >&2
		survived=1
	fi
done
exit "$survived"
