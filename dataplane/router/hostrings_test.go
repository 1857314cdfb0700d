package router

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/netmap"
)

// The network of the host-ring tests: the box's LAN 192.168.1.0/24 on
// the simulated adapter "lan" (whose host rings carry the box's own
// stack, 192.168.1.1 at the LAN port's MAC), a LAN host, the session on
// "wan", a server beyond it.
var (
	hrLANMAC  = [6]byte{0x00, 0x1b, 0x21, 0, 0, 0x01} // a NIC's own (universally administered) MAC
	hrWANMAC  = [6]byte{0x00, 0x1b, 0x21, 0, 0, 0x02}
	hrACMAC   = [6]byte{0x02, 0xac, 0, 0, 0, 0x01}
	hrHostMAC = [6]byte{0x02, 0, 0, 0, 0, 0x10}
	hrBcast   = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	hrRouter  = net.IPv4(192, 168, 1, 1).To4()
	hrLANHost = net.IPv4(192, 168, 1, 20).To4()
	hrPublic  = net.IPv4(198, 51, 100, 7).To4()
	hrServer  = net.IPv4(203, 0, 113, 9).To4()
	hrGateway = net.IPv4(169, 254, 0, 1).To4() // the box's default gateway, beyond the LAN
)

func hrSession() *hdr.Session {
	return &hdr.Session{ID: 0x1234, LocalMAC: hrWANMAC, PeerMAC: hrACMAC, LocalAddr: binary.BigEndian.Uint32(hrPublic),
		PeerAddr: binary.BigEndian.Uint32(net.IPv4(198, 51, 100, 1).To4()), MTU: 1492, Gen: 1}
}

// hostRingRig is a router with backend netmap on a simulated kernel
// side: its LAN and WAN NIC rings and the LAN interface's host rings are
// the Sim's, its session is up (published as the PPPoE client would).
type hostRingRig struct {
	sim *netmap.Sim
	r   *Router
}

func newHostRingRig(t *testing.T, extra string) *hostRingRig {
	t.Helper()
	sim, err := netmap.NewSim(netmap.SimConfig{Ports: []netmap.SimPortConfig{{Name: "lan"}, {Name: "wan"}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(strings.NewReader("backend netmap\nworkers 1\nlan.interface lan\nwan.interface wan\n" +
		"lan.address 192.168.1.1/24\npppoe.user u\ncontrol.socket off\n" + extra))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.HostRings() {
		t.Fatal("backend netmap without host.tap: no host rings")
	}
	lan, err := sim.Open("lan", 1)
	if err != nil {
		t.Fatal(err)
	}
	wan, err := sim.Open("wan", 1)
	if err != nil {
		t.Fatal(err)
	}
	host, err := sim.OpenHost("lan")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(cfg, Ports{LAN: lan, WAN: wan, Host: host, LANMAC: hrLANMAC, WANMAC: hrWANMAC}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	r.e.Start()
	wg.Go(func() { _ = r.ctl.Run(ctx) })
	r.publish(hrSession())
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := r.e.Stop(); err != nil {
			t.Error(err)
		}
		r.Close()
		if v := sim.Violations(); len(v) > 0 {
			t.Errorf("netmap ring discipline: %v", v)
		}
		if err := sim.CheckBuffers(); err != nil {
			t.Error(err)
		}
	})
	return &hostRingRig{sim: sim, r: r}
}

// await collects what take returns until a frame for which want reports
// true has come, and returns it.
func (h *hostRingRig) await(t *testing.T, what string, take func() [][]byte, want func(b []byte) bool) []byte {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, b := range take() {
			if want(b) {
				return b
			}
		}
		if time.Now().After(deadline) {
			st := h.r.Stats()
			t.Fatalf("timed out waiting for %s; counters %+v drops %v control %+v", what, st.Counters, h.r.e.Totals().DropMap(), st.Control)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// toHostStack: frames delivered to the box's stack (the host TX ring).
func (h *hostRingRig) toHostStack() [][]byte { return h.sim.HostReceived("lan") }

// onWAN: frames the router sent to the AC; onLAN: to the LAN.
func (h *hostRingRig) onWAN() [][]byte { return h.sim.Transmitted("wan", 0) }
func (h *hostRingRig) onLAN() [][]byte { return h.sim.Transmitted("lan", 0) }

func hrSerialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// hrUDP is an IPv4 UDP packet (no Ethernet header).
func hrUDP(t *testing.T, src, dst net.IP, sport, dport uint16) []gopacket.SerializableLayer {
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src, DstIP: dst}
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	if err := u.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	return []gopacket.SerializableLayer{ip, u, gopacket.Payload(make([]byte, 32))}
}

func hrEth(t *testing.T, src, dst [6]byte, et layers.EthernetType, ls []gopacket.SerializableLayer) []byte {
	return hrSerialize(t, append([]gopacket.SerializableLayer{&layers.Ethernet{SrcMAC: src[:], DstMAC: dst[:], EthernetType: et}}, ls...)...)
}

func hrARP(t *testing.T, op uint16, src, dst [6]byte, spa, tpa net.IP) []byte {
	tha := make([]byte, 6)
	if op == layers.ARPReply {
		tha = dst[:]
	}
	return hrEth(t, src, dst, layers.EthernetTypeARP, []gopacket.SerializableLayer{&layers.ARP{AddrType: layers.LinkTypeEthernet,
		Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4, Operation: op,
		SourceHwAddress: src[:], SourceProtAddress: spa, DstHwAddress: tha, DstProtAddress: tpa}})
}

// fromAC wraps an IPv4 packet in a PPPoE session frame from the AC.
func hrFromAC(t *testing.T, ls []gopacket.SerializableLayer) []byte {
	f := nic.NewFrame()
	if !f.SetData(hrSerialize(t, ls...)) || !hrSession().Encap(f) {
		t.Fatal("encap")
	}
	b := append([]byte(nil), f.Data()...)
	hdr.Ethernet(b).SetAddrs(hrWANMAC, hrACMAC)
	return b
}

// decode parses an Ethernet frame (PPPoE too).
func decode(b []byte) gopacket.Packet {
	return gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
}

func udpOf(p gopacket.Packet) (*layers.IPv4, *layers.UDP) {
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	return ip, u
}

func isUDPTo(dst net.IP, dport uint16) func([]byte) bool {
	return func(b []byte) bool {
		ip, u := udpOf(decode(b))
		return ip != nil && u != nil && ip.DstIP.Equal(dst) && uint16(u.DstPort) == dport
	}
}

// TestHostRingsReachSession: with backend netmap the box's own stack,
// on the LAN interface's host rings, resolves its default gateway beyond
// the LAN to a MAC that is not its own (a BSD stack ignores ARP answers
// from its own MAC), and what it sends there leaves the WAN in the PPPoE
// session, translated to the public address; the reply comes back up the
// host ring, not out of the LAN port.
func TestHostRingsReachSession(t *testing.T) {
	h := newHostRingRig(t, "")
	gw := HostGatewayMAC(hrLANMAC)
	if gw == hrLANMAC || gw[0]&1 != 0 {
		t.Fatalf("gateway MAC %x for LAN MAC %x", gw, hrLANMAC)
	}
	h.sim.InjectHost("lan", hrARP(t, layers.ARPRequest, hrLANMAC, hrBcast, hrRouter, hrGateway))
	rep := decode(h.await(t, "the proxy ARP answer up the host ring", h.toHostStack, func(b []byte) bool {
		return hdr.Ethernet(b).Type() == hdr.EtherTypeARP
	}))
	a := rep.Layer(layers.LayerTypeARP).(*layers.ARP)
	eth := rep.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if a.Operation != layers.ARPReply || [6]byte(a.SourceHwAddress) != gw || !net.IP(a.SourceProtAddress).Equal(hrGateway) ||
		[6]byte(eth.DstMAC) != hrLANMAC {
		t.Fatalf("proxy ARP answer %v", rep)
	}

	h.sim.InjectHost("lan", hrEth(t, hrLANMAC, gw, layers.EthernetTypeIPv4, hrUDP(t, hrRouter, hrServer, 40000, 123)))
	up := decode(h.await(t, "the box's NTP query in the session", h.onWAN, isUDPTo(hrServer, 123)))
	pp, _ := up.Layer(layers.LayerTypePPPoE).(*layers.PPPoE)
	ip, u := udpOf(up)
	if pp == nil || pp.SessionId != 0x1234 || !ip.SrcIP.Equal(hrPublic) {
		t.Fatalf("uplink %v", up)
	}
	ext := uint16(u.SrcPort)

	h.sim.Inject("wan", 0, hrFromAC(t, hrUDP(t, hrServer, hrPublic, 123, ext)))
	down := decode(h.await(t, "the reply up the host ring", h.toHostStack, isUDPTo(hrRouter, 40000)))
	if eth := down.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); [6]byte(eth.DstMAC) != hrLANMAC {
		t.Fatalf("reply to MAC %x", eth.DstMAC)
	}
	for _, b := range h.onLAN() {
		if et := hdr.Ethernet(b).Type(); et == hdr.EtherTypeIPv4 || et == hdr.EtherTypeARP {
			t.Errorf("on the LAN: %x", b)
		}
	}
	st := h.r.Stats()
	if st.Counters.FromHost != 1 || st.Counters.ToHost != 1 || st.Control.HostRouted != 1 || st.Control.HostProxied != 1 {
		t.Fatalf("counters %+v control %+v", st.Counters, st.Control)
	}
}

// TestHostRingsForwardToHost: nat.forward udp 51820 host reaches the box's
// stack on the host ring, and its answer leaves from the public address.
func TestHostRingsForwardToHost(t *testing.T) {
	h := newHostRingRig(t, "nat.forward udp 51820 host\n")
	peer := net.IPv4(198, 51, 100, 50).To4()
	// A worker takes a new session at its next step: a datagram that
	// arrives in the step that saw it published meets no session
	// (no_session), as on a line whose session just came up. Send it
	// again until the workers have the session, as a peer would.
	first := hrFromAC(t, hrUDP(t, peer, hrPublic, 5555, 51820))
	sent := time.Time{}
	in := decode(h.await(t, "the forwarded datagram up the host ring", func() [][]byte {
		if time.Since(sent) > 200*time.Millisecond {
			h.sim.Inject("wan", 0, first)
			sent = time.Now()
		}
		return h.toHostStack()
	}, isUDPTo(hrRouter, 51820)))
	if ip, _ := udpOf(in); !ip.SrcIP.Equal(peer) {
		t.Fatalf("forwarded %v", in)
	}
	h.sim.InjectHost("lan", hrEth(t, hrLANMAC, HostGatewayMAC(hrLANMAC), layers.EthernetTypeIPv4, hrUDP(t, hrRouter, peer, 51820, 5555)))
	out := decode(h.await(t, "the answer in the session", h.onWAN, isUDPTo(peer, 5555)))
	if ip, u := udpOf(out); !ip.SrcIP.Equal(hrPublic) || u.SrcPort != 51820 {
		t.Fatalf("answer %v", out)
	}
}

// TestHostRingsLAN: ARP for the router's address from the LAN reaches the
// box's stack (which answers it, out of the LAN port), and so does a LAN
// host's connection to the router's address (its GUI).
func TestHostRingsLAN(t *testing.T) {
	h := newHostRingRig(t, "")
	h.sim.Inject("lan", 0, hrARP(t, layers.ARPRequest, hrHostMAC, hrBcast, hrLANHost, hrRouter))
	req := decode(h.await(t, "the LAN host's ARP request up the host ring", h.toHostStack, func(b []byte) bool {
		return hdr.Ethernet(b).Type() == hdr.EtherTypeARP
	}))
	if a := req.Layer(layers.LayerTypeARP).(*layers.ARP); a.Operation != layers.ARPRequest || !net.IP(a.DstProtAddress).Equal(hrRouter) {
		t.Fatalf("at the host stack: %v", req)
	}
	h.sim.InjectHost("lan", hrARP(t, layers.ARPReply, hrLANMAC, hrHostMAC, hrRouter, hrLANHost))
	rep := decode(h.await(t, "the box's ARP answer on the LAN", h.onLAN, func(b []byte) bool {
		return hdr.Ethernet(b).Type() == hdr.EtherTypeARP
	}))
	if a := rep.Layer(layers.LayerTypeARP).(*layers.ARP); a.Operation != layers.ARPReply || [6]byte(a.SourceHwAddress) != hrLANMAC {
		t.Fatalf("on the LAN: %v", rep)
	}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: hrLANHost, DstIP: hrRouter}
	tcp := &layers.TCP{SrcPort: 50000, DstPort: 443, SYN: true, Seq: 1, Window: 65535}
	if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	h.sim.Inject("lan", 0, hrEth(t, hrHostMAC, hrLANMAC, layers.EthernetTypeIPv4, []gopacket.SerializableLayer{ip, tcp}))
	h.await(t, "the LAN host's SYN to the GUI up the host ring", h.toHostStack, func(b []byte) bool {
		p := decode(b)
		s, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
		return s != nil && s.SYN && s.DstPort == 443
	})
}
