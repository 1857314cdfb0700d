package dataplane

import (
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// primedRig returns a rig whose LAN and WAN ports replay traffic of n flows
// in both directions (replies built from the translated uplink packets).
func primedRig(t testing.TB, workers, flows, size int, mod func(*Config)) *rig {
	r := newRig(t, workers, mod)
	lanPkts, wanPkts := buildTraffic(t, r, flows, size)
	for q := 0; q < workers; q++ {
		if len(lanPkts[q]) > 0 {
			r.lan.Replay(q, lanPkts[q])
		}
	}
	r.wan.Replay(0, wanPkts)
	for q := 0; q < workers; q++ {
		r.lan.Sink(q, nil)
		r.wan.Sink(q, nil)
	}
	return r
}

func buildTraffic(t testing.TB, r *rig, flows, size int) (lan [][][]byte, wan [][]byte) {
	workers := len(r.e.workers)
	lan = make([][][]byte, workers)
	payload := size - 14 - 20 - 8
	if payload < 0 {
		payload = 0
	}
	for i := 0; i < flows; i++ {
		host := hostIP + uint32(i%200)
		r.e.SetNeighbor(host, [6]byte{2, 0, 0, 0, byte(i >> 8), byte(i)})
		p := pkt{src: host, dst: remoteIP + uint32(i/200), sport: uint16(10000 + i%50000), dport: 443, proto: layers.IPProtocolUDP, payload: payload}
		fr := lanFrame(t, p)
		q := r.e.LANOwner(fr[14:])
		lan[q] = append(lan[q], fr)
		r.lan.Inject(q, fr)
		r.step()
		var out []byte
		r.wan.Drain(q, func(b []byte) { out = append([]byte(nil), b...) })
		if out == nil {
			t.Fatalf("flow %d not forwarded: %v", i, r.e.Totals().DropMap())
		}
		ipb := out[22:]
		reply := pkt{src: hdr.IPv4(ipb).Dst(), dst: pubIP, sport: 443, dport: be16(ipb[20:]), proto: layers.IPProtocolUDP, payload: payload}
		wan = append(wan, wanFrame(t, reply))
	}
	r.drainLAN()
	return lan, wan
}

func TestWorkerStepZeroAlloc(t *testing.T) {
	r := primedRig(t, 2, 256, 64, nil)
	r.step()
	allocs := testing.AllocsPerRun(200, r.step)
	if allocs != 0 {
		t.Fatalf("worker step allocates %.1f times per batch", allocs)
	}
	if c := r.e.Totals(); c.TxWAN == 0 || c.TxLAN == 0 {
		t.Fatalf("nothing forwarded: %+v %v", c, c.DropMap())
	}
}

func TestHotFunctionsZeroAlloc(t *testing.T) {
	r := newRig(t, 1, nil)
	fr := wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 1, dport: 2000, proto: layers.IPProtocolUDP, payload: 8})
	owner := r.e.Owner()
	if a := testing.AllocsPerRun(1000, func() { _, _ = classify(fr, owner) }); a != 0 {
		t.Fatalf("classify allocs %.1f", a)
	}
	ring := newSPSCRing(64)
	fs := nic.NewFrames(32)
	if a := testing.AllocsPerRun(1000, func() { ring.Push(fs); ring.Pop(fs) }); a != 0 {
		t.Fatalf("ring allocs %.1f", a)
	}
	lf := lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolTCP, syn: true, mss: 1460})
	if a := testing.AllocsPerRun(1000, func() {
		ip := hdr.IPv4(lf[14:])
		ip.DecTTL()
		ip.HeaderChecksumOK()
		hdr.TCP(ip[20:]).ClampMSS(1452)
		flowHash(ip)
	}); a != 0 {
		t.Fatalf("header ops allocs %.1f", a)
	}
	f := nic.NewFrame()
	if a := testing.AllocsPerRun(1000, func() {
		f.SetData(lf[14:])
		makeICMPError(f, routerIP, 11, 0, 0)
	}); a != 0 {
		t.Fatalf("ICMP error allocs %.1f", a)
	}
	n := NewNeighbors(map[uint32][6]byte{hostIP: hostMAC})
	if a := testing.AllocsPerRun(1000, func() { n.Lookup(hostIP) }); a != 0 {
		t.Fatalf("neighbor lookup allocs %.1f", a)
	}
}

// TestFromHostZeroAlloc: the host path (injection, NAT, the session, the
// reply to the host stack) allocates nothing per packet.
func TestFromHostZeroAlloc(t *testing.T) {
	r := newRig(t, 2, nil)
	up := hostFrame(t, layers.EthernetTypeIPv4, pkt{src: routerIP, dst: remoteIP, sport: 40000, dport: 53, proto: layers.IPProtocolUDP, payload: 20}.layers(t))
	r.fromHostNow(t, up)
	out := r.drainWAN()
	if len(out) != 1 {
		t.Fatalf("%d uplink frames", len(out))
	}
	down := wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: be16(pppoePayload(t, out[0])[20:]), proto: layers.IPProtocolUDP, payload: 20})
	r.exceptions()
	r.wan.Sink(0, nil)
	r.wan.Sink(1, nil)
	discard := func(Dir, []byte) {}
	run := func() {
		_ = r.e.Send(FromHost, up)
		r.wan.Inject(0, down)
		r.step()
		r.e.PollControl(discard)
	}
	run()
	if a := testing.AllocsPerRun(200, run); a != 0 {
		t.Fatalf("the host path allocates %.1f times per round", a)
	}
	if c := r.e.Totals(); c.FromHost < 200 || c.ToHost < 200 {
		t.Fatalf("from host %d, to host %d", c.FromHost, c.ToHost)
	}
}

func BenchmarkPipeline64B(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(map[int]string{1: "workers=1", 2: "workers=2"}[workers], func(b *testing.B) {
			r := primedRig(b, workers, 1024, 64, nil)
			b.ReportAllocs()
			b.ResetTimer()
			var pkts uint64
			before := r.e.Totals()
			for i := 0; i < b.N; i++ {
				r.step()
			}
			after := r.e.Totals()
			pkts = after.TxLAN + after.TxWAN - before.TxLAN - before.TxWAN
			if pkts == 0 {
				b.Fatal("no packets")
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(pkts)
			b.ReportMetric(ns, "ns/pkt")
			b.ReportMetric(1e9/ns, "pps")
		})
	}
}

func BenchmarkClassify(b *testing.B) {
	r := newRig(b, 2, nil)
	fr := wanFrame(b, pkt{src: remoteIP, dst: pubIP, sport: 1, dport: 40000, proto: layers.IPProtocolTCP})
	owner := r.e.Owner()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = classify(fr, owner)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
}
