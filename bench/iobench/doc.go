// Package iobench measures pppfwd on real packet I/O (AF_PACKET or AF_XDP
// ports over veth) against the Linux kernel's own forwarding with an
// nftables masquerade, on the same topology, traffic and generator.
//
// The topology is nettest's Line: A (LAN hosts) -- veth -- R (the
// forwarder) -- veth -- B (the WAN side, standing in for the BRAS). A
// single generator thread owns an AF_PACKET port in A and one in B (an RX
// ring each; TX in afpacket's default mode, which is one sendmmsg per
// batch on veth, and a frame veth drops on the way counts as sent and
// lost): it sends pre-built frames in batches in both directions and
// counts what arrives at the far ends. A run first primes every flow (one
// frame each way, every translation checked) and builds the downlink
// frames from what B received (Reply), then loads both directions.
//
// In the pppfwd measurement R runs a dataplane.Engine whose LAN and WAN
// ports are afpacket or afxdp ports opened in R, with a static PPPoE
// session (pipeline.Session) and FQ-CoDel on both directions. Its frames
// are addressed to MACs that are not R's interface addresses, so R's
// kernel drops them at once (PACKET_OTHERHOST). In the kernel measurement
// the same flows are addressed to R's interfaces, and R forwards them with
// IPv4 forwarding plus nettest's masquerade (this kernel has no PPP, so
// plain forward + masquerade is the in-kernel baseline).
//
// Fairness: on veth a frame's receive processing runs on the CPU that
// transmitted it, which would put the kernel's forwarding cost on the
// generator's CPU. Run therefore pins the generator to one CPU, the
// pppfwd workers to the others, and sets RPS on R's interfaces so that
// everything R does (the kernel's forwarding, or the packet-socket and XDP
// receive work plus pppfwd's workers) runs on the forwarder CPUs, while the
// end hosts' receive work (RPS on A's and B's interfaces) stays on the
// generator's CPU. Both measurements offer the same load from the same
// generator. While the latency probes run, the process's other threads
// (the Go runtime's, the engine's control goroutine) are moved onto the
// forwarder CPUs, both sides alike: pppfwd runs in the generator's
// process here, and its runtime's wakeups would otherwise land on the
// generator's CPU and delay the probes' arrival there, a cost a router
// in its own process never puts on its traffic's sender.
//
// With Options.Floor a third measurement runs in every round: a
// NullForwarder on the same backend, ports and pinned threads, moving the
// frames unchanged (they are addressed so that the sinks take them as they
// are). It is the I/O floor: what any userspace forwarder on that backend
// pays before doing any work.
//
// Figures: each side is first loaded as fast as the generator goes. A side
// that then loses more than the tolerance is searched for the highest
// offered rate within it (a userspace forwarder on AF_PACKET livelocks
// under overload: the kernel's receive work starves its worker), and the
// trial that delivered most is reported, every trial listed. The two
// measurements alternate for Options.Rounds rounds and the best round of
// each is reported, since on a shared machine other work only ever slows
// a run down; each round's generator CPU share shows how much it did. A
// side whose loss stayed within the tolerance ("offered"-bound) took all
// the generator could offer: its figure is a lower bound.
//
// It may import the router, pppoe, the control plane, the dataplane,
// shaper, hdr, internal and nic, and other bench packages (the lab); only
// cmd imports it.
package iobench
