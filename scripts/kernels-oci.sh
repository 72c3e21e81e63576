#!/usr/bin/env bash
# make kernels-oci: proves that the OCI path and the .deb path boot the same kernels with the same outcome.
# 1. Starts Debian's docker-registry on a free loopback port (storage in a temp dir; stopped on exit).
# 2. `vm kernel import-deb` of every package of the default matrix (vm/kernels.json) into it, as
#    127.0.0.1:PORT/confine/kernel:<id> (an entry with extra cmdline reuses its package's image).
# 3. Runs the matrix from the .debs (RESULTS/deb) and from the references, as ID=REF (RESULTS/oci).
# 4. Compares, per kernel: release, ABI reported and expected, result (from the tables) and image_sha256.
# Usage: kernels-oci.sh VM RESULTS PAYLOAD-DIR GUEST-CMD [ARGS...]
# env: VM_OCI_KERNELS (comma-separated ids: only these kernels), VM_OCI_ARGS (extra `vm run` flags, e.g. --jobs 1)
set -euo pipefail
vm=$1 results=$2 payload=$3
shift 3
read -ra extra <<<"${VM_OCI_ARGS:-}"
want=${VM_OCI_KERNELS:-}
deb_kernels=()
[[ -z $want ]] || deb_kernels=(--kernels "$want")
reg_bin=/usr/bin/docker-registry
[[ -x $reg_bin ]] || { echo "kernels-oci: $reg_bin missing: make vm-deps installs Debian's docker-registry" >&2; exit 1; }

tmp=$(mktemp -d)
pid=
cleanup() {
	if [[ -n $pid ]]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true # 143: it ended on our SIGTERM
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

port=
for _ in $(seq 50); do
	p=$((20000 + RANDOM % 40000))
	if ! ss -Hltn "sport = :$p" | grep -q .; then port=$p; break; fi
done
[[ -n $port ]] || { echo "kernels-oci: no free loopback port found" >&2; exit 1; }
cat >"$tmp/config.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $tmp/data
http:
  addr: 127.0.0.1:$port
EOF
"$reg_bin" serve "$tmp/config.yml" >"$tmp/registry.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
	curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
	kill -0 "$pid" 2>/dev/null || { echo "kernels-oci: docker-registry exited:" >&2; cat "$tmp/registry.log" >&2; exit 1; }
	sleep 0.1
done
repo=127.0.0.1:$port/confine/kernel
echo "kernels-oci: registry on 127.0.0.1:$port (pid $pid)" >&2

declare -A image # package=version/arch -> reference
items=()
while read -r id arch pkg version _; do
	[[ -z $want || ",$want," == *",$id,"* ]] || continue
	key=$pkg=$version/$arch
	if [[ -z ${image[$key]:-} ]]; then
		image[$key]=$repo:$id
		echo "kernels-oci: import-deb $pkg=$version --arch $arch --to ${image[$key]}" >&2
		"$vm" kernel import-deb "$pkg=$version" --arch "$arch" --to "${image[$key]}" >&2
	fi
	items+=("$id=${image[$key]}")
done < <("$vm" kernels | tail -n +2)

rm -rf "$results/deb" "$results/oci"
mkdir -p "$results"
code=0
echo "kernels-oci: matrix from the .debs" >&2
"$vm" run "${extra[@]}" "${deb_kernels[@]}" --results "$results/deb" --payload "$payload" -- "$@" | tee "$results/deb.table" || code=$?
echo "kernels-oci: matrix from $repo" >&2
"$vm" run "${extra[@]}" --kernels "$(IFS=,; echo "${items[*]}")" --results "$results/oci" --payload "$payload" -- "$@" |
	tee "$results/oci.table" || code=$?

# Columns KERNEL ARCH ACCEL RELEASE "ABI REPORTED" "ABI EXPECTED" RESULT SECONDS, minus ACCEL and SECONDS.
cols() { awk 'NF == 8 && $1 != "KERNEL" { print $1, $2, $4, $5, $6, $7 }' "$1" | sort; }
sums() { grep -H '"image_sha256"' "$1"/*.json | sed 's|.*/||; s|\.json:.*: "| |; s|".*||' | sort; }
if diff <(cols "$results/deb.table") <(cols "$results/oci.table") >&2 && diff <(sums "$results/deb") <(sums "$results/oci") >&2; then
	echo "kernels-oci: the .deb and OCI paths agree on all $(cols "$results/oci.table" | wc -l) kernels (release, ABI, result, image sha256)" >&2
else
	echo "kernels-oci: the .deb and OCI paths DISAGREE (diff above; results in $results/{deb,oci})" >&2
	exit 1
fi
exit "$code"
