package pipeline

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// Addresses of the synthetic topology (documentation ranges).
var (
	RouterMAC  = [6]byte{0x02, 0x50, 0x50, 0, 0, 0x01}
	WANMAC     = [6]byte{0x02, 0x50, 0x50, 0, 0, 0x02}
	ACMAC      = [6]byte{0x02, 0x50, 0x50, 0, 0, 0x03}
	RouterAddr = ipv4(192, 168, 0, 1)
	LANNet     = ipv4(192, 168, 0, 0)
	LANBits    = 16
	PublicAddr = ipv4(198, 51, 100, 7)
	PeerAddr   = ipv4(198, 51, 100, 1)
)

const sessionID = 0x2a2a

func ipv4(a, b, c, d byte) uint32 { return uint32(a)<<24 | uint32(b)<<16 | uint32(c)<<8 | uint32(d) }

func netIP(a uint32) net.IP { return net.IPv4(byte(a>>24), byte(a>>16), byte(a>>8), byte(a)).To4() }

// Session is the synthetic PPPoE session.
func Session() *hdr.Session {
	return &hdr.Session{ID: sessionID, LocalMAC: WANMAC, PeerMAC: ACMAC,
		LocalAddr: PublicAddr, PeerAddr: PeerAddr, MTU: 1492, Gen: 1}
}

// Sizes returns the LAN frame sizes (Ethernet, without FCS) of a size
// spec: "64", "1500", any number, or "imix" (7:4:1 of 64, 576, 1500).
func Sizes(spec string) ([]int, error) {
	if spec == "imix" {
		return []int{64, 64, 64, 576, 64, 64, 576, 64, 1500, 64, 576, 576}, nil
	}
	var n int
	if _, err := fmt.Sscanf(spec, "%d", &n); err != nil || n < 64 || n > 1506 {
		return nil, fmt.Errorf("size %q: want 64..1506 or imix", spec)
	}
	return []int{n}, nil
}

// Flow is one UDP flow of the synthetic traffic.
type Flow struct {
	Host, Remote uint32
	HostMAC      [6]byte
	SrcPort      uint16
	DstPort      uint16
}

// Flows returns n distinct flows from up to 4096 LAN hosts. Flow i comes
// from host i%4096; its source port spreads the flows evenly over the
// port owners (nat.PortOwner: port/2 mod workers) for any worker count up
// to 16, as real clients' random ports do, and is distinct among one
// host's flows.
func Flows(n int) []Flow {
	out := make([]Flow, n)
	for i := range out {
		h, k := i%4096, i/4096
		out[i] = Flow{
			Host:    LANNet | uint32(2+h),
			HostMAC: [6]byte{0x02, 0x60, 0, 0, byte(h >> 8), byte(h)},
			Remote:  ipv4(203, 0, 113, byte(1+i%200)),
			SrcPort: flowPort(h, k),
			DstPort: uint16(443 + i%7),
		}
	}
	return out
}

// flowPort is the source port of host h's k-th flow: port/2 runs through
// 16 consecutive values as h does (so owners alternate), and differs for
// each k of one host.
func flowPort(h, k int) uint16 {
	return uint16(20000 + 2*((h+k)%16) + 32*(k/16))
}

func udpLayers(src, dst uint32, sport, dport uint16, ipLen int) []gopacket.SerializableLayer {
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: netIP(src), DstIP: netIP(dst), Flags: layers.IPv4DontFragment}
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	_ = u.SetNetworkLayerForChecksum(ip)
	pl := ipLen - 28
	if pl < 0 {
		pl = 0
	}
	return []gopacket.SerializableLayer{ip, u, gopacket.Payload(make([]byte, pl))}
}

func serialize(ls ...gopacket.SerializableLayer) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...)
	return append([]byte(nil), buf.Bytes()...), err
}

// LANFrame builds flow f's uplink frame of frameLen bytes.
func LANFrame(f Flow, frameLen int) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: f.HostMAC[:], DstMAC: RouterMAC[:], EthernetType: layers.EthernetTypeIPv4}
	return serialize(append([]gopacket.SerializableLayer{eth}, udpLayers(f.Host, f.Remote, f.SrcPort, f.DstPort, frameLen-14)...)...)
}

// WANFrame builds the downlink PPPoE frame answering flow f at external
// port ext, carrying an IP packet as long as the uplink frameLen's.
func WANFrame(f Flow, ext uint16, frameLen int) ([]byte, error) {
	ipb, err := serialize(udpLayers(f.Remote, PublicAddr, f.DstPort, ext, frameLen-14)...)
	if err != nil {
		return nil, err
	}
	fr := nic.NewFrame()
	fr.SetData(ipb)
	if !Session().Encap(fr) {
		return nil, fmt.Errorf("encap")
	}
	b := append([]byte(nil), fr.Data()...)
	copy(b[0:6], WANMAC[:])
	copy(b[6:12], ACMAC[:])
	return b, nil
}

// IPv6 addressing of the synthetic topology: the LAN prefix and the
// remote side (documentation prefix).
var (
	LAN6Prefix = [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0x01, 0, 0x01}
	Remote6    = [16]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff}
)

// Addr6 returns flow f's LAN host (interface id from its IPv4 host
// number) and remote address in IPv6.
func (f Flow) Addr6() (host, remote [16]byte) {
	host, remote = LAN6Prefix, Remote6
	binary.BigEndian.PutUint32(host[12:], f.Host)
	binary.BigEndian.PutUint32(remote[12:], f.Remote)
	return host, remote
}

func udp6Layers(src, dst [16]byte, sport, dport uint16, ipLen int) []gopacket.SerializableLayer {
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: src[:], DstIP: dst[:]}
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	_ = u.SetNetworkLayerForChecksum(ip)
	return []gopacket.SerializableLayer{ip, u, gopacket.Payload(make([]byte, max(ipLen-48, 0)))}
}

// LANFrame6 builds flow f's IPv6 uplink frame of frameLen bytes.
func LANFrame6(f Flow, frameLen int) ([]byte, error) {
	host, remote := f.Addr6()
	eth := &layers.Ethernet{SrcMAC: f.HostMAC[:], DstMAC: RouterMAC[:], EthernetType: layers.EthernetTypeIPv6}
	return serialize(append([]gopacket.SerializableLayer{eth}, udp6Layers(host, remote, f.SrcPort, f.DstPort, frameLen-14)...)...)
}

// WANFrame6 builds the IPv6 downlink PPPoE frame answering flow f.
func WANFrame6(f Flow, frameLen int) ([]byte, error) {
	host, remote := f.Addr6()
	ipb, err := serialize(udp6Layers(remote, host, f.DstPort, f.SrcPort, frameLen-14)...)
	if err != nil {
		return nil, err
	}
	fr := nic.NewFrame()
	fr.SetData(ipb)
	s := Session()
	s.IPv6 = true
	if !s.Encap(fr) {
		return nil, fmt.Errorf("encap")
	}
	b := append([]byte(nil), fr.Data()...)
	copy(b[0:6], WANMAC[:])
	copy(b[6:12], ACMAC[:])
	return b, nil
}
