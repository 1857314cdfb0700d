#!/usr/bin/env bash
# Installs what bench/vmlab (the qemu real-peer PPPoE lab) needs on a Debian
# host: qemu (TCG, no KVM needed), tools to build the initramfs from Debian
# packages, and capture/decode tools (tcpdump, tshark). Idempotent; run as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
command -v dpkg-deb >/dev/null || need+=(dpkg)
command -v tcpdump >/dev/null || need+=(tcpdump)
command -v tshark >/dev/null || need+=(tshark)
command -v ip >/dev/null || need+=(iproute2)
command -v zstd >/dev/null || need+=(zstd)
command -v xz >/dev/null || need+=(xz-utils)

if [ "${#need[@]}" -eq 0 ]; then
	echo "vmlab-deps: all present"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "vmlab-deps: need root to install: ${need[*]}" >&2
	exit 1
fi
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}"
echo "vmlab-deps: installed ${need[*]}"
