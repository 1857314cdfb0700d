// Package netmap is a nic.Port over netmap(4): FreeBSD, and Linux where the
// netmap module is loaded.
//
// A Port registers one file descriptor per worker queue on /dev/netmap with
// the NETMAP_REQ_REGISTER request of the modern nmreq_header API (ioctl
// NIOCCTRL), in NR_REG_ONE_NIC mode so that each worker owns exactly one
// TX/RX ring pair. The shared region (netmap_if, netmap_ring, slots and
// buffers) is mmapped once per memory allocator and read through the
// offsets the kernel publishes. Ring indices (head/cur/tail) are read and
// written with atomic loads/stores; the user side keeps cached copies and
// only reloads tail after a NIOCRXSYNC/NIOCTXSYNC or poll.
//
// The legacy API (struct nmreq with NIOCREGIF, netmap_legacy.h) is described
// by the constants below for reference but not used: it has 32-bit offsets
// and no host-ring counts.
//
// Recv and Send copy between the caller's nic.Frame buffers and netmap
// buffers (one copy, no allocation). Forward moves frames from one port's RX
// ring to another's TX ring by swapping buffer indices (NS_BUF_CHANGED),
// without copying, when both share one netmap memory region; OpenHost binds
// the host (software) rings, the path to and from the host network stack.
//
// Every value the kernel writes into the shared region (tail, slot buf_idx
// and len, ring offsets) is range-checked before use, so a misbehaving or
// hostile kernel side can make the port return errors or drop frames, but
// never read or write outside the mapped region. The same Port code runs
// over the real device or over Sim, a pure-Go simulated kernel side that
// follows netmap's documented ring semantics on the same memory layout and
// reports user-side protocol violations.
//
// It may import only other nic packages and x/sys/unix (and cilium/ebpf for
// the XDP and fanout programs).
package netmap
