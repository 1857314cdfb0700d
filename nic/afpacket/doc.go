// Package afpacket is a nic.Port over Linux AF_PACKET sockets with
// memory-mapped RX and TX rings (TPACKET_V2 frames, TPACKET_V3 blocks, or
// both per queue).
//
// Each queue is one packet socket bound to the interface; with more than one
// queue the sockets join one PACKET_FANOUT group (hash mode by default), so
// the kernel spreads flows over the queues and every worker gets its share.
// With Config.FanoutOwner the group runs an eBPF program instead
// (PACKET_FANOUT_EBPF, assembled with cilium/ebpf) that sends each frame
// to the queue whose worker owns its flow, by the function OwnerSpec
// states, so LAN frames need no hand-over between workers. Config.FanoutWAN
// does the same on the WAN port: the program reads the PPPoE session
// header and the inner destination port, echo id or IPv6 address pair
// (WANSpec) and sends each downlink frame to the worker owning its flow;
// control frames and fragments go to queue 0.
//
// Recv walks the RX ring without system calls, copying each frame into the
// caller's buffer after nic.Headroom and handing each slot (V2) or block
// (V3) back to the kernel once its frames are consumed. Wait polls the
// socket only when the ring is empty. Config.RxRing picks the ring: a V2
// frame ring hands each frame over as it arrives (no added delay, but
// per-frame status work and a wakeup in the kernel); a V3 block ring
// packs frames into blocks handed over when full or when the block's
// retire timeout (Config.BlockTimeout, rounded up to the kernel's tick)
// passes: cheaper per frame at high rates, that timeout of delay at low
// ones. RxAuto, the default, gives each queue both, in one
// PACKET_FANOUT_EBPF group whose program reads a per-queue switch from
// an array map: Recv switches the kernel to the block ring when the frame
// ring keeps filling whole batches and back when a block times out nearly
// empty, and reads the two rings so that frames keep their order. Send has two modes (Config.TxMode). TxRing copies a
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
// Opening needs CAP_NET_RAW (sockets) and CAP_NET_ADMIN (offloads,
// promiscuous mode). On other systems Open returns an error wrapping
// nic.ErrNotSupported.
//
// It may import only other nic packages and x/sys/unix (and cilium/ebpf for
// the XDP and fanout programs).
package afpacket
