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
