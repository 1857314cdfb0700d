package pppoe

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// The scripted AC of FuzzClientSession and TestClientSessionScript.
var (
	scriptAC  = [6]byte{2, 0xac, 0, 0, 0, 1}
	scriptSID = uint16(0x2a2a)
)

func sessFrame(dst, src [6]byte, sid uint16, ppp []byte) []byte {
	b := appendEthernet(nil, dst, src, 0, 0, hdr.EtherTypePPPoESess)
	b = append(b, 0x11, 0, byte(sid>>8), byte(sid), byte(len(ppp)>>8), byte(len(ppp)))
	return append(b, ppp...)
}

func discFrame(dst, src [6]byte, code uint8, sid uint16, tags []byte) []byte {
	b := appendEthernet(nil, dst, src, 0, 0, hdr.EtherTypePPPoEDisc)
	b = append(b, 0x11, code, byte(sid>>8), byte(sid), byte(len(tags)>>8), byte(len(tags)))
	return append(b, tags...)
}

// tagBytes is the wire form of discovery tags.
func tagBytes(tags ...Tag) []byte {
	d := Discovery{Tags: tags}
	return d.Append(nil)[hdr.PPPoELen:]
}

// clientSession is a client brought to the session stage (LCP) by a
// scripted AC, for the script ops of runOps.
type clientSession struct {
	n    *simNet
	cn   *simNode
	c    *Client
	hu   []byte
	sids map[uint16]bool // session ids the AC gave in PADS
}

func newClientSession(t testing.TB) *clientSession {
	n, cn, c, hu := scriptedClient(t, func(cc *ClientConfig) { cc.IPv6 = true })
	n.inject(pado(cn.mac, scriptAC, "ac", hu, nil))
	n.run(time.Second, func() bool { return c.st.State == StateRequest })
	tags := tagBytes(Tag{TagServiceName, nil}, Tag{TagHostUniq, hu})
	n.inject(discFrame(cn.mac, scriptAC, CodePADS, scriptSID, tags))
	n.run(time.Millisecond, nil)
	if c.st.State != StateLCP || c.st.SessionID != scriptSID || c.link == nil {
		t.Fatalf("not at the session stage: %v %#x", c.st.State, c.st.SessionID)
	}
	return &clientSession{n: n, cn: cn, c: c, hu: hu, sids: map[uint16]bool{scriptSID: true}}
}

// lastSent returns the client's last PPP control packet of proto whose
// code is in codes (nil: none).
func (cs *clientSession) lastSent(proto uint16, codes ...uint8) []byte {
	for i := len(cs.n.sent) - 1; i >= 0; i-- {
		f := cs.n.sent[i]
		if f.from != cs.cn {
			continue
		}
		fr, err := ParseFrame(f.b)
		if err != nil || fr.EtherType != hdr.EtherTypePPPoESess || len(fr.Payload) < 6 || be16(fr.Payload) != proto {
			continue
		}
		if bytes.IndexByte(codes, fr.Payload[2]) >= 0 {
			return fr.Payload[2:]
		}
	}
	return nil
}

func (cs *clientSession) ppp(proto uint16, code, id uint8, data []byte) {
	b := []byte{byte(proto >> 8), byte(proto), code, id, 0, 0}
	b = append(b, data...)
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)-2))
	cs.n.inject(sessFrame(cs.cn.mac, scriptAC, scriptSID, b))
}

var scriptProtos = [...]uint16{pppLCP, pppIPCP, pppIPv6CP, pppPAP, pppCHAP}

// Script ops, one byte each followed by their arguments; a byte string
// argument is a length byte and that many bytes.
const (
	opRawPPP    = iota // PPP payload (protocol + information) in a session frame from the AC
	opControl          // protocol index, code, id, data: a control packet, length filled in
	opReplyReq         // protocol index (LCP/IPCP/IPv6CP), code (Ack/Nak/Rej), options: answers the client's last Configure-Request (Ack: its options)
	opAuthOK           // success flag, message: CHAP Success/Failure or PAP Ack/Nak for the client's last Response/Request
	opDiscovery        // code, flags (1: our session id, 2: add Host-Uniq), 2-byte session id, tags
	opWait             // n: the clock moves n*250ms, timers run
	numOps
)

// runOps plays a script against the client; check runs after every op.
func (cs *clientSession) runOps(script []byte, check func()) {
	take := func(n int) []byte {
		n = min(n, len(script))
		b := script[:n]
		script = script[n:]
		return b
	}
	arg := func() byte {
		if b := take(1); len(b) == 1 {
			return b[0]
		}
		return 0
	}
	str := func() []byte { return take(int(arg())) }
	for len(script) > 0 {
		switch arg() % numOps {
		case opRawPPP:
			cs.n.inject(sessFrame(cs.cn.mac, scriptAC, scriptSID, str()))
		case opControl:
			proto := scriptProtos[int(arg())%len(scriptProtos)]
			code, id := arg(), arg()
			cs.ppp(proto, code, id, str())
		case opReplyReq:
			proto := scriptProtos[int(arg())%3]
			code := ConfAck + arg()%3
			opts := str()
			if req := cs.lastSent(proto, ConfReq); req != nil {
				if code == ConfAck {
					opts = req[4:]
				}
				cs.ppp(proto, code, req[1], opts)
			}
		case opAuthOK:
			ok := arg()&1 == 1
			msg := str()
			if r := cs.lastSent(pppCHAP, CHAPResp); r != nil {
				cs.ppp(pppCHAP, map[bool]uint8{true: CHAPSucc, false: CHAPFail}[ok], r[1], msg)
			} else if r := cs.lastSent(pppPAP, PAPReq); r != nil {
				cs.ppp(pppPAP, map[bool]uint8{true: PAPAck, false: PAPNak}[ok], r[1], append([]byte{byte(len(msg))}, msg...))
			}
		case opDiscovery:
			code, flags := arg(), arg()
			sid := binary.BigEndian.Uint16(append(take(2), 0, 0))
			if flags&1 != 0 {
				sid = scriptSID
			}
			tags := str()
			if flags&2 != 0 && cs.c.hostUniq != nil {
				tags = append(tagBytes(Tag{TagHostUniq, cs.c.hostUniq}), tags...)
			}
			if code == CodePADS && cs.c.st.State == StateRequest && sid != 0 {
				cs.sids[sid] = true // it may be taken
			}
			cs.n.inject(discFrame(cs.cn.mac, scriptAC, code, sid, tags))
		case opWait:
			cs.n.run(time.Duration(arg())*250*time.Millisecond, nil)
		}
		cs.n.run(time.Millisecond, nil)
		check()
	}
}

// invariants of a client driven by a script, whatever it says.
func (cs *clientSession) check(t testing.TB, prev **link, prevSID *uint16) {
	c := cs.c
	st := c.st
	if int(st.State) >= len(stateNames) {
		t.Fatalf("state %d", st.State)
	}
	switch st.State {
	case StateIdle, StateDiscovery, StateRequest, StateHoldoff:
		if c.link != nil || st.SessionID != 0 {
			t.Fatalf("%v with link %v, session %#x", st.State, c.link != nil, st.SessionID)
		}
	case StateLCP, StateAuth, StateNetwork, StateUp:
		if c.link == nil || !cs.sids[st.SessionID] || c.chosen.mac != scriptAC {
			t.Fatalf("%v with link %v, session %#x (PADS gave %v), AC %x", st.State, c.link != nil, st.SessionID, cs.sids, c.chosen.mac)
		}
	default:
		t.Fatalf("state %v without a shutdown", st.State)
	}
	if c.link != nil && c.link == *prev && st.SessionID != *prevSID {
		t.Fatalf("session id changed from %#x to %#x within one session", *prevSID, st.SessionID)
	}
	*prev, *prevSID = c.link, st.SessionID
	s := c.Session()
	if (s != nil) != (st.State == StateUp) {
		t.Fatalf("state %v, published %+v", st.State, s)
	}
	if s != nil && (s.ID != st.SessionID || s.PeerMAC != scriptAC || s.LocalAddr == 0 || badIPv4(s.LocalAddr) || s.MTU < minMRU || s.MTU > 1500) {
		t.Fatalf("published %+v in session %#x", s, st.SessionID)
	}
	if len(c.offers) > maxOffers {
		t.Fatalf("%d offers", len(c.offers))
	}
}

// upScript brings the scripted session up: LCP with CHAP-MD5, CHAP,
// IPCP (address and DNS by Nak), IPv6CP.
var upScript = func() []byte {
	var b []byte
	ctl := func(proto, code, id uint8, data ...byte) {
		b = append(b, opControl, proto, code, id, byte(len(data)))
		b = append(b, data...)
	}
	reply := func(proto, code uint8, opts ...byte) {
		b = append(b, opReplyReq, proto, code, byte(len(opts)))
		b = append(b, opts...)
	}
	ctl(0, ConfReq, 1, 1, 4, 0x05, 0xd4, 3, 5, 0xc2, 0x23, 5, 5, 6, 0xa1, 0xb2, 0xc3, 0xd4)
	reply(0, 0)
	ctl(4, CHAPChal, 7, append([]byte{16}, append(bytes.Repeat([]byte{0x5a}, 16), "ac"...)...)...)
	b = append(b, opAuthOK, 1, 0)
	ctl(1, ConfReq, 1, 3, 6, 10, 0, 0, 1)
	reply(1, 1, 3, 6, 10, 0, 0, 100, 129, 6, 8, 8, 8, 8, 131, 6, 1, 1, 1, 1)
	reply(1, 0)
	ctl(2, ConfReq, 1, 1, 10, 0, 0, 0, 0, 0, 0, 0, 9)
	reply(2, 0)
	return b
}()

// TestClientSessionScript: the fuzz harness's scripted AC brings the
// session up (so the fuzzer starts from a script that reaches every
// phase), and a PADT from it ends the session.
func TestClientSessionScript(t *testing.T) {
	cs := newClientSession(t)
	var prev *link
	var sid uint16
	cs.runOps(upScript, func() { cs.check(t, &prev, &sid) })
	st := cs.c.Status()
	if st.State != StateUp || st.AuthProto != AuthCHAPMD5 || st.LocalAddr != poolLo || st.DNS != [2]uint32{dns1, dns2} || st.PeerIfID != [8]byte{7: 9} {
		t.Fatalf("status %+v", st)
	}
	cs.runOps([]byte{opDiscovery, CodePADT, 1, 0, 0, 0}, func() { cs.check(t, &prev, &sid) })
	if st := cs.c.Status(); st.State != StateHoldoff || st.Counters.PADTReceived != 1 {
		t.Fatalf("after PADT: %v, %d PADT", st.State, st.Counters.PADTReceived)
	}
}

// FuzzClientSession drives a client that reached the session stage with
// a scripted AC (from the AC's MAC, with the session id of its PADS):
// fuzzed LCP, PAP/CHAP, IPCP, IPv6CP packets, answers to the client's own
// requests, discovery frames (PADS, PADT, ...) and the passing of time.
// It must never panic, and the client's state stays consistent: the
// session id is the one a PADS gave and does not change within a session,
// a session is published exactly when the state is up, with a usable
// address and MTU.
func FuzzClientSession(f *testing.F) {
	f.Add(upScript)
	f.Add(append(append([]byte{}, upScript...), opWait, 200, opRawPPP, 6, 0xc0, 0x21, TermReq, 9, 0, 4))
	f.Add(append(append([]byte{}, upScript[:40]...), opDiscovery, CodePADS, 3, 0, 0, 0, opWait, 40))
	f.Add([]byte{opControl, 0, ConfReq, 1, 4, 3, 4, 0xc0, 0x23, opReplyReq, 0, 0, 0, opControl, 0, ConfReq, 2, 4, 3, 4, 0xc0, 0x23, opAuthOK, 1, 0})
	f.Add([]byte{opDiscovery, CodePADT, 0, 0x2a, 0x2a, 0, opWait, 20, opDiscovery, CodePADO, 2, 0, 0, 6, 1, 2, 0, 2, 'a', 'c'})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 4096 {
			return
		}
		cs := newClientSession(t)
		var prev *link
		var sid uint16
		check := func() { cs.check(t, &prev, &sid) }
		cs.runOps(script, check)
		cs.n.run(2*time.Minute, nil)
		check()
	})
}

// FuzzDecap: Session.Decap classifies any frame without panicking, takes
// as data exactly what ParseFrame finds to be this session's IPv4/IPv6
// payload, and leaves other frames untouched; Encap then Decap by the
// peer returns the packet.
func FuzzDecap(f *testing.F) {
	ip := ipv4Packet(1, 2, "payload")
	v6 := make([]byte, 48)
	v6[0] = 0x60
	data := sessFrame([6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}, 0x11, append([]byte{0, 0x21}, ip...))
	f.Add(uint16(0x11), uint16(0), uint8(0), data, ip)
	f.Add(uint16(0x11), uint16(7), uint8(5), append([]byte{}, fixLCPConfReq...), v6)
	f.Add(uint16(0x11), uint16(0), uint8(0), append([]byte{}, fixPADS...), []byte{})
	f.Fuzz(func(t *testing.T, id, vlan uint16, prio uint8, frame, ip []byte) {
		s := &hdr.Session{ID: id, LocalMAC: [6]byte{2, 0, 0, 0, 0, 1}, PeerMAC: [6]byte{2, 0, 0, 0, 0, 2}, VLAN: vlan & 0xfff, VLANPrio: prio & 7}
		if len(frame) > nic.MaxData {
			frame = frame[:nic.MaxData]
		}
		fr := nic.NewFrame()
		fr.SetData(frame)
		off, n := fr.Off, fr.Len
		switch r := s.Decap(fr); r {
		case hdr.DecapIPv4, hdr.DecapIPv6:
			pf, err := ParseFrame(frame)
			proto := map[hdr.DecapResult]uint16{hdr.DecapIPv4: pppIPv4, hdr.DecapIPv6: pppIPv6}[r]
			if err != nil || pf.EtherType != hdr.EtherTypePPPoESess || pf.Code != 0 || pf.SessionID != s.ID || pf.Src != s.PeerMAC ||
				pf.VLAN != s.VLAN || len(pf.Payload) < 2 || be16(pf.Payload) != proto {
				t.Fatalf("%v for %+v (%v)", r, pf, err)
			}
			if !bytes.Equal(fr.Data(), pf.Payload[2:]) || fr.Off < off || fr.Off+fr.Len > off+n {
				t.Fatalf("data % x, want % x", fr.Data(), pf.Payload[2:])
			}
		case hdr.DecapControl, hdr.DecapBadFrame, hdr.DecapWrongSession, hdr.DecapNotPPPoE:
			if fr.Off != off || fr.Len != n || !bytes.Equal(fr.Data(), frame) {
				t.Fatalf("%v changed the frame", r)
			}
		default:
			t.Fatalf("result %d", r)
		}

		if len(ip) > nic.MaxData-64 { // room for the headers in one buffer
			ip = ip[:nic.MaxData-64]
		}
		fr.SetData(ip)
		if !s.Encap(fr) || fr.Len != len(ip)+s.EncapLen() {
			t.Fatal("Encap failed")
		}
		enc := append([]byte(nil), fr.Data()...)
		peer := *s
		peer.LocalMAC, peer.PeerMAC = s.PeerMAC, s.LocalMAC
		want := hdr.DecapIPv4
		if len(ip) > 0 && ip[0]>>4 == 6 {
			want = hdr.DecapIPv6
		}
		if r := peer.Decap(fr); r != want || !bytes.Equal(fr.Data(), ip) {
			t.Fatalf("round trip: %v, % x", r, fr.Data())
		}
		other := peer
		other.ID++
		fr.SetData(enc)
		if r := other.Decap(fr); r != hdr.DecapWrongSession || !bytes.Equal(fr.Data(), enc) {
			t.Fatalf("another session's frame: %v", r)
		}
	})
}

// FuzzServerInput feeds the access concentrator fuzzed frames while it
// holds a session with a real client: frames (2-byte length each) may be
// made to come from the client's MAC, to the AC's MAC, in the client's
// session. It must never panic, and its session tables stay consistent.
func FuzzServerInput(f *testing.F) {
	frame := func(b []byte) []byte { return append([]byte{byte(len(b) >> 8), byte(len(b))}, b...) }
	f.Add(uint8(7), frame(fixLCPConfReq))
	f.Add(uint8(3), frame(fixPADS))
	f.Add(uint8(7), frame(fixIPCPConfReq))
	padi := Discovery{Code: CodePADI, Tags: []Tag{{TagServiceName, nil}, {TagHostUniq, []byte("hu")}}}
	padr := Discovery{Code: CodePADR, Tags: []Tag{{TagServiceName, nil}, {TagHostUniq, []byte("hu")}, {TagPPPMaxPayload, []byte{5, 0xdc}}}}
	f.Add(uint8(1), append(frame(padi.Append(appendEthernet(nil, Broadcast, [6]byte{2, 7, 7, 7, 7, 7}, 0, 0, hdr.EtherTypePPPoEDisc))),
		frame(padr.Append(appendEthernet(nil, [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 7, 7, 7, 7, 7}, 0, 0, hdr.EtherTypePPPoEDisc)))...))
	f.Add(uint8(7), frame(discFrame([6]byte{}, [6]byte{}, CodePADT, 0, nil)))
	f.Fuzz(func(t *testing.T, flags uint8, b []byte) {
		if len(b) > 8192 {
			return
		}
		p := newSimPair(t, nil, func(s *ServerConfig) { s.IPv6, s.MTU, s.Auth = true, 1500, AuthAny })
		p.waitUp(t, time.Minute)
		sid := p.c.Session().ID
		check := func() {
			s := p.s
			for id, ss := range s.sessions {
				if id != ss.id || id == 0 || id == 0xffff || ss.link == nil {
					t.Fatalf("session %#x: %+v", id, ss)
				}
				if ss.addr != 0 && (ss.addr < poolLo || ss.addr > poolHi) {
					t.Fatalf("session %#x address %s", id, ip4(ss.addr))
				}
			}
			for a, ss := range s.byAddr {
				if s.sessions[ss.id] != ss || ss.addr != a {
					t.Fatalf("address %s maps to a session that is gone", ip4(a))
				}
			}
			if len(s.byAddr) > len(s.sessions) || s.tx.err != nil {
				t.Fatalf("%d addresses for %d sessions, write error %v", len(s.byAddr), len(s.sessions), s.tx.err)
			}
		}
		for len(b) >= 2 {
			n := min(int(binary.BigEndian.Uint16(b)), len(b)-2)
			fb := append([]byte(nil), b[2:2+n]...)
			b = b[2+n:]
			if flags&1 != 0 && len(fb) >= 12 {
				copy(fb[6:12], p.cn.mac[:])
			}
			if flags&2 != 0 && len(fb) >= 6 {
				copy(fb[0:6], p.sn.mac[:])
			}
			if flags&4 != 0 && len(fb) >= 18 && be16(fb[12:]) == hdr.EtherTypePPPoESess {
				binary.BigEndian.PutUint16(fb[16:], sid)
			}
			p.net.inject(fb)
			p.net.run(time.Millisecond, nil)
			check()
		}
		p.net.run(time.Minute, nil)
		check()
	})
}
