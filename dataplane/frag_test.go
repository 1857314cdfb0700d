package dataplane

import (
	"bytes"
	"encoding/binary"
	"sort"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
)

// fragmentIPv4 splits an IPv4 packet (no options) into fragments whose
// IP payload is at most chunk bytes (a multiple of 8), as a host does.
func fragmentIPv4(t testing.TB, ip []byte, chunk int) [][]byte {
	t.Helper()
	payload := ip[hdr.IPv4MinLen:]
	var out [][]byte
	for off := 0; off < len(payload); off += chunk {
		end := min(off+chunk, len(payload))
		b := append(append([]byte(nil), ip[:hdr.IPv4MinLen]...), payload[off:end]...)
		v := uint16(off / 8)
		if end < len(payload) {
			v |= 0x2000
		}
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		binary.BigEndian.PutUint16(b[6:], v)
		hdr.IPv4(b).ComputeChecksum()
		out = append(out, b)
	}
	return out
}

// reassemble checks a datagram's fragments (valid headers, same id,
// contiguous offsets, MF on all but the last) and returns the header of
// the first and the whole payload.
func reassemble(t *testing.T, frags [][]byte) (hdr.IPv4, []byte) {
	t.Helper()
	sort.Slice(frags, func(i, j int) bool { return hdr.IPv4(frags[i]).FragOffset() < hdr.IPv4(frags[j]).FragOffset() })
	var whole []byte
	for i, b := range frags {
		ip := hdr.IPv4(b)
		if !ip.IsValid() || !ip.HeaderChecksumOK() || ip.ID() != hdr.IPv4(frags[0]).ID() {
			t.Fatalf("fragment %d: bad header %x", i, b[:20])
		}
		if ip.FragOffset() != len(whole) || ip.MoreFragments() != (i < len(frags)-1) {
			t.Fatalf("fragment %d: offset %d MF %v, want offset %d", i, ip.FragOffset(), ip.MoreFragments(), len(whole))
		}
		whole = append(whole, ip.Payload()...)
	}
	return hdr.IPv4(frags[0]), whole
}

func udpSumOK(src, dst uint32, udp []byte) bool {
	s := []byte{byte(src >> 24), byte(src >> 16), byte(src >> 8), byte(src)}
	d := []byte{byte(dst >> 24), byte(dst >> 16), byte(dst >> 8), byte(dst)}
	return hdr.Fold(hdr.Sum(udp, hdr.PseudoSum(s, d, hdr.ProtoUDP, len(udp)))) == 0xffff
}

// TestFragmentsCrossTheNAT: a UDP datagram a LAN host fragmented for its
// 1500-byte MTU leaves in fragments that fit the 1492-byte session MTU
// and reassemble to the translated datagram; the 3000-byte answer,
// fragmented by the far end, reaches the host in fragments that reassemble
// to the datagram translated back. With two workers the uplink fragments
// arrive on both LAN queues and the downlink's later fragments are
// steered after their first. A later fragment without its first is
// dropped and counted.
func TestFragmentsCrossTheNAT(t *testing.T) {
	ownedBy := map[int]bool{}
	for _, workers := range []int{1, 2} {
		for _, shaped := range []bool{false, true} {
			r := newRig(t, workers, func(c *Config) {
				if shaped {
					c.Up.Rate, c.Down.Rate = 1e9, 1e9
				}
			})
			data := bytes.Repeat([]byte("0123456789abcdef"), 3000/16)
			// Shaped runs take a source port worker 1 owns and start on the
			// other queue: with two workers the other worker owns the
			// mapping (a LAN endpoint belongs to the worker whose range
			// holds its port).
			sport, q0 := uint16(5060), 0
			if shaped {
				q0 = 1
				for p := 5060; p < 65536 && workers == 2; p += 2 {
					if r.e.Owner()[p] == 1 {
						sport = uint16(p)
						break
					}
				}
			}
			up := bigUDP(t, hostIP, remoteIP, sport, 5060, 7, data)
			for i, fr := range fragmentIPv4(t, up, 1480) {
				r.lan.Inject((i+q0)%workers, lanEth(fr))
			}
			for i := 0; i < 4; i++ {
				r.clock.t += 1e6
				r.step()
			}
			var got [][]byte
			for _, fr := range r.drainWAN() {
				ipb := append([]byte(nil), pppoePayload(t, fr)...)
				if len(ipb) > 1492 {
					t.Fatalf("uplink fragment of %d bytes over a 1492-byte session", len(ipb))
				}
				got = append(got, ipb)
			}
			if len(got) != 5 { // 1480+1480+40 from the host; each 1500-byte one splits in two
				t.Fatalf("workers %d shaped %v: %d uplink fragments, want 5; drops %v", workers, shaped, len(got), r.e.Totals().DropMap())
			}
			first, whole := reassemble(t, got)
			u := hdr.UDP(whole)
			if first.Src() != pubIP || first.Dst() != remoteIP || u.Length() != len(whole) || !bytes.Equal(whole[8:], data) ||
				u.DstPort() != 5060 || !udpSumOK(pubIP, remoteIP, whole) {
				t.Fatalf("uplink reassembled: %s -> %s, UDP length %d of %d, ports %d -> %d, checksum ok %v",
					ip4s(first.Src()), ip4s(first.Dst()), u.Length(), len(whole), u.SrcPort(), u.DstPort(), udpSumOK(pubIP, remoteIP, whole))
			}
			ext := u.SrcPort()
			if workers == 2 {
				ownedBy[int(r.e.Owner()[ext])] = true
			}

			// The answer, fragmented by the far end for the session MTU.
			got = downFragments(t, r, bigUDP(t, remoteIP, pubIP, 5060, ext, 0x4242, data), 1472)
			if len(got) != 3 {
				t.Fatalf("workers %d shaped %v: %d downlink fragments, want 3; drops %v", workers, shaped, len(got), r.e.Totals().DropMap())
			}
			first, whole = reassemble(t, got)
			u = hdr.UDP(whole)
			if first.Dst() != hostIP || first.Src() != remoteIP || u.DstPort() != sport || !bytes.Equal(whole[8:], data) ||
				!udpSumOK(remoteIP, hostIP, whole) {
				t.Fatalf("downlink reassembled: %s -> %s port %d, checksum ok %v", ip4s(first.Src()), ip4s(first.Dst()), u.DstPort(), udpSumOK(remoteIP, hostIP, whole))
			}

			// A datagram whose last fragment carries 4 bytes (less than a
			// transport header) reaches the host too.
			tiny := bytes.Repeat([]byte{0x77}, 2*1472-8+4)
			got = downFragments(t, r, bigUDP(t, remoteIP, pubIP, 5060, ext, 0x4444, tiny), 1472)
			if len(got) != 3 || len(hdr.IPv4(got[2]).Payload()) != 4 {
				t.Fatalf("workers %d: %d fragments of the datagram with a 4-byte last one; drops %v", workers, len(got), r.e.Totals().DropMap())
			}
			if _, whole = reassemble(t, got); !bytes.Equal(whole[8:], tiny) || !udpSumOK(remoteIP, hostIP, whole) {
				t.Fatal("datagram with a 4-byte last fragment: wrong after reassembly")
			}

			// A later fragment whose first never came.
			lost := fragmentIPv4(t, bigUDP(t, remoteIP, pubIP, 5060, ext, 0x4343, data), 1472)[1]
			before := r.e.Totals().Drops[DropFragment]
			r.wan.Inject(0, wanIPFrame(t, lost))
			r.step()
			if n := len(r.drainLAN()); n != 0 || r.e.Totals().Drops[DropFragment] != before+1 {
				t.Fatalf("orphan later fragment: %d frames out, fragment drops %d (was %d)", n, r.e.Totals().Drops[DropFragment], before)
			}
		}
	}
	if !ownedBy[1] {
		t.Errorf("with two workers no datagram went to worker 1 (owners %v): the steering of later fragments was not exercised", ownedBy)
	}
}

// TestTCPFragmentAtOffset8Dropped: RFC 1858's overlapping TCP fragment
// (offset 8, rewriting the first fragment's flags) is dropped both ways.
func TestTCPFragmentAtOffset8Dropped(t *testing.T) {
	r := newRig(t, 1, nil)
	mk := func(src, dst uint32) []byte {
		ip := serialize(t, pkt{src: src, dst: dst, sport: 1000, dport: 80, proto: layers.IPProtocolTCP, payload: 40}.layers(t)...)
		ip = ip[:hdr.IPv4MinLen+16]
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
		binary.BigEndian.PutUint16(ip[6:], 1) // offset 8, last
		hdr.IPv4(ip).ComputeChecksum()
		return ip
	}
	r.lan.Inject(0, lanEth(mk(hostIP, remoteIP)))
	r.wan.Inject(0, wanIPFrame(t, mk(remoteIP, pubIP)))
	r.step()
	if n := len(r.drainWAN()) + len(r.drainLAN()); n != 0 || r.e.Totals().Drops[DropFragment] != 2 {
		t.Fatalf("%d frames out, fragment drops %d; want none out, 2 dropped", n, r.e.Totals().Drops[DropFragment])
	}
}

// downFragments sends a downlink datagram in fragments of at most chunk
// bytes from the AC, lets the engine run, and returns the IPv4 packets
// that reached the LAN, each checked to go to the host's MAC.
func downFragments(t *testing.T, r *rig, ip []byte, chunk int) [][]byte {
	t.Helper()
	for _, fr := range fragmentIPv4(t, ip, chunk) {
		r.wan.Inject(0, wanIPFrame(t, fr))
	}
	for i := 0; i < 4; i++ {
		r.clock.t += 1e6
		r.step()
	}
	var got [][]byte
	for _, fr := range r.drainLAN() {
		if [6]byte(fr[0:6]) != hostMAC {
			t.Fatalf("downlink fragment to %x", fr[0:6])
		}
		got = append(got, fr[14:])
	}
	return got
}

// fixUDP recomputes the IPv4 header and UDP checksums of an unfragmented
// packet.
func fixUDP(ip []byte, src, dst uint32) {
	hdr.IPv4(ip).ComputeChecksum()
	udp := ip[hdr.IPv4MinLen:]
	udp[6], udp[7] = 0, 0
	s := []byte{byte(src >> 24), byte(src >> 16), byte(src >> 8), byte(src)}
	d := []byte{byte(dst >> 24), byte(dst >> 16), byte(dst >> 8), byte(dst)}
	c := hdr.Checksum(udp, hdr.PseudoSum(s, d, hdr.ProtoUDP, len(udp)))
	binary.BigEndian.PutUint16(udp[6:], c)
}

func ip4s(a uint32) string { return netIP(a).String() }

// bigUDP builds an unfragmented IPv4 UDP datagram carrying data, with
// valid checksums and IP id id.
func bigUDP(t testing.TB, src, dst uint32, sport, dport, id uint16, data []byte) []byte {
	t.Helper()
	ip := serialize(t, pkt{src: src, dst: dst, sport: sport, dport: dport, proto: layers.IPProtocolUDP}.layers(t)[:2]...)
	ip = append(ip, data...)
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	binary.BigEndian.PutUint16(ip[4:], id)
	binary.BigEndian.PutUint16(ip[24:], uint16(len(ip)-20))
	fixUDP(ip, src, dst)
	return ip
}

// lanEth puts the LAN host's Ethernet header in front of an IPv4 packet.
func lanEth(ip []byte) []byte {
	eth := append(append(append([]byte(nil), routerMAC[:]...), hostMAC[:]...), 0x08, 0x00)
	return append(eth, ip...)
}

// TestFragmentPathZeroAlloc: translating, refragmenting and steering
// fragments both ways allocates nothing.
func TestFragmentPathZeroAlloc(t *testing.T) {
	r := newRig(t, 2, nil)
	data := bytes.Repeat([]byte{0x5a}, 2992)
	var lan [][]byte
	for _, fr := range fragmentIPv4(t, bigUDP(t, hostIP, remoteIP, 5060, 5060, 7, data), 1480) {
		lan = append(lan, lanEth(fr))
		r.lan.Inject(0, lan[len(lan)-1])
	}
	r.step()
	var ext uint16
	for _, fr := range r.drainWAN() {
		if ip := hdr.IPv4(pppoePayload(t, fr)); ip.FragOffset() == 0 {
			ext = hdr.UDP(ip.Payload()).SrcPort()
		}
	}
	var wan [][]byte
	for _, fr := range fragmentIPv4(t, bigUDP(t, remoteIP, pubIP, 5060, ext, 0x4242, data), 1472) {
		wan = append(wan, wanIPFrame(t, fr))
	}
	r.lan.Replay(0, lan)
	r.wan.Replay(0, wan)
	for q := 0; q < 2; q++ {
		r.lan.Sink(q, nil)
		r.wan.Sink(q, nil)
	}
	r.step()
	before := r.e.Totals()
	if a := testing.AllocsPerRun(100, r.step); a != 0 {
		t.Fatalf("the fragment path allocates %.1f times per step", a)
	}
	c := r.e.Totals()
	if c.Fragments == before.Fragments || c.TxLAN == before.TxLAN || c.TotalDrops() != before.TotalDrops() {
		t.Fatalf("fragments not forwarded both ways: %+v, drops %v", c, c.DropMap())
	}
}
