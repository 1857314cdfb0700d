package afpacket

import (
	"errors"
	"fmt"
	"time"
)

// ErrClosed is returned by a Port's methods after Close.
var ErrClosed = errors.New("afpacket: port closed")

// FanoutMode selects how the kernel spreads frames over the queues.
type FanoutMode uint16

// Fanout modes (linux/if_packet.h PACKET_FANOUT_*).
const (
	FanoutHash FanoutMode = 0 // by flow hash: one flow, one queue
	FanoutLB   FanoutMode = 1 // round robin
	FanoutCPU  FanoutMode = 2 // by the CPU that received the frame
	FanoutQM   FanoutMode = 5 // by the NIC's RX queue (skb queue mapping)
)

// TxMode selects how Send hands frames to the kernel (see the package
// comment).
type TxMode uint8

// TX modes.
const (
	TxAuto TxMode = iota // TxCopy on veth interfaces, TxRing elsewhere
	TxRing               // PACKET_TX_RING: mapped ring, frames sent as page fragments
	TxCopy               // sendmmsg: the kernel copies each frame; no TX ring
)

func (m TxMode) String() string {
	switch m {
	case TxRing:
		return "ring"
	case TxCopy:
		return "copy"
	}
	return "auto"
}

// ParseTxMode maps "auto", "ring" and "copy" to a TxMode.
func ParseTxMode(s string) (TxMode, error) {
	for _, m := range []TxMode{TxAuto, TxRing, TxCopy} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("afpacket: TX mode %q: want auto, ring or copy", s)
}

// Config tunes a Port. The zero value is usable.
type Config struct {
	// Queues is the number of sockets (default 1).
	Queues int
	// Fanout is the fanout mode when Queues > 1 (default FanoutHash).
	Fanout FanoutMode
	// FanoutID is the fanout group id; 0 picks one unused by this process.
	FanoutID uint16
	// BlockSize is the RX block size in bytes, a multiple of the page
	// size (default 256 KiB); Blocks the number of RX blocks per queue
	// (default 64).
	BlockSize int
	Blocks    int
	// BlockTimeout retires a partly filled RX block after this long
	// (millisecond granularity, default 1 ms; RxBlocks only).
	BlockTimeout time.Duration
	// RxRing is the RX (and TX) ring's layout (default RxAuto).
	RxRing RxRing
	// TxMode is how Send hands frames to the kernel (default TxAuto).
	TxMode TxMode
	// TxFrames is the number of TX ring slots per queue (default 1024,
	// rounded up to fill whole blocks; TxRing only).
	TxFrames int
	// Promisc puts the interface into promiscuous mode while the port is
	// open (a bridge or a router with its own MAC needs it on real NICs).
	Promisc bool
	// KeepOffloads leaves the interface's GRO/LRO/TSO/GSO settings alone.
	KeepOffloads bool
	// FanoutOwner, with Queues > 1, steers each frame to the queue of its
	// flow's owner: the sockets form a PACKET_FANOUT_EBPF group whose
	// program computes FanoutOwner.Queue (see OwnerSpec). Workers must
	// equal Queues. When the program cannot be loaded or attached, the
	// group uses Fanout instead, and Port.FanoutOwner reports why.
	FanoutOwner *OwnerSpec
	// FanoutWAN, with Queues > 1, steers each PPPoE frame of a WAN port
	// to the queue of the worker owning its flow: the group's program
	// computes FanoutWAN.Queue (see WANSpec). As FanoutOwner (which it
	// excludes): Workers must equal Queues, the group falls back to
	// Fanout when the program cannot be used, and Port.FanoutOwner says.
	FanoutWAN *WANSpec
}

// RxRing is the TPACKET version of a port's rings.
type RxRing uint8

const (
	// RxAuto: each queue has a frame ring and a block ring in one fanout
	// group, and a per-queue switch in the group's eBPF program picks
	// which one the kernel fills: frames while Recv keeps up, blocks from
	// when it returns full batches in a row (a backlog) until a block
	// times out nearly empty (the load has gone). The default; Open falls
	// back to RxFrames when the program cannot be loaded, and uses it
	// for more than one queue without FanoutOwner or FanoutWAN (Port.RxRing
	// says why).
	RxAuto RxRing = iota
	// RxFrames (TPACKET_V2): one slot per frame, handed to user space as
	// it arrives and waking a sleeping reader at once: no added delay at
	// low rates, but per-frame status work in the kernel at high ones.
	RxFrames
	// RxBlocks (TPACKET_V3): frames packed into blocks handed over when
	// full or after BlockTimeout (rounded up to the kernel's tick): fewer
	// status words per frame at high rates, up to BlockTimeout of delay
	// (and a wakeup only per block) at low ones.
	RxBlocks
)

// String names the ring.
func (r RxRing) String() string {
	switch r {
	case RxFrames:
		return "frames (TPACKET_V2)"
	case RxBlocks:
		return "blocks (TPACKET_V3)"
	}
	return "auto (TPACKET_V2, V3 under load)"
}

// ParseRxRing maps "auto", "frames" and "blocks" to an RxRing.
func ParseRxRing(s string) (RxRing, error) {
	switch s {
	case "auto":
		return RxAuto, nil
	case "frames":
		return RxFrames, nil
	case "blocks":
		return RxBlocks, nil
	}
	return 0, fmt.Errorf("afpacket: RX ring %q: want auto, frames or blocks", s)
}

// QueueStats are one queue's counters. Kernel figures come from
// PACKET_STATISTICS.
type QueueStats struct {
	RxPackets, RxBytes uint64 // handed to Recv callers
	TxPackets, TxBytes uint64 // accepted by Send
	KernelRx           uint64 // frames the kernel queued to this socket
	KernelDrops        uint64 // frames the kernel dropped: ring full
	Freezes            uint64 // times the RX ring was full (queue frozen)
	RxOversize         uint64 // dropped by Recv: longer than nic.MaxData or truncated
	RxCsumPartial      uint64 // received with an unfinished L4 checksum (peer tx offload); marked nic.RxCsumPartial
	RxGSO              uint64 // received as a GSO superframe (coalescing offload on)
	TxFull             uint64 // frames refused by Send: TX ring full (TxCopy: send buffer full, or the rest of a batch after an error)
	TxOversize         uint64 // frames dropped by Send: too long for a TX slot (TxCopy: refused by the kernel as too long or malformed)
	TxWrongFormat      uint64 // TX slots the kernel rejected (TxRing)
	TxDeviceDrops      uint64 // TxCopy: frames the device path dropped after taking them (ENOBUFS)
	RingSwitches       uint64 // RxAuto: times the kernel was told to fill the other ring
	TxKickErrors       uint64 // failed kicks: sendto (TxRing: frames stay queued) or sendmmsg ending a batch (TxCopy)
}
