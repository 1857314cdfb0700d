package soak

import "math"

// Slope fits v = a + b*t by least squares and returns b (per unit of t).
// Fewer than two points, or all at one t, give 0.
func Slope(t, v []float64) float64 {
	b, _ := fitLine(t, v)
	return b
}

// fitLine returns Slope(t, v) and its standard error (0 with fewer than
// three points).
func fitLine(t, v []float64) (slope, se float64) {
	n := min(len(t), len(v))
	if n < 2 {
		return 0, 0
	}
	var mt, mv float64
	for i := 0; i < n; i++ {
		mt += t[i]
		mv += v[i]
	}
	mt /= float64(n)
	mv /= float64(n)
	var sxy, sxx float64
	for i := 0; i < n; i++ {
		dt := t[i] - mt
		sxy += dt * (v[i] - mv)
		sxx += dt * dt
	}
	if sxx == 0 {
		return 0, 0
	}
	slope = sxy / sxx
	if n < 3 {
		return slope, 0
	}
	var ss float64
	for i := 0; i < n; i++ {
		r := v[i] - mv - slope*(t[i]-mt)
		ss += r * r
	}
	return slope, math.Sqrt(ss / float64(n-2) / sxx)
}

// Trend is the verdict on one gauge over the samples after warm-up.
type Trend struct {
	Name string `json:"name"`
	// Slope is the least-squares slope per second; Growth is Slope times
	// the span of the samples judged (what the fit says the gauge gained).
	Slope  float64 `json:"slope_per_s"`
	Growth float64 `json:"growth"`
	// Supported is the growth the samples support (counts: the slope less
	// two standard errors, times the span): a count that comes and goes
	// with the load (open sockets, goroutines of live connections) does
	// not pass for a leak by a chance tilt, a leak that keeps rising does
	// not hide. Counts are judged by it.
	Supported float64 `json:"supported_growth"`
	Mean      float64 `json:"mean"`
	Max       float64 `json:"max"`
	// Limit is what Growth (Max for a bounded gauge) had to stay within.
	Limit float64 `json:"limit"`
	Flat  bool    `json:"flat"`
	// Skipped: the gauge was not measured (no value in the samples).
	Skipped bool `json:"skipped,omitempty"`
}

// Limits are the tolerances of Judge.
type Limits struct {
	// Warmup is the fraction of the samples (by time) left out before the
	// fit (default 0.2).
	Warmup float64
	// RSS is flat when its growth stays under RSSFraction of its mean or
	// under RSSBytes, whichever is larger (defaults 0.1 and 8 MiB).
	RSSFraction float64
	RSSBytes    float64
	// Goroutines and FDs are flat when they grow by at most Count
	// (default 2) after warm-up.
	Count float64
	// NATBound is the most NAT entries the traffic can hold alive at once
	// (its flows' timeouts and port reuse decide it); entries are flat when
	// they never exceed it. 0: not judged.
	NATBound float64
}

func (l *Limits) defaults() {
	if l.Warmup <= 0 || l.Warmup >= 1 {
		l.Warmup = 0.2
	}
	if l.RSSFraction <= 0 {
		l.RSSFraction = 0.1
	}
	if l.RSSBytes <= 0 {
		l.RSSBytes = 8 << 20
	}
	if l.Count <= 0 {
		l.Count = 2
	}
}

// Series is one gauge's samples: values v at times t (seconds); a
// negative value means not measured.
type Series struct {
	T, V []float64
}

// afterWarmup returns the points at or after the warm-up time.
func afterWarmup(s Series, warmup float64) (t, v []float64) {
	n := min(len(s.T), len(s.V))
	if n == 0 {
		return nil, nil
	}
	t0, t1 := s.T[0], s.T[n-1]
	from := t0 + warmup*(t1-t0)
	for i := 0; i < n; i++ {
		if s.T[i] >= from && s.V[i] >= 0 {
			t, v = append(t, s.T[i]), append(v, s.V[i])
		}
	}
	return t, v
}

func fit(name string, s Series, warmup float64) Trend {
	tr := Trend{Name: name}
	t, v := afterWarmup(s, warmup)
	if len(v) == 0 {
		tr.Skipped, tr.Flat = true, true
		return tr
	}
	var se float64
	tr.Slope, se = fitLine(t, v)
	span := t[len(t)-1] - t[0]
	tr.Growth = tr.Slope * span
	tr.Supported = (tr.Slope - 2*se) * span
	tr.Max = math.Inf(-1)
	for _, x := range v {
		tr.Mean += x
		tr.Max = max(tr.Max, x)
	}
	tr.Mean /= float64(len(v))
	return tr
}

// Judge returns the verdicts on RSS (bytes), goroutines, open fds and NAT
// entries, and whether all are flat.
func Judge(rss, goroutines, fds, nat Series, lim Limits) ([]Trend, bool) {
	lim.defaults()
	r := fit("rss_bytes", rss, lim.Warmup)
	r.Limit = max(lim.RSSFraction*r.Mean, lim.RSSBytes)
	r.Flat = r.Skipped || r.Growth < r.Limit
	g := fit("goroutines", goroutines, lim.Warmup)
	g.Limit = lim.Count
	g.Flat = g.Skipped || g.Supported <= g.Limit
	f := fit("fds", fds, lim.Warmup)
	f.Limit = lim.Count
	f.Flat = f.Skipped || f.Supported <= f.Limit
	n := fit("nat_entries", nat, lim.Warmup)
	n.Limit = lim.NATBound
	n.Flat = n.Skipped || lim.NATBound <= 0 || n.Max <= lim.NATBound
	out := []Trend{r, g, f, n}
	flat := true
	for _, tr := range out {
		flat = flat && tr.Flat
	}
	return out, flat
}
