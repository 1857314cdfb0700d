// Package nic defines pppfwd's packet I/O contract: fixed-size frames with
// headroom, and the batch Port interface every backend (memport, afpacket,
// afxdp, netmap, tap) implements.
//
// It may import only other nic packages and x/sys/unix (and cilium/ebpf for
// the XDP and fanout programs).
package nic
