package scale

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.9g, want %.9g", what, got, want)
	}
}

// ref: c_work 100 ns, c_steer 40 ns, s 0.5, so s*c_steer = 20 ns, the
// ceiling 50 Mpps and the ridge 5 workers.
var ref = Costs{WorkNs: 100, SteerNs: 40, Share: 0.5}

func TestModelKnownRates(t *testing.T) {
	for _, c := range []struct {
		mode    dataplane.SteerMode
		workers int
		mpps    float64
	}{
		{dataplane.SteerInline, 1, 1e3 / 120},
		{dataplane.SteerInline, 2, 1e3 / 70},
		{dataplane.SteerInline, 5, 25},
		{dataplane.SteerInline, 45, 45},
		{dataplane.SteerThread, 1, 10},
		{dataplane.SteerThread, 4, 40},
		{dataplane.SteerThread, 5, 50},
		{dataplane.SteerThread, 16, 50},
		{dataplane.SteerInline, 0, 0},
		{dataplane.SteerThread, -1, 0},
	} {
		near(t, "Rate", Rate(ref, c.mode, c.workers)/1e6, c.mpps, 1e-12)
	}
	near(t, "Ceiling", Ceiling(ref)/1e6, 50, 1e-12)
	near(t, "Ridge", Ridge(ref), 5, 1e-12)
	if n := SaturationCores(ref, dataplane.SteerInline); n != 5 {
		t.Errorf("inline saturation at %d cores, want 5", n)
	}
	if n := SaturationCores(ref, dataplane.SteerThread); n != 6 {
		t.Errorf("thread saturation at %d cores, want 6 (5 workers and the steering core)", n)
	}
	// A ridge between integers rounds up.
	c := Costs{WorkNs: 110, SteerNs: 40, Share: 0.5}
	if n := SaturationCores(c, dataplane.SteerInline); n != 6 {
		t.Errorf("ridge 5.5: saturation at %d cores, want 6", n)
	}
	// A ridge below one worker: the first worker already saturates.
	c = Costs{WorkNs: 5, SteerNs: 40, Share: 0.5}
	if n := SaturationCores(c, dataplane.SteerInline); n != 1 {
		t.Errorf("ridge 0.25: saturation at %d cores, want 1", n)
	}
}

// TestModelLocal: local steering at ref costs 100 + 0.5*40 = 120 ns per
// packet on every worker, and a hand-over of c_hop 60 ns adds 0.5*h*60.
func TestModelLocal(t *testing.T) {
	placed := ref
	half := Costs{WorkNs: 100, SteerNs: 40, Share: 0.5, Hop: 0.5, HopNs: 60}
	hashed := Costs{WorkNs: 100, SteerNs: 40, Share: 0.5, Hop: HopHashed, HopNs: 60}
	for _, c := range []struct {
		name    string
		c       Costs
		workers int
		mpps    float64
	}{
		{"placed", placed, 1, 1e3 / 120},
		{"placed", placed, 2, 2e3 / 120},
		// Past inline's and the thread's 50 Mpps ceiling: no core
		// steers for the others.
		{"placed", placed, 16, 16e3 / 120},
		{"placed", placed, 0, 0},
		// One worker hands nothing over, whatever h.
		{"h 0.5", half, 1, 1e3 / 120},
		{"h 0.5", half, 2, 2e3 / 135},
		{"h 0.5", half, 8, 8e3 / 135},
		{"h above 1 counts as 1", Costs{WorkNs: 100, SteerNs: 40, Share: 0.5, Hop: 1.5, HopNs: 60}, 2, 2e3 / 150},
		{"negative h other than hashed counts as 0", Costs{WorkNs: 100, SteerNs: 40, Share: 0.5, Hop: -0.5, HopNs: 60}, 2, 2e3 / 120},
		// Hashed: h = (n-1)/n: 0.5*0.5*60 = 15 ns at 2, 0.5*0.75*60 =
		// 22.5 ns at 4.
		{"hashed", hashed, 1, 1e3 / 120},
		{"hashed", hashed, 2, 2e3 / 135},
		{"hashed", hashed, 4, 4e3 / 142.5},
		{"no work cost", Costs{SteerNs: 40, Share: 0.5}, 4, 0},
	} {
		near(t, c.name+" Rate", Rate(c.c, dataplane.SteerLocal, c.workers)/1e6, c.mpps, 1e-12)
	}
	if HasCeiling(dataplane.SteerLocal) || !HasCeiling(dataplane.SteerInline) || !HasCeiling(dataplane.SteerThread) {
		t.Error("HasCeiling: want a ceiling for inline and thread only")
	}
	for _, c := range []Costs{placed, hashed, {WorkNs: 5, SteerNs: 40, Share: 0.5}} {
		if n := SaturationCores(c, dataplane.SteerLocal); n != 0 {
			t.Errorf("%+v: local saturation at %d cores, want never (0)", c, n)
		}
	}
	if n := CoresFor(dataplane.SteerLocal, 3); n != 3 {
		t.Errorf("local: 3 workers on %d cores, want 3", n)
	}
	// placed: n/120 ns >= 20 Mpps from n = 3 (2.4); 60 Mpps from n = 8
	// (7.2), past the ceiling the other modes never pass.
	for _, c := range []struct {
		name     string
		c        Costs
		mpps     float64
		maxCores int
		want     int
	}{
		{"placed to 20 Mpps", placed, 20, 16, 3},
		{"placed to 60 Mpps", placed, 60, 16, 8},
		{"placed to 60 Mpps on 7 cores", placed, 60, 7, 0},
		// hashed: 8 workers 8/(120+26.25) ns = 54.7 Mpps, 9 workers
		// 9/(120+26.67) ns = 61.4 Mpps.
		{"hashed to 60 Mpps", hashed, 60, 16, 9},
	} {
		if n := CoresToReach(c.c, dataplane.SteerLocal, c.mpps*1e6, c.maxCores); n != c.want {
			t.Errorf("%s: %d cores, want %d", c.name, n, c.want)
		}
	}
	for n, want := range map[int]float64{0: 0, 1: 0, 2: 0.5, 4: 0.75} {
		near(t, "hashed h", hashed.hop(n), want, 1e-12)
	}
}

// TestModelLocalShape: for random costs local steering with frames
// placed on their owner's queue scales linearly (R(n) = n*R(1)), is never
// slower than inline steering, and passes the steering ceiling of the
// other modes; with hashed arrival it is never faster than placed, stays
// under linear scaling, and never falls from 2 workers on.
func TestModelLocalShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		c := Costs{WorkNs: 1 + 500*rng.Float64(), SteerNs: 1 + 100*rng.Float64(), Share: 0.05 + 0.9*rng.Float64()}
		h := c
		h.Hop, h.HopNs = HopHashed, 1+300*rng.Float64()
		r1 := Rate(c, dataplane.SteerLocal, 1)
		passed := false
		prev := 0.0
		for n := 1; n <= 64; n++ {
			r := Rate(c, dataplane.SteerLocal, n)
			if math.Abs(r-float64(n)*r1) > 1e-9*r {
				t.Fatalf("%+v: local R(%d) = %v, want n*R(1) = %v", c, n, r, float64(n)*r1)
			}
			if in := Rate(c, dataplane.SteerInline, n); r < in*(1-1e-12) {
				t.Fatalf("%+v: local R(%d) = %v below inline %v", c, n, r, in)
			}
			passed = passed || r > Ceiling(c)
			rh := Rate(h, dataplane.SteerLocal, n)
			if rh > r*(1+1e-12) || rh > float64(n)/c.WorkNs*1e9*(1+1e-12) {
				t.Fatalf("%+v: hashed R(%d) = %v above placed %v or linear", h, n, rh, r)
			}
			if n > 2 && rh < prev*(1-1e-12) {
				t.Fatalf("%+v: hashed R(%d) = %v < R(%d) = %v", h, n, rh, n-1, prev)
			}
			prev = rh
		}
		if Ridge(c) < 32 && !passed {
			t.Fatalf("%+v: local never passed the ceiling %v by 64 workers (ridge %v)", c, Ceiling(c), Ridge(c))
		}
	}
}

func TestModelNoSteering(t *testing.T) {
	c := Costs{WorkNs: 100, SteerNs: 40, Share: 0}
	if !math.IsInf(Ceiling(c), 1) || !math.IsInf(Ridge(c), 1) {
		t.Errorf("nothing steered: ceiling %v ridge %v, want +Inf", Ceiling(c), Ridge(c))
	}
	if n := SaturationCores(c, dataplane.SteerInline); n != 0 {
		t.Errorf("nothing steered: saturates at %d cores, want never (0)", n)
	}
	for _, m := range []dataplane.SteerMode{dataplane.SteerInline, dataplane.SteerThread, dataplane.SteerLocal} {
		near(t, "linear rate", Rate(c, m, 7)/1e6, 70, 1e-12)
	}
	if r := Rate(Costs{}, dataplane.SteerInline, 4); r != 0 {
		t.Errorf("no work cost: rate %v, want 0", r)
	}
}

// TestModelShape: for random costs the rate never falls with more
// workers, never passes the ceiling or linear scaling, a steering thread
// is never slower per worker than inline steering, inline steering
// follows ceiling*n/(n+ridge), and the thread mode's rate is the ceiling
// exactly from the saturation point on.
func TestModelShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		c := Costs{WorkNs: 1 + 500*rng.Float64(), SteerNs: 1 + 100*rng.Float64(), Share: 0.05 + 0.9*rng.Float64()}
		ceil := Ceiling(c)
		sat := SaturationCores(c, dataplane.SteerThread)
		for _, m := range []dataplane.SteerMode{dataplane.SteerInline, dataplane.SteerThread} {
			prev := 0.0
			for n := 1; n <= 64; n++ {
				r := Rate(c, m, n)
				if r < prev*(1-1e-12) {
					t.Fatalf("%+v mode %d: R(%d) = %v < R(%d) = %v", c, m, n, r, n-1, prev)
				}
				if r > ceil*(1+1e-12) || r > float64(n)/c.WorkNs*1e9*(1+1e-12) {
					t.Fatalf("%+v mode %d: R(%d) = %v above a bound (ceiling %v)", c, m, n, r, ceil)
				}
				prev = r
			}
		}
		for n := 1; n <= 64; n++ {
			in, th := Rate(c, dataplane.SteerInline, n), Rate(c, dataplane.SteerThread, n)
			if in > th*(1+1e-12) {
				t.Fatalf("%+v: inline R(%d) = %v above thread %v", c, n, in, th)
			}
			want := ceil * float64(n) / (float64(n) + Ridge(c))
			if math.Abs(in-want) > 1e-9*want {
				t.Fatalf("%+v: inline R(%d) = %v, want ceiling*n/(n+ridge) = %v", c, n, in, want)
			}
			atCeiling := math.Abs(th-ceil) <= 1e-9*ceil
			if atCeiling != (CoresFor(dataplane.SteerThread, n) >= sat) {
				t.Fatalf("%+v: thread R(%d) = %v, ceiling %v, saturation at %d cores", c, n, th, ceil, sat)
			}
		}
	}
}

func TestModelClock(t *testing.T) {
	half := ref.AtClock(2.0, 1.0)
	if half.WorkNs != 200 || half.SteerNs != 80 || half.Share != ref.Share {
		t.Errorf("2 GHz -> 1 GHz: %+v, want costs doubled and share kept", half)
	}
	near(t, "rate at half the clock", Rate(half, dataplane.SteerInline, 3), Rate(ref, dataplane.SteerInline, 3)/2, 1e-12)
	hop := Costs{WorkNs: 100, SteerNs: 40, Share: 0.5, Hop: 0.25, HopNs: 60}.AtClock(2.0, 1.0)
	if hop.HopNs != 120 || hop.Hop != 0.25 {
		t.Errorf("2 GHz -> 1 GHz: %+v, want c_hop doubled and h kept", hop)
	}
	near(t, "local rate at half the clock", Rate(hop, dataplane.SteerLocal, 3), Rate(Costs{WorkNs: 100, SteerNs: 40, Share: 0.5, Hop: 0.25, HopNs: 60}, dataplane.SteerLocal, 3)/2, 1e-12)
	if got := ref.AtClock(0, 2); got != ref {
		t.Errorf("unknown clock: %+v, want the costs unchanged", got)
	}
	// The ridge is a ratio of costs: no clock moves it.
	near(t, "ridge at another clock", Ridge(ref.AtClock(2.6, 1.5)), Ridge(ref), 1e-12)
}

func TestModelRelError(t *testing.T) {
	near(t, "RelError(110, 100)", RelError(110, 100), 0.1, 1e-12)
	near(t, "RelError(80, 100)", RelError(80, 100), -0.2, 1e-12)
	for _, m := range []float64{0, -1, math.NaN()} {
		if v := RelError(1, m); !math.IsNaN(v) {
			t.Errorf("RelError(1, %v) = %v, want NaN", m, v)
		}
	}
}

func TestModelCoresToReach(t *testing.T) {
	// inline: 1e9/(20+100/n) >= 20e6 from n = 4 (n >= 3.33).
	if n := CoresToReach(ref, dataplane.SteerInline, 20e6, 16); n != 4 {
		t.Errorf("inline to 20 Mpps: %d cores, want 4", n)
	}
	if n := CoresToReach(ref, dataplane.SteerInline, 20e6, 3); n != 0 {
		t.Errorf("inline to 20 Mpps on 3 cores: %d, want 0 (not reached)", n)
	}
	// thread: n/100 ns >= 20e6/s from n = 2 workers, plus the steering core.
	if n := CoresToReach(ref, dataplane.SteerThread, 20e6, 16); n != 3 {
		t.Errorf("thread to 20 Mpps: %d cores, want 3", n)
	}
	if n := CoresToReach(ref, dataplane.SteerThread, 60e6, 1024); n != 0 {
		t.Errorf("thread past the ceiling: %d cores, want 0", n)
	}
}

func TestLineRate(t *testing.T) {
	// Minimum frames: 60 B + FCS is the 64 B frame of the usual figures.
	near(t, "1GbE 64 B", LineRate(1e9, 60), 1488095.238, 1e-9)
	near(t, "2.5GbE 64 B", LineRate(2.5e9, 60), 3720238.095, 1e-9)
	// A 1500 B IP packet: 1514 B frame.
	near(t, "1GbE 1500 B IP", LineRate(1e9, 1514), 81274.382, 1e-7)
	near(t, "1GbE 64 B frame without FCS", LineRate(1e9, 64), 1e9/8/88, 1e-12)
	if LineRate(0, 64) != 0 || LineRate(1e9, 0) != 0 {
		t.Error("LineRate of nothing is not 0")
	}
	near(t, "LinkTotal symmetric", LinkTotal(1e6, 0.5), 2e6, 1e-12)
	near(t, "LinkTotal 3:1", LinkTotal(1e6, 0.75), 1e6/0.75, 1e-12)
	near(t, "LinkTotal 1:3", LinkTotal(1e6, 0.25), 1e6/0.75, 1e-12)
	if v := LinkTotal(1e6, 1.5); v != 0 {
		t.Errorf("LinkTotal of share 1.5 = %v, want 0", v)
	}
	fb, err := WANFrameBytes("imix")
	if err != nil {
		t.Fatal(err)
	}
	near(t, "imix WAN frame", fb, (7*64+4*576+1500)/12.0+8, 1e-12)
	if fb, _ := WANFrameBytes("64"); fb != 72 {
		t.Errorf("64 B LAN frame: WAN frame %v, want 72", fb)
	}
}
