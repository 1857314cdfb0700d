// Package afpacket is a nic.Port over Linux AF_PACKET sockets with
// TPACKET_V3 memory-mapped RX and TX rings.
//
// Each queue is one packet socket bound to the interface; with more than one
// queue the sockets join one PACKET_FANOUT group (hash mode by default), so
// the kernel spreads flows over the queues and every worker gets its share.
// With Config.FanoutOwner the group runs an eBPF program instead
// (PACKET_FANOUT_EBPF, assembled with cilium/ebpf) that sends each frame
// to the queue whose worker owns its flow, by the function OwnerSpec
// states, so LAN frames need no hand-over between workers.
//
// Recv walks the RX ring's blocks without system calls, copying each frame
// into the caller's buffer after nic.Headroom and releasing a block to the
// kernel once all its frames are consumed. Wait polls the socket only when
// the ring is empty. Send has two modes (Config.TxMode). TxRing copies a
// batch into free frames of a mapped TX ring and kicks the kernel once per
// batch with one sendto(MSG_DONTWAIT); the kernel sends each frame as page
// fragments of the ring, which a NIC with scatter-gather DMA reads in
// place. TxCopy hands the batch to one sendmmsg(MSG_DONTWAIT) and the
// kernel copies each frame into a linear buffer: on veth, where a
// fragmented frame is copied again on the peer's receive side and parsed
// through fragments, that costs less: in bench io on veth pppfwd's worker
// spent 1.3-1.4x less CPU per frame with TxCopy (1354 against 1861 ns) and
// moved 1.27x the frames. TxAuto, the default, picks TxCopy
// on veth and TxRing elsewhere. PACKET_QDISC_BYPASS hands frames straight
// to the driver in both modes. PACKET_IGNORE_OUTGOING keeps the
// port's own transmissions out of its RX rings.
//
// At Open the interface's coalescing offloads (GRO, LRO, TSO, GSO) are
// switched off so the pipeline never receives or hands down superframes.
// A TPACKET_V3 block reaches user space when it is full or its retire
// timeout (Config.BlockTimeout) passes: at low rates that timeout is the
// added latency.
//
// Opening needs CAP_NET_RAW (sockets) and CAP_NET_ADMIN (offloads,
// promiscuous mode). On other systems Open returns an error wrapping
// nic.ErrNotSupported.
//
// It may import only other nic packages and x/sys/unix (and cilium/ebpf for
// the XDP and fanout programs).
package afpacket
