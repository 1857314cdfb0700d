package netmap

import (
	"testing"

	"github.com/pppfwd/pppfwd/nic"
)

// The figures include the simulated kernel's sync work (a memcpy per
// received frame), so they bound the port's own per-frame overhead from
// above; real figures come from `pppfwd bench` on a netmap host.

func benchSim(b *testing.B, size int) (*Sim, *Port, *Port) {
	s, err := NewSim(SimConfig{Ports: []SimPortConfig{{Name: "wan", Slots: 1024}, {Name: "lan", Slots: 1024}}})
	if err != nil {
		b.Fatal(err)
	}
	s.SetRxReplay("wan", 0, pkt(1, size))
	s.SetTxDiscard("lan", 0, true)
	wan, err := s.Open("wan", 1)
	if err != nil {
		b.Fatal(err)
	}
	lan, err := s.Open("lan", 1)
	if err != nil {
		b.Fatal(err)
	}
	return s, wan, lan
}

func report(b *testing.B, pkts uint64) {
	if sec := b.Elapsed().Seconds(); sec > 0 && pkts > 0 {
		b.ReportMetric(float64(pkts)/sec, "pps")
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(pkts), "ns/pkt")
	}
}

func BenchmarkRecvSend(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(sizeName(size), func(b *testing.B) {
			_, wan, lan := benchSim(b, size)
			frames := nic.NewFrames(64)
			var pkts uint64
			b.ReportAllocs()
			for b.Loop() {
				n, err := wan.Recv(0, frames)
				if err != nil {
					b.Fatal(err)
				}
				m, err := lan.Send(0, frames[:n])
				if err != nil {
					b.Fatal(err)
				}
				pkts += uint64(m)
			}
			report(b, pkts)
		})
	}
}

func BenchmarkForwardZeroCopy(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(sizeName(size), func(b *testing.B) {
			_, wan, lan := benchSim(b, size)
			var pkts uint64
			b.ReportAllocs()
			for b.Loop() {
				n, err := Forward(wan, 0, lan, 0, 64, nil)
				if err != nil {
					b.Fatal(err)
				}
				pkts += uint64(n)
			}
			report(b, pkts)
		})
	}
}

func sizeName(n int) string {
	if n == 64 {
		return "64B"
	}
	return "1500B"
}
