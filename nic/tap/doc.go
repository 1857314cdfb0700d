// Package tap is a nic.Port over a Linux TAP device, pppfwd's exception
// path: frames the router itself must handle (ARP, traffic to its own
// addresses, DHCP on the LAN) are sent into the TAP and reach the host
// stack as if they had arrived on a NIC, and whatever the host stack
// transmits on the TAP is received from it and goes back out.
//
// Each queue is one file descriptor on /dev/net/tun; with Queues > 1 the
// device is opened with IFF_MULTI_QUEUE and the kernel spreads the host's
// transmissions over the queues by flow. A TAP moves one frame per
// read/write system call: it is meant for the slow path, not for line rate.
// Frames carry no packet-information header (IFF_NO_PI) and no virtio-net
// header, so the kernel segments and checksums everything it hands over.
//
// The device lives as long as the Port is open. Opening needs
// CAP_NET_ADMIN; on other systems Open returns an error wrapping
// nic.ErrNotSupported (FreeBSD reaches the host stack through netmap host
// rings instead).
//
// It may import only other nic packages and x/sys/unix (and cilium/ebpf for
// the XDP and fanout programs).
package tap
