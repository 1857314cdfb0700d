package dataplane

import (
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/shaper"
)

// TestBytesPerDirection: the IP bytes of what a worker forwards are
// counted per direction (an uplink UDP packet and its reply), and the
// published Detail carries the NAT table's and the shaper's figures.
func TestBytesPerDirection(t *testing.T) {
	up, err := shaper.ParseSpec("bandwidth 1gbit")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, 1, func(c *Config) { c.Up = up })
	r.e.PublishDetail()
	p := pkt{src: hostIP, dst: remoteIP, sport: 4000, dport: 53, proto: layers.IPProtocolUDP, payload: 100}
	r.lan.Inject(0, lanFrame(t, p))
	for range 4 {
		r.clock.t += 1e6
		r.step()
	}
	out := r.drainWAN()
	if len(out) != 1 {
		t.Fatalf("%d uplink frames, want 1; drops %v", len(out), r.e.Totals().DropMap())
	}
	ext := be16(pppoePayload(t, out[0])[20:])
	reply := pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 300}
	r.wan.Inject(0, wanFrame(t, reply))
	for range 4 {
		r.clock.t += 1e6
		r.step()
	}
	if n := len(r.drainLAN()); n != 1 {
		t.Fatalf("%d downlink frames, want 1; drops %v", n, r.e.Totals().DropMap())
	}
	w := r.e.Workers()[0]
	w.pub.publish(&w.c) // the stepped worker publishes only from its loop
	c := w.Counters()
	if c.BytesUp != 20+8+100 || c.BytesDown != 20+8+300 {
		t.Fatalf("bytes up %d down %d, want %d and %d", c.BytesUp, c.BytesDown, 128, 328)
	}
	d := w.Detail()
	if d.NAT.Entries != 1 || d.NAT.Mappings != 1 || d.NAT.Capacity == 0 {
		t.Fatalf("NAT detail %+v, want one flow and one mapping", d.NAT)
	}
	if !d.ShapedUp || d.ShapedDown || d.Up.Enqueued != 1 || d.Up.Dequeued != 1 || d.Down.Enqueued != 0 {
		t.Fatalf("shaper detail up %+v (shaped %v) down %+v (shaped %v)", d.Up, d.ShapedUp, d.Down, d.ShapedDown)
	}
}

// TestDetailRoundTrip: every NAT and shaper figure survives the
// published words.
func TestDetailRoundTrip(t *testing.T) {
	s := nat.Stats{Entries: 1, Forwards: 2, Mappings: 3, Slots: 4, Capacity: 5, Allocations: 6, MappingAllocs: 7,
		Expired: 8, Flushes: 9, Drops: 10, Rejects: 11, Redirects: 12, Hairpins: 13, Locals: 14, ForwardUntracked: 15}
	for i := range s.Reasons {
		s.Reasons[i] = uint64(100 + i)
	}
	var w [natWords]uint64
	natToWords(w[:], &s)
	if got := natFromWords(w[:]); got != s {
		t.Fatalf("NAT stats %+v came back %+v", s, got)
	}
	q := shaper.Stats{Enqueued: 1, Dequeued: 2, Dropped: 3, Marked: 4, Backlog: 5, BacklogBytes: 6, Leases: 7, RateLimited: 8}
	for i := range q.Drops {
		q.Drops[i] = uint64(10 + i)
	}
	var sw [shaperWords]uint64
	shaperToWords(sw[:], &q)
	if got := shaperFromWords(sw[:]); got != q {
		t.Fatalf("shaper stats %+v came back %+v", q, got)
	}
}
