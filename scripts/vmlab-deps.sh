#!/usr/bin/env bash
# Installs what bench/vmlab (the qemu real-peer PPPoE lab) needs on a Debian
# host: qemu (TCG, no KVM needed), tools to build the initramfs from Debian
# packages, and capture/decode tools (tcpdump, tshark). Idempotent; run as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v dpkg-deb >/dev/null || need+=(dpkg)
command -v tcpdump >/dev/null || need+=(tcpdump)
command -v tshark >/dev/null || need+=(tshark)
command -v ip >/dev/null || need+=(iproute2)

# The lab image is built with apt-get download from the apt lists: make
# sure they exist (a cleaned /var/lib/apt/lists would make the build fail).
lists=ok
apt-cache show linux-image-amd64 ppp pppoe busybox-static nftables iproute2 kea-dhcp6-server >/dev/null 2>&1 || lists=stale

if [ "${#need[@]}" -eq 0 ] && [ "$lists" = ok ]; then
	echo "vmlab-deps: all present"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "vmlab-deps: need root to install ${need[*]} / update apt lists" >&2
	exit 1
fi
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
if [ "${#need[@]}" -gt 0 ]; then
	apt-get install -y -qq --no-install-recommends "${need[@]}"
	echo "vmlab-deps: installed ${need[*]}"
fi
