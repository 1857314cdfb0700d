package shaperbench

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/shaper"
)

func TestRun(t *testing.T) {
	for _, o := range []Options{
		{Duration: 3 * time.Second, BenchPackets: 1 << 14},
		{Duration: 3 * time.Second, BenchPackets: 1 << 14, Rate: 450e6, LineRate: 500e6, Overhead: "pppoe-ptm ether-vlan", Poll: 100 * time.Microsecond},
	} {
		r, err := Run(o)
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		t.Logf("%s", js)
		for _, k := range []string{"rate_error_pct", "p50_added_delay_ms", "p99_added_delay_ms", "p99_added_delay_ms_off", "ns_per_pkt"} {
			if !strings.Contains(string(js), `"`+k+`"`) {
				t.Errorf("JSON lacks %q", k)
			}
		}
		if r.RateErrorPct > 1 {
			t.Errorf("rate error %.3f %% > 1 %%", r.RateErrorPct)
		}
		// The shaper keeps the line's FIFO empty: the ping waits at most
		// for a shaper lease, far below CoDel's target.
		if r.P99AddedDelayMs > 5 {
			t.Errorf("p99 added delay %.3f ms with the shaper on", r.P99AddedDelayMs)
		}
		// Off, the line's buffer fills: the ping sees most of it.
		if r.P99AddedDelayMsOff < 0.5*float64(200*time.Millisecond)/1e6 {
			t.Errorf("p99 added delay off %.3f ms: the line buffer never filled", r.P99AddedDelayMsOff)
		}
		if r.NsPerPkt <= 0 || r.Pings == 0 || r.PingLossPct > 0 {
			t.Errorf("result %+v", r)
		}
		// One FQ-CoDel shares the rate among the bulk flows alike.
		if r.JainIndex < 0.99 || r.FlowMbitMin <= 0 || r.FlowMbitMax > 1.05*r.ShapedMbit/float64(o.withDefaults().BulkFlows) {
			t.Errorf("bulk flows %.3f-%.3f Mbit/s, Jain's index %.4f: not shared alike", r.FlowMbitMin, r.FlowMbitMax, r.JainIndex)
		}
	}
}

// TestJain: Jain's index is 1 for equal shares and 1/n for one taking
// everything.
func TestJain(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 3, 3}, 1}, {[]float64{5, 0, 0, 0}, 0.25}, {[]float64{1, 3}, 0.8}, {nil, 0}} {
		if got := jain(c.xs); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("jain(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// countingPath wraps the default path to show the factory is used.
type countingPath struct {
	Path
	sent int
}

func (c *countingPath) Send(now int64, p *Packet) { c.sent++; c.Path.Send(now, p) }

func TestPluggablePath(t *testing.T) {
	var paths []*countingPath
	o := Options{Duration: time.Second, BenchPackets: 64, Path: func(clk shaper.Clock, shaped bool, o Options, drop func(*Packet)) (Path, error) {
		p, err := ShaperPath(clk, shaped, o, drop)
		c := &countingPath{Path: p}
		paths = append(paths, c)
		return c, err
	}}
	if _, err := Run(o); err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || paths[0].sent == 0 || paths[1].sent == 0 {
		t.Errorf("factory not used for both runs: %d paths", len(paths))
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{Rate: 100e6, LineRate: 50e6}, {Overhead: "bogus"}, {Duration: time.Millisecond, Warmup: time.Second}} {
		if _, err := Run(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func BenchmarkCost(b *testing.B) {
	for b.Loop() {
		wall, cpu := Cost(shaper.Config{}, 1<<16)
		b.ReportMetric(wall, "ns/pkt")
		b.ReportMetric(cpu, "cpu-ns/pkt")
	}
}

// swallowPath keeps pings forever without dropping them (a starved queue).
type swallowPath struct {
	Path
	kept []*Packet
}

func (s *swallowPath) Send(now int64, p *Packet) {
	if p.Probe {
		s.kept = append(s.kept, p)
		return
	}
	s.Path.Send(now, p)
}

// TestPingLossCountsStarvedPings: a ping that never comes out is lost even
// if no one reports it dropped.
func TestPingLossCountsStarvedPings(t *testing.T) {
	o := Options{Duration: 2 * time.Second, BenchPackets: 64, Path: func(clk shaper.Clock, shaped bool, o Options, drop func(*Packet)) (Path, error) {
		p, err := ShaperPath(clk, shaped, o, drop)
		if shaped {
			return &swallowPath{Path: p}, err
		}
		return p, err
	}}
	r, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.PingLossPct != 100 || r.PingLossOff != 0 || r.P99AddedDelayMs != -1 || r.GoalsMet {
		t.Errorf("starved pings: loss %.1f %% (off %.1f %%), p99 %.3f, goals met %v", r.PingLossPct, r.PingLossOff, r.P99AddedDelayMs, r.GoalsMet)
	}
}
