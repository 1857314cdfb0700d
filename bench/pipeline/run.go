package pipeline

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic/memport"
	"github.com/pppfwd/pppfwd/shaper"
)

// Options configure a run.
type Options struct {
	Workers  int
	Flows    int
	Size     string        // "64", "1500", "imix"
	Duration time.Duration // measured window
	// Shape is the shaper of each direction; Rate 0 disables it. The
	// command's default rate is far above what the benchmark can move, so
	// FQ-CoDel runs but never throttles.
	Shape shaper.Spec
	Pin   bool // pin workers to CPUs
	// Steer is where WAN frames are steered (SteerAuto: SteerLocal). With
	// SteerLocal each WAN frame is replayed on its owner's WAN queue, as
	// a receive path steering by owner (afpacket's WAN fanout program)
	// places it; otherwise all on queue 0, as NICs without a PPPoE hash
	// place them.
	Steer dataplane.SteerMode
	Batch int // frames per batch (0: the engine's default, 64)
	// IPv6 replaces the traffic with IPv6 flows (routed, through the
	// firewall).
	IPv6 bool
	// Stages samples the per-stage costs: one step in 2^StageShift of each
	// thread over the run, every step while the NAT is primed (where
	// each flow's first packet is a NAT insert).
	Stages     bool
	StageShift int
}

// StageResult is one stage's sampled cost.
type StageResult struct {
	Stage string `json:"stage"`
	// NsPerPkt: the stage's time per packet handled in sampled steps;
	// Share: its part of the sampled time.
	NsPerPkt float64 `json:"ns_per_pkt"`
	Share    float64 `json:"share"`
	// Events: the marks entering the stage; NsPerEvent: its time per
	// event (for nat_lookup and nat_insert, per packet that met them).
	Events     uint64  `json:"events"`
	NsPerEvent float64 `json:"ns_per_event"`
	// NsPerPktScaled: Share of the run's CPU ns per packet (Result.
	// CPUNsPerPkt), so that the stages add up to the measured cost.
	NsPerPktScaled float64 `json:"ns_per_pkt_scaled"`
}

// Stages are the sampled stage costs of a run.
type Stages struct {
	// Every: one step in Every was sampled; SampledSteps and
	// SampledPackets: the steps sampled and the frames they handled.
	Every          int     `json:"every"`
	SampledSteps   uint64  `json:"sampled_steps"`
	SampledPackets uint64  `json:"sampled_packets"`
	ClockReadNs    int64   `json:"clock_read_ns"`
	NsPerPkt       float64 `json:"ns_per_pkt"` // all stages
	// Inflation is NsPerPkt over the run's CPU ns per packet: a sampled
	// step runs slower than the others, as each clock read stalls the
	// pipeline and the overlap of one packet's cache misses with the
	// next packet's work. The scaled figures assume every stage is
	// slowed alike; memory-bound stages (the NAT with many flows) are
	// slowed more, so their scaled share is an upper bound.
	Inflation float64 `json:"inflation"`
	// The window alternates slices with sampling and with sampling
	// paused (in the order off, on, on, off, ... so that a drift in the
	// machine's speed falls on both alike): MppsSampling and MppsPaused
	// are their rates, Perturbation is 1 - MppsSampling/MppsPaused, what
	// sampling costs the rate (negative: within the noise).
	MppsSampling float64 `json:"mpps_sampling"`
	MppsPaused   float64 `json:"mpps_paused"`
	Perturbation float64 `json:"perturbation"`
	// NATInsertNs: ns per NAT insert, from priming (every step
	// sampled, one insert per flow).
	NATInsertNs float64       `json:"nat_insert_ns"`
	NATInserts  uint64        `json:"nat_inserts"`
	PerStage    []StageResult `json:"per_stage"`
}

// scale fills in the scaled figures against the run's CPU ns per packet.
func (st *Stages) scale(cpuNsPerPkt float64) {
	if st.NsPerPkt <= 0 || cpuNsPerPkt <= 0 {
		return
	}
	st.Inflation = st.NsPerPkt / cpuNsPerPkt
	for i := range st.PerStage {
		st.PerStage[i].NsPerPktScaled = st.PerStage[i].Share * cpuNsPerPkt
	}
}

// stagesOf turns sampled sums into per-packet figures.
func stagesOf(c dataplane.StageCosts, shift int) *Stages {
	st := &Stages{Every: 1 << shift, SampledSteps: c.Steps, SampledPackets: c.Packets, ClockReadNs: c.ClockNs}
	var sum int64
	for _, ns := range c.Ns {
		sum += ns
	}
	for s := dataplane.Stage(0); s < dataplane.NumStages; s++ {
		r := StageResult{Stage: s.String(), Events: c.Events[s]}
		if c.Packets > 0 {
			r.NsPerPkt = float64(c.Ns[s]) / float64(c.Packets)
		}
		if sum > 0 {
			r.Share = float64(c.Ns[s]) / float64(sum)
		}
		if r.Events > 0 {
			r.NsPerEvent = float64(c.Ns[s]) / float64(r.Events)
		}
		st.PerStage = append(st.PerStage, r)
	}
	if c.Packets > 0 {
		st.NsPerPkt = float64(sum) / float64(c.Packets)
	}
	return st
}

// WorkerResult is one worker's share.
type WorkerResult struct {
	Worker    int     `json:"worker"`
	Packets   uint64  `json:"packets"`
	CPUNs     uint64  `json:"cpu_ns"`
	NsPerPkt  float64 `json:"cpu_ns_per_pkt"`
	Steered   uint64  `json:"steered,omitempty"`
	Redirects uint64  `json:"redirected,omitempty"`
	// WANRedirects: WAN frames the worker's own steering (SteerLocal)
	// handed to another worker.
	WANRedirects uint64 `json:"wan_redirected,omitempty"`
}

// Result is the benchmark's JSON report.
type Result struct {
	Bench         string            `json:"bench"`
	Workers       int               `json:"workers"`
	Flows         int               `json:"flows"`
	Size          string            `json:"size"`
	Batch         int               `json:"batch"`
	Steer         string            `json:"steer"`
	Shaper        bool              `json:"shaper"`
	IPv6          bool              `json:"ipv6,omitempty"`
	Seconds       float64           `json:"seconds"`
	Packets       uint64            `json:"packets"`
	Mpps          float64           `json:"mpps"`
	CPUNsPerPkt   float64           `json:"cpu_ns_per_pkt"`
	SteerNsPerPkt float64           `json:"steer_ns_per_pkt"`
	AllocsPerPkt  float64           `json:"allocs_per_pkt"`
	Drops         map[string]uint64 `json:"drops"`
	PerWorker     []WorkerResult    `json:"per_worker"`
	// Stages: with Options.Stages, the sampled per-stage costs.
	Stages   *Stages `json:"stages,omitempty"`
	LANToWAN uint64  `json:"lan_to_wan"`
	WANToLAN uint64  `json:"wan_to_lan"`
}

// Run builds the traffic, primes the NAT with one packet per flow, then
// replays both directions at full speed for the duration.
func Run(o Options) (*Result, error) {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Flows <= 0 {
		o.Flows = 10000
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	sizes, err := Sizes(o.Size)
	if err != nil {
		return nil, err
	}
	lan := memport.New("lan", o.Workers, 4096)
	wan := memport.New("wan", o.Workers, 4096)
	cfg := dataplane.Config{
		Workers: o.Workers, Batch: o.Batch, LAN: lan, WAN: wan,
		RouterMAC: RouterMAC, RouterAddr: RouterAddr, LANNet: LANNet, LANBits: LANBits,
		Up: o.Shape, Down: o.Shape, ThreadCPU: pin.ThreadCPUNanos, Steer: o.Steer,
		// Replayed traffic cannot overrun: hold it back, never drop.
		SteerWait: -1,
	}
	cfg.NAT.Capacity = 4*o.Flows + 1024
	if o.Pin {
		cfg.Pin = pin.PinNth
	}
	e, err := dataplane.New(cfg)
	if err != nil {
		return nil, err
	}
	s := Session()
	s.IPv6 = o.IPv6
	e.SetSession(s)
	flows := Flows(o.Flows)
	neigh := map[uint32][6]byte{}
	neigh6 := map[[16]byte][6]byte{}
	for _, f := range flows {
		neigh[f.Host] = f.HostMAC
		h, _ := f.Addr6()
		neigh6[h] = f.HostMAC
	}
	e.SetNeighbors(neigh)
	e.SetNeighbors6(neigh6)
	l6, err := dataplane.NewLAN6(LAN6Prefix, 64, RouterMAC)
	if err != nil {
		return nil, err
	}
	e.SetLAN6(l6)

	if o.Stages {
		e.SampleStages(0)
	}
	var lanPkts [][][]byte
	var wanPkts [][]byte
	if o.IPv6 {
		lanPkts, wanPkts, err = prime6(e, lan, wan, flows, sizes, o.Workers)
	} else {
		lanPkts, wanPkts, err = prime(e, lan, wan, flows, sizes, o.Workers)
	}
	if err != nil {
		return nil, err
	}
	for q := 0; q < o.Workers; q++ {
		if len(lanPkts[q]) > 0 {
			lan.Replay(q, lanPkts[q])
		}
		lan.Sink(q, nil)
		wan.Sink(q, nil)
	}
	if e.Steering() == dataplane.SteerLocal {
		// On the queue of the worker owning each frame.
		perQ := make([][][]byte, o.Workers)
		for _, b := range wanPkts {
			q := max(e.WANOwner(b), 0)
			perQ[q] = append(perQ[q], b)
		}
		for q, bs := range perQ {
			if len(bs) > 0 {
				wan.Replay(q, bs)
			}
		}
	} else {
		wan.Replay(0, wanPkts)
	}

	var primed dataplane.StageCosts
	if o.Stages {
		primed = e.Stages()
		e.SampleStages(o.StageShift)
	}
	before := e.Totals()
	beforeW := perWorker(e)
	// Allocations are read inside the run, after the threads started and
	// before they stop: starting goroutines allocates, packets must not.
	var a0, a1 uint64
	// Collect the set-up's garbage first, as testing.B does, so that no
	// GC cycle of the set-up's making runs inside the window.
	runtime.GC()
	t0 := time.Now()
	e.Start()
	// Worker threads allocate as they start (their idle state, pinning):
	// the window opens once each has published figures of its packet
	// loop, so that it holds the packets' work only.
	for deadline := time.Now().Add(2 * time.Second); !looping(e, beforeW) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	var done *time.Timer
	if !o.Stages {
		done = time.NewTimer(o.Duration) // made before the window: the harness allocates nothing inside it
	}
	a0 = heapAllocs()
	var alt alternation
	if o.Stages {
		alt = alternate(e, o.Duration)
	} else {
		<-done.C
	}
	a1 = heapAllocs()
	if err := e.Stop(); err != nil {
		return nil, err
	}
	wall := time.Since(t0)
	after := e.Totals()

	res := &Result{Bench: "pipeline", Workers: o.Workers, Flows: o.Flows, Size: o.Size, Batch: cfg.Batch, Steer: e.Steering().String(), Shaper: o.Shape.Rate != 0, IPv6: o.IPv6,
		Seconds: wall.Seconds(), Drops: map[string]uint64{}}
	res.LANToWAN = after.TxWAN - before.TxWAN
	res.WANToLAN = after.TxLAN - before.TxLAN
	res.Packets = res.LANToWAN + res.WANToLAN
	if res.Packets == 0 {
		return nil, fmt.Errorf("pipeline moved no packets (drops %v)", after.DropMap())
	}
	res.Mpps = float64(res.Packets) / wall.Seconds() / 1e6
	var cpu uint64
	for i, w := range e.Workers() {
		c := w.Counters()
		b := beforeW[i]
		wr := WorkerResult{Worker: i, Packets: c.TxLAN + c.TxWAN - b.TxLAN - b.TxWAN, CPUNs: c.CPUNanos,
			Steered: c.SteerPackets - b.SteerPackets, Redirects: c.Redirected - b.Redirected,
			WANRedirects: c.SteerRedirected - b.SteerRedirected}
		if wr.Packets > 0 {
			wr.NsPerPkt = float64(wr.CPUNs) / float64(wr.Packets)
		}
		cpu += c.CPUNanos
		res.PerWorker = append(res.PerWorker, wr)
	}
	if o.Steer == dataplane.SteerThread {
		cpu += e.SteerCounters().CPUNanos
	}
	res.CPUNsPerPkt = float64(cpu) / float64(res.Packets)
	if sp := after.SteerPackets - before.SteerPackets; sp > 0 {
		res.SteerNsPerPkt = float64(after.SteerNanos-before.SteerNanos) / float64(sp)
	}
	res.AllocsPerPkt = float64(a1-a0) / float64(res.Packets)
	if o.Stages {
		res.Stages = stagesOf(e.Stages(), o.StageShift)
		res.Stages.scale(res.CPUNsPerPkt)
		res.Stages.MppsSampling, res.Stages.MppsPaused = alt.mpps()
		if res.Stages.MppsPaused > 0 {
			res.Stages.Perturbation = 1 - res.Stages.MppsSampling/res.Stages.MppsPaused
		}
		if n := primed.Events[dataplane.StageNATInsert]; n > 0 {
			res.Stages.NATInserts = n
			res.Stages.NATInsertNs = float64(primed.Ns[dataplane.StageNATInsert]) / float64(n)
		}
	}
	for i, d := range after.Drops {
		if n := d - before.Drops[i]; n != 0 {
			res.Drops[dataplane.Reason(i).String()] = n
		}
	}
	return res, nil
}

// prime6 sends one IPv6 uplink packet per flow (so the firewall lets its
// replies in) and returns the replay lists: uplink frames on the queue of
// the worker owning the flow (as prime places IPv4 flows on their LAN
// endpoint's owner: an RSS that spread them otherwise would add a hand-over
// per packet for the other workers' share).
func prime6(e *dataplane.Engine, lan, wan *memport.Port, flows []Flow, sizes []int, workers int) ([][][]byte, [][]byte, error) {
	lanPkts := make([][][]byte, workers)
	var wanPkts [][]byte
	e.Start()
	defer e.Stop()
	got := 0
	drain := func() {
		for q := 0; q < workers; q++ {
			wan.Drain(q, func([]byte) { got++ })
		}
	}
	for i, f := range flows {
		fr, err := LANFrame6(f, sizes[i%len(sizes)])
		if err != nil {
			return nil, nil, err
		}
		q := e.LAN6Owner(fr[14:])
		lanPkts[q] = append(lanPkts[q], fr)
		for !lan.Inject(q, fr) {
			drain()
			time.Sleep(100 * time.Microsecond)
		}
		// In chunks, so that the WAN queues never fill.
		for deadline := time.Now().Add(5 * time.Second); i+1-got >= 512 && time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
			drain()
		}
		b, err := WANFrame6(f, sizes[i%len(sizes)])
		if err != nil {
			return nil, nil, err
		}
		wanPkts = append(wanPkts, b)
	}
	for deadline := time.Now().Add(5 * time.Second); got < len(flows) && time.Now().Before(deadline); time.Sleep(200 * time.Microsecond) {
		drain()
	}
	if got < len(flows) {
		return nil, nil, fmt.Errorf("priming: %d of %d IPv6 flows came out (drops %v)", got, len(flows), e.Totals().DropMap())
	}
	return lanPkts, wanPkts, nil
}

// allocSamples are the runtime's counts of heap allocations, small and
// tiny; heapAllocs reads them without stopping the world (as
// runtime.ReadMemStats would, whose restart makes the scheduler start
// threads, which allocate, inside the window it measures).
var allocSamples = []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/tiny/allocs:objects"}}

// alternation sums the packets and time of a window's slices with stage
// sampling on and paused.
type alternation struct {
	onPkts, offPkts uint64
	onNs, offNs     int64
}

// stageSlices is how many slices alternate() cuts a window into.
const stageSlices = 24

// alternate runs the window d in stageSlices slices, pausing stage
// sampling in every other pair (off, on, on, off, off, on, ...).
func alternate(e *dataplane.Engine, d time.Duration) alternation {
	var a alternation
	slice := d / stageSlices
	tx := func() uint64 { c := e.Totals(); return c.TxLAN + c.TxWAN }
	for i := 0; i < stageSlices; i++ {
		on := i%4 == 1 || i%4 == 2
		e.PauseStages(!on)
		t0, p0 := time.Now(), tx()
		time.Sleep(slice)
		p, ns := tx()-p0, int64(time.Since(t0))
		if on {
			a.onPkts, a.onNs = a.onPkts+p, a.onNs+ns
		} else {
			a.offPkts, a.offNs = a.offPkts+p, a.offNs+ns
		}
	}
	e.PauseStages(false)
	return a
}

// mpps returns the rates with sampling on and paused.
func (a alternation) mpps() (on, off float64) {
	if a.onNs > 0 {
		on = float64(a.onPkts) / float64(a.onNs) * 1e3
	}
	if a.offNs > 0 {
		off = float64(a.offPkts) / float64(a.offNs) * 1e3
	}
	return on, off
}

func heapAllocs() uint64 {
	metrics.Read(allocSamples)
	return allocSamples[0].Value.Uint64() + allocSamples[1].Value.Uint64()
}

// looping reports whether every worker has published packets since
// before (its loop has run past its start-up).
func looping(e *dataplane.Engine, before []dataplane.Counters) bool {
	for i, w := range e.Workers() {
		c := w.Counters()
		if c.RxLAN+c.RxWAN == before[i].RxLAN+before[i].RxWAN {
			return false
		}
	}
	return true
}

func perWorker(e *dataplane.Engine) []dataplane.Counters {
	var out []dataplane.Counters
	for _, w := range e.Workers() {
		out = append(out, w.Counters())
	}
	return out
}

// prime sends one uplink packet per flow through the running engine,
// learns each flow's external port from the WAN side (the IP id carries
// the flow index), and returns the replay lists: uplink frames per LAN
// queue (the queue owning the flow's LAN endpoint, as RSS/fanout steering
// would place it) and downlink replies.
func prime(e *dataplane.Engine, lan, wan *memport.Port, flows []Flow, sizes []int, workers int) ([][][]byte, [][]byte, error) {
	lanPkts := make([][][]byte, workers)
	ext := make([]uint16, len(flows))
	seen := make([]bool, len(flows))
	e.Start()
	defer e.Stop()
	const chunk = 512
	for start := 0; start < len(flows); start += chunk {
		end := min(start+chunk, len(flows))
		for i := start; i < end; i++ {
			fr, err := LANFrame(flows[i], sizes[i%len(sizes)])
			if err != nil {
				return nil, nil, err
			}
			binary.BigEndian.PutUint16(fr[14+4:], uint16(i)) // IP id = flow index
			hdr.IPv4(fr[14:]).ComputeChecksum()
			q := e.LANOwner(fr[14:])
			if q < 0 {
				q = 0
			}
			lanPkts[q] = append(lanPkts[q], fr)
			for !lan.Inject(q, fr) {
				time.Sleep(100 * time.Microsecond)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		got := 0
		for got < end-start && time.Now().Before(deadline) {
			for q := 0; q < workers; q++ {
				wan.Drain(q, func(b []byte) {
					if len(b) < 22+28 {
						return
					}
					ip := b[22:]
					id := int(binary.BigEndian.Uint16(ip[4:]))
					for i := id; i < len(flows); i += 65536 {
						if i >= start && i < end && !seen[i] {
							seen[i] = true
							ext[i] = binary.BigEndian.Uint16(ip[20:])
							got++
							break
						}
					}
				})
			}
			time.Sleep(200 * time.Microsecond)
		}
		if got < end-start {
			return nil, nil, fmt.Errorf("priming: %d of %d flows came out (drops %v)", got, end-start, e.Totals().DropMap())
		}
	}
	var wanPkts [][]byte
	for i, f := range flows {
		b, err := WANFrame(f, ext[i], sizes[i%len(sizes)])
		if err != nil {
			return nil, nil, err
		}
		wanPkts = append(wanPkts, b)
	}
	for q := 0; q < workers; q++ {
		lan.Drain(q, func([]byte) {})
	}
	return lanPkts, wanPkts, nil
}
