package dataplane

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/shaper"
)

// Config configures an Engine. Zero fields take the documented defaults.
type Config struct {
	Workers  int // worker threads, one LAN/WAN TX queue each (1)
	Batch    int // frames per batch (64)
	RingSize int // inter-core ring slots (1024)

	LAN nic.Port // Queues() >= Workers; RX queue k is worker k's (RSS)
	// WAN: Queues() >= Workers. With SteerLocal, worker k reads the RX
	// queues q with q mod Workers == k; with SteerInline and SteerThread
	// the one steering stage reads them all.
	WAN nic.Port

	RouterMAC  [6]byte // the router's LAN MAC
	RouterAddr uint32  // the router's LAN address
	LANNet     uint32  // LAN prefix
	LANBits    int     // LAN prefix length

	// PortLo..PortHi is the external port / ICMP id space split among
	// workers (1024..65535).
	PortLo, PortHi uint16
	// NAT is the template of every worker's NAT table (capacity, limits,
	// timeouts, filtering, forwards). The engine fills in the LAN prefix,
	// Ports, Ranges, Worker and assigns forwards to workers.
	NAT nat.Config

	NoMSSClamp bool // TCP MSS clamping to the PPPoE MTU is on by default

	// IPv6 firewall (fw6.go): on unless NoFirewall6; Allow6 opens inbound
	// ports; Firewall6Capacity is each worker's flow slots (65536).
	NoFirewall6       bool
	Allow6            []Allow6
	Firewall6Capacity int

	// Up and Down shape LAN->WAN and WAN->LAN with FQ-CoDel at their
	// rates, shared by all workers; Rate 0 disables that direction's shaper.
	Up, Down shaper.Spec
	Clock    shaper.Clock // nil: monotonic clock

	ICMPRate  int // ICMP errors per second per worker (1000)
	ICMPBurst int // (100)

	// PoolFrames is the number of frames per worker (derived from the
	// shaper limit and ring sizes when 0).
	PoolFrames int

	// Pin, if set, pins the calling thread to the n-th CPU the process may
	// use (internal/pin.PinNth): worker k calls it with k, a steering thread
	// with Workers. A failure is reported (Engine.PinErr) and the thread
	// runs unpinned: forwarding goes on. ThreadCPU, if set, returns the
	// calling thread's CPU time in ns; the engine reports it per worker.
	Pin       func(n int) error
	ThreadCPU func() int64
	// Steer selects where WAN steering runs (SteerMode; the zero value,
	// SteerAuto, is SteerLocal when the WAN port has one RX queue per
	// worker, SteerInline otherwise).
	Steer SteerMode
	// SteerWait is how long steering holds WAN receive back for a worker
	// whose ring is full before it drops that worker's frames instead
	// (2 ms; negative: never drop, hold back however long, for replayed
	// traffic whose source cannot overrun). It applies to SteerInline and
	// SteerThread. With SteerLocal a worker never holds its own queues
	// back for another worker's full ring unless SteerWait is negative:
	// that would stall its own frames behind the other worker without
	// making it drain sooner, so the full ring's frames are dropped and
	// counted at once.
	SteerWait time.Duration
	// Poll is the polling threads' idle policy (PollAdaptive).
	Poll PollMode
	// Slice, if positive, is the scheduling slice the polling threads ask
	// of the kernel (pin.ShortSlice): a frame that wakes one preempts
	// another task on its CPU instead of waiting out that task's slice.
	// 0 keeps the kernel's default.
	Slice time.Duration
	// RTPrio, if positive, is the SCHED_FIFO priority a polling thread
	// runs at while its load is light (PollAdaptive, PollBlock): it wakes
	// from a sleep in the realtime class, so a frame that wakes it
	// preempts any ordinary task on its CPU (a kernel thread, a busy
	// process) at once, as the kernel's own receive work would. A thread
	// that has polled with work for 250 µs without a sleep drops back to
	// the ordinary class (with Slice) for 10 ms at least, and so does
	// one woken more than 20 times in 10 ms (frame by frame, which would
	// preempt a producer on its own CPU at every frame), so a loaded
	// router shares its CPUs as before. A process that may not use the
	// priority (CAP_SYS_NICE) runs without it and says so in PinErr. 0:
	// never.
	RTPrio int
}

// DefaultRTPrio is the router's RTPrio: the lowest realtime priority,
// above every ordinary task and below the kernel's interrupt threads (50).
const DefaultRTPrio = 1

// RTPrioSetting maps a user's realtime priority setting to Config.RTPrio
// as SliceSetting does: 0 (unset) is DefaultRTPrio, negative (off) is 0.
func RTPrioSetting(p int) int {
	switch {
	case p == 0:
		return DefaultRTPrio
	case p < 0:
		return 0
	}
	return p
}

// ParseRTPrio parses a realtime priority setting as the router's
// workers.rtprio and bench io --rtprio take it: "off" is -1 (none), a
// number must lie in pin.MinRTPrio..pin.MaxRTPrio.
func ParseRTPrio(s string) (int, error) {
	if s == "off" {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < pin.MinRTPrio || n > pin.MaxRTPrio {
		return 0, fmt.Errorf("realtime priority %q: want %d..%d or off", s, pin.MinRTPrio, pin.MaxRTPrio)
	}
	return n, nil
}

// DefaultSlice is the router's Slice: below Linux's default slice on any
// CPU count (0.75 ms times 1 + log2 of the CPUs, up to 8), so a woken
// worker preempts tasks that kept the default, yet five times the
// shortest, so that a worker sharing a loaded core (with ksoftirqd, say)
// is switched out less often.
const DefaultSlice = 500 * time.Microsecond

// SliceSetting maps a user's slice setting to Config.Slice: 0 (unset) is
// DefaultSlice, negative (off) is 0, the kernel's default.
func SliceSetting(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultSlice
	case d < 0:
		return 0
	}
	return d
}

// PollMode is what a polling thread (a worker, the steering thread) does
// when a poll finds no work.
type PollMode uint8

const (
	// PollAdaptive spins while frames keep coming, for a budget of empty
	// polls that doubles when a spin ends in work and halves when it ends
	// in sleep, then sleeps in the kernel on its ports and doorbell until
	// a frame arrives or a timer it owns is due. The default: an idle
	// router makes almost no wakeups, a busy one does not pay a wakeup
	// per batch.
	PollAdaptive PollMode = iota
	// PollBusy never sleeps: the lowest latency, a whole core per thread
	// whatever the load (for benchmarks and dedicated boxes).
	PollBusy
	// PollBlock sleeps as soon as a poll finds nothing: the fewest
	// cycles, a wakeup per burst (for boxes that run other work).
	PollBlock
)

// String returns the policy's config word.
func (m PollMode) String() string {
	switch m {
	case PollBusy:
		return "busy"
	case PollBlock:
		return "block"
	}
	return "adaptive"
}

// ParsePollMode reads a policy's config word (String's inverse).
func ParsePollMode(s string) (PollMode, error) {
	for _, m := range []PollMode{PollAdaptive, PollBusy, PollBlock} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("poll policy %q: want adaptive, busy or block", s)
}

// SteerMode chooses where WAN frames are classified and handed to
// their owner.
type SteerMode uint8

const (
	// SteerAuto picks SteerLocal when the WAN port has exactly one RX
	// queue per worker, else SteerInline.
	SteerAuto SteerMode = iota
	// SteerInline: worker 0 reads every WAN RX queue between its own
	// batches and hands each frame over a ring to its owner (itself
	// included).
	SteerInline
	// SteerThread: as SteerInline, on a thread of its own.
	SteerThread
	// SteerLocal: each worker reads its own WAN RX queues (steering where
	// frames arrive): it handles the frames it owns on its own thread,
	// without a ring, and hands the others' to their owners over rings
	// (counted as SteerRedirected). With a WAN port whose receive path
	// delivers each frame to its owner's queue (afpacket's WAN fanout
	// program), the hand-over is the fallback for frames that port could
	// not place.
	SteerLocal
)

// String returns the mode's word (inline, thread, local; auto).
func (m SteerMode) String() string {
	switch m {
	case SteerInline:
		return "inline"
	case SteerThread:
		return "thread"
	case SteerLocal:
		return "local"
	}
	return "auto"
}

// ParseSteerMode reads a mode's word (String's inverse).
func ParseSteerMode(s string) (SteerMode, error) {
	for _, m := range []SteerMode{SteerAuto, SteerInline, SteerThread, SteerLocal} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("steering %q: want auto, inline, thread or local", s)
}

func (c *Config) setDefaults() error {
	if c.SteerWait == 0 {
		c.SteerWait = steerWait
	}
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.Workers > 255 {
		return errors.New("dataplane: at most 255 workers")
	}
	if c.Batch <= 0 {
		c.Batch = 64
	}
	if c.RingSize <= 0 {
		c.RingSize = 1024
	}
	if c.RingSize < 2*c.Batch {
		c.RingSize = 2 * c.Batch
	}
	if c.LAN == nil || c.WAN == nil {
		return errors.New("dataplane: LAN and WAN ports are required")
	}
	if c.LAN.Queues() < c.Workers || c.WAN.Queues() < c.Workers {
		return fmt.Errorf("dataplane: %d workers need as many queues (LAN %d, WAN %d)",
			c.Workers, c.LAN.Queues(), c.WAN.Queues())
	}
	if c.Steer == SteerAuto {
		c.Steer = SteerInline
		if c.WAN.Queues() == c.Workers {
			c.Steer = SteerLocal
		}
	}
	if c.Steer > SteerLocal {
		return fmt.Errorf("dataplane: steering mode %d", c.Steer)
	}
	if c.LANBits < 0 || c.LANBits > 32 {
		return fmt.Errorf("dataplane: LAN prefix length %d", c.LANBits)
	}
	if c.PortLo == 0 && c.PortHi == 0 {
		c.PortLo, c.PortHi = 1024, 65535
	}
	if int(c.PortHi)-int(c.PortLo) < 2*c.Workers-1 {
		// Ports are dealt to workers in pairs (nat.PortOwner).
		return fmt.Errorf("dataplane: %d workers need a port range of at least %d ports", c.Workers, 2*c.Workers)
	}
	if c.Firewall6Capacity <= 0 {
		c.Firewall6Capacity = 65536
	}
	if c.ICMPRate == 0 {
		c.ICMPRate = 1000
	}
	if c.ICMPBurst == 0 {
		c.ICMPBurst = 100
	}
	if c.Clock == nil {
		c.Clock = monoClock{}
	}
	if c.PoolFrames == 0 {
		c.PoolFrames = 4*c.Batch + c.RingSize
		for _, sp := range []*shaper.Spec{&c.Up, &c.Down} {
			if sp.Rate != 0 {
				c.PoolFrames += sp.Config.WithDefaults().Limit
			}
		}
	}
	return nil
}

func (c *Config) lanMask() uint32 {
	if c.LANBits == 0 {
		return 0
	}
	return ^uint32(0) << (32 - c.LANBits)
}
