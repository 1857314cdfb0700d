// Package ethtool switches a network interface's offload features through
// the SIOCETHTOOL ioctl (no ethtool binary needed). pppfwd turns off every
// offload that coalesces frames (GRO, LRO, TSO, GSO) so that the dataplane
// and the shaper never see superframes. Driver reads an interface's driver
// name (afpacket picks its TX mode by it).
//
// It may import only other nic packages and x/sys/unix (and cilium/ebpf for
// the XDP and fanout programs).
package ethtool
