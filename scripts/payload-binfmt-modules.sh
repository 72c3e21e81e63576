#!/usr/bin/env bash
# Puts binfmt_misc.ko of every Debian kernel of vm/kernels.json into PAYLOAD/<arch>/modules/<release>/, for the
# wsl-interop conformance family: Debian builds binfmt_misc as a module (CONFIG_BINFMT_MISC=m) and the guest has
# no /lib/modules, so the runner loads it from the payload (internal/interopsim) to register the simulated WSL
# interop. Each module is fetched once with apt (the runner's own apt configuration under CACHE/apt) and kept in
# CACHE/modules/<package>_<version>/; a kernel whose module cannot be had is named, and its family then SKIPs
# with the reason.
# usage: scripts/payload-binfmt-modules.sh PAYLOAD [CACHE]
set -euo pipefail
payload=${1:?usage: $0 PAYLOAD [CACHE]}
cache=${2:-$HOME/.cache/confine/vm}
apt=$cache/apt
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
	if [[ ! -s $dir/binfmt_misc.ko ]]; then
		tmp=$(mktemp -d)
		if (cd "$tmp" && apt-get -q -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
			-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Dir::State::Status="$apt/status" \
			-o APT::Architecture="$arch" download "$pkg=$ver" >/dev/null 2>&1) &&
			dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards '*/kernel/fs/binfmt_misc.ko*' 2>/dev/null; then
			ko=$(find "$tmp" -name 'binfmt_misc.ko*' | head -1)
			rel=$(basename "$(dirname "$(dirname "$(dirname "$ko")")")")
			mkdir -p "$dir"
			case $ko in
			*.xz) xz -dc "$ko" >"$dir/binfmt_misc.ko" ;;
			*.zst) zstd -qdc "$ko" >"$dir/binfmt_misc.ko" ;;
			*) cp "$ko" "$dir/binfmt_misc.ko" ;;
			esac
			echo "$rel" >"$dir/release"
		else
			echo "payload-binfmt-modules: no binfmt_misc.ko for $pkg $ver (built in, or not fetchable): wsl-interop skips there" >&2
		fi
		rm -rf "$tmp"
	fi
	if [[ -s $dir/binfmt_misc.ko ]]; then
		rel=$(cat "$dir/release")
		mkdir -p "$payload/$arch/modules/$rel"
		cp -f "$dir/binfmt_misc.ko" "$payload/$arch/modules/$rel/binfmt_misc.ko"
	fi
done
