package shaper

import (
	"fmt"
	"testing"
)

// BenchmarkEnqueueDequeue: enqueue a batch of 64 packets over many flows and
// dequeue 64, over a standing backlog. Goal <= 40 ns per packet
// (enqueue+dequeue); the figure that matters comes from `pppfwd bench shaper`.
func BenchmarkEnqueueDequeue(b *testing.B) {
	for _, bc := range []struct {
		name     string
		rate     uint64
		hostFair bool
		flows    int
		backlog  int
	}{
		{"unlimited/flows=64", 0, false, 64, 1024},
		{"rate=100G/flows=64", 100e9, false, 64, 1024},
		{"rate=100G/hostfair/flows=64", 100e9, true, 64, 1024},
		{"rate=100G/flows=1024", 100e9, false, 1024, 4096},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const batch = 64
			clk := NewManualClock(1)
			var bk *Bucket
			if bc.rate > 0 {
				bk = NewBucket(bc.rate, clk)
			}
			s := New[*tpkt](Config{HostFair: bc.hostFair}, bk, clk, &tops{})
			pkts := make([]tpkt, bc.backlog+2*batch)
			hashes := make([]uint32, len(pkts))
			for i := range pkts {
				pkts[i] = tpkt{size: 64 + (i*389)%1437, ect: true}
				hashes[i] = uint32(i%bc.flows) * 0x9e3779b9
			}
			out := make([]*tpkt, batch)
			next := 0
			for ; next < bc.backlog; next++ {
				s.Enqueue(&pkts[next], hashes[next], hashes[next]>>3)
			}
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuNanos()
			for b.Loop() {
				now := clk.Advance(10_000) // 10 us: 125 kB of credit at 100 Gbit/s
				for range batch {
					i := next % len(pkts)
					next++
					s.EnqueueAt(&pkts[i], hashes[i], hashes[i]>>3, now)
				}
				if s.DequeueAt(out, now) != batch {
					b.Fatal("short dequeue")
				}
			}
			cpu := float64(cpuNanos()-c0) / float64(b.N*batch)
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N*batch)
			b.ReportMetric(ns, "ns/pkt")
			b.ReportMetric(cpu, "cpu-ns/pkt") // CPU time: robust when the host is busy
			b.ReportMetric(1e9/ns, "pkts/s")
		})
	}
}

func BenchmarkWireLen(b *testing.B) {
	for _, spec := range []string{"raw", "pppoe-ptm", "pppoe-vcmux"} {
		o := mustOverhead(b, spec)
		b.Run(spec, func(b *testing.B) {
			n := 0
			for i := 0; b.Loop(); i++ {
				n += o.WireLen(i & 2047)
			}
			_ = fmt.Sprint(n)
		})
	}
}
