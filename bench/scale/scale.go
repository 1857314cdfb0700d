package scale

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"time"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/shaper"
)

// Options configure a sweep. Every combination of Workers, Flows, Sizes
// and Steer is one point.
type Options struct {
	Workers  []int                 // worker counts (default 1..NumCPU)
	Flows    []int                 // flow counts (default 1, 100, 10000)
	Sizes    []string              // frame size specs (default 64, imix, 1500)
	Steer    []dataplane.SteerMode // steering modes (default inline; the command's local, inline, thread)
	Duration time.Duration         // measured window per run (default 2 s)
	Repeat   int                   // runs per point; the point is the median run (default 1)
	// Shape, Pin, Batch and IPv6 are passed to every run as
	// bench/pipeline takes them.
	Shape shaper.Spec
	Pin   bool
	Batch int
	IPv6  bool
	// Stages samples each run's per-stage costs, one step in
	// 2^StageShift (bench pipeline --stages).
	Stages     bool
	StageShift int
	// Progress receives one line per point; nil: none.
	Progress io.Writer
	// Run runs one pipeline measurement; nil: pipeline.Run.
	Run func(pipeline.Options) (*pipeline.Result, error)
}

// WorkerCPU is one thread's time in a point's run.
type WorkerCPU struct {
	// Worker is the worker's index; -1 for the steering thread
	// (--steer thread).
	Worker  int    `json:"worker"`
	Packets uint64 `json:"packets"`
	CPUNs   uint64 `json:"cpu_ns"`
	// SteerNs is the thread's steering time (its steered frames times
	// the run's steering ns/frame, at most CPUNs); WorkNs the rest of its
	// CPU time; OffCPUNs the wall time it was not on a CPU (waiting,
	// sleeping or preempted).
	SteerNs   uint64  `json:"steer_ns"`
	WorkNs    uint64  `json:"work_ns"`
	OffCPUNs  uint64  `json:"off_cpu_ns"`
	NsPerPkt  float64 `json:"cpu_ns_per_pkt"`
	Steered   uint64  `json:"steered"`
	Redirects uint64  `json:"redirected"`
	// WANRedirects: WAN frames the worker's own steering handed to
	// another worker, their owner (local steering).
	WANRedirects uint64 `json:"wan_redirected"`
}

// Point is one measured combination.
type Point struct {
	Workers int    `json:"workers"`
	Flows   int    `json:"flows"`
	Size    string `json:"size"`
	Steer   string `json:"steer"`
	// Threads are the pinned threads the run needs (workers, and the
	// steering thread); Oversubscribed is set when they exceed the CPUs,
	// so that the point measures the scheduler as much as pppfwd.
	Threads        int  `json:"threads"`
	Oversubscribed bool `json:"oversubscribed,omitempty"`
	// Runs is how many runs the point took; the figures are the run with
	// the median Mpps (for an even count the lower of the middle two),
	// and MppsMin/MppsMax the range over all runs.
	Runs    int     `json:"runs"`
	Mpps    float64 `json:"mpps"`
	MppsMin float64 `json:"mpps_min"`
	MppsMax float64 `json:"mpps_max"`
	// Speedup is the point's rate over the 1-worker point of the same
	// flows, size and steering, taken round by round (the two runs of a
	// round follow each other, so a change in the machine's speed falls
	// on both) and the median of the rounds' ratios; SpeedupMin/Max the
	// range. 0 when the sweep has no 1-worker point to compare with.
	Speedup    float64 `json:"speedup,omitempty"`
	SpeedupMin float64 `json:"speedup_min,omitempty"`
	SpeedupMax float64 `json:"speedup_max,omitempty"`
	// WallNsPerPkt is 1/rate; CPUNsPerPkt all threads' CPU per packet.
	WallNsPerPkt    float64 `json:"wall_ns_per_pkt"`
	CPUNsPerPkt     float64 `json:"cpu_ns_per_pkt"`
	SteerNsPerPkt   float64 `json:"steer_ns_per_pkt"`
	AllocsPerPkt    float64 `json:"allocs_per_pkt"`
	SteeredShare    float64 `json:"steered_share"`
	RedirectedShare float64 `json:"redirected_share"`
	// WANRedirectedShare is h: the WAN frames the workers' own steering
	// handed to another worker (local steering), per frame they steered;
	// 0 in the other modes, whose hand-over of every frame is part of
	// steering.
	WANRedirectedShare float64 `json:"wan_redirected_share"`
	// BusiestShare is the busiest worker's share of the packets (1/n
	// when the work is even); IdleWorkers counts workers that forwarded
	// nothing (the traffic's flows belong to fewer workers: the NAT
	// owner of a LAN endpoint is chosen by its source port).
	BusiestShare float64     `json:"busiest_worker_share"`
	IdleWorkers  int         `json:"idle_workers"`
	Packets      uint64      `json:"packets"`
	LANToWAN     uint64      `json:"lan_to_wan"`
	WANToLAN     uint64      `json:"wan_to_lan"`
	Seconds      float64     `json:"seconds"`
	PerWorker    []WorkerCPU `json:"per_worker"`
	SteerThread  *WorkerCPU  `json:"steer_thread,omitempty"`
	// Stages: the sampled per-stage costs of the point's run (Options.
	// Stages).
	Stages *pipeline.Stages  `json:"stages,omitempty"`
	Drops  map[string]uint64 `json:"drops,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// OK reports whether the point was measured.
func (p *Point) OK() bool { return p.Error == "" && p.Packets > 0 }

// Mode is the point's steering mode (inline for a word SteerName does
// not give).
func (p *Point) Mode() dataplane.SteerMode {
	switch p.Steer {
	case "thread":
		return dataplane.SteerThread
	case "local":
		return dataplane.SteerLocal
	}
	return dataplane.SteerInline
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if len(o.Workers) == 0 {
		for n := 1; n <= runtime.NumCPU(); n++ {
			o.Workers = append(o.Workers, n)
		}
	}
	if len(o.Flows) == 0 {
		o.Flows = []int{1, 100, 10000}
	}
	if len(o.Sizes) == 0 {
		o.Sizes = []string{"64", "imix", "1500"}
	}
	if len(o.Steer) == 0 {
		o.Steer = []dataplane.SteerMode{dataplane.SteerInline}
	}
	if o.Duration <= 0 {
		o.Duration = 2 * time.Second
	}
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.Run == nil {
		o.Run = pipeline.Run
	}
	return o
}

// Oversubscribed lists the worker counts of o whose threads (a steering
// thread included) exceed cpus.
func Oversubscribed(workers []int, steer []dataplane.SteerMode, cpus int) []int {
	var out []int
	for _, w := range workers {
		for _, m := range steer {
			if CoresFor(m, w) > cpus {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// Sweep measures every point, steering mode outermost and workers
// innermost, so one configuration's points follow each other. A point
// whose runs fail is kept with its error and the sweep goes on; the
// error returned says how many failed.
func Sweep(o Options) ([]Point, error) {
	o = o.withDefaults()
	type combo struct {
		workers, flows int
		size           string
		m              dataplane.SteerMode
	}
	var combos []combo
	for _, m := range o.Steer {
		for _, size := range o.Sizes {
			for _, flows := range o.Flows {
				for _, w := range o.Workers {
					combos = append(combos, combo{w, flows, size, m})
				}
			}
		}
	}
	cpus := runtime.NumCPU()
	point := func(c combo) Point {
		p := Point{Workers: c.workers, Flows: c.flows, Size: c.size, Steer: SteerName(c.m), Threads: CoresFor(c.m, c.workers)}
		p.Oversubscribed = p.Threads > cpus
		return p
	}
	// Repeated runs go round the whole sweep, so that a change in the
	// machine's speed during the sweep falls on every point alike
	// instead of on the points measured while it lasted; every other
	// round goes backwards, so that a steady drift favours no point
	// (in a round of two points, the second runs first in the next).
	runs := make([][]*pipeline.Result, len(combos))
	errs := make([]string, len(combos))
	total, k := len(combos)*o.Repeat, 0
	for r := 0; r < o.Repeat; r++ {
		for j := range combos {
			i := j
			if r%2 == 1 {
				i = len(combos) - 1 - j
			}
			c := combos[i]
			k++
			p := point(c)
			if errs[i] == "" {
				res, err := o.Run(pipeline.Options{Workers: c.workers, Flows: c.flows, Size: c.size, Duration: o.Duration,
					Shape: o.Shape, Pin: o.Pin, Steer: c.m, Batch: o.Batch, IPv6: o.IPv6, Stages: o.Stages, StageShift: o.StageShift})
				if err == nil && (res == nil || res.Packets == 0) {
					err = errors.New("no packets")
				}
				if err != nil {
					errs[i] = err.Error()
				} else {
					runs[i] = append(runs[i], res)
					fromResult(&p, res)
				}
			}
			p.Error = errs[i]
			if o.Progress != nil {
				round := ""
				if o.Repeat > 1 {
					round = fmt.Sprintf(" round %d/%d", r+1, o.Repeat)
				}
				fmt.Fprintf(o.Progress, "[%d/%d]%s %s\n", k, total, round, progress(&p))
			}
		}
	}
	speedups := pairedSpeedups(len(combos), func(i int) (base int, ok bool) {
		c := combos[i]
		for j, b := range combos {
			if b.workers == 1 && b.flows == c.flows && b.size == c.size && b.m == c.m {
				return j, errs[i] == "" && errs[j] == ""
			}
		}
		return 0, false
	}, runs)
	pts := make([]Point, len(combos))
	failed := 0
	for i, c := range combos {
		pts[i] = point(c)
		if errs[i] != "" {
			pts[i].Error = errs[i]
			failed++
			continue
		}
		rs := runs[i]
		sort.SliceStable(rs, func(a, b int) bool { return rs[a].Mpps < rs[b].Mpps })
		fromResult(&pts[i], rs[(len(rs)-1)/2])
		pts[i].Runs = len(rs)
		pts[i].MppsMin, pts[i].MppsMax = rs[0].Mpps, rs[len(rs)-1].Mpps
		if sp := speedups[i]; len(sp) > 0 {
			pts[i].Speedup, pts[i].SpeedupMin, pts[i].SpeedupMax = sp[(len(sp)-1)/2], sp[0], sp[len(sp)-1]
		}
	}
	if failed > 0 {
		return pts, fmt.Errorf("%d of %d points failed", failed, len(combos))
	}
	return pts, nil
}

// pairedSpeedups returns, for each of n points, its rounds' rates over
// its base point's rates of the same rounds, sorted; none for a point
// without a base (baseOf false) or with a run missing. runs[i][r] is
// point i's run of round r; it must be called before runs are sorted.
func pairedSpeedups(n int, baseOf func(i int) (int, bool), runs [][]*pipeline.Result) [][]float64 {
	out := make([][]float64, n)
	for i := 0; i < n; i++ {
		b, ok := baseOf(i)
		if !ok || len(runs[i]) == 0 || len(runs[i]) != len(runs[b]) {
			continue
		}
		for r := range runs[i] {
			if runs[b][r].Mpps > 0 {
				out[i] = append(out[i], runs[i][r].Mpps/runs[b][r].Mpps)
			}
		}
		sort.Float64s(out[i])
	}
	return out
}

func progress(p *Point) string {
	s := fmt.Sprintf("workers=%d flows=%d size=%s steer=%s: ", p.Workers, p.Flows, p.Size, p.Steer)
	if !p.OK() {
		return s + "error: " + p.Error
	}
	s += fmt.Sprintf("%.2f Mpps", p.Mpps)
	if p.Runs > 1 {
		s += fmt.Sprintf(" (median of %d, %.2f..%.2f)", p.Runs, p.MppsMin, p.MppsMax)
	}
	if p.Oversubscribed {
		s += " (oversubscribed)"
	}
	if p.IdleWorkers > 0 {
		s += fmt.Sprintf(" (%d of %d workers forwarded nothing)", p.IdleWorkers, p.Workers)
	}
	return s
}

// fromResult fills p's figures from one pipeline run.
func fromResult(p *Point, r *pipeline.Result) {
	p.Mpps = r.Mpps
	if r.Mpps > 0 {
		p.WallNsPerPkt = 1e3 / r.Mpps
	}
	p.CPUNsPerPkt, p.SteerNsPerPkt, p.AllocsPerPkt = r.CPUNsPerPkt, r.SteerNsPerPkt, r.AllocsPerPkt
	p.Packets, p.LANToWAN, p.WANToLAN, p.Seconds = r.Packets, r.LANToWAN, r.WANToLAN, r.Seconds
	p.Stages = r.Stages
	if len(r.Drops) > 0 {
		p.Drops = r.Drops
	}
	wall := r.Seconds * 1e9
	var workerCPU, redirects, steered, wanRedirects uint64
	for _, w := range r.PerWorker {
		c := WorkerCPU{Worker: w.Worker, Packets: w.Packets, CPUNs: w.CPUNs, NsPerPkt: w.NsPerPkt, Steered: w.Steered,
			Redirects: w.Redirects, WANRedirects: w.WANRedirects}
		split(&c, float64(w.Steered)*r.SteerNsPerPkt, wall)
		workerCPU += w.CPUNs
		redirects += w.Redirects
		steered += w.Steered
		wanRedirects += w.WANRedirects
		p.PerWorker = append(p.PerWorker, c)
	}
	if steered > 0 {
		p.WANRedirectedShare = float64(wanRedirects) / float64(steered)
	}
	if p.Mode() == dataplane.SteerThread {
		// The steering thread's CPU is what the run's CPU total holds
		// beyond the workers'; its steered frames are the forwarded WAN
		// frames (drops aside).
		cpu := math.Round(r.CPUNsPerPkt * float64(r.Packets))
		c := WorkerCPU{Worker: -1, Steered: r.WANToLAN}
		if cpu > float64(workerCPU) {
			c.CPUNs = uint64(cpu) - workerCPU
		}
		split(&c, float64(r.WANToLAN)*r.SteerNsPerPkt, wall)
		p.SteerThread = &c
	}
	var busiest uint64
	for _, w := range r.PerWorker {
		busiest = max(busiest, w.Packets)
		if w.Packets == 0 {
			p.IdleWorkers++
		}
	}
	if r.Packets > 0 {
		p.SteeredShare = float64(r.WANToLAN) / float64(r.Packets)
		p.RedirectedShare = float64(redirects) / float64(r.Packets)
		p.BusiestShare = float64(busiest) / float64(r.Packets)
	}
}

// split divides a thread's CPU time into steering (at most all of it)
// and the rest, and its wall time off the CPU.
func split(c *WorkerCPU, steerNs, wallNs float64) {
	s := uint64(math.Max(0, math.Round(steerNs)))
	c.SteerNs = min(s, c.CPUNs)
	c.WorkNs = c.CPUNs - c.SteerNs
	if w := uint64(math.Max(0, wallNs)); w > c.CPUNs {
		c.OffCPUNs = w - c.CPUNs
	}
}

// StageNs returns the point's scaled ns per packet of each stage
// (dataplane.Stage order), or nil without stage costs.
func (p *Point) StageNs() []float64 {
	if p.Stages == nil || len(p.Stages.PerStage) != int(dataplane.NumStages) {
		return nil
	}
	out := make([]float64, len(p.Stages.PerStage))
	for i, s := range p.Stages.PerStage {
		out[i] = s.NsPerPktScaled
	}
	return out
}

// Measured returns the model's costs from a point: c_work is the
// workers' CPU time minus the steering time they spent, per forwarded
// packet; c_steer the run's steering ns per steered frame; s the WAN->LAN
// share of the forwarded packets; h the WAN frames the workers' own
// steering handed over, per steered frame (local steering; 0 at one
// worker). c_hop is not measured: the pipeline places each WAN frame on
// its owner's queue, so there is next to nothing to measure it on.
func Measured(p *Point) Costs {
	if !p.OK() {
		return Costs{}
	}
	var work uint64
	for _, w := range p.PerWorker {
		work += w.WorkNs
	}
	return Costs{WorkNs: float64(work) / float64(p.Packets), SteerNs: p.SteerNsPerPkt, Share: p.SteeredShare, Hop: p.WANRedirectedShare}
}
