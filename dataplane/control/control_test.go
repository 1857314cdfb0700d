package control

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic/memport"
	"github.com/pppfwd/pppfwd/pppoe"
)

// TestControlPlaneSession runs pppfwd's PPPoE client through the engine's
// WAN port (control frames steered to the control plane, written back via
// worker 0) against the access concentrator on the far side of the wire,
// then passes data both ways through the fast path and checks the
// router's ARP and ICMP echo answers on the LAN.
func TestControlPlaneSession(t *testing.T) {
	lan := memport.New("lan", 1, 256)
	wan := memport.New("wan", 1, 256)
	ac := memport.New("ac", 1, 256)
	memport.Pair(wan, ac)
	e, err := dataplane.New(dataplane.Config{Workers: 1, LAN: lan, WAN: wan, RouterMAC: routerMAC,
		RouterAddr: routerIP, LANNet: lanNet, LANBits: 24})
	if err != nil {
		t.Fatal(err)
	}
	ctl := New(e, Config{WANMAC: wanMAC})
	var mu sync.Mutex
	var delivered [][]byte
	srv := pppoe.NewServer(pppoe.ServerConfig{Users: map[string]string{"user": "secret"},
		LocalAddr: peerIP, PoolFirst: pubIP, PoolLast: pubIP, DNS: [2]uint32{ip4(192, 0, 2, 53)},
		Deliver: func(_ pppoe.SessionInfo, ip []byte) {
			mu.Lock()
			delivered = append(delivered, append([]byte(nil), ip...))
			mu.Unlock()
		}}, memport.NewConn(ac, 0, acMAC))
	cli := pppoe.NewClient(pppoe.ClientConfig{Username: "user", Password: "secret", PADOWait: -1},
		ctl.WANConn(), func(s *hdr.Session) {
			if s != nil {
				c := *s
				c.LocalMAC = wanMAC
				s = &c
			}
			e.SetSession(s)
		})
	startWith(t, e, ctl.Run, srv.Run, cli.Run)
	waitFor(t, "session up", 10*time.Second, func() bool { return e.Session() != nil })
	s := e.Session()
	if s.LocalAddr != pubIP || s.PeerMAC != acMAC || cli.Status().DNS[0] != ip4(192, 0, 2, 53) {
		t.Fatalf("session %+v status %+v", s, cli.Status())
	}

	// LAN host asks for the gateway's MAC: answered and learned.
	lan.Inject(0, arpFrame(1, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, hostMAC, hostIP, routerIP))
	var arpReply []byte
	waitFor(t, "ARP reply", 5*time.Second, func() bool {
		lan.Drain(0, func(b []byte) {
			if hdr.Ethernet(b).Type() == hdr.EtherTypeARP {
				arpReply = append([]byte(nil), b...)
			}
		})
		return arpReply != nil
	})
	if [6]byte(arpReply[0:6]) != hostMAC || binary.BigEndian.Uint16(arpReply[20:]) != 2 || [6]byte(arpReply[22:28]) != routerMAC {
		t.Fatalf("ARP reply %x", arpReply)
	}
	if _, ok := e.Neighbors().Lookup(hostIP); !ok {
		t.Fatal("host not learned from its ARP request")
	}

	// Uplink UDP reaches the AC translated to the session address.
	lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 5353, dport: 53, proto: layers.IPProtocolUDP, payload: 30}))
	var up []byte
	waitFor(t, "uplink at the AC", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(delivered) > 0 {
			up = delivered[0]
		}
		return up != nil
	})
	if hdr.IPv4(up).Src() != pubIP {
		t.Fatalf("uplink source %x", hdr.IPv4(up).Src())
	}
	ext := binary.BigEndian.Uint16(up[20:])
	// The AC answers; the reply reaches the LAN host.
	reply := serialize(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 60}.layers(t)...)
	if err := srv.SendIPv4(reply); err != nil {
		t.Fatal(err)
	}
	var down []byte
	waitFor(t, "downlink at the LAN host", 5*time.Second, func() bool {
		lan.Drain(0, func(b []byte) {
			if hdr.Ethernet(b).Type() == hdr.EtherTypeIPv4 {
				down = append([]byte(nil), b...)
			}
		})
		return down != nil
	})
	p := decodeIPv4(t, down[14:])
	if u := p.Layer(layers.LayerTypeUDP).(*layers.UDP); u.DstPort != 5353 || [6]byte(down[0:6]) != hostMAC {
		t.Fatalf("downlink to port %d mac %x", u.DstPort, down[0:6])
	}

	// The router answers ping on its LAN address.
	lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: routerIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 9, payload: 16}))
	var echo []byte
	waitFor(t, "echo reply", 5*time.Second, func() bool {
		lan.Drain(0, func(b []byte) {
			if hdr.Ethernet(b).Type() == hdr.EtherTypeIPv4 {
				echo = append([]byte(nil), b...)
			}
		})
		return echo != nil
	})
	p = decodeIPv4(t, echo[14:])
	if ic := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ic.TypeCode.Type() != 0 || ic.Id != 9 {
		t.Fatalf("echo reply %v", ic)
	}
	if st := ctl.Stats(); st.ARPReplies != 1 || st.EchoReplies != 1 || st.WANFrames == 0 {
		t.Fatalf("control stats %+v", st)
	}
}
