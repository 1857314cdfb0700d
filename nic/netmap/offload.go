package netmap

// Host rings and offloads: netmap hands the host ring only frames that
// are complete on the wire. A frame the host stack leaves for the NIC to
// finish (a TCP or UDP checksum to fill in, a TCP segment to cut, a
// VLAN-tagged segment to cut) is dropped by the kernel before it reaches
// the host RX ring ("drop mbuf that needs checksum offload"), so with
// those offloads on, the box's own TCP and UDP never leave it. NIC-side
// receive coalescing (LRO) makes frames larger than a netmap buffer,
// which the ports drop. DisableHostOffloads switches these off on the
// interface whose host rings pppfwd opens; they stay off after pppfwd
// exits (the interface belongs to pppfwd while it runs).
