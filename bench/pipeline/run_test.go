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
	for _, workers := range []int{1, 2} {
		r, err := Run(Options{Workers: workers, Flows: 512, Size: "imix", Duration: 200 * time.Millisecond, Shape: sp})
		if err != nil {
			t.Fatal(err)
		}
		if r.LANToWAN == 0 || r.WANToLAN == 0 || len(r.Drops) != 0 || len(r.PerWorker) != workers {
			t.Fatalf("%d workers: %+v", workers, r)
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
