package dataplane

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

func fuzzSeeds(f *testing.F) {
	f.Add(lanFrame(f, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, payload: 8}), false)
	f.Add(lanFrame(f, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolTCP, syn: true, mss: 1460}), false)
	f.Add(lanFrame(f, pkt{src: hostIP, dst: remoteIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 5}), false)
	f.Add(lanFrame(f, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, ttl: 1}), false)
	f.Add(wanFrame(f, pkt{src: remoteIP, dst: pubIP, sport: 1, dport: 2000, proto: layers.IPProtocolUDP, payload: 8}), true)
	f.Add(wanFrame(f, pkt{src: remoteIP, dst: pubIP, sport: 80, dport: 40000, proto: layers.IPProtocolTCP, syn: true, mss: 1460}), true)
	f.Add(wanFrame(f, pkt{src: remoteIP, dst: pubIP, proto: layers.IPProtocolICMPv4, icmpType: 0, icmpID: 3000}), true)
	// Fragments: first and later, both ways.
	data := make([]byte, 1600)
	for _, fr := range fragmentIPv4(f, bigUDP(f, hostIP, remoteIP, 1, 2, 9, data), 1480) {
		f.Add(lanEth(fr), false)
	}
	for _, fr := range fragmentIPv4(f, bigUDP(f, remoteIP, pubIP, 2, 2000, 9, data), 1472) {
		f.Add(wanIPFrame(f, fr), true)
	}
	// IPv6 both ways: forwarded, for the router, hop limit 1, too big.
	f.Add(lanFrame6(f, pkt6{src: host6IP, dst: remote6IP, sport: 1, dport: 2, proto: layers.IPProtocolTCP, syn: true, mss: 1460}), false)
	f.Add(lanFrame6(f, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP, hop: 1}), false)
	f.Add(lanFrame6(f, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP, payload: 1500}), false)
	f.Add(lanFrame6(f, pkt6{src: host6IP, dst: routerLL6, proto: layers.IPProtocolICMPv6}), false)
	f.Add(wanFrame6(f, pkt6{src: remote6IP, dst: host6IP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, payload: 8}), true)
	f.Add(wanFrame6(f, pkt6{src: remote6IP, dst: host6IP, proto: layers.IPProtocolUDP, hop: 1}), true)
}

// FuzzWorker feeds arbitrary frames to a worker on either side: it must
// never panic, and every frame must be accounted for (forwarded, sent to
// the exception path, or dropped under a reason).
func FuzzWorker(f *testing.F) {
	fuzzSeeds(f)
	r := rig6(f, 1, nil)
	f.Fuzz(func(t *testing.T, b []byte, wan bool) {
		if len(b) > 1800 {
			return
		}
		before := r.e.Totals()
		if wan {
			r.wan.Inject(0, b)
		} else {
			r.lan.Inject(0, b)
		}
		r.step()
		r.drainLAN()
		r.drainWAN()
		r.e.PollControl(func(Dir, []byte) {})
		c := r.e.Totals()
		out := (c.TxLAN + c.TxWAN - c.ICMPSent) - (before.TxLAN + before.TxWAN - before.ICMPSent) +
			c.Exception - before.Exception + c.TotalDrops() - before.TotalDrops()
		if fr := c.Fragments - before.Fragments; fr > 0 {
			out -= fr - 1 // one frame left as fr fragments
		}
		if out != 1 {
			t.Fatalf("frame accounting: %d outcomes for one frame (%+v)", out, c)
		}
	})
}

// FuzzClassifyVsGopacket is the differential test of the steering parser:
// whenever gopacket decodes a PPPoE IPv4 TCP/UDP packet without options
// or fragmentation, classify must pick the owner of its destination port;
// for ICMP echo, of its id.
func FuzzClassifyVsGopacket(f *testing.F) {
	fuzzSeeds(f)
	owner := new([65536]uint8)
	for i := range owner {
		owner[i] = uint8(i % 7)
	}
	f.Fuzz(func(t *testing.T, b []byte, _ bool) {
		got, l3 := classify(b, owner)
		checkDecapAt(t, b, l3)
		p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true})
		eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		if eth == nil {
			return
		}
		switch eth.EthernetType {
		case layers.EthernetTypePPPoESession, layers.EthernetTypeDot1Q:
		case layers.EthernetTypePPPoEDiscovery:
			if got != toControl {
				t.Fatalf("PPPoE discovery steered to %d", got)
			}
			return
		default:
			// Nothing but PPPoE is of use on the WAN: dropped at once.
			if got != toNotPPPoE {
				t.Fatalf("non-PPPoE ethertype %v steered to %d", eth.EthernetType, got)
			}
			return
		}
		po, _ := p.Layer(layers.LayerTypePPPoE).(*layers.PPPoE)
		ppp, _ := p.Layer(layers.LayerTypePPP).(*layers.PPP)
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if po == nil || ppp == nil || ip == nil || po.Version != 1 || po.Type != 1 || po.Code != 0 {
			return
		}
		// gopacket accepts a compressed (1-byte) PPP protocol field; pppfwd
		// never negotiates Protocol-Field-Compression, so such frames are
		// not IPv4 data to it.
		if len(ppp.Contents) != 2 {
			return
		}
		if ip.Version != 4 || ip.IHL != 5 || ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0 || len(ip.Payload) < 8 {
			return
		}
		// gopacket trims to the IP total length; classify reads the frame.
		var want int
		switch ip.Protocol {
		case layers.IPProtocolTCP, layers.IPProtocolUDP:
			want = int(owner[uint16(ip.Payload[2])<<8|uint16(ip.Payload[3])])
		case layers.IPProtocolICMPv4:
			if ip.Payload[0] != 0 && ip.Payload[0] != 8 {
				return
			}
			want = int(owner[uint16(ip.Payload[4])<<8|uint16(ip.Payload[5])])
		default:
			want = 0
		}
		if got != want {
			t.Fatalf("classify %d, gopacket-derived owner %d (%v)", got, want, p)
		}
	})
}

// checkDecapAt: decapsulating with the network-header offset classify
// recorded (Frame.L3) gives exactly what a full parse gives, for our
// session's frames and for every other frame (other sessions, VLANs,
// truncated headers).
func checkDecapAt(t *testing.T, b []byte, l3 int) {
	if l3 < 0 || l3 > len(b) {
		t.Fatalf("classify: network header at %d of a %d-byte frame", l3, len(b))
	}
	if l3 == 0 || len(b) > nic.MaxData {
		return
	}
	for _, s := range []*hdr.Session{testSession(), {ID: sessionID, PeerMAC: [6]byte(b[6:12]), VLAN: 7}, {ID: binary.BigEndian.Uint16(b[l3-6:]), PeerMAC: [6]byte(b[6:12])}} {
		f1, f2 := nic.NewFrame(), nic.NewFrame()
		f1.SetData(b)
		f2.SetData(b)
		f1.L3 = uint16(l3)
		r1, r2 := s.Decap(f1), s.Decap(f2)
		decapped := r1 == hdr.DecapIPv4 || r1 == hdr.DecapIPv6
		if r1 != r2 || !bytes.Equal(f1.Data(), f2.Data()) || decapped && (f1.L3 != 0 || f2.L3 != 0) {
			t.Fatalf("Decap with the classifier's offset: %v %x; full parse: %v %x", r1, f1.Data(), r2, f2.Data())
		}
	}
}
