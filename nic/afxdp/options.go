package afxdp

import (
	"errors"
	"fmt"
)

// Mode selects how the XDP program is attached.
type Mode int

const (
	// ModeAuto tries native (driver) XDP and falls back to generic.
	ModeAuto Mode = iota
	// ModeNative requires native (driver) XDP.
	ModeNative
	// ModeGeneric uses generic (skb) XDP, which every driver supports.
	ModeGeneric
)

func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeNative:
		return "native"
	case ModeGeneric:
		return "generic"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ZeroCopy selects the AF_XDP bind mode.
type ZeroCopy int

const (
	// ZeroCopyAuto tries zero-copy and falls back to copy mode.
	ZeroCopyAuto ZeroCopy = iota
	// ZeroCopyOn requires zero-copy (fails on drivers without it, e.g. veth).
	ZeroCopyOn
	// ZeroCopyOff forces copy mode.
	ZeroCopyOff
)

func (z ZeroCopy) String() string {
	switch z {
	case ZeroCopyAuto:
		return "auto"
	case ZeroCopyOn:
		return "on"
	case ZeroCopyOff:
		return "off"
	}
	return fmt.Sprintf("ZeroCopy(%d)", int(z))
}

// Common EtherTypes for Options.EtherTypes.
const (
	EtherTypeIPv4         = 0x0800
	EtherTypeIPv6         = 0x86dd
	EtherTypePPPoESession = 0x8864
	EtherTypePPPoEDisc    = 0x8863
	EtherTypeVLAN         = 0x8100
)

// MaxEtherTypes is the largest number of EtherTypes the XDP filter takes.
const MaxEtherTypes = 16

// Options configure Open. The zero value is usable.
type Options struct {
	// Queues is the number of queues to open, bound to the interface's
	// queues 0..Queues-1. 0 means every RX queue the driver reports
	// (ethtool channels), or 1 if it reports none.
	Queues int
	// Mode selects native or generic XDP (default auto).
	Mode Mode
	// ZeroCopy selects zero-copy or copy mode (default auto).
	ZeroCopy ZeroCopy
	// RingSize is the number of descriptors of each ring, a power of two
	// (default 2048). The UMEM of a queue holds 2*RingSize chunks.
	RingSize int
	// FrameSize is the UMEM chunk size, 2048 or 4096 (default 2048). The
	// largest frame is FrameSize-256 on RX (XDP_PACKET_HEADROOM) and
	// FrameSize on TX, and never more than nic.MaxData.
	FrameSize int
	// EtherTypes, when not empty, restricts redirection to frames whose
	// outer EtherType is listed (at most MaxEtherTypes); the rest get
	// XDP_PASS and go to the kernel stack (ARP, LLDP, ...).
	EtherTypes []uint16
	// NoNeedWakeup disables XDP_USE_NEED_WAKEUP: the kernel is then kicked
	// after every TX batch and never told to sleep on the fill ring.
	NoNeedWakeup bool
	// BusyPoll asks for NAPI busy polling where the kernel offers it:
	// in native mode, each socket gets SO_PREFER_BUSY_POLL, SO_BUSY_POLL
	// and SO_BUSY_POLL_BUDGET (Linux 5.11+, CAP_NET_ADMIN), and a Recv
	// that finds its RX ring empty runs the driver's receive poll on the
	// calling thread (one recvfrom) and looks again, as a Send kicks TX
	// after every batch. With the device's napi_defer_hard_irqs and
	// gro_flush_timeout set, the polling thread then does the receive
	// work the interrupt and softirq would; without them it only adds
	// a poll where the softirq has not run yet. Generic mode has no
	// NAPI context to poll: BusyPoll is ignored there. Port.BusyPoll
	// says whether it is in effect.
	BusyPoll bool
}

// Busy-polling parameters (Options.BusyPoll): SO_BUSY_POLL must be
// non-zero for a socket's recvfrom to poll at all; a non-blocking
// recvfrom polls once, with busyPollBudget frames of budget (a batch).
const (
	busyPollUsec   = 20
	busyPollBudget = 64
)

// Errors returned (wrapped) by Open and the port.
var (
	// ErrClosed is returned by a port after Close.
	ErrClosed = errors.New("afxdp: port closed")
	// ErrPermission is wrapped by errors caused by missing privileges;
	// the message names the capability.
	ErrPermission = errors.New("afxdp: permission denied")
	// ErrXDPRefused is wrapped when the driver refuses the XDP program or
	// the requested mode.
	ErrXDPRefused = errors.New("afxdp: driver refuses XDP")
	// ErrNoAFXDP is wrapped when the kernel lacks AF_XDP sockets.
	ErrNoAFXDP = errors.New("afxdp: kernel lacks AF_XDP (CONFIG_XDP_SOCKETS)")
	// ErrZeroCopy is wrapped when ZeroCopyOn was asked and the driver
	// cannot do it.
	ErrZeroCopy = errors.New("afxdp: driver refuses zero-copy")
)

const (
	defaultRingSize  = 2048
	defaultFrameSize = 2048
	// xdpPacketHeadroom is XDP_PACKET_HEADROOM: the kernel writes RX data
	// this far into a chunk.
	xdpPacketHeadroom = 256
)

// withDefaults validates o and fills in defaults (Queues stays 0 if unset).
func (o Options) withDefaults() (Options, error) {
	if o.RingSize == 0 {
		o.RingSize = defaultRingSize
	}
	if o.RingSize < 64 || o.RingSize > 1<<16 || o.RingSize&(o.RingSize-1) != 0 {
		return o, fmt.Errorf("afxdp: RingSize %d: want a power of two in [64, 65536]", o.RingSize)
	}
	if o.FrameSize == 0 {
		o.FrameSize = defaultFrameSize
	}
	if o.FrameSize != 2048 && o.FrameSize != 4096 {
		return o, fmt.Errorf("afxdp: FrameSize %d: want 2048 or 4096", o.FrameSize)
	}
	if o.Queues < 0 || o.Queues > 1024 {
		return o, fmt.Errorf("afxdp: Queues %d out of range", o.Queues)
	}
	if o.Mode < ModeAuto || o.Mode > ModeGeneric {
		return o, fmt.Errorf("afxdp: unknown %v", o.Mode)
	}
	if o.ZeroCopy < ZeroCopyAuto || o.ZeroCopy > ZeroCopyOff {
		return o, fmt.Errorf("afxdp: unknown %v", o.ZeroCopy)
	}
	if len(o.EtherTypes) > MaxEtherTypes {
		return o, fmt.Errorf("afxdp: %d EtherTypes, at most %d", len(o.EtherTypes), MaxEtherTypes)
	}
	return o, nil
}
