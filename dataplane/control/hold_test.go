package control

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// TestHoldQueueBounds: per address the newest HoldPerHost frames are kept
// in order, no more than HoldHosts addresses wait, entries older than
// HoldTimeout are given up, and buffers are reused.
func TestHoldQueueBounds(t *testing.T) {
	var h holdQueue[uint32]
	now := time.Unix(1000, 0)
	for i := 0; i < HoldPerHost+2; i++ {
		if !h.add(1, []byte{byte(i)}, now) {
			t.Fatalf("frame %d refused", i)
		}
	}
	if held, dropped, waiting := h.counts(); held != HoldPerHost+2 || dropped != 2 || waiting != HoldPerHost {
		t.Fatalf("held %d dropped %d waiting %d, want %d, 2, %d", held, dropped, waiting, HoldPerHost+2, HoldPerHost)
	}
	got := h.take(1, now)
	if len(got) != HoldPerHost {
		t.Fatalf("took %d frames, want %d", len(got), HoldPerHost)
	}
	for i, b := range got {
		if len(b) != 1 || b[0] != byte(i+2) {
			t.Fatalf("frame %d is %v, want the newest %d in order", i, b, HoldPerHost)
		}
	}
	if h.take(1, now) != nil {
		t.Fatal("take twice returned frames")
	}
	h.giveBack(got)
	// The two frames pushed out gave their buffers to the two after them.
	if len(h.free) != HoldPerHost {
		t.Fatalf("%d free buffers after give-back, want %d (reused, not made anew)", len(h.free), HoldPerHost)
	}

	for a := uint32(0); a < HoldHosts; a++ {
		if !h.add(100+a, []byte{1}, now) {
			t.Fatalf("address %d refused below HoldHosts", a)
		}
	}
	if h.add(99, []byte{1}, now) {
		t.Fatal("an address beyond HoldHosts was accepted")
	}
	if !h.add(100, []byte{2}, now) {
		t.Fatal("a waiting address refused a second frame")
	}
	// Past the timeout everything is given up and room is made.
	if !h.add(99, []byte{1}, now.Add(HoldTimeout+time.Millisecond)) {
		t.Fatal("refused after the others timed out")
	}
	if _, _, waiting := h.counts(); waiting != 1 {
		t.Fatalf("%d frames wait after the timeout, want 1", waiting)
	}
	// A host that answers only after HoldTimeout gets nothing stale, and
	// a timer's expire clears what no add came to clear.
	later := now.Add(2*HoldTimeout + 2*time.Millisecond)
	if got := h.take(99, later); got != nil {
		t.Fatalf("took %d frames older than HoldTimeout", len(got))
	}
	h.add(7, []byte{1}, later)
	h.expire(later.Add(HoldTimeout + time.Millisecond))
	held, dropped, waiting := h.counts()
	if waiting != 0 {
		t.Fatalf("%d frames wait after expire", waiting)
	}
	// Everything offered was taken, dropped or sent (none sent here
	// except the HoldPerHost taken above).
	if held != dropped+HoldPerHost {
		t.Fatalf("held %d, dropped %d, taken %d: the books do not balance", held, dropped, HoldPerHost)
	}
}

// TestControlHoldsUnresolved: a downlink packet for a LAN host whose MAC
// the router does not know is held while the control plane asks for it
// (ARP), and delivered, addressed to the MAC the host answers with, once
// it does; beyond HoldPerHost the oldest are dropped and counted.
func TestControlHoldsUnresolved(t *testing.T) {
	lan := memport.New("lan", 1, 256)
	wan := memport.New("wan", 1, 256)
	e := memEngine(t, lan, wan)
	e.SetSession(testSession())
	ctl := New(e, Config{WANMAC: wanMAC})
	startWith(t, e, ctl.Run)

	// An uplink packet makes the NAT mapping.
	lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 4000, dport: 53, proto: layers.IPProtocolUDP, payload: 20}))
	var ext uint16
	waitFor(t, "uplink", 5*time.Second, func() bool {
		wan.Drain(0, func(b []byte) {
			if len(b) >= 14+8+20+4 && binary.BigEndian.Uint16(b[12:]) == hdr.EtherTypePPPoESess {
				ext = binary.BigEndian.Uint16(b[14+8+20:])
			}
		})
		return ext != 0
	})
	// The router has never learned the host (its uplink needs no ARP);
	// replies arrive. (Forgetting it with SetNeighbors here would race:
	// a worker applies a new table from its next step, and frames it
	// takes in the current one still see the old table.)
	const replies = HoldPerHost + 2
	for i := 0; i < replies; i++ {
		wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 30 + i}))
	}
	// The control plane holds each reply, then asks for the host: wait
	// for both (the count can be seen before the request is sent).
	var arpReqs int
	waitFor(t, "replies held and an ARP request sent", 5*time.Second, func() bool {
		lan.Drain(0, func(b []byte) {
			switch hdr.Ethernet(b).Type() {
			case hdr.EtherTypeARP:
				if binary.BigEndian.Uint16(b[20:]) == 1 && binary.BigEndian.Uint32(b[38:]) == hostIP {
					arpReqs++
				}
			case hdr.EtherTypeIPv4:
				t.Errorf("an IPv4 frame left before the host was resolved: %x", b)
			}
		})
		return ctl.Stats().Held == replies && arpReqs > 0
	})
	// The host answers from a new MAC.
	newMAC := [6]byte{0x02, 0, 0, 0, 0, 0x99}
	lan.Inject(0, arpFrame(2, routerMAC, newMAC, hostIP, routerIP))
	var got [][]byte
	waitFor(t, "held replies delivered", 5*time.Second, func() bool {
		lan.Drain(0, func(b []byte) {
			if hdr.Ethernet(b).Type() == hdr.EtherTypeIPv4 {
				got = append(got, append([]byte(nil), b...))
			}
		})
		return len(got) >= HoldPerHost
	})
	time.Sleep(20 * time.Millisecond)
	lan.Drain(0, func(b []byte) {
		if hdr.Ethernet(b).Type() == hdr.EtherTypeIPv4 {
			got = append(got, append([]byte(nil), b...))
		}
	})
	if len(got) != HoldPerHost {
		t.Fatalf("%d frames delivered, want the newest %d", len(got), HoldPerHost)
	}
	for i, b := range got {
		if [6]byte(b[0:6]) != newMAC || [6]byte(b[6:12]) != routerMAC {
			t.Fatalf("frame %d from %x to %x, want %x to %x", i, b[6:12], b[0:6], routerMAC, newMAC)
		}
		p := decodeIPv4(t, b[14:])
		u := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if u.DstPort != 4000 || len(u.Payload) != 30+i+2 {
			t.Fatalf("frame %d: port %d payload %d, want 4000 and %d (oldest dropped, order kept)", i, u.DstPort, len(u.Payload), 30+i+2)
		}
	}
	st := ctl.Stats()
	if st.Held != replies || st.HeldSent != HoldPerHost || st.HeldDropped != 2 || st.HeldWaiting != 0 || st.ARPLearned != 1 ||
		st.Held != st.HeldSent+st.HeldDropped+uint64(st.HeldWaiting) {
		t.Fatalf("control stats %+v", st)
	}
	if mac, ok := e.Neighbors().Lookup(hostIP); !ok || mac != newMAC {
		t.Fatalf("neighbour %x %v, want %x", mac, ok, newMAC)
	}
}

// arpRig starts a control plane on an engine over memports and returns
// the LAN port, the engine and the control plane.
func arpRig(t *testing.T) (*memport.Port, *dataplane.Engine, *Control) {
	lan := memport.New("lan", 1, 256)
	e := memEngine(t, lan, memport.New("wan", 1, 256))
	ctl := New(e, Config{WANMAC: wanMAC})
	startWith(t, e, ctl.Run)
	return lan, e, ctl
}

// arpFrame builds an ARP packet from sha/spa about tpa, to dst.
func arpFrame(op uint16, dst, sha [6]byte, spa, tpa uint32) []byte {
	b := make([]byte, 42)
	copy(b, dst[:])
	copy(b[6:], sha[:])
	binary.BigEndian.PutUint16(b[12:], hdr.EtherTypeARP)
	binary.BigEndian.PutUint32(b[14:], 0x00010800)
	b[18], b[19] = 6, 4
	binary.BigEndian.PutUint16(b[20:], op)
	copy(b[22:28], sha[:])
	binary.BigEndian.PutUint32(b[28:], spa)
	binary.BigEndian.PutUint32(b[38:], tpa)
	return b
}

// TestGratuitousARPMovesKnownHost: a gratuitous ARP from a known host with
// a new MAC (a VRRP address moving) updates its entry; one from an
// unknown host creates none (only ARP about the router does).
func TestGratuitousARPMovesKnownHost(t *testing.T) {
	lan, e, _ := arpRig(t)
	lan.Inject(0, arpFrame(1, bcastMAC, hostMAC, hostIP, routerIP)) // asks for the router: learned
	waitFor(t, "host learned", 5*time.Second, func() bool { m, ok := e.Neighbors().Lookup(hostIP); return ok && m == hostMAC })
	backup := [6]byte{0x02, 0, 0, 0, 0, 0x42}
	lan.Inject(0, arpFrame(1, bcastMAC, backup, hostIP, hostIP)) // gratuitous, from the new owner
	waitFor(t, "entry moved", 5*time.Second, func() bool { m, _ := e.Neighbors().Lookup(hostIP); return m == backup })
	// A non-gratuitous change right after (another host answering for
	// the address) is ignored for a second.
	lan.Inject(0, arpFrame(2, routerMAC, [6]byte{0x02, 0, 0, 0, 0, 0x44}, hostIP, routerIP))
	marker := hostIP + 9 // learned after the reply above is processed
	lan.Inject(0, arpFrame(1, bcastMAC, [6]byte{0x02, 0, 0, 0, 0, 0x45}, marker, routerIP))
	waitFor(t, "marker", 5*time.Second, func() bool { _, ok := e.Neighbors().Lookup(marker); return ok })
	if m, _ := e.Neighbors().Lookup(hostIP); m != backup {
		t.Fatalf("entry flapped to %x within the locktime", m)
	}
	other := hostIP + 5
	lan.Inject(0, arpFrame(1, bcastMAC, [6]byte{0x02, 0, 0, 0, 0, 0x43}, other, other))
	lan.Inject(0, arpFrame(1, bcastMAC, hostMAC, hostIP, hostIP)) // a gratuitous marker processed after it
	waitFor(t, "marker", 5*time.Second, func() bool { m, _ := e.Neighbors().Lookup(hostIP); return m == hostMAC })
	if _, ok := e.Neighbors().Lookup(other); ok {
		t.Fatal("a gratuitous ARP from an unknown host created an entry")
	}
}

// TestARPNeighborsAge: an IPv4 neighbour the control plane learned and no
// ARP confirmed for NeighborTTL is dropped (its next packet is held while
// ARP asks again); ARP from it keeps it; one set from outside stays.
func TestARPNeighborsAge(t *testing.T) {
	lan, e, ctl := arpRig(t)
	static := ip4(192, 168, 1, 50)
	e.SetNeighbor(static, [6]byte{2, 0, 0, 0, 0, 0x50})
	lan.Inject(0, arpFrame(1, bcastMAC, hostMAC, hostIP, routerIP))
	lan.Inject(0, arpFrame(1, bcastMAC, [6]byte{2, 0, 0, 0, 0, 0x50}, static, routerIP)) // the static one asks too
	waitFor(t, "host learned", 5*time.Second, func() bool {
		_, ok := e.Neighbors().Lookup(hostIP)
		return ok && ctl.Stats().ARPReplies == 2
	})
	ctl.sweepNeighbors(time.Now().Add(NeighborTTL - time.Minute))
	if _, ok := e.Neighbors().Lookup(hostIP); !ok {
		t.Fatal("dropped before its time")
	}
	resetSweep(ctl)
	ctl.sweepNeighbors(time.Now().Add(NeighborTTL + time.Minute))
	if _, ok := e.Neighbors().Lookup(hostIP); ok {
		t.Fatal("kept past NeighborTTL")
	}
	if _, ok := e.Neighbors().Lookup(static); !ok {
		t.Fatal("a neighbour set from outside was dropped")
	}
}

// TestARPNeighborProbe: a learned IPv4 neighbour in the last
// NeighborProbe of its NeighborTTL is asked for by an ARP request sent to
// its own MAC; its reply confirms it, so it outlives the TTL it had,
// while one that does not answer is dropped at NeighborTTL.
func TestARPNeighborProbe(t *testing.T) {
	lan, e, ctl := arpRig(t)
	quiet, quietMAC := ip4(192, 168, 1, 11), [6]byte{0x02, 0, 0, 0, 0, 0x11}
	lan.Inject(0, arpFrame(1, bcastMAC, hostMAC, hostIP, routerIP))
	lan.Inject(0, arpFrame(1, bcastMAC, quietMAC, quiet, routerIP))
	waitFor(t, "both learned", 5*time.Second, func() bool { return e.Neighbors().Len() == 2 && ctl.Stats().ARPReplies == 2 })
	// Both were last confirmed two minutes short of NeighborTTL ago.
	ctl.arpMu.Lock()
	ctl.v6.seen4[hostIP] = time.Now().Add(-(NeighborTTL - 2*time.Minute))
	ctl.v6.seen4[quiet] = ctl.v6.seen4[hostIP]
	ctl.arpMu.Unlock()
	resetSweep(ctl)
	ctl.sweepNeighbors(time.Now())
	probes := map[uint32][6]byte{}
	waitFor(t, "two probes", 5*time.Second, func() bool {
		lan.Drain(0, func(b []byte) {
			if hdr.Ethernet(b).Type() == hdr.EtherTypeARP && binary.BigEndian.Uint16(b[20:]) == 2 {
				return // the answers to the hosts' requests, still on their way
			}
			if hdr.Ethernet(b).Type() != hdr.EtherTypeARP || binary.BigEndian.Uint16(b[20:]) != 1 {
				t.Errorf("not an ARP request: %x", b)
				return
			}
			if [6]byte(b[6:12]) != routerMAC || [6]byte(b[22:28]) != routerMAC || binary.BigEndian.Uint32(b[28:]) != routerIP {
				t.Errorf("an ARP request not from the router: %x", b)
			}
			probes[binary.BigEndian.Uint32(b[38:])] = [6]byte(b[0:6])
		})
		return len(probes) == 2 && ctl.Stats().NeighborProbes == 2
	})
	if probes[hostIP] != hostMAC || probes[quiet] != quietMAC {
		t.Fatalf("probes went to %x, want each host's own MAC", probes)
	}
	// The host answers; the quiet one does not.
	lan.Inject(0, arpFrame(2, routerMAC, hostMAC, hostIP, routerIP))
	waitFor(t, "the answer seen", 5*time.Second, func() bool {
		ctl.arpMu.Lock()
		defer ctl.arpMu.Unlock()
		return time.Since(ctl.v6.seen4[hostIP]) < time.Minute
	})
	resetSweep(ctl)
	ctl.sweepNeighbors(time.Now().Add(3 * time.Minute)) // past the TTL both had
	if _, ok := e.Neighbors().Lookup(hostIP); !ok {
		t.Fatal("a neighbour that answered its probe was dropped")
	}
	if _, ok := e.Neighbors().Lookup(quiet); ok {
		t.Fatal("a neighbour that did not answer was kept past NeighborTTL")
	}
}

// TestNeighborProbeBatch: one sweep probes at most ProbeBatch neighbours
// of a family; the others wait for a later sweep of their window.
func TestNeighborProbeBatch(t *testing.T) {
	lan, e, ctl := arpRig(t)
	const n = ProbeBatch + 10
	old := time.Now().Add(-(NeighborTTL - 2*time.Minute))
	for i := range n {
		e.SetNeighbor(ip4(192, 168, 1, byte(10+i)), [6]byte{0x02, 0, 0, 0, 1, byte(i)})
	}
	ctl.arpMu.Lock()
	for i := range n {
		markSeen(&ctl.v6.seen4, ip4(192, 168, 1, byte(10+i)), true)
		ctl.v6.seen4[ip4(192, 168, 1, byte(10+i))] = old
	}
	ctl.arpMu.Unlock()
	lan.Drain(0, func([]byte) {})
	resetSweep(ctl)
	ctl.sweepNeighbors(time.Now())
	sent := 0
	waitFor(t, "the probes", 5*time.Second, func() bool {
		lan.Drain(0, func([]byte) { sent++ })
		return sent >= ProbeBatch
	})
	time.Sleep(50 * time.Millisecond)
	lan.Drain(0, func([]byte) { sent++ })
	if sent != ProbeBatch || ctl.Stats().NeighborProbes != ProbeBatch {
		t.Fatalf("%d probes sent (neighbor_probes %d), want %d of %d", sent, ctl.Stats().NeighborProbes, ProbeBatch, n)
	}
	resetSweep(ctl)
	ctl.sweepNeighbors(time.Now().Add(time.Minute))
	waitFor(t, "the next sweep's probes", 5*time.Second, func() bool {
		lan.Drain(0, func([]byte) { sent++ })
		return sent >= 2*ProbeBatch
	})
}
