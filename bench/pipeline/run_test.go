package pipeline

import (
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/shaper"
)

// TestRunShort runs the benchmark briefly: traffic both ways, equal
// directions, no drops, per-worker figures that add up.
func TestRunShort(t *testing.T) {
	sp, err := shaper.ParseSpec("bandwidth 100gbit")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		workers int
		ipv6    bool
	}{{1, false}, {2, false}, {1, true}, {2, true}} {
		workers := c.workers
		r, err := Run(Options{Workers: workers, Flows: 512, Size: "imix", Duration: 200 * time.Millisecond, Shape: sp, IPv6: c.ipv6})
		if err != nil {
			t.Fatal(err)
		}
		if r.LANToWAN == 0 || r.WANToLAN == 0 || len(r.Drops) != 0 || len(r.PerWorker) != workers || r.IPv6 != c.ipv6 {
			t.Fatalf("%d workers, ipv6 %v: %+v", workers, c.ipv6, r)
		}
		var sum uint64
		for _, w := range r.PerWorker {
			sum += w.Packets
		}
		if sum != r.Packets {
			t.Fatalf("per-worker packets %d, total %d", sum, r.Packets)
		}
	}
	if _, err := Sizes("63"); err == nil {
		t.Fatal("size 63 accepted")
	}
}

// TestFlowsSpreadOverOwners: the flows are distinct and split evenly
// among the NAT's port owners (port/2 mod workers) for 2, 4, 8 and 16
// workers, at 100 and 10000 flows.
func TestFlowsSpreadOverOwners(t *testing.T) {
	for _, n := range []int{100, 10000, 70000} {
		fl := Flows(n)
		seen := map[[2]uint32]bool{}
		for _, f := range fl {
			k := [2]uint32{f.Host, uint32(f.SrcPort)}
			if seen[k] {
				t.Fatalf("%d flows: endpoint %v twice", n, k)
			}
			seen[k] = true
			if f.SrcPort < 1024 {
				t.Fatalf("source port %d", f.SrcPort)
			}
		}
		for _, w := range []int{2, 4, 8, 16} {
			count := make([]int, w)
			for _, f := range fl {
				count[int(f.SrcPort>>1)%w]++
			}
			for o, c := range count {
				if d := float64(c) - float64(n)/float64(w); d > 0.1*float64(n)/float64(w)+1 || d < -0.1*float64(n)/float64(w)-1 {
					t.Errorf("%d flows, %d workers: owner %d has %d flows (%v)", n, w, o, c, count)
				}
			}
		}
	}
}
