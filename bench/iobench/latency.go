package iobench

import (
	"fmt"
	"slices"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic"
)

// Latency is the one-way delay of single frames from A to B through the
// forwarder on an otherwise idle line: the generator owns both ends, so
// send and arrival are read on one clock. It shows what a forwarder adds
// at low rates (an AF_PACKET TPACKET_V3 block timeout, a polling thread's
// back-off), which a throughput figure hides.
type Latency struct {
	Probes int     `json:"probes"`
	Lost   int     `json:"lost"` // not arrived within the probe timeout
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P99Us  float64 `json:"p99_us"`
	MaxUs  float64 `json:"max_us"`
	// Rounds is how many probe runs the figures pool (PoolLatency).
	Rounds int `json:"rounds,omitempty"`
	// Workers is what pppfwd's workers did while the probes ran (nil
	// for the kernel's side).
	Workers *ProbeWorkers `json:"workers,omitempty"`
	// series is every probe's delay in the order sent, -1 for a lost one
	// (what WriteLatencyCSV writes; the figures are those of its arrived
	// probes, arrived).
	series []time.Duration
}

// ProbeWorkers are pppfwd's workers' figures over a probe series (the
// dataplane's Counters.Sleeps and RealtimeExits): how often they slept
// and woke (about once per probe when each probe finds them asleep),
// and how often they left the realtime class (0: every probe woke a
// realtime thread).
type ProbeWorkers struct {
	Wakeups       uint64 `json:"wakeups"`
	RealtimeExits uint64 `json:"realtime_exits"`
}

// arrived returns the delays of l's arrived probes, sorted, in a slice of
// its own.
func (l *Latency) arrived() []time.Duration {
	var d []time.Duration
	for _, x := range l.series {
		if x >= 0 {
			d = append(d, x)
		}
	}
	slices.Sort(d)
	return d
}

// percentiles sets the figures from l's arrived probes.
func (l *Latency) percentiles() {
	l.P50Us, l.P90Us, l.P99Us, l.MaxUs = 0, 0, 0, 0
	d := l.arrived()
	n := len(d)
	if n == 0 {
		return
	}
	us := func(p int) float64 {
		return float64(d[min(n-1, n*p/100)].Nanoseconds()) / 1e3
	}
	l.P50Us, l.P90Us, l.P99Us = us(50), us(90), us(99)
	l.MaxUs = float64(d[n-1].Nanoseconds()) / 1e3
}

// minus returns l's p50 and p99 minus k's, in µs.
func (l *Latency) minus(k *Latency) (p50, p99 float64) {
	return l.P50Us - k.P50Us, l.P99Us - k.P99Us
}

// probeWorkers is what the workers did between two readings of their
// counters taken around a probe series.
func probeWorkers(before, after dataplane.Counters) *ProbeWorkers {
	return &ProbeWorkers{Wakeups: after.Sleeps - before.Sleeps, RealtimeExits: after.RealtimeExits - before.RealtimeExits}
}

// PoolLatency pools the probes of several runs (nil entries skipped) into
// one distribution: the p99 of a few hundred probes is their third
// slowest, which one stall of the machine decides, so runs alternated
// with another path's are compared by their pooled figures. Nil if ls
// holds none.
func PoolLatency(ls []*Latency) *Latency {
	var out *Latency
	for _, l := range ls {
		if l == nil {
			continue
		}
		if out == nil {
			out = &Latency{}
		}
		out.Probes += l.Probes
		out.Lost += l.Lost
		out.Rounds += max(l.Rounds, 1)
		out.series = append(out.series, l.series...)
		if w := l.Workers; w != nil {
			if out.Workers == nil {
				out.Workers = &ProbeWorkers{}
			}
			out.Workers.Wakeups += w.Wakeups
			out.Workers.RealtimeExits += w.RealtimeExits
		}
	}
	if out != nil {
		out.percentiles()
	}
	return out
}

// roundLatency is a copy of l for a round's figures (its series shared,
// never written after probing), nil for nil.
func roundLatency(l *Latency) *Latency {
	if l == nil {
		return nil
	}
	c := *l
	if l.Workers != nil {
		w := *l.Workers
		c.Workers = &w
	}
	return &c
}

// probeTimeout bounds the wait for one probe.
const probeTimeout = 100 * time.Millisecond

// ProbeLatency sends frames[i % len(frames)] from a, n times, one at a
// time every interval, and times each until b receives a frame that match
// maps to its index (other frames are skipped). It runs on the calling
// goroutine, pinned to cpu (-1: not pinned) as the generator is.
func ProbeLatency(a, b nic.Port, frames [][]byte, match Match, n int, interval time.Duration, cpu int) (*Latency, error) {
	ls, err := ProbePaths([]ProbePath{{A: a, B: b, Frames: frames, Match: match}}, n, interval, cpu)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// ProbePath is one path latency probes cross: frames sent from A, told
// apart at B by Match.
type ProbePath struct {
	A, B   nic.Port
	Frames [][]byte
	Match  Match
}

// ProbePaths probes every path n times as ProbeLatency probes one, one
// probe every interval, taking the paths in turn and reversing the turn
// every other cycle (A B, B A, A B, ...): a stretch of slow machine time
// falls on every path alike, and no path always follows another. It
// returns each path's Latency, in the order of paths.
func ProbePaths(paths []ProbePath, n int, interval time.Duration, cpu int) ([]*Latency, error) {
	if n <= 0 || len(paths) == 0 {
		return nil, fmt.Errorf("iobench: latency probe needs a path and a count")
	}
	for _, p := range paths {
		if len(p.Frames) == 0 {
			return nil, fmt.Errorf("iobench: latency probe needs frames")
		}
	}
	if cpu >= 0 {
		if err := pin.Pin(cpu); err != nil {
			return nil, err
		}
		defer func() { _ = pin.Unpin() }()
	}
	tx := nic.NewFrames(1)
	rx := nic.NewFrames(64)
	// The series hold every probe from the start: no allocation (and so
	// no collection by the Go runtime) while probing.
	lats := make([]*Latency, len(paths))
	for i := range lats {
		lats[i] = &Latency{Probes: n, Rounds: 1, series: make([]time.Duration, 0, n)}
	}
	// The lines must be idle: let what a load left in flight arrive, and
	// throw it away.
	time.Sleep(100 * time.Millisecond)
	for _, p := range paths {
		for q := 0; q < p.B.Queues(); q++ {
			for {
				m, err := p.B.Recv(q, rx)
				if err != nil {
					return nil, err
				}
				for _, f := range rx[:m] {
					f.Reset()
				}
				if m == 0 {
					break
				}
			}
		}
	}
	np := len(paths)
	for i := 0; i < n*np; i++ {
		cycle, j := i/np, i%np
		if cycle%2 == 1 {
			j = np - 1 - j
		}
		p, lat := paths[j], lats[j]
		k := cycle % len(p.Frames)
		tx[0].Reset()
		tx[0].SetData(p.Frames[k])
		t0 := time.Now()
		if sent, err := p.A.Send(0, tx); err != nil || sent != 1 {
			return nil, fmt.Errorf("iobench: latency probe %d not sent: %v", i, err)
		}
		flushTX(p.A)
		got := false
		for !got && time.Since(t0) < probeTimeout {
			for q := 0; q < p.B.Queues() && !got; q++ {
				m, err := p.B.Recv(q, rx)
				if err != nil {
					return nil, err
				}
				for _, f := range rx[:m] {
					if !got && p.Match(f.Data()) == k {
						lat.series = append(lat.series, time.Since(t0))
						got = true
					}
					f.Reset()
				}
			}
		}
		if !got {
			lat.Lost++
			lat.series = append(lat.series, -1)
		}
		if d := interval - time.Since(t0); d > 0 {
			time.Sleep(d)
		}
	}
	for _, l := range lats {
		l.percentiles()
	}
	return lats, nil
}
