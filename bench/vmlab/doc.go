// Package vmlab is pppfwd's real-peer lab: a small Linux VM, booted with
// qemu-system-x86_64 under TCG (no KVM needed), that runs software nobody
// here wrote (the kernel's ppp_generic/pppoe drivers, pppd with its
// rp-pppoe.so plugin, rp-pppoe's pppoe-server) so that pppfwd's PPPoE client
// and access concentrator can be tested against them.
//
// The VM image is built once from Debian packages (apt-get download +
// dpkg-deb -x; linux-image-amd64, ppp, pppoe, busybox-static, bash and the
// libraries they need) into a gzip'd newc initramfs and cached (see
// BuildImage). Each VM gets one or more virtio-net NICs attached to tap
// devices inside a network namespace the caller owns (made with internal/nettest,
// which holds all of pppfwd's namespace, veth and tap setup), so the pppfwd side
// runs in that namespace with a raw socket on the tap. Commands run in the
// VM over a dedicated serial port (ttyS1) framed with markers: see (*VM).Run.
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
// starts busybox syslogd (/var/log/messages). /etc/ppp/options is empty, so
// pppd runs only with the options a test gives it. Debian's pppoe-server is
// built without kernel mode (-k): it relays sessions through a pty with the
// user-mode pppoe program; pppd's rp-pppoe.so client uses the kernel's
// PPPoE socket.
package vmlab
