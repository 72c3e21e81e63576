#!/usr/bin/env bash
# Installs what the VM runner needs from Debian's archive (idempotent): QEMU for both guest arches, dpkg-deb for
# kernel extraction, GNU cpio (an independent reader for the initramfs test), the Debian archive keyring (the
# private apt config trusts only it) and docker-registry (the tests and `make kernels-oci` start their own on
# loopback; the package's service is not used). Kernels are fetched on demand by `vm run` into $CACHE/vm through
# that private apt config; nothing here touches the system's apt sources.
set -euo pipefail
pkgs=(qemu-system-x86 qemu-system-arm dpkg cpio debian-archive-keyring docker-registry)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	echo "vm-deps: all installed (${pkgs[*]})"
	exit 0
fi
if [[ $(id -u) != 0 ]]; then
	echo "vm-deps: missing ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "vm-deps: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
