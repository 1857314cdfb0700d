package pppoe

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"go.uber.org/goleak"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// Fixtures: frames as tshark decodes them.
var (
	// Ethernet II, Src: 02:00:00:00:00:01, Dst: ff:ff:ff:ff:ff:ff, Type: PPPoED (0x8863)
	// PPP-over-Ethernet Discovery, Version 1 Type 1 Code Active Discovery Initiation (PADI)
	//   Session ID: 0x0000, Payload Length: 12
	//   PPPoE Tags: Service-Name (empty), Host-Uniq: deadbeef
	fixPADI = []byte{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x63,
		0x11, 0x09, 0x00, 0x00, 0x00, 0x0c,
		0x01, 0x01, 0x00, 0x00,
		0x01, 0x03, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef,
	}
	// Ethernet II, Src: 02:00:00:00:00:02, Dst: 02:00:00:00:00:01, 802.1Q VLAN PRI 5 ID 7, Type: PPPoED
	// PPP-over-Ethernet Discovery, Code Active Discovery Session-confirmation (PADS)
	//   Session ID: 0x0011, Payload Length: 10
	//   PPPoE Tags: Service-Name (empty), AC-Name: ac
	fixPADS = []byte{
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x81, 0x00, 0xa0, 0x07, 0x88, 0x63,
		0x11, 0x65, 0x00, 0x11, 0x00, 0x0a,
		0x01, 0x01, 0x00, 0x00,
		0x01, 0x02, 0x00, 0x02, 'a', 'c',
	}
	// Ethernet II, Type: PPPoES (0x8864); PPP-over-Ethernet Session, Session ID: 0x0011, Payload Length: 16
	// Point-to-Point Protocol, Protocol: Link Control Protocol (0xc021)
	// PPP Link Control Protocol, Code: Configuration Request (1), Identifier: 1, Length: 14
	//   Maximum Receive Unit: 1492; Magic Number: 0x11223344
	fixLCPConfReq = []byte{
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x64,
		0x11, 0x00, 0x00, 0x11, 0x00, 0x10,
		0xc0, 0x21,
		0x01, 0x01, 0x00, 0x0e, 0x01, 0x04, 0x05, 0xd4, 0x05, 0x06, 0x11, 0x22, 0x33, 0x44,
	}
	// ... Protocol: Password Authentication Protocol (0xc023)
	// PPP PAP, Code: Authenticate-Request (1), Identifier: 2, Length: 14; Peer-ID: alice, Password: pwd
	fixPAPReq = []byte{
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x64,
		0x11, 0x00, 0x00, 0x11, 0x00, 0x10,
		0xc0, 0x23,
		0x01, 0x02, 0x00, 0x0e, 0x05, 'a', 'l', 'i', 'c', 'e', 0x03, 'p', 'w', 'd',
	}
	// ... Protocol: Challenge Handshake Authentication Protocol (0xc223)
	// PPP CHAP, Code: Challenge (1), Identifier: 1, Length: 11; Value: aabbccdd, Name: ac
	fixCHAPChal = []byte{
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x88, 0x64,
		0x11, 0x00, 0x00, 0x11, 0x00, 0x0d,
		0xc2, 0x23,
		0x01, 0x01, 0x00, 0x0b, 0x04, 0xaa, 0xbb, 0xcc, 0xdd, 'a', 'c',
	}
	// ... Protocol: Internet Protocol Control Protocol (0x8021)
	// PPP IPCP, Configuration Request (1), Identifier: 1, Length: 22
	//   IP Address: 0.0.0.0; Primary DNS: 0.0.0.0; Secondary DNS: 0.0.0.0
	fixIPCPConfReq = []byte{
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x64,
		0x11, 0x00, 0x00, 0x11, 0x00, 0x18,
		0x80, 0x21,
		0x01, 0x01, 0x00, 0x16, 0x03, 0x06, 0, 0, 0, 0, 0x81, 0x06, 0, 0, 0, 0, 0x83, 0x06, 0, 0, 0, 0,
	}
)

func TestFixtures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     []byte
		code  uint8
		sid   uint16
		vlan  uint16
		proto uint16 // PPP protocol for session frames
	}{
		{"PADI", fixPADI, CodePADI, 0, 0, 0},
		{"PADS", fixPADS, CodePADS, 0x11, 7, 0},
		{"LCP", fixLCPConfReq, CodeSession, 0x11, 0, pppLCP},
		{"PAP", fixPAPReq, CodeSession, 0x11, 0, pppPAP},
		{"CHAP", fixCHAPChal, CodeSession, 0x11, 0, pppCHAP},
		{"IPCP", fixIPCPConfReq, CodeSession, 0x11, 0, pppIPCP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFrame(tc.b)
			if err != nil || f.Code != tc.code || f.SessionID != tc.sid || f.VLAN != tc.vlan {
				t.Fatalf("ParseFrame: %+v, %v", f, err)
			}
			// gopacket decodes the same fields.
			// (gopacket has no decoder for discovery tags or PPP control
			// payloads: it stops there with a DecodeFailure layer.)
			pkt := gopacket.NewPacket(tc.b, layers.LayerTypeEthernet, gopacket.Default)
			pl, _ := pkt.Layer(layers.LayerTypePPPoE).(*layers.PPPoE)
			if pl == nil || uint8(pl.Code) != tc.code || pl.SessionId != tc.sid || int(pl.Length) != len(f.Payload) {
				t.Fatalf("gopacket PPPoE %+v", pl)
			}
			if tc.code != CodeSession {
				d, err := ParseDiscovery(f.PPPoE)
				if err != nil || !bytes.Equal(d.Append(nil), f.PPPoE) {
					t.Fatalf("discovery round trip: %v", err)
				}
				return
			}
			pp, _ := pkt.Layer(layers.LayerTypePPP).(*layers.PPP)
			if pp == nil || uint16(pp.PPPType) != tc.proto || be16(f.Payload) != tc.proto {
				t.Fatalf("gopacket PPP %+v", pp)
			}
			cp, err := ParseControl(f.Payload[2:])
			if err != nil || !bytes.Equal(cp.Append(nil), f.Payload[2:]) {
				t.Fatalf("control round trip: %v", err)
			}
			switch tc.proto {
			case pppPAP:
				r, err := ParsePAPRequest(cp.Data)
				if err != nil || string(r.PeerID) != "alice" || string(r.Password) != "pwd" {
					t.Fatalf("PAP %q %q %v", r.PeerID, r.Password, err)
				}
			case pppCHAP:
				v, err := ParseCHAPValue(cp.Data)
				if err != nil || !bytes.Equal(v.Value, []byte{0xaa, 0xbb, 0xcc, 0xdd}) || string(v.Name) != "ac" {
					t.Fatalf("CHAP %x %q %v", v.Value, v.Name, err)
				}
			default:
				opts, err := ParseOptions(cp.Data)
				if err != nil || len(opts) < 2 || !bytes.Equal(AppendOptions(nil, opts), cp.Data) {
					t.Fatalf("options %v %v", opts, err)
				}
			}
		})
	}
}

// Every frame of a full simulated session decodes cleanly with gopacket.
func TestSimCaptureDecodes(t *testing.T) {
	p := newSimPair(t, func(c *ClientConfig) { c.Auth = AuthPAP; c.IPv6 = true }, func(s *ServerConfig) { s.Auth = AuthPAP; s.IPv6 = true })
	p.waitUp(t, time.Minute)
	p.net.run(time.Minute, nil)
	for i, f := range p.net.sent {
		pkt := gopacket.NewPacket(f.b, layers.LayerTypeEthernet, gopacket.Default)
		pl, _ := pkt.Layer(layers.LayerTypePPPoE).(*layers.PPPoE)
		fr, err := ParseFrame(f.b)
		if pl == nil || err != nil || uint8(pl.Code) != fr.Code || pl.SessionId != fr.SessionID || int(pl.Length) != len(fr.Payload) {
			t.Fatalf("frame %d % x: gopacket %+v, ours %+v %v", i, f.b, pl, fr, err)
		}
		if fr.Code == CodeSession {
			if pp, _ := pkt.Layer(layers.LayerTypePPP).(*layers.PPP); pp == nil || uint16(pp.PPPType) != be16(fr.Payload) {
				t.Fatalf("frame %d: gopacket PPP %+v", i, pp)
			}
			if _, err := ParseControl(fr.Payload[2:]); err != nil && be16(fr.Payload) != pppIPv4 {
				t.Fatalf("frame %d: %v", i, err)
			}
		} else if _, err := ParseDiscovery(fr.PPPoE); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
}

func FuzzDiscovery(f *testing.F) {
	f.Add(fixPADI[14:])
	f.Add(fixPADS[18:])
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDiscovery(b)
		if err != nil {
			return
		}
		enc := d.Append(nil)
		d2, err := ParseDiscovery(enc)
		if err != nil || d2.Code != d.Code || d2.SessionID != d.SessionID || len(d2.Tags) != len(d.Tags) {
			t.Fatalf("round trip: %v", err)
		}
		for i := range d.Tags {
			if d.Tags[i].Type != d2.Tags[i].Type || !bytes.Equal(d.Tags[i].Value, d2.Tags[i].Value) {
				t.Fatalf("tag %d differs", i)
			}
		}
	})
}

func FuzzControlOptions(f *testing.F) {
	f.Add(fixLCPConfReq[22:])
	f.Add(fixIPCPConfReq[22:])
	f.Add([]byte{ConfReq, 1, 0, 8, OptAuthProto, 4, 0xc0, 0x23})    // PAP: the downgrade guard
	f.Add([]byte{ConfReq, 1, 0, 10, OptIPAddress, 6, 127, 0, 0, 1}) // a refused address
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseControl(b)
		if err != nil {
			return
		}
		enc := p.Append(nil)
		if !bytes.Equal(enc, b[:len(enc)]) {
			t.Fatalf("control re-encode % x != % x", enc, b)
		}
		opts, err := ParseOptions(p.Data)
		if err != nil {
			return
		}
		if !bytes.Equal(AppendOptions(nil, opts), p.Data) {
			t.Fatal("options re-encode differs")
		}
		// The negotiation handlers never panic on decoded options.
		cfg := &linkConfig{role: roleClient, mru: 1492, auth: AuthAny, rand: func() uint64 { return 7 }}
		l := newLink(cfg, nil, time.Time{})
		(*lcpHandler)(l).reqCI(opts, p.Data, nil, false)
		(*ipcpHandler)(l).reqCI(opts, p.Data, nil, true)
		(*ipv6cpHandler)(l).reqCI(opts, p.Data, nil, false)
		(*lcpHandler)(l).nakCI(opts)
		(*ipcpHandler)(l).nakCI(opts)
	})
}

func FuzzAuth(f *testing.F) {
	f.Add(fixPAPReq[26:])
	f.Add(fixCHAPChal[26:])
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParsePAPRequest(b); err == nil {
			r2, err := ParsePAPRequest(r.Append(nil))
			if err != nil || !bytes.Equal(r.PeerID, r2.PeerID) || !bytes.Equal(r.Password, r2.Password) {
				t.Fatal("PAP round trip")
			}
		}
		if v, err := ParseCHAPValue(b); err == nil {
			v2, err := ParseCHAPValue(v.Append(nil))
			if err != nil || !bytes.Equal(v.Value, v2.Value) || !bytes.Equal(v.Name, v2.Name) {
				t.Fatal("CHAP round trip")
			}
		}
		if m, err := ParsePAPMessage(b); err == nil && len(m) != int(b[0]) {
			t.Fatal("PAP message length")
		}
	})
}

// FuzzClientInput feeds arbitrary frames to an established client: it
// must never panic, and frames not from its AC must not end the session.
func FuzzClientInput(f *testing.F) {
	f.Add(fixLCPConfReq)
	f.Add(fixPADS)
	f.Add(fixIPCPConfReq)
	f.Fuzz(func(t *testing.T, b []byte) {
		p := newSimPair(t, nil, nil)
		p.waitUp(t, time.Minute)
		s := p.c.Session()
		if len(b) >= 12 {
			copy(b[6:12], []byte{2, 9, 9, 9, 9, 9}) // foreign source
		}
		p.net.inject(b)
		p.net.run(time.Millisecond, nil)
		if !p.up() || p.c.Session() != s {
			t.Fatal("a foreign frame changed the session")
		}
	})
}

func TestEncapDecap(t *testing.T) {
	for _, vlan := range []uint16{0, 7} {
		s := &hdr.Session{ID: 0x11, LocalMAC: [6]byte{2, 0, 0, 0, 0, 1}, PeerMAC: [6]byte{2, 0, 0, 0, 0, 2}, VLAN: vlan, VLANPrio: 5}
		ip := ipv4Packet(1, 2, "payload")
		f := nic.NewFrame()
		f.SetData(ip)
		if !s.Encap(f) {
			t.Fatal("Encap failed")
		}
		fr, err := ParseFrame(f.Data())
		if err != nil || fr.VLAN != vlan || fr.SessionID != 0x11 || be16(fr.Payload) != pppIPv4 || !bytes.Equal(fr.Payload[2:], ip) {
			t.Fatalf("encapsulated %+v %v", fr, err)
		}
		if vlan != 0 && fr.VLANPrio != 5 {
			t.Fatalf("prio %d", fr.VLANPrio)
		}
		// The peer's view: swap MACs and decap.
		peer := *s
		peer.LocalMAC, peer.PeerMAC = s.PeerMAC, s.LocalMAC
		if r := peer.Decap(f); r != hdr.DecapIPv4 || !bytes.Equal(f.Data(), ip) {
			t.Fatalf("vlan %d: Decap %v", vlan, r)
		}
		other := peer
		other.ID++
		f.SetData(ip)
		s.Encap(f)
		if r := other.Decap(f); r != hdr.DecapWrongSession {
			t.Fatalf("other session: %v", r)
		}
	}
	ctl := newTestFrame(fixLCPConfReq)
	s := &hdr.Session{ID: 0x11, PeerMAC: [6]byte{2, 0, 0, 0, 0, 1}}
	if r := s.Decap(ctl); r != hdr.DecapControl {
		t.Fatalf("LCP frame: %v", r)
	}
}

func TestEncapDecapAllocs(t *testing.T) {
	s := &hdr.Session{ID: 0x11, LocalMAC: [6]byte{2, 0, 0, 0, 0, 1}, PeerMAC: [6]byte{2, 0, 0, 0, 0, 1}, VLAN: 7}
	ip := ipv4Packet(1, 2, "payload")
	f := nic.NewFrame()
	if n := testing.AllocsPerRun(1000, func() {
		f.SetData(ip)
		s.Encap(f)
		s.Decap(f)
	}); n != 0 {
		t.Fatalf("%v allocs per Encap+Decap", n)
	}
}

func BenchmarkEncapDecap(b *testing.B) {
	s := &hdr.Session{ID: 0x11, LocalMAC: [6]byte{2, 0, 0, 0, 0, 1}, PeerMAC: [6]byte{2, 0, 0, 0, 0, 1}}
	ip := ipv4Packet(1, 2, "payload")
	f := nic.NewFrame()
	b.ReportAllocs()
	for b.Loop() {
		f.Off, f.Len = nic.Headroom, copy(f.Buf[nic.Headroom:], ip)
		s.Encap(f)
		if s.Decap(f) != hdr.DecapIPv4 {
			b.Fatal("decap")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
}

// TestRunOverPipe runs the real Run loops (goroutines, wall clock) of a
// client and an AC over Pipe, then shuts both down without leaks.
func TestRunOverPipe(t *testing.T) {
	defer goleak.VerifyNone(t)
	a, b := Pipe()
	defer a.Close()
	defer b.Close()
	srv := NewServer(ServerConfig{Auth: AuthCHAPMD5, Users: map[string]string{testUser: testPass},
		LocalAddr: srvAddr, PoolFirst: poolLo, PoolLast: poolHi, RestartTimer: 200 * time.Millisecond}, b)
	ups := make(chan *hdr.Session, 8)
	cli := NewClient(ClientConfig{Username: testUser, Password: testPass, PADOWait: time.Millisecond,
		RestartTimer: 200 * time.Millisecond, EchoInterval: 50 * time.Millisecond, TerminateTimeout: 500 * time.Millisecond},
		a, func(s *hdr.Session) { ups <- s })
	sctx, scancel := context.WithCancel(context.Background())
	cctx, ccancel := context.WithCancel(context.Background())
	serr, cerr := make(chan error, 1), make(chan error, 1)
	go func() { serr <- srv.Run(sctx) }()
	go func() { cerr <- cli.Run(cctx) }()
	var s *hdr.Session
	select {
	case s = <-ups:
	case <-time.After(10 * time.Second):
		t.Fatalf("not up: %+v", cli.Status())
	}
	if s == nil || s.LocalAddr != poolLo || s.MTU != 1492 {
		t.Fatalf("session %+v", s)
	}
	time.Sleep(200 * time.Millisecond)
	if st := cli.Status(); st.Counters.EchoReplies == 0 || st.EchoRTT <= 0 {
		t.Errorf("no echo replies / RTT: %+v", st.Counters)
	}
	ccancel()
	if err := <-cerr; err != nil {
		t.Fatal(err)
	}
	if cli.Session() != nil {
		t.Fatal("session still published after Run returned")
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(srv.Sessions()) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(srv.Sessions()) != 0 || srv.Counters().PADTReceived+srv.Counters().PADTSent == 0 {
		t.Fatalf("AC still holds %v", srv.Sessions())
	}
	scancel()
	if err := <-serr; err != nil {
		t.Fatal(err)
	}
}

var _ = hdr.EthernetLen
