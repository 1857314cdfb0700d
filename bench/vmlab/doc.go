// Package vmlab is pppfwd's real-peer lab: a small Linux VM, booted with
// qemu-system-x86_64 under TCG (no KVM needed), that runs software nobody
// here wrote (the kernel's ppp_generic/pppoe drivers, pppd with its
// rp-pppoe.so plugin, rp-pppoe's pppoe-server, the Kea DHCPv6 server) so
// that pppfwd's PPPoE client, access concentrator and DHCPv6
// prefix-delegation client can be tested against them. The same VM hosts a
// router under test: the kernel's (pppd as PPPoE client, nftables NAT, tc
// shaping) or pppfwd itself, a static binary added at boot.
//
// The VM image is built once from Debian packages (apt-get download +
// dpkg-deb -x; linux-image-amd64, ppp, pppoe, busybox-static, bash,
// nftables, iproute2, kea-dhcp6-server and the libraries they need) into a
// gzip'd newc initramfs and cached (see BuildImage). Each VM gets one or
// more virtio-net NICs attached to tap devices inside a network namespace
// the caller owns (made with internal/nettest, which holds all of pppfwd's
// namespace, veth and tap setup), so the pppfwd side runs in that namespace
// with a raw socket on the tap. Commands run in the VM over a dedicated
// serial port (ttyS1) framed with markers: see (*VM).Run.
//
// Options: VCPUs (qemu -smp, default 1) and MemoryMB (default 384) size the
// guest; Extra adds files (e.g. /usr/local/sbin/pppfwd) without rebuilding
// the image: they go into a second, uncompressed newc archive that Start
// appends to a copy of the cached initramfs in the VM's runtime directory
// (Linux unpacks concatenated archives in order, so an extra file replaces
// the image's file at the same path). (*VM).ProcStat returns the guest's
// per-CPU times from /proc/stat.
//
// The host needs root, qemu-system-x86_64, ip, apt-get and dpkg-deb; and
// tcpdump and tshark for captures. scripts/vmlab-deps.sh installs them.
// Available reports what is missing.
//
// Environment: VMLAB_CACHE overrides the image cache directory (default
// ~/.cache/pppfwd-vmlab; delete it to pick up a newer Debian kernel);
// VMLAB_PCAP_DIR makes the package's tests keep their captures there.
//
// Guest notes: the image has no udev and no real init; stage 1 (busybox)
// mounts proc, sys, devtmpfs, devpts and a tmpfs /tmp, stage 2 (bash) loads
// the modules listed in GuestModules, brings every NIC up without IPv6 and
// starts busybox syslogd (/var/log/messages). PATH starts with
// /usr/local/sbin and ends with busybox's applets, so Debian's ip, tc and
// nft are the ones that run. The modules cover PPP and PPPoE, nftables
// (ip, ip6 and inet tables, conntrack, NAT chains, masquerade; counter, rt
// and exthdr for MSS clamping are part of nf_tables) and the htb and cake
// qdiscs; fq_codel is built into Debian's kernel and is its default qdisc.
// IP forwarding is off until a test writes 1 to
// /proc/sys/net/ipv4/ip_forward. /etc/ppp/options is empty, so pppd runs
// only with the options a test gives it. Debian's pppoe-server is built
// without kernel mode (-k): it relays sessions through a pty with the
// user-mode pppoe program; pppd's rp-pppoe.so client uses the kernel's
// PPPoE socket.
//
// vmlab imports internal/nettest (namespaces and taps) and the standard
// library; its tests also use internal/rawsock, hdr, nic, pppoe and
// pppoe/dhcp6, and build cmd/pppfwd with the go command (they do not
// import it).
package vmlab
