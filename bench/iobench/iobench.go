package iobench

import (
	"time"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/nic/afpacket"
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
	// AFPacketTx is the TX mode of pppfwd's afpacket ports (the
	// generator's always use afpacket's default, TxAuto).
	AFPacketTx afpacket.TxMode
	// AFPacketRing is the RX ring of pppfwd's afpacket ports.
	AFPacketRing afpacket.RxRing
	// XDPMode is "generic" (default: keeps R's receive work on the RPS
	// CPUs, see the package comment), "native" or "auto".
	XDPMode string
	// BusyPoll asks pppfwd's afxdp ports for NAPI busy polling (native
	// mode only: Result.BusyPoll says whether it was in effect).
	BusyPoll bool
	// GenCPU is the generator's CPU (0); the forwarder gets the others.
	GenCPU int
	// Poll is pppfwd's workers' idle policy (adaptive).
	Poll dataplane.PollMode
	// Slice is the scheduling slice pppfwd's workers ask for
	// (dataplane.Config.Slice): 0 is dataplane.DefaultSlice, as the
	// router's; negative keeps the kernel's default.
	Slice time.Duration
	// RTPrio is pppfwd's workers' realtime priority while lightly loaded
	// (dataplane.Config.RTPrio): 0 is dataplane.DefaultRTPrio, as the
	// router's; negative is none.
	RTPrio int
	// NoPin disables pinning and RPS.
	NoPin bool
	// SkipKernel skips the kernel baseline.
	SkipKernel bool
	// Latency, when above 0, probes each side's one-way delay (A to B)
	// with this many single frames, 2 ms apart, after its throughput
	// measurement in every round (Side.Latency: all rounds pooled).
	Latency int
	// Awake keeps the forwarder's CPUs out of the idle loop while either
	// side is probed (a SCHED_IDLE busy loop on each): on a VM
	// whose host wakes a halted vCPU late, that wakeup, not the path,
	// decides both sides' tails (pin.IdleLoops). Needs pinning.
	Awake bool
	// Floor adds a third measurement to every round: the NullForwarder
	// on the same backend, ports, pinning and frames (addressed so that
	// they need no rewriting), pppfwd's I/O floor on this topology.
	Floor bool
	// Rounds alternates the kernel, the pppfwd (and the floor)
	// measurement this many times (2) and reports the best round of each:
	// on a shared machine other work only ever slows a run down.
	Rounds int
	// Search: when a side loses more than LossTolerance (0.01) of its
	// frames at full load (Rate 0), bisect the offered rate SearchSteps
	// (5) times with SearchWindow (1s) trials and report the highest rate
	// within the tolerance, measured for Duration; the full-load figures
	// stay in Side.AtMaxLoad.
	Search        bool
	LossTolerance float64
	SearchSteps   int
	SearchWindow  time.Duration
	// SteerCompare adds a measurement to every round: pppfwd with the WAN
	// frames steered in user space (FwdConfig.UserSteer: the kernel's
	// hash fanout, worker 0 steering every WAN frame) against the
	// reported pppfwd side, whose WAN port's program steers them to their
	// owners (more than one worker, afpacket).
	SteerCompare bool
	// Interleave, with Latency, adds one more probe series after the
	// rounds: the kernel's path and pppfwd's probed in turn, probe by
	// probe (ProbePaths), the kernel forwarding on a second line of its
	// own (the same namespaces, RPS and pinning) while pppfwd runs on
	// the first, so that a stretch of slow machine time falls on both
	// alike. Needs the kernel's side.
	Interleave bool
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
	// GenCPUShare is the generator thread's CPU time over the run's wall
	// time: below 1 when something else ran on its CPU.
	GenCPUShare float64 `json:"gen_cpu_share"`
	// FwdCPUBusy is the forwarder CPUs' busy share during the window
	// (from /proc/stat: includes other processes on a shared machine).
	FwdCPUBusy float64 `json:"fwd_cpu_busy"`
	// FwdCPUNsPerPkt is the forwarder CPUs' busy time per delivered
	// frame. For the kernel it is the cost of forwarding; pppfwd's
	// threads busy-poll, so for them it includes the polling.
	FwdCPUNsPerPkt float64 `json:"fwd_cpu_ns_per_pkt"`
	// Rate is the offered rate per direction (0: as fast as the generator
	// goes). Bound says what limited the run: "offered" (loss within the
	// tolerance: the forwarder delivered what the generator offered, so
	// its capacity may be higher) or "forwarder" (it lost more).
	Rate  float64 `json:"rate_per_direction"`
	Bound string  `json:"bound"`
	// Latency is the idle-line delay probe (Options.Latency).
	Latency *Latency `json:"latency,omitempty"`
	// AtMaxLoad is the full-load run when a rate search followed it and
	// the searched rate delivered more.
	AtMaxLoad *Side `json:"at_max_load,omitempty"`
	// Trials lists every run of a rate search, in order.
	Trials []Trial `json:"trials,omitempty"`

	// bracket is which hook bracket (0: full load, 1: final search
	// trial) measured this side.
	bracket int
}

// Trial is one run of a rate search.
type Trial struct {
	Rate       float64 `json:"rate_per_direction"` // offered (0: full load)
	Seconds    float64 `json:"seconds"`
	PPS        float64 `json:"pps"`
	OfferedPPS float64 `json:"offered_pps"`
	Loss       float64 `json:"loss"`
}

// Result is the JSON report of `pppfwd bench io`.
type Result struct {
	Bench   string `json:"bench"`
	Backend string `json:"backend"`
	XDPMode string `json:"xdp_mode,omitempty"`
	// BusyPoll: pppfwd's afxdp ports busy-polled (Options.BusyPoll).
	BusyPoll bool    `json:"busy_poll,omitempty"`
	Poll     string  `json:"poll"`
	SliceUs  float64 `json:"slice_us"` // the workers' scheduling slice (0: the kernel's default)
	RTPrio   int     `json:"rtprio"`   // the workers' realtime priority while lightly loaded (0: none)
	// Awake: the latency probes ran with the forwarder's CPUs kept out of
	// the idle loop (Options.Awake).
	Awake     bool    `json:"awake,omitempty"`
	TxMode    string  `json:"afpacket_tx,omitempty"`   // afpacket's TX mode in use
	RxRing    string  `json:"afpacket_ring,omitempty"` // afpacket's RX ring
	Size      int     `json:"size"`
	Workers   int     `json:"workers"`
	Flows     int     `json:"flows"`
	Duration  float64 `json:"duration_s"`
	Rate      float64 `json:"rate_per_direction"`
	Shaper    string  `json:"shaper"`
	GenCPU    int     `json:"gen_cpu"`
	FwdCPUs   []int   `json:"fwd_cpus"`
	PPPFWDPPS float64 `json:"pppfwd_pps"`
	KernelPPS float64 `json:"kernel_pps"`
	Ratio     float64 `json:"ratio"`
	// RatioAtMaxLoad compares the full-load runs (before any search).
	RatioAtMaxLoad float64                 `json:"ratio_at_max_load"`
	PPPFWD         Side                    `json:"pppfwd"`
	Kernel         *Side                   `json:"kernel,omitempty"`
	PerWorker      []pipeline.WorkerResult `json:"per_worker"`
	// LANFanout is how pppfwd's LAN port spread frames over the
	// workers (router.PortInfo.Owner: "fanout-ebpf", "nic-rules" or
	// "hand-over: <why>"). UplinkFrames are the
	// LAN frames the workers received in the reported window,
	// UplinkRedirected those handed to another worker (the flow's owner),
	// UplinkRedirectedShare their share.
	LANFanout             string            `json:"lan_fanout,omitempty"`
	UplinkFrames          uint64            `json:"uplink_frames"`
	UplinkRedirected      uint64            `json:"uplink_redirected"`
	UplinkRedirectedShare float64           `json:"uplink_redirected_share"`
	Drops                 map[string]uint64 `json:"drops"`
	PortDrops             map[string]uint64 `json:"port_drops"`
	// Floor (Options.Floor) is the null forwarder's measurement:
	// FloorRatio is its figure over the kernel's, FloorPerWorker its
	// threads' figures (CPU time per frame is the backend's I/O cost).
	FloorPPS       float64                 `json:"floor_pps,omitempty"`
	FloorRatio     float64                 `json:"floor_ratio,omitempty"`
	Floor          *Side                   `json:"floor,omitempty"`
	FloorPerWorker []pipeline.WorkerResult `json:"floor_per_worker,omitempty"`
	Fairness       string                  `json:"fairness"`
	// Steer is the reported pppfwd side's steering mode ("local" or
	// "inline") and WANFanout how its WAN port delivers frames to their
	// owners ("fanout-ebpf" or "hand-over: <why>"). UserSteer
	// (Options.SteerCompare) is the measurement with WAN steering in
	// user space, SteerRatio the reported side's figure over it.
	Steer              string                  `json:"steer,omitempty"`
	WANFanout          string                  `json:"wan_fanout,omitempty"`
	UserSteerPPS       float64                 `json:"user_steer_pps,omitempty"`
	SteerRatio         float64                 `json:"steer_ratio,omitempty"`
	UserSteer          *Side                   `json:"user_steer,omitempty"`
	UserSteerPerWorker []pipeline.WorkerResult `json:"user_steer_per_worker,omitempty"`
	// LatencyP50DeltaUs and LatencyP99DeltaUs are pppfwd's pooled
	// latency percentiles minus the kernel's (Options.Latency, both
	// sides measured).
	LatencyP50DeltaUs float64 `json:"latency_p50_delta_us,omitempty"`
	LatencyP99DeltaUs float64 `json:"latency_p99_delta_us,omitempty"`
	// FloorLatencyP50DeltaUs and FloorLatencyP99DeltaUs are the null
	// forwarder's pooled percentiles minus the kernel's (Options.Floor
	// too): what the backend's I/O path alone adds, without pppfwd's
	// packet work.
	FloorLatencyP50DeltaUs float64 `json:"floor_latency_p50_delta_us,omitempty"`
	FloorLatencyP99DeltaUs float64 `json:"floor_latency_p99_delta_us,omitempty"`
	// Interleaved is Options.Interleave's probe series.
	Interleaved *Interleaved `json:"interleaved,omitempty"`
	// Rounds lists each round's figures (the best of each side's
	// throughput and the pooled latency are reported above).
	Rounds []Round `json:"rounds"`
}

// Interleaved is the kernel's and pppfwd's one-way delays probed in turn,
// probe by probe, on two lines at once (Options.Interleave), and pppfwd's
// percentiles minus the kernel's.
type Interleaved struct {
	Kernel     *Latency `json:"kernel"`
	PPPFWD     *Latency `json:"pppfwd"`
	P50DeltaUs float64  `json:"p50_delta_us"`
	P99DeltaUs float64  `json:"p99_delta_us"`
}

// Round is one kernel + pppfwd measurement pair.
type Round struct {
	KernelPPS      float64 `json:"kernel_pps"`
	KernelGenShare float64 `json:"kernel_gen_cpu_share"`
	PPPFWDPPS      float64 `json:"pppfwd_pps"`
	PPPFWDGenShare float64 `json:"pppfwd_gen_cpu_share"`
	FloorPPS       float64 `json:"floor_pps,omitempty"`
	FloorGenShare  float64 `json:"floor_gen_cpu_share,omitempty"`
	// UserSteer: Options.SteerCompare's measurement.
	UserSteerPPS      float64 `json:"user_steer_pps,omitempty"`
	UserSteerGenShare float64 `json:"user_steer_gen_cpu_share,omitempty"`
	// KernelLatency and PPPFWDLatency are this round's probes alone
	// (Options.Latency); the sides above report all rounds pooled.
	KernelLatency *Latency `json:"kernel_latency,omitempty"`
	PPPFWDLatency *Latency `json:"pppfwd_latency,omitempty"`
	// FloorLatency: the null forwarder's probes (Options.Floor).
	FloorLatency *Latency `json:"floor_latency,omitempty"`
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
	if o.Rounds <= 0 {
		o.Rounds = 2
	}
	if o.LossTolerance <= 0 {
		o.LossTolerance = 0.01
	}
	if o.SearchSteps <= 0 {
		o.SearchSteps = 5
	}
	if o.SearchWindow <= 0 {
		o.SearchWindow = time.Second
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
	if c.Wall > 0 {
		s.GenCPUShare = c.GenCPU.Seconds() / c.Wall.Seconds()
	}
	if n := c.UpSent + c.DownSent + c.UpRecv + c.DownRecv; n > 0 {
		s.GenCPUNsPerPkt = float64(c.GenCPU.Nanoseconds()) / float64(n)
	}
	return s
}

// measureSide runs trial at o.Rate (0: as fast as the generator goes) for
// o.Duration. When that loses more than o.LossTolerance and o.Search is
// set (and o.Rate is 0), it bisects the offered rate per direction
// o.SearchSteps times with o.SearchWindow trials towards the highest rate
// within the tolerance and measures that rate again for o.Duration. It
// reports the trial that delivered the most (a forwarder that livelocks
// under overload delivers more below it; one that does not is reported at
// full load), with every trial listed in Trials. hook(true) and
// hook(false) bracket the full-load trial (bracket 0) and the final trial
// (bracket 1); Side.bracket tells which one is reported.
func measureSide(o Options, trial func(rate float64, window time.Duration) (*Side, error), hook func(bool)) (*Side, error) {
	var trials []Trial
	run := func(rate float64, window time.Duration, report bool) (*Side, error) {
		if report {
			hook(true)
			defer hook(false)
		}
		s, err := trial(rate, window)
		if err != nil {
			return nil, err
		}
		s.Bound = "offered"
		if s.Loss > o.LossTolerance {
			s.Bound = "forwarder"
		}
		trials = append(trials, Trial{Rate: rate, Seconds: s.Seconds, PPS: s.PPS, OfferedPPS: s.OfferedPPS, Loss: s.Loss})
		return s, nil
	}
	s0, err := run(o.Rate, o.Duration, true)
	if err != nil || !o.Search || o.Rate > 0 || s0.Loss <= o.LossTolerance {
		return s0, err
	}
	lo, hi := s0.PPS/4, s0.OfferedPPS/2 // per direction
	var best float64
	for i := 0; i < o.SearchSteps; i++ {
		mid := (lo + hi) / 2
		s, err := run(mid, o.SearchWindow, false)
		if err != nil {
			return nil, err
		}
		if s.Loss <= o.LossTolerance {
			best, lo = mid, mid
		} else {
			hi = mid
		}
	}
	if best == 0 {
		best = lo
	}
	s, err := run(best, o.Duration, true)
	if err != nil {
		return nil, err
	}
	s.bracket = 1
	out := s
	if s0.PPS > s.PPS*1.005 {
		out = s0
	} else {
		out.AtMaxLoad = s0
	}
	out.Trials = trials
	return out, nil
}

// slice is the workers' dataplane.Config.Slice for o.Slice.
func (o *Options) slice() time.Duration { return dataplane.SliceSetting(o.Slice) }

// rtPrio is the workers' dataplane.Config.RTPrio for o.RTPrio.
func (o *Options) rtPrio() int { return dataplane.RTPrioSetting(o.RTPrio) }
