#!/usr/bin/env bash
# Puts binfmt_misc.ko of every Debian kernel of vm/kernels.json into PAYLOAD/<arch>/modules/<release>/, for the
# wsl-interop conformance family: Debian builds binfmt_misc as a module (CONFIG_BINFMT_MISC=m) and the guest has
# no /lib/modules, so the runner loads it from the payload (internal/interopsim) to register the simulated WSL
# interop. Each module is fetched once with apt (the runner's own apt configuration under CACHE/apt) and kept in
# CACHE/modules/<package>_<version>/; a kernel whose module cannot be had is named, and its family then SKIPs
# with the reason. The same for loop.ko (CONFIG_BLK_DEV_LOOP=m), for deputy/device-node*: the case attaches a
# loop device to a file outside the sandbox (internal/suite/deputy.go); without it the case SKIPs with the reason.
# usage: scripts/payload-binfmt-modules.sh PAYLOAD [CACHE]
set -euo pipefail
payload=${1:?usage: $0 PAYLOAD [CACHE]}
cache=${2:-$HOME/.cache/confine/vm}
apt=$cache/apt
# The modules, by their member path under lib/modules/<release>/kernel/, and what skips without them.
declare -A member=([binfmt_misc]=fs/binfmt_misc [loop]=drivers/block/loop)
declare -A skips=([binfmt_misc]="wsl-interop skips there" [loop]="deputy/device-node skips there")
python3 -c '
import json
seen = set()
for k in json.load(open("vm/kernels.json"))["kernels"]:
    key = (k["package"], k["version"], k["arch"])
    if key not in seen:
        seen.add(key)
        print(*key)
' | while read -r pkg ver arch; do
	dir=$cache/modules/${pkg}_${ver}
	want=()
	for m in "${!member[@]}"; do
		[[ -s $dir/$m.ko || -e $dir/$m.none ]] || want+=("$m")
	done
	if ((${#want[@]})); then
		tmp=$(mktemp -d)
		if (cd "$tmp" && apt-get -q -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
			-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Dir::State::Status="$apt/status" \
			-o APT::Architecture="$arch" download "$pkg=$ver" >/dev/null 2>&1); then
			mkdir -p "$dir"
			for m in "${want[@]}"; do
				dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards "*/kernel/${member[$m]}.ko*" 2>/dev/null || true
				ko=$(find "$tmp" -name "$m.ko*" | head -1)
				if [[ -z $ko ]]; then
					: >"$dir/$m.none" # built in, or not in this package (linux-binary): not fetched again
					echo "payload-binfmt-modules: no $m.ko in $pkg $ver (built in, or not in the package): ${skips[$m]}" >&2
					continue
				fi
				rel=${ko#*/lib/modules/}
				echo "${rel%%/*}" >"$dir/release"
				case $ko in
				*.xz) xz -dc "$ko" >"$dir/$m.ko" ;;
				*.zst) zstd -qdc "$ko" >"$dir/$m.ko" ;;
				*) cp "$ko" "$dir/$m.ko" ;;
				esac
			done
		else
			echo "payload-binfmt-modules: $pkg $ver cannot be fetched: ${skips[*]}" >&2
		fi
		rm -rf "$tmp"
	fi
	for m in "${!member[@]}"; do
		if [[ -s $dir/$m.ko ]]; then
			rel=$(cat "$dir/release")
			mkdir -p "$payload/$arch/modules/$rel"
			cp -f "$dir/$m.ko" "$payload/$arch/modules/$rel/$m.ko"
		fi
	done
done
