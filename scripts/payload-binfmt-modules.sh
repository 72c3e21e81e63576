#!/usr/bin/env bash
# Puts the kernel modules the suite loads itself into PAYLOAD/<arch>/modules/<release>/, for each Debian kernel of
# vm/kernels.json; the guest has no /lib/modules:
#   binfmt_misc.ko  the wsl-interop family: Debian builds binfmt_misc as a module (CONFIG_BINFMT_MISC=m) up to
#                   6.18, and the runner loads it (internal/interopsim) to register the simulated WSL interop;
#   loop.ko         deputy/device-node*: the case attaches a loop device to a file outside the sandbox
#                   (internal/suite/deputy.go; CONFIG_BLK_DEV_LOOP=m); without it the case SKIPs with the reason.
# The modules come from the VM runner's own cache (`vm fetch --module NAME`, under CACHE/vm): it writes its
# private apt configuration and runs apt-get update itself on its first download, so a fresh machine's first
# payload has every module (issue 27: this script once read that configuration before any `vm run` had written
# it, and fetched none). A kernel whose package has no such module (built in, 6.19 on) is named; any other
# failure to fetch stops the payload, loudly: a payload without a module would turn that kernel's cases into
# deviations.
# KERNELS (comma-separated ids) narrows it to the kernels about to run (make test's smoke run: two); default all.
# Each kernel package is downloaded once for its modules and its kernel (vm fetch caches them).
# usage: scripts/payload-binfmt-modules.sh VM PAYLOAD [KERNELS]
set -euo pipefail
vm=${1:?usage: $0 VM PAYLOAD [KERNELS]} payload=${2:?usage: $0 VM PAYLOAD [KERNELS]} kernels=${3:-}
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for module in binfmt_misc loop; do
	if ! "$vm" fetch --module "$module" ${kernels:+--kernels "$kernels"} >"$list"; then
		echo "payload-binfmt-modules: vm fetch --module $module failed (above): the payload would lack a module the suite needs" >&2
		exit 1
	fi
	declare -A seen=()
	n=0 builtin=()
	while IFS=$'\t' read -r id arch sum path member; do
		if [[ $sum == built-in ]]; then
			builtin+=("$id")
			continue
		fi
		# member: ./lib/modules/<release>/kernel/…/NAME.ko[.xz|.zst|.gz] (or under ./usr)
		rel=${member#*/lib/modules/}
		rel=${rel%%/*}
		[[ -n ${seen[$arch/$rel]:-} ]] && continue
		seen[$arch/$rel]=1
		dst=$payload/$arch/modules/$rel
		mkdir -p "$dst"
		case $member in
		*.xz) xz -dc "$path" >"$dst/$module.ko.tmp" ;;
		*.zst) zstd -qdc "$path" >"$dst/$module.ko.tmp" ;;
		*.gz) gzip -dc "$path" >"$dst/$module.ko.tmp" ;;
		*) cp "$path" "$dst/$module.ko.tmp" ;;
		esac
		mv -f "$dst/$module.ko.tmp" "$dst/$module.ko"
		n=$((n + 1))
	done <"$list"
	echo "payload-binfmt-modules: $n $module.ko modules in $payload; none (built in, or not in the package) on ${builtin[*]:-none}"
	unset seen
done
