package dataplane

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/memport"
)

var (
	routerMAC = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	hostMAC   = [6]byte{0x02, 0, 0, 0, 0, 0x10}
	wanMAC    = [6]byte{0x02, 0, 0, 0, 0, 0x20}
	acMAC     = [6]byte{0x02, 0, 0, 0, 0, 0x30}
	routerIP  = ip4(192, 168, 1, 1)
	lanNet    = ip4(192, 168, 1, 0)
	hostIP    = ip4(192, 168, 1, 2)
	pubIP     = ip4(198, 51, 100, 7)
	peerIP    = ip4(198, 51, 100, 1)
	remoteIP  = ip4(203, 0, 113, 9)
)

func ip4(a, b, c, d byte) uint32 { return uint32(a)<<24 | uint32(b)<<16 | uint32(c)<<8 | uint32(d) }

func netIP(a uint32) net.IP { return net.IPv4(byte(a>>24), byte(a>>16), byte(a>>8), byte(a)).To4() }

const sessionID = 0x1234

func testSession() *hdr.Session {
	return &hdr.Session{ID: sessionID, LocalMAC: wanMAC, PeerMAC: acMAC,
		LocalAddr: pubIP, PeerAddr: peerIP, MTU: 1492, Gen: 1}
}

// memEngine returns a one-worker engine over lan and wan with the test
// addresses (not started).
func memEngine(t testing.TB, lan, wan nic.Port) *Engine {
	t.Helper()
	e, err := New(Config{Workers: 1, LAN: lan, WAN: wan, RouterMAC: routerMAC,
		RouterAddr: routerIP, LANNet: lanNet, LANBits: 24})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// rig is an engine over memports whose threads the test steps by hand.
type rig struct {
	t        *testing.T
	e        *Engine
	lan, wan *memport.Port
	clock    *testClock
}

// rigSteer is the steering mode of the rigs newRig makes (SteerAuto:
// SteerLocal, their WAN port having a queue per worker); inSteerModes
// sets it to run a test in another mode.
var rigSteer SteerMode

func newRig(t testing.TB, workers int, mod func(*Config)) *rig {
	lan := memport.New("lan", workers, 1024)
	wan := memport.New("wan", workers, 1024)
	clk := &testClock{t: 1}
	cfg := Config{Workers: workers, LAN: lan, WAN: wan, RouterMAC: routerMAC,
		RouterAddr: routerIP, LANNet: lanNet, LANBits: 24, Clock: clk, Steer: rigSteer}
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.SetSession(testSession())
	e.SetNeighbor(hostIP, hostMAC)
	r := &rig{e: e, lan: lan, wan: wan, clock: clk}
	if tt, ok := t.(*testing.T); ok {
		r.t = tt
	}
	return r
}

// step runs one iteration of every worker.
// Poll starts at a pseudo-random worker; two rounds guarantee a frame
// steered by worker 0 is also processed by its owner.
func (r *rig) step() { r.e.poll(); r.e.poll() }

// outbound sends p from the LAN, requires it as the one frame on the WAN
// and returns its external source port (the NAT mapping it made).
func (r *rig) outbound(t *testing.T, p pkt) uint16 {
	t.Helper()
	r.lan.Inject(0, lanFrame(t, p))
	r.step()
	out := r.drainWAN()
	if len(out) != 1 {
		t.Fatalf("%d uplink frames, want 1; drops %v", len(out), r.e.Totals().DropMap())
	}
	return be16(pppoePayload(t, out[0])[20:])
}

func (r *rig) drainWAN() [][]byte {
	var out [][]byte
	for q := 0; q < r.wan.Queues(); q++ {
		r.wan.Drain(q, func(b []byte) { out = append(out, append([]byte(nil), b...)) })
	}
	return out
}

func (r *rig) drainLAN() [][]byte {
	var out [][]byte
	for q := 0; q < r.lan.Queues(); q++ {
		r.lan.Drain(q, func(b []byte) { out = append(out, append([]byte(nil), b...)) })
	}
	return out
}

func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

type pkt struct {
	src, dst     uint32
	sport, dport uint16
	proto        layers.IPProtocol
	ttl          uint8
	df           bool
	payload      int
	syn          bool
	mss          uint16
	icmpType     uint8
	icmpID       uint16
}

func (p pkt) layers(t testing.TB) []gopacket.SerializableLayer {
	ttl := p.ttl
	if ttl == 0 {
		ttl = 64
	}
	ip := &layers.IPv4{Version: 4, TTL: ttl, Protocol: p.proto, SrcIP: netIP(p.src), DstIP: netIP(p.dst), Id: 7}
	if p.df {
		ip.Flags = layers.IPv4DontFragment
	}
	pl := gopacket.Payload(make([]byte, p.payload))
	switch p.proto {
	case layers.IPProtocolUDP:
		u := &layers.UDP{SrcPort: layers.UDPPort(p.sport), DstPort: layers.UDPPort(p.dport)}
		u.SetNetworkLayerForChecksum(ip)
		return []gopacket.SerializableLayer{ip, u, pl}
	case layers.IPProtocolTCP:
		tc := &layers.TCP{SrcPort: layers.TCPPort(p.sport), DstPort: layers.TCPPort(p.dport), SYN: p.syn, ACK: !p.syn, Window: 1000, Seq: 1}
		if p.mss != 0 {
			tc.Options = []layers.TCPOption{{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: []byte{byte(p.mss >> 8), byte(p.mss)}}}
		}
		tc.SetNetworkLayerForChecksum(ip)
		return []gopacket.SerializableLayer{ip, tc, pl}
	case layers.IPProtocolICMPv4:
		ic := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(p.icmpType, 0), Id: p.icmpID, Seq: 1}
		return []gopacket.SerializableLayer{ip, ic, pl}
	}
	t.Fatalf("proto %v", p.proto)
	return nil
}

// lanFrame builds an Ethernet frame from the LAN host to the router.
func lanFrame(t testing.TB, p pkt) []byte {
	eth := &layers.Ethernet{SrcMAC: hostMAC[:], DstMAC: routerMAC[:], EthernetType: layers.EthernetTypeIPv4}
	return serialize(t, append([]gopacket.SerializableLayer{eth}, p.layers(t)...)...)
}

// wanFrame builds a PPPoE session frame from the AC.
func wanFrame(t testing.TB, p pkt) []byte { return wanIPFrame(t, serialize(t, p.layers(t)...)) }

// wanIPFrame wraps an IPv4 packet in a PPPoE session frame from the AC.
func wanIPFrame(t testing.TB, ipb []byte) []byte {
	f := nic.NewFrame()
	f.SetData(ipb)
	if !testSession().Encap(f) {
		t.Fatal("encap")
	}
	b := append([]byte(nil), f.Data()...)
	// From the AC to us: swap the MACs Encap wrote for the uplink.
	copy(b[0:6], wanMAC[:])
	copy(b[6:12], acMAC[:])
	return b
}

// decodeIPv4 checks every checksum of an IPv4 packet and returns its layers.
func decodeIPv4(t testing.TB, b []byte) gopacket.Packet {
	t.Helper()
	ip := hdr.IPv4(b)
	if !ip.IsValid() {
		t.Fatalf("invalid IPv4 %x", b)
	}
	if !ip.HeaderChecksumOK() {
		t.Fatalf("bad IPv4 header checksum")
	}
	pl := ip.Payload()
	switch ip.Protocol() {
	case hdr.ProtoTCP, hdr.ProtoUDP:
		if ip.Protocol() == hdr.ProtoUDP && hdr.UDP(pl).Checksum() == 0 {
			break
		}
		s := hdr.PseudoSum(b[12:16], b[16:20], ip.Protocol(), len(pl))
		if hdr.Fold(hdr.Sum(pl, s)) != 0xffff {
			t.Fatalf("bad L4 checksum (proto %d)", ip.Protocol())
		}
	case hdr.ProtoICMP:
		if hdr.Fold(hdr.Sum(pl, 0)) != 0xffff {
			t.Fatalf("bad ICMP checksum")
		}
	}
	return gopacket.NewPacket(b, layers.LayerTypeIPv4, gopacket.Default)
}

// pppoePayload checks the PPPoE framing of an uplink frame and returns the IP packet.
func pppoePayload(t testing.TB, b []byte) []byte {
	t.Helper()
	p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	po, _ := p.Layer(layers.LayerTypePPPoE).(*layers.PPPoE)
	ppp, _ := p.Layer(layers.LayerTypePPP).(*layers.PPP)
	if eth == nil || po == nil || ppp == nil {
		t.Fatalf("not a PPPoE frame: %v", p)
	}
	if [6]byte(eth.DstMAC) != acMAC || [6]byte(eth.SrcMAC) != wanMAC {
		t.Fatalf("MACs %v -> %v", eth.SrcMAC, eth.DstMAC)
	}
	if po.SessionId != sessionID || po.Code != 0 || ppp.PPPType != layers.PPPTypeIPv4 {
		t.Fatalf("PPPoE header %+v %v", po, ppp.PPPType)
	}
	ipb := b[22:]
	if int(po.Length) != len(ipb)+2 {
		t.Fatalf("PPPoE length %d for %d bytes", po.Length, len(ipb))
	}
	return ipb
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }

// testClock is a manual clock (the shaper's own ManualClock works too).
type testClock struct{ t int64 }

func (c *testClock) Now() int64 { return c.t }
