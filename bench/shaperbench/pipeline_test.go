package shaperbench

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/shaper"
)

func within(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestPipelinePath runs the same scenario through the shaper alone and
// through the dataplane (memports, steering, PPPoE, NAT, FQ-CoDel) and
// checks the pipeline reproduces the shaper-only figures: the pipeline adds
// no time on the simulated clock, so the only differences are where the
// token bucket's lease grid falls (a lease is ~200 µs of rate).
func TestPipelinePath(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		po   PipelineOptions
	}{
		{"down-95mbit", Options{Duration: 3 * time.Second}, PipelineOptions{}},
		{"down-900mbit-ptm", Options{Rate: 900e6, LineRate: 1000e6, Overhead: "pppoe-ptm", Duration: 1500 * time.Millisecond}, PipelineOptions{}},
		{"up-450mbit-poll", Options{Rate: 450e6, LineRate: 500e6, Overhead: "pppoe-ptm", Duration: 1500 * time.Millisecond, Poll: 50 * time.Microsecond}, PipelineOptions{Uplink: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.BulkSize, o.BenchPackets = 1492, 1<<12
			o.Path = ShaperPath
			ref, err := Run(o)
			if err != nil {
				t.Fatal(err)
			}
			o.Path = NewPipelinePath(c.po)
			r, err := Run(o)
			if err != nil {
				t.Fatal(err)
			}
			js, _ := json.Marshal(r)
			t.Logf("pipeline: %s", js)
			js, _ = json.Marshal(ref)
			t.Logf("shaper:   %s", js)

			wantDir := map[bool]string{false: "down", true: "up"}[c.po.Uplink]
			if r.Path != "pipeline" || !r.Pipeline || r.Direction != wantDir || ref.Path != "shaper" || ref.Pipeline {
				t.Fatalf("path %q pipeline %v direction %q; reference %q %v", r.Path, r.Pipeline, r.Direction, ref.Path, ref.Pipeline)
			}
			if r.RateErrorPct > GoalRateErrorPct || !within(r.ShapedMbit, ref.ShapedMbit, r.RateMbit*0.002) {
				t.Errorf("shaped %.3f Mbit/s (error %.3f %%), shaper alone %.3f", r.ShapedMbit, r.RateErrorPct, ref.ShapedMbit)
			}
			// Ping delay with the shaper on: the same within a lease or two.
			lease := float64(shaper.DefaultChunkTime) / 1e6
			if r.P99AddedDelayMs < 0 || !within(r.P99AddedDelayMs, ref.P99AddedDelayMs, 2*lease) ||
				!within(r.P50AddedDelayMs, ref.P50AddedDelayMs, 2*lease) {
				t.Errorf("ping delay p50/p99 %.3f/%.3f ms, shaper alone %.3f/%.3f", r.P50AddedDelayMs, r.P99AddedDelayMs, ref.P50AddedDelayMs, ref.P99AddedDelayMs)
			}
			// Off, the line's FIFO sets the delay, whatever the path.
			if !within(r.P99AddedDelayMsOff, ref.P99AddedDelayMsOff, 0.02*ref.P99AddedDelayMsOff) {
				t.Errorf("p99 off %.3f ms, shaper alone %.3f", r.P99AddedDelayMsOff, ref.P99AddedDelayMsOff)
			}
			if r.P99AddedDelayMs*10 > r.P99AddedDelayMsOff {
				t.Errorf("shaper on %.3f ms is not far below off %.3f ms: bypassed?", r.P99AddedDelayMs, r.P99AddedDelayMsOff)
			}
			// Every packet lost in the pipeline was an FQ-CoDel drop; the
			// counts follow the shaper alone's.
			if r.Lost == 0 || r.Lost > r.ShaperDrops || r.ShaperDrops > r.Lost+r.InFlight || r.PingLossPct != ref.PingLossPct {
				t.Errorf("lost %d, shaper drops %d, drops %v, ping loss %.2f %% (alone %.2f %%)", r.Lost, r.ShaperDrops, r.Drops, r.PingLossPct, ref.PingLossPct)
			}
			if !within(float64(r.Frames), float64(ref.Frames), 0.01*float64(ref.Frames)) ||
				!within(float64(r.Lost), float64(ref.Lost), 0.02*float64(ref.Lost)) {
				t.Errorf("frames %d lost %d; shaper alone %d %d", r.Frames, r.Lost, ref.Frames, ref.Lost)
			}
		})
	}
}

// drive sends bulk at load x rate plus a ping every 10 ms straight into a
// path (no line) for d of simulated time and returns the IP bit rate out.
func drive(t *testing.T, shaped bool, po PipelineOptions, rate uint64, load float64, d time.Duration) (float64, *pipePath) {
	t.Helper()
	clk := shaper.NewManualClock(1)
	o := Options{Rate: rate, BulkSize: 1492, PingSize: 84}
	var dropped int
	p, err := newPipePath(po, clk, shaped, o, func(*Packet) { dropped++ })
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*Packet, 64)
	gap := int64(float64(o.BulkSize*8) * 1e9 / (load * float64(rate)))
	var bytes int64
	i := 0
	for now := int64(1); now < int64(d); now = clk.Advance(gap) {
		pk := &Packet{Size: o.BulkSize, Flow: uint32(i%8+1) * 0x9e3779b9, Host: 1, Born: now}
		if i%int(int64(10*time.Millisecond)/gap) == 0 {
			*pk = Packet{Size: o.PingSize, Flow: 0x7f4a7c15, Host: 2, Probe: true, Born: now}
		}
		i++
		p.Send(now, pk)
		for {
			n := p.Recv(now, out)
			for _, q := range out[:n] {
				bytes += int64(q.Size)
			}
			if n < len(out) {
				break
			}
		}
	}
	if rep := p.Report(); rep.Err != nil || rep.Errors != 0 || int(rep.Lost) != dropped {
		t.Fatalf("report %+v, %d dropped", rep, dropped)
	}
	return float64(bytes*8) / d.Seconds(), p
}

// TestPipelineShapes fails if the pipeline bypassed the shaper: at twice
// the rate offered, what comes out is the rate (shaped) or the load (not).
func TestPipelineShapes(t *testing.T) {
	const rate, load = 200e6, 2.0
	for _, po := range []PipelineOptions{{}, {Uplink: true}, {Workers: 2}} {
		on, p := drive(t, true, po, rate, load, time.Second)
		if math.Abs(on-rate)/rate > 0.02 {
			t.Errorf("%+v shaped: %.1f Mbit/s out, rate %.0f", po, on/1e6, rate/1e6)
		}
		if rep := p.Report(); rep.ShaperDrops == 0 || rep.Frames != rep.EngineTx {
			t.Errorf("%+v shaped: report %+v", po, rep)
		}
		off, p := drive(t, false, po, rate, load, time.Second)
		if math.Abs(off-load*rate)/(load*rate) > 0.02 {
			t.Errorf("%+v not shaped: %.1f Mbit/s out, offered %.0f", po, off/1e6, load*rate/1e6)
		}
		if rep := p.Report(); rep.ShaperDrops != 0 || rep.Lost != 0 {
			t.Errorf("%+v not shaped: report %+v", po, rep)
		}
	}
}

// TestPipelinePathAllocs: once a flow is known, Send+Poll+Recv of a packet
// allocates nothing.
func TestPipelinePathAllocs(t *testing.T) {
	for _, po := range []PipelineOptions{{}, {Uplink: true}} {
		clk := shaper.NewManualClock(1)
		p, err := newPipePath(po, clk, true, Options{Rate: 100e6, BulkSize: 1492, PingSize: 84}, func(*Packet) {})
		if err != nil {
			t.Fatal(err)
		}
		var pk Packet
		out := make([]*Packet, 4)
		step := func() {
			now := clk.Advance(int64(200 * time.Microsecond))
			pk = Packet{Size: 1492, Flow: 77, Host: 1, Born: now}
			p.Send(now, &pk)
			if n := p.Recv(now, out); n != 1 || out[0] != &pk {
				t.Fatalf("%+v: got %d packets", po, n)
			}
		}
		for range 200 {
			step()
		}
		if a := testing.AllocsPerRun(500, step); a != 0 {
			t.Errorf("%+v: %v allocs per packet", po, a)
		}
	}
}

func TestPipelinePathBadOptions(t *testing.T) {
	for _, o := range []Options{
		{BulkSize: 1500, PingSize: 84},       // above the PPPoE MTU
		{BulkSize: 1492, PingSize: 20},       // no room for the tag
		{BulkSize: 1492, PingSize: 84 + 1e4}, // way too large
	} {
		if _, err := newPipePath(PipelineOptions{}, shaper.NewManualClock(1), true, o, func(*Packet) {}); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	o := Options{Duration: time.Second, BenchPackets: 64, BulkSize: 1492, Path: PipelinePath, Overhead: "bogus"}
	if _, err := Run(o); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("bad overhead: %v", err)
	}
}

// FuzzPipelineOut feeds arbitrary egress frames to the matcher: it must
// not panic, and each frame either matches one packet in flight or counts
// as an error (packets it passes over are counted lost).
func FuzzPipelineOut(f *testing.F) {
	var paths [2]*pipePath
	for i, up := range []bool{false, true} {
		p, err := newPipePath(PipelineOptions{Uplink: up}, shaper.NewManualClock(1), false, Options{BulkSize: 1492, PingSize: 84}, func(*Packet) {})
		if err != nil {
			f.Fatal(err)
		}
		paths[i] = p
		// A real egress frame of each direction as a seed.
		for fl := range 2 {
			p.Send(1, &Packet{Size: 100, Flow: uint32(fl), Host: 1})
		}
		p.poll()
		egress := p.lan
		if up {
			egress = p.wan
		}
		egress.Drain(0, func(b []byte) { f.Add(up, append([]byte(nil), b...)) })
	}
	f.Add(false, []byte{})
	f.Fuzz(func(t *testing.T, up bool, b []byte) {
		p := paths[0]
		if up {
			p = paths[1]
		}
		var dropped uint64
		p.drop = func(*Packet) { dropped++ }
		p.frames, p.errs, p.lost = 0, 0, 0
		for i := range p.flows {
			fl := &p.flows[i]
			fl.q, fl.head, fl.n = nil, 0, 0
			for seq := range uint32(3) {
				fl.push(inflight{seq: seq, p: &Packet{Size: 100}})
			}
		}
		p.out(b)
		if p.frames+p.errs != 1 || p.lost != dropped || p.lost+p.frames > 3 {
			t.Fatalf("frames %d errs %d lost %d dropped %d", p.frames, p.errs, p.lost, dropped)
		}
	})
}

// TestPipelineLateWorker: through the dataplane, a worker stepped only
// every W of clock time (a timer that wakes late) still delivers the
// shaped rate, for small and full-sized packets at low rates and at a
// high one: a late worker catches up on the time its backlog waited.
func TestPipelineLateWorker(t *testing.T) {
	for _, tc := range []struct {
		rate  uint64
		size  int
		wakes []time.Duration
	}{
		{2e6, 50, []time.Duration{time.Millisecond, 4 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}},
		{2e6, 1492, []time.Duration{4 * time.Millisecond, 20 * time.Millisecond}},
		{10e6, 50, []time.Duration{4 * time.Millisecond, 20 * time.Millisecond}},
		{500e6, 1492, []time.Duration{4 * time.Millisecond, 20 * time.Millisecond}},
	} {
		for _, w := range tc.wakes {
			t.Run(fmt.Sprintf("%dMbit/%dB/wake%v", tc.rate/1e6, tc.size, w), func(t *testing.T) {
				r, err := Run(Options{Rate: tc.rate, BulkSize: tc.size, Duration: 2 * time.Second,
					Poll: w, BenchPackets: 64, Path: NewPipelinePath(PipelineOptions{})})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%.0f Mbit/s, %d B, wake every %v: shaped %.3f Mbit/s (error %.2f %%), p99 %.1f ms",
					float64(tc.rate)/1e6, tc.size, w, r.ShapedMbit, r.RateErrorPct, r.P99AddedDelayMs)
				// The run's last wakeup may fall short of its end by W.
				if limit := 1 + 100*w.Seconds()/1.5; r.RateErrorPct > limit {
					t.Errorf("rate error %.2f %% > %.2f %%: %.3f Mbit/s of %.0f", r.RateErrorPct, limit, r.ShapedMbit, float64(tc.rate)/1e6)
				}
			})
		}
	}
}
