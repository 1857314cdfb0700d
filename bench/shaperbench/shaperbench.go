package shaperbench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pppfwd/pppfwd/shaper"
)

// Packet is one simulated packet.
type Packet struct {
	Size  int    // IP bytes (shaper.Ops.Len)
	Flow  uint32 // 5-tuple hash
	Host  uint32 // LAN host hash
	Probe bool   // a ping: its delay is measured
	Bulk  int32  // a bulk packet's flow, 0..BulkFlows-1
	Born  int64  // when the source emitted it (sim clock, ns)
}

// Path is the stage under test between the traffic source and the line.
// All times are the simulated clock's.
type Path interface {
	// Send hands one packet to the path at time now.
	Send(now int64, p *Packet)
	// Recv fills out with packets leaving the path at time now.
	Recv(now int64, out []*Packet) int
	// NextEvent returns when Recv may next return a packet: 0 if nothing
	// is pending, a time <= now if now.
	NextEvent(now int64) int64
}

// PathFactory builds a Path for one run. clk is the simulated clock; shaped
// says whether the shaper is on (opts.Rate) or off (pass-through); drop must
// be called for every packet the path discards.
type PathFactory func(clk shaper.Clock, shaped bool, opts Options, drop func(*Packet)) (Path, error)

// Options describe the scenario; zero fields take the defaults in brackets.
type Options struct {
	Rate         uint64        // shaped rate, bit/s [95 Mbit/s]
	LineRate     uint64        // line (bottleneck) rate, bit/s [Rate/0.95]
	LineBuffer   time.Duration // line FIFO size in time at LineRate [200 ms]
	Duration     time.Duration // simulated time [10 s]
	Warmup       time.Duration // not measured [500 ms]
	BulkFlows    int           // [16]
	BulkSize     int           // IP bytes [1500]
	Load         float64       // bulk load as a multiple of Rate [2]
	PingInterval time.Duration // [10 ms]
	PingSize     int           // IP bytes [84]
	PingJitter   time.Duration // each ping interval varies by up to ± this, deterministically [PingInterval/10; < 0: none]
	Overhead     string        // CAKE overhead keywords, used by shaper and line ["": Config.Overhead]
	Poll         time.Duration // worker timer granularity (0: wakes exactly at NextSend)
	Config       shaper.Config // shaper config (zero: fq_codel defaults)
	BenchPackets int           // packets for the ns_per_pkt measurement [1<<21]
	Path         PathFactory   // [ShaperPath]
}

// Result is the scenario's report. Delays are -1 when no ping was delivered.
type Result struct {
	RateErrorPct       float64 `json:"rate_error_pct"`
	P50AddedDelayMs    float64 `json:"p50_added_delay_ms"`
	P99AddedDelayMs    float64 `json:"p99_added_delay_ms"`
	P99AddedDelayMsOff float64 `json:"p99_added_delay_ms_off"`
	NsPerPkt           float64 `json:"ns_per_pkt"`
	CPUNsPerPkt        float64 `json:"cpu_ns_per_pkt"` // CPU time, not wall: robust on a busy host

	ShapedMbit    float64 `json:"shaped_mbit"`
	RateMbit      float64 `json:"rate_mbit"`
	LineMbit      float64 `json:"line_mbit"`
	P50AddedOffMs float64 `json:"p50_added_delay_ms_off"`
	// Ping loss: pings sent after the warmup, early enough to arrive
	// before the end, that never came out (dropped, or still queued).
	PingLossPct float64 `json:"ping_loss_pct"`
	PingLossOff float64 `json:"ping_loss_pct_off"`
	Pings       int     `json:"pings"`
	// The bulk flows' rates out of the path after the warmup, shaped
	// run: the slowest and fastest flow's, and Jain's fairness index
	// over all of them ((sum x)^2 / (n sum x^2): 1 when all are equal,
	// 1/n when one takes everything).
	FlowMbitMin float64 `json:"flow_mbit_min"`
	FlowMbitMax float64 `json:"flow_mbit_max"`
	JainIndex   float64 `json:"jain_index"`

	// What ran: the path's name ("shaper", "pipeline", or "custom" for a
	// path that does not report), whether packets went through the
	// dataplane, and its report of the shaped run.
	Path        string            `json:"path"`
	Pipeline    bool              `json:"pipeline"`
	Direction   string            `json:"direction,omitempty"`
	Workers     int               `json:"workers,omitempty"`
	Frames      uint64            `json:"frames"`                   // packets out of the path, shaped run
	Lost        uint64            `json:"lost"`                     // packets the path dropped, shaped run
	Drops       map[string]uint64 `json:"pipeline_drops,omitempty"` // the engine's drops by reason, shaped run
	ShaperDrops uint64            `json:"shaper_drops"`             // FQ-CoDel drops, shaped run
	InFlight    uint64            `json:"in_flight"`                // packets still in the path at the end, shaped run
	GoalsMet    bool              `json:"goals_met"`                // see MeetsGoals
	WallSec     float64           `json:"wall_seconds"`             // real time of both simulated runs
}

// Goals of issue 5 for the shaper on at 2x load.
const (
	GoalP99AddedDelayMs = 10
	GoalRateErrorPct    = 1
	GoalNsPerPkt        = 40
)

// MeetsGoals reports whether r meets the goals. The cost goal is checked
// against CPU ns/pkt when known (robust on a shared host), else wall.
func (r Result) MeetsGoals() bool {
	ns := r.NsPerPkt
	if r.CPUNsPerPkt > 0 {
		ns = r.CPUNsPerPkt
	}
	return r.P99AddedDelayMs >= 0 && r.P99AddedDelayMs <= GoalP99AddedDelayMs &&
		r.RateErrorPct <= GoalRateErrorPct && ns <= GoalNsPerPkt && r.PingLossPct == 0
}

func (o Options) withDefaults() Options {
	if o.Rate == 0 {
		o.Rate = 95e6
	}
	if o.LineRate == 0 {
		o.LineRate = uint64(float64(o.Rate) / 0.95)
	}
	if o.LineBuffer == 0 {
		o.LineBuffer = 200 * time.Millisecond
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup == 0 {
		o.Warmup = 500 * time.Millisecond
	}
	if o.BulkFlows == 0 {
		o.BulkFlows = 16
	}
	if o.BulkSize == 0 {
		o.BulkSize = 1500
	}
	if o.Load == 0 {
		o.Load = 2
	}
	if o.PingInterval == 0 {
		o.PingInterval = 10 * time.Millisecond
	}
	if o.PingJitter == 0 {
		o.PingJitter = o.PingInterval / 10
	}
	if o.PingSize == 0 {
		o.PingSize = 84
	}
	if o.BenchPackets == 0 {
		o.BenchPackets = 1 << 21
	}
	if o.Path == nil {
		o.Path = ShaperPath
	}
	return o
}

// Run runs the scenario with the shaper on and off, and the cost benchmark.
func Run(opts Options) (Result, error) {
	o := opts.withDefaults()
	if o.Duration <= o.Warmup || o.Load <= 0 || o.BulkSize <= 0 || o.PingSize <= 0 || o.BulkFlows < 1 {
		return Result{}, errors.New("shaperbench: bad options")
	}
	if o.LineRate < o.Rate {
		return Result{}, fmt.Errorf("shaperbench: line rate %d below shaped rate %d", o.LineRate, o.Rate)
	}
	if o.Overhead != "" {
		ovh, err := shaper.ParseOverhead(o.Overhead)
		if err != nil {
			return Result{}, err
		}
		o.Config.Overhead = ovh
	}
	if err := o.Config.Validate(); err != nil {
		return Result{}, err
	}
	t0 := time.Now()
	on, err := simulate(o, true)
	if err != nil {
		return Result{}, err
	}
	off, err := simulate(o, false)
	if err != nil {
		return Result{}, err
	}
	r := Result{
		RateMbit:           float64(o.Rate) / 1e6,
		LineMbit:           float64(o.LineRate) / 1e6,
		ShapedMbit:         on.rate / 1e6,
		RateErrorPct:       math.Abs(on.rate-float64(o.Rate)) / float64(o.Rate) * 100,
		P50AddedDelayMs:    pct(on.delays, 0.50),
		P99AddedDelayMs:    pct(on.delays, 0.99),
		P50AddedOffMs:      pct(off.delays, 0.50),
		P99AddedDelayMsOff: pct(off.delays, 0.99),
		PingLossPct:        on.pingLoss,
		PingLossOff:        off.pingLoss,
		Pings:              on.pings,
		JainIndex:          jain(on.flowRates),
		WallSec:            time.Since(t0).Seconds(),
		Path:               on.report.Name,
		Pipeline:           on.report.Pipeline,
		Direction:          on.report.Direction,
		Workers:            on.report.Workers,
		Frames:             on.report.Frames,
		Lost:               on.report.Lost,
		Drops:              on.report.Drops,
		ShaperDrops:        on.report.ShaperDrops,
		InFlight:           on.report.InFlight,
	}
	if len(on.flowRates) > 0 {
		r.FlowMbitMin, r.FlowMbitMax = slices.Min(on.flowRates)/1e6, slices.Max(on.flowRates)/1e6
	}
	r.NsPerPkt, r.CPUNsPerPkt = Cost(o.Config, o.BenchPackets)
	r.GoalsMet = r.MeetsGoals()
	return r, nil
}

// jain is Jain's fairness index of xs (0 for none, or all zero).
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

func pct(xs []int64, q float64) float64 {
	if len(xs) == 0 {
		return -1 // no ping delivered
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return float64(s[max(i, 0)]) / 1e6
}

type simResult struct {
	rate float64 // bit/s leaving the path (wire bytes) after warmup
	// flowRates: each bulk flow's bit/s (wire bytes) after warmup
	flowRates []float64
	delays    []int64 // ping added delay, ns
	pingLoss  float64 // percent
	pings     int
	report    PathReport
}

// pool recycles packets without allocating in the loop.
type pool struct{ free []*Packet }

func (p *pool) get() *Packet {
	if n := len(p.free); n > 0 {
		pk := p.free[n-1]
		p.free = p.free[:n-1]
		return pk
	}
	return new(Packet)
}

func (p *pool) put(pk *Packet) { p.free = append(p.free, pk) }

func simulate(o Options, shaped bool) (simResult, error) {
	clk := shaper.NewManualClock(1)
	var pl pool
	drop := pl.put
	path, err := o.Path(clk, shaped, o, drop)
	if err != nil {
		return simResult{}, err
	}
	ovh := o.Config.Overhead
	lineNs := func(n int) int64 { return int64(float64(ovh.WireLen(n)) * 8e9 / float64(o.LineRate)) }
	bufNs := int64(o.LineBuffer)
	var (
		res       simResult
		lineBusy  int64 // the line transmits until then
		measured  int64 // wire bytes out of the path after warmup
		out       = make([]*Packet, 64)
		end       = int64(o.Duration)
		warm      = int64(o.Warmup)
		bulkGap   = float64(o.BulkSize*8) * 1e9 / (o.Load * float64(o.Rate))
		bulkNext  = 1.0
		bulkN     uint32
		pingNext  = int64(1)
		pingEvery = int64(o.PingInterval)
		jitter    = int64(o.PingJitter)
		rnd       = uint64(0x9e3779b97f4a7c15)
		poll      = int64(o.Poll)
		// Pings sent in [warm, lossEnd) count for the loss: a later
		// one may still be queued when the run ends.
		lossEnd   = max(end-bufNs-int64(100*time.Millisecond), warm+1)
		lossSent  int
		lossDeliv int
		flowBytes = make([]int64, o.BulkFlows)
	)
	for now := clk.Now(); now < end; now = clk.Now() {
		for int64(bulkNext) <= now {
			p := pl.get()
			*p = Packet{Size: o.BulkSize, Flow: (bulkN%uint32(o.BulkFlows) + 1) * 0x9e3779b9, Host: 1, Born: int64(bulkNext),
				Bulk: int32(bulkN % uint32(o.BulkFlows))}
			bulkN++
			path.Send(now, p)
			bulkNext += bulkGap
		}
		for pingNext <= now {
			p := pl.get()
			*p = Packet{Size: o.PingSize, Flow: 0x7f4a7c15, Host: 2, Probe: true, Born: pingNext}
			res.pings++
			if p.Born >= warm && p.Born < lossEnd {
				lossSent++
			}
			path.Send(now, p)
			pingNext += pingEvery
			if jitter > 0 { // xorshift: the ping's phase against the shaper's lease grid varies
				rnd ^= rnd << 13
				rnd ^= rnd >> 7
				rnd ^= rnd << 17
				pingNext += int64(rnd%uint64(2*jitter+1)) - jitter
			}
		}
		for {
			n := path.Recv(now, out)
			for _, p := range out[:n] {
				if now >= warm {
					measured += int64(ovh.WireLen(p.Size))
					if !p.Probe {
						flowBytes[p.Bulk] += int64(ovh.WireLen(p.Size))
					}
				}
				start := max(now, lineBusy)
				if start-now+lineNs(p.Size) > bufNs { // line FIFO full (bytes): tail drop
					drop(p)
					continue
				}
				lineBusy = start + lineNs(p.Size)
				if p.Probe && p.Born >= warm {
					res.delays = append(res.delays, lineBusy-p.Born-lineNs(p.Size))
					if p.Born < lossEnd {
						lossDeliv++
					}
				}
				pl.put(p)
			}
			if n < len(out) {
				break
			}
		}
		next := min(int64(bulkNext)+1, pingNext)
		if ev := path.NextEvent(now); ev != 0 {
			next = min(next, max(ev, now+1))
		}
		if poll > 0 {
			next = (next + poll - 1) / poll * poll
		}
		clk.Set(max(next, now+1))
	}
	res.report = PathReport{Name: "custom"}
	if r, ok := path.(Reporter); ok {
		res.report = r.Report()
		if res.report.Err != nil {
			return simResult{}, res.report.Err
		}
	}
	if c, ok := path.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			return simResult{}, err
		}
	}
	res.rate = float64(measured*8) / (float64(end-warm) / 1e9)
	for _, b := range flowBytes {
		res.flowRates = append(res.flowRates, float64(b*8)/(float64(end-warm)/1e9))
	}
	if lossSent > 0 {
		res.pingLoss = float64(lossSent-lossDeliv) / float64(lossSent) * 100
	}
	return res, nil
}

// packetOps are the shaper's Ops for simulated packets.
type packetOps struct{ drop func(*Packet) }

func (packetOps) Len(p *Packet) int   { return p.Size }
func (packetOps) MarkCE(*Packet) bool { return false }
func (o packetOps) Drop(p *Packet)    { o.drop(p) }

// ShaperPath is the default Path: the FQ-CoDel shaper alone (shaped), or a
// pass-through (not shaped).
func ShaperPath(clk shaper.Clock, shaped bool, opts Options, drop func(*Packet)) (Path, error) {
	if !shaped {
		return &passPath{}, nil
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	b := shaper.NewBucket(opts.Rate, clk)
	return &shaperPath{s: shaper.New[*Packet](opts.Config, b, clk, packetOps{drop})}, nil
}

type shaperPath struct{ s *shaper.FQCoDel[*Packet] }

func (p *shaperPath) Send(now int64, pk *Packet) {
	p.s.EnqueueAt(pk, pk.Flow, pk.Host, now)
}

func (p *shaperPath) Recv(now int64, out []*Packet) int { return p.s.DequeueAt(out, now) }

func (p *shaperPath) NextEvent(now int64) int64 {
	if p.s.Len() == 0 {
		return 0
	}
	if t := p.s.NextSend(); t != 0 {
		return t
	}
	return now
}

type passPath struct {
	q   []*Packet
	out uint64
}

func (p *passPath) Send(_ int64, pk *Packet) { p.q = append(p.q, pk) }

func (p *passPath) Recv(_ int64, out []*Packet) int {
	n := copy(out, p.q)
	p.q = p.q[:copy(p.q, p.q[n:])]
	p.out += uint64(n)
	return n
}

// Report implements Reporter.
func (p *shaperPath) Report() PathReport {
	st := p.s.Stats()
	return PathReport{Name: "shaper", Frames: st.Dequeued, Lost: st.Dropped, ShaperDrops: st.Dropped, InFlight: uint64(st.Backlog)}
}

// Report implements Reporter.
func (p *passPath) Report() PathReport {
	return PathReport{Name: "shaper", Frames: p.out, InFlight: uint64(len(p.q))}
}

func (p *passPath) NextEvent(now int64) int64 {
	if len(p.q) == 0 {
		return 0
	}
	return now
}

// Cost measures the shaper's enqueue+dequeue cost: batches of 64 packets
// over 64 flows through a standing backlog of 1024, rate-limited at a rate
// that never blocks. It returns wall and CPU nanoseconds per packet.
func Cost(cfg shaper.Config, packets int) (wallNs, cpuNs float64) {
	const batch, backlog, flows = 64, 1024, 64
	clk := shaper.NewManualClock(1)
	s := shaper.New[*Packet](cfg, shaper.NewBucket(1e12, clk), clk, packetOps{func(*Packet) {}})
	pkts := make([]Packet, backlog+2*batch)
	for i := range pkts {
		pkts[i] = Packet{Size: 64 + (i*389)%1437, Flow: uint32(i%flows) * 0x9e3779b9, Host: uint32(i % 7)}
	}
	out := make([]*Packet, batch)
	next := 0
	for ; next < backlog; next++ {
		s.Enqueue(&pkts[next], pkts[next].Flow, pkts[next].Host)
	}
	rounds := max(packets/batch, 1)
	c0, t0 := cpuNanos(), time.Now()
	for range rounds {
		now := clk.Advance(10_000)
		for range batch {
			p := &pkts[next%len(pkts)]
			next++
			s.EnqueueAt(p, p.Flow, p.Host, now)
		}
		s.DequeueAt(out, now)
	}
	wall, cpu := time.Since(t0), cpuNanos()-c0
	n := float64(rounds * batch)
	return float64(wall.Nanoseconds()) / n, float64(cpu) / n
}
