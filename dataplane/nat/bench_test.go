package nat

import (
	"testing"

	"github.com/pppfwd/pppfwd/hdr"
)

// benchTable has n UDP flows from 64 hosts; it returns the table and the
// flows' outbound and inbound packets.
func benchTable(b *testing.B, n int) (*Table, [][]byte, [][]byte) {
	cfg := baseConfig()
	cfg.Capacity = 3 * n
	tab := newTable(b, cfg)
	var outs, ins [][]byte
	for i := range n {
		tu := tuple{proto: hdr.ProtoUDP, src: lanNet | uint32(1+i%64), sport: uint16(1024 + i/64), dst: ip4(198, 18, byte(i>>8), byte(i)), dport: 443}
		p := build(b, tu)
		outs = append(outs, append([]byte(nil), p...))
		if v := tab.Outbound(p, 0); v != Pass {
			b.Fatal(v)
		}
		d := decode(b, p)
		ins = append(ins, build(b, tuple{proto: hdr.ProtoUDP, src: d.dst, sport: d.dport, dst: d.src, dport: d.sport}))
	}
	return tab, outs, ins
}

func benchPackets(b *testing.B, f func([]byte, int64) Verdict, pkts [][]byte) {
	buf := make([]byte, 256)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := pkts[i]
		copy(buf, p)
		if v := f(buf[:len(p)], sec); v != Pass {
			b.Fatal(v)
		}
		if i++; i == len(pkts) {
			i = 0
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
}

func BenchmarkOutbound(b *testing.B) {
	tab, outs, _ := benchTable(b, 1<<14)
	benchPackets(b, tab.Outbound, outs)
}

func BenchmarkInbound(b *testing.B) {
	tab, _, ins := benchTable(b, 1<<14)
	benchPackets(b, tab.Inbound, ins)
}
