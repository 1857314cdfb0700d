package pipeline

import (
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
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

// TestRunSteerModes: with local steering every WAN frame is replayed on
// its owner's queue, so no worker hands one over and no frame is steered
// through a ring; inline and thread steering still run, every WAN frame
// through the steerer. Each mode is named in the result.
func TestRunSteerModes(t *testing.T) {
	for _, c := range []struct {
		steer dataplane.SteerMode
		ipv6  bool
	}{{dataplane.SteerLocal, false}, {dataplane.SteerLocal, true}, {dataplane.SteerInline, false}, {dataplane.SteerThread, false}} {
		r, err := Run(Options{Workers: 2, Flows: 512, Size: "64", Duration: 200 * time.Millisecond, Steer: c.steer, IPv6: c.ipv6})
		if err != nil {
			t.Fatal(err)
		}
		if r.Steer != c.steer.String() || r.WANToLAN == 0 || len(r.Drops) != 0 {
			t.Fatalf("steer %v, ipv6 %v: %+v", c.steer, c.ipv6, r)
		}
		for _, w := range r.PerWorker {
			if c.steer == dataplane.SteerLocal && (w.WANRedirects != 0 || w.Packets == 0) {
				t.Errorf("local, ipv6 %v: worker %d handed %d WAN frames over, moved %d packets", c.ipv6, w.Worker, w.WANRedirects, w.Packets)
			}
		}
		if c.steer == dataplane.SteerInline && r.PerWorker[0].Steered == 0 {
			t.Errorf("inline: worker 0 steered nothing: %+v", r.PerWorker)
		}
	}
}

// TestRunStages: --stages reports one NAT insert per flow from priming,
// none in the window, every stage of the IPv4 path, and scaled figures
// that add up to the run's CPU ns per packet.
func TestRunStages(t *testing.T) {
	sp, err := shaper.ParseSpec("bandwidth 100gbit")
	if err != nil {
		t.Fatal(err)
	}
	for _, steer := range []dataplane.SteerMode{dataplane.SteerLocal, dataplane.SteerThread} {
		r, err := Run(Options{Workers: 2, Flows: 512, Size: "64", Duration: 300 * time.Millisecond, Shape: sp, Steer: steer, Stages: true, StageShift: 2})
		if err != nil {
			t.Fatal(err)
		}
		st := r.Stages
		if st == nil || st.Every != 4 || st.SampledPackets == 0 || st.NATInserts != 512 || st.NATInsertNs <= 0 || st.MppsSampling <= 0 || st.MppsPaused <= 0 {
			t.Fatalf("%v: stages %+v", steer, st)
		}
		var scaled float64
		for _, s := range st.PerStage {
			scaled += s.NsPerPktScaled
			switch s.Stage {
			case "nat_insert":
				if s.Events != 0 {
					t.Errorf("%v: %d NAT inserts in a window of known flows", steer, s.Events)
				}
			case "port", "steer", "parse", "nat_lookup", "forward", "shaper_enq", "shaper_deq", "encap":
				if s.Events == 0 || s.NsPerPkt <= 0 {
					t.Errorf("%v: stage %+v", steer, s)
				}
			}
		}
		if d := scaled - r.CPUNsPerPkt; d > 1e-6*r.CPUNsPerPkt || d < -1e-6*r.CPUNsPerPkt {
			t.Fatalf("%v: scaled stages add up to %.3f ns/pkt, the run's cost is %.3f", steer, scaled, r.CPUNsPerPkt)
		}
	}
	r, err := Run(Options{Workers: 1, Flows: 64, Size: "64", Duration: 100 * time.Millisecond})
	if err != nil || r.Stages != nil {
		t.Fatalf("without Stages: %v, %+v", err, r.Stages)
	}
}
