package soak

import (
	"math"
	"testing"
)

func series(n int, f func(i int) float64) Series {
	var s Series
	for i := 0; i < n; i++ {
		s.T = append(s.T, float64(i*5))
		s.V = append(s.V, f(i))
	}
	return s
}

func TestSlope(t *testing.T) {
	for _, c := range []struct {
		name string
		t, v []float64
		want float64
	}{
		{"empty", nil, nil, 0},
		{"one", []float64{1}, []float64{3}, 0},
		{"flat", []float64{0, 1, 2, 3}, []float64{5, 5, 5, 5}, 0},
		{"line", []float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}, 2},
		{"noisy-line", []float64{0, 1, 2, 3}, []float64{0, 2, 2, 4}, 1.2},
		{"same-t", []float64{2, 2}, []float64{1, 9}, 0},
	} {
		if got := Slope(c.t, c.v); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: Slope = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestJudge checks the verdicts on synthetic runs: flat series with noise
// and a warm-up ramp pass; a slow leak of each kind fails on its gauge
// only.
// ciFDs are the open fds of a CI soak (2 min at 5 s): 56 before load,
// then 60-69 with the flows and connections open at each sample.
var ciFDs = Series{
	T: []float64{0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 100, 105, 110, 115, 120},
	V: []float64{56, 66, 65, 63, 69, 64, 62, 64, 65, 69, 62, 67, 66, 64, 69, 65, 64, 65, 60, 64, 65, 67, 66, 68, 69},
}

func TestJudge(t *testing.T) {
	const n = 25 // 2 min at 5 s
	mib := float64(1 << 20)
	flatRSS := series(n, func(i int) float64 {
		if i < 4 { // warm-up: the heap grows to its working size
			return 40*mib + float64(i)*10*mib
		}
		return 80*mib + float64(i%3)*mib // GC sawtooth
	})
	flatG := series(n, func(i int) float64 { return 40 + float64(i%2) })
	flatFD := series(n, func(i int) float64 { return 70 + float64((i*7)%3) })
	flatNAT := series(n, func(i int) float64 { return math.Min(float64(i)*100, 900) })
	noNAT := series(n, func(int) float64 { return -1 })
	for _, c := range []struct {
		name            string
		rss, g, fd, nat Series
		bound           float64
		flat            bool
		failing         string
	}{
		{"flat", flatRSS, flatG, flatFD, flatNAT, 1000, true, ""},
		{"flat-nat-unmeasured", flatRSS, flatG, flatFD, noNAT, 1000, true, ""},
		{"rss-leak", series(n, func(i int) float64 { return 80*mib + float64(i)*mib }), flatG, flatFD, flatNAT, 1000, false, "rss_bytes"},
		{"goroutine-leak", flatRSS, series(n, func(i int) float64 { return 40 + float64(i/4) }), flatFD, flatNAT, 1000, false, "goroutines"},
		{"fd-leak", flatRSS, flatG, series(n, func(i int) float64 { return 70 + float64(i/3) }), flatNAT, 1000, false, "fds"},
		// A count that swings with the load (the CI run that tilted by
		// chance: slope 1.4 standard errors from zero) is no leak.
		{"fd-noise", flatRSS, flatG, ciFDs, flatNAT, 1000, true, ""},
		{"fd-leak-noisy", flatRSS, flatG, series(n, func(i int) float64 { return ciFDs.V[i] + float64(i)/2 }), flatNAT, 1000, false, "fds"},
		{"nat-unbounded", flatRSS, flatG, flatFD, series(n, func(i int) float64 { return float64(i) * 100 }), 1000, false, "nat_entries"},
	} {
		trs, flat := Judge(c.rss, c.g, c.fd, c.nat, Limits{NATBound: c.bound})
		if flat != c.flat {
			t.Errorf("%s: flat = %v, want %v: %+v", c.name, flat, c.flat, trs)
		}
		for _, tr := range trs {
			if want := tr.Name != c.failing; tr.Flat != want {
				t.Errorf("%s: %s flat = %v, want %v (%+v)", c.name, tr.Name, tr.Flat, want, tr)
			}
		}
	}
}
