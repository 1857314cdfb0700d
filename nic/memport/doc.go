// Package memport is an in-memory nic.Port with real ring semantics: fixed
// capacity per queue, back-pressure (Send accepts only what fits) and drops
// counted. Send and Recv swap buffers with the ring's slots instead of
// copying, so moving a frame costs no copy and no allocation.
//
// A port's TX queue q feeds either its own TX ring (drained with Drain, for
// tests), the RX queue q of a peer (Pair), or a sink that counts and
// discards (Sink). Its RX queue q is fed by Inject, by a peer, or by a
// replay list of pre-built frames (Replay) for synthetic benchmarks.
//
// It may import only other nic packages and x/sys/unix (and cilium/ebpf for
// the XDP and fanout programs).
package memport
