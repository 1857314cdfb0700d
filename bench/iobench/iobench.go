// Package iobench measures pppfwd on real packet I/O (AF_PACKET or AF_XDP
// ports over veth) against the Linux kernel's own forwarding with an
// nftables masquerade, on the same topology, traffic and generator.
//
// The topology is nettest's Line: A (LAN hosts) -- veth -- R (the
// forwarder) -- veth -- B (the WAN side, standing in for the BRAS). A
// single generator thread owns an AF_PACKET port in A and one in B (TX and
// RX rings): it sends pre-built frames in batches in both directions and
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
// generator.
package iobench

import (
	"time"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/shaper"
)

// Options configure Run. Zero fields take the defaults shown.
type Options struct {
	Backend  string        // "afpacket" or "afxdp"
	Size     int           // LAN frame size in bytes, 64..1500 (64)
	Workers  int           // pppfwd workers (1)
	Flows    int           // UDP flows (256)
	Duration time.Duration // measured window of each measurement (3s)
	Warmup   time.Duration // load before each window (500ms)
	Rate     float64       // offered frames/s per direction; 0: as fast as the generator goes
	// Shape is the shaper of each direction; the default rate (100 Gbit/s)
	// is far above what veth moves, so FQ-CoDel runs but never throttles.
	// ShapeOff disables it.
	Shape    shaper.Spec
	ShapeOff bool
	// XDPMode is "generic" (default: keeps R's receive work on the RPS
	// CPUs, see the package comment), "native" or "auto".
	XDPMode string
	// GenCPU is the generator's CPU (0); the forwarder gets the others.
	GenCPU int
	// NoPin disables pinning and RPS.
	NoPin bool
	// SkipKernel skips the kernel baseline.
	SkipKernel bool
}

// Side is one measurement (pppfwd or kernel).
type Side struct {
	PPS        float64 `json:"pps"` // delivered at the far ends, both directions, in the window
	UpPPS      float64 `json:"up_pps"`
	DownPPS    float64 `json:"down_pps"`
	OfferedPPS float64 `json:"offered_pps"` // sent by the generator in the window
	UpSent     uint64  `json:"up_sent"`
	UpRecv     uint64  `json:"up_recv"`
	DownSent   uint64  `json:"down_sent"`
	DownRecv   uint64  `json:"down_recv"`
	Lost       int64   `json:"lost"` // sent but not delivered, whole run
	Loss       float64 `json:"loss"` // Lost over sent
	Bad        uint64  `json:"bad"`  // delivered but not matching a flow
	Seconds    float64 `json:"seconds"`
	UpFrame    int     `json:"up_frame_bytes"`
	DownFrame  int     `json:"down_frame_bytes"`
	// GenCPUNsPerPkt is the generator thread's CPU time per frame it sent
	// or received.
	GenCPUNsPerPkt float64 `json:"gen_cpu_ns_per_pkt"`
	// FwdCPUBusy is the forwarder CPUs' busy share during the window
	// (from /proc/stat: includes other processes on a shared machine).
	FwdCPUBusy float64 `json:"fwd_cpu_busy"`
}

// Result is the JSON report of `pppfwd bench io`.
type Result struct {
	Bench     string                  `json:"bench"`
	Backend   string                  `json:"backend"`
	XDPMode   string                  `json:"xdp_mode,omitempty"`
	Size      int                     `json:"size"`
	Workers   int                     `json:"workers"`
	Flows     int                     `json:"flows"`
	Duration  float64                 `json:"duration_s"`
	Rate      float64                 `json:"rate_per_direction"`
	Shaper    string                  `json:"shaper"`
	GenCPU    int                     `json:"gen_cpu"`
	FwdCPUs   []int                   `json:"fwd_cpus"`
	PPPFWDPPS float64                 `json:"pppfwd_pps"`
	KernelPPS float64                 `json:"kernel_pps"`
	Ratio     float64                 `json:"ratio"`
	PPPFWD    Side                    `json:"pppfwd"`
	Kernel    *Side                   `json:"kernel,omitempty"`
	PerWorker []pipeline.WorkerResult `json:"per_worker"`
	Drops     map[string]uint64       `json:"drops"`
	PortDrops map[string]uint64       `json:"port_drops"`
	Fairness  string                  `json:"fairness"`
}

func (o *Options) defaults() {
	if o.Backend == "" {
		o.Backend = "afpacket"
	}
	if o.Size == 0 {
		o.Size = 64
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Flows <= 0 {
		o.Flows = 256
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = 500 * time.Millisecond
	}
	if o.XDPMode == "" {
		o.XDPMode = "generic"
	}
	if o.Shape.Rate == 0 && !o.ShapeOff {
		o.Shape, _ = shaper.ParseSpec("bandwidth 100gbit")
	}
	if o.ShapeOff {
		o.Shape = shaper.Spec{}
	}
}

func side(c *Counts, upFrame, downFrame int) Side {
	s := Side{PPS: c.PPS(), OfferedPPS: c.OfferedPPS(), UpSent: c.UpSent, UpRecv: c.UpRecv,
		DownSent: c.DownSent, DownRecv: c.DownRecv, Bad: c.UpBad + c.DownBad,
		Seconds: c.Window.Seconds(), UpFrame: upFrame, DownFrame: downFrame}
	if c.Window > 0 {
		s.UpPPS = float64(c.UpWindow) / c.Window.Seconds()
		s.DownPPS = float64(c.DownWindow) / c.Window.Seconds()
	}
	s.Lost = c.UpLoss() + c.DownLoss()
	if sent := c.UpSent + c.DownSent; sent > 0 {
		s.Loss = float64(s.Lost) / float64(sent)
	}
	if n := c.UpSent + c.DownSent + c.UpRecv + c.DownRecv; n > 0 {
		s.GenCPUNsPerPkt = float64(c.GenCPU.Nanoseconds()) / float64(n)
	}
	return s
}
