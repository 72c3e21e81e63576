#!/usr/bin/env bash
# Puts binfmt_misc.ko of every Debian kernel of vm/kernels.json into PAYLOAD/<arch>/modules/<release>/, for the
# wsl-interop conformance family: Debian builds binfmt_misc as a module (CONFIG_BINFMT_MISC=m) up to 6.18 and the
# guest has no /lib/modules, so the runner loads it from the payload (internal/interopsim) to register the
# simulated WSL interop. The modules come from the VM runner's own cache (`vm fetch --module binfmt_misc`, under
# CACHE/vm): it writes its private apt configuration and runs apt-get update itself on its first download, so a
# fresh machine's first payload has every module (issue 27: this script once read that configuration before any
# `vm run` had written it, and fetched none). A kernel whose package has no such module (built in, 6.19 on) is
# named; any other failure to fetch stops the payload, loudly: a payload without a module would turn every
# wsl-interop case of that kernel into a deviation.
# KERNELS (comma-separated ids) narrows it to the kernels about to run (make test's smoke run: two); default all.
# Each kernel package is downloaded once for its module and its kernel (vm fetch caches both).
# usage: scripts/payload-binfmt-modules.sh VM PAYLOAD [KERNELS]
set -euo pipefail
vm=${1:?usage: $0 VM PAYLOAD [KERNELS]} payload=${2:?usage: $0 VM PAYLOAD [KERNELS]} kernels=${3:-}
list=$(mktemp)
trap 'rm -f "$list"' EXIT
if ! "$vm" fetch --module binfmt_misc ${kernels:+--kernels "$kernels"} >"$list"; then
	echo "payload-binfmt-modules: vm fetch --module binfmt_misc failed (above): the payload would lack the modules the wsl-interop family needs" >&2
	exit 1
fi
declare -A seen
n=0 builtin=()
while IFS=$'\t' read -r id arch sum path member; do
	if [[ $sum == built-in ]]; then
		builtin+=("$id")
		continue
	fi
	# member: ./lib/modules/<release>/kernel/fs/binfmt_misc.ko[.xz|.zst|.gz] (or under ./usr)
	rel=${member#*/lib/modules/}
	rel=${rel%%/*}
	[[ -n ${seen[$arch/$rel]:-} ]] && continue
	seen[$arch/$rel]=1
	dst=$payload/$arch/modules/$rel
	mkdir -p "$dst"
	case $member in
	*.xz) xz -dc "$path" >"$dst/binfmt_misc.ko.tmp" ;;
	*.zst) zstd -qdc "$path" >"$dst/binfmt_misc.ko.tmp" ;;
	*.gz) gzip -dc "$path" >"$dst/binfmt_misc.ko.tmp" ;;
	*) cp "$path" "$dst/binfmt_misc.ko.tmp" ;;
	esac
	mv -f "$dst/binfmt_misc.ko.tmp" "$dst/binfmt_misc.ko"
	n=$((n + 1))
done <"$list"
echo "payload-binfmt-modules: $n binfmt_misc.ko modules in $payload; built in (no module: the family registers without one) on ${builtin[*]:-none}"
