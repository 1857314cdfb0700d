package dhcp6

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// FuzzServerHandle feeds the DHCPv6 server a sequence of fuzzed messages
// (2-byte length each, then a byte of clock advance in seconds): it
// never panics; it answers only messages that parse, with their XID and
// CLIENTID, its own SERVERID, as Advertise or Reply; every prefix it
// grants is of the delegated length inside the pool; its binding tables
// stay consistent and within the pool.
func FuzzServerHandle(f *testing.F) {
	frame := func(b []byte) []byte { return append([]byte{byte(len(b) >> 8), byte(len(b))}, append(b, 1)...) }
	srv := newTestServer(f, nil)
	sid := srv.DUID()
	ia := IAPD{IAID: 1}
	f.Add(frame(cmsg(MsgSolicit, 1, nil, ia)))
	f.Add(append(frame(cmsg(MsgSolicit, 1, nil, ia)), frame(cmsg(MsgRequest, 1, sid, ia))...))
	f.Add(append(append(frame(cmsg(MsgRequest, 2, sid, ia)), frame(cmsg(MsgRenew, 2, sid, ia))...), frame(cmsg(MsgRelease, 2, sid, ia))...))
	f.Add(frame(cmsg(MsgRebind, 3, nil, IAPD{IAID: 1, Prefixes: []Prefix{{Prefix: a6("2001:db8:100:ff00::"), Bits: 56}}})))
	f.Add(frame(cmsg(MsgInformationRequest, 4, nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newTestServer(t, func(c *ServerConfig) { c.PoolBits, c.Delegate = 52, 56 }) // 16 prefixes: exhaustion is reachable
		cfg := s.cfg
		now := t0
		for len(b) >= 2 {
			n := min(int(binary.BigEndian.Uint16(b)), len(b)-2)
			msg := b[2 : 2+n]
			b = b[2+n:]
			reply := s.Handle(msg, now)
			if len(b) > 0 {
				now = now.Add(time.Duration(b[0]) * time.Second)
				b = b[1:]
			}
			if reply != nil {
				req, err := Parse(msg)
				if err != nil {
					t.Fatalf("answered a message that does not parse: %v", err)
				}
				m, err := Parse(reply)
				if err != nil {
					t.Fatalf("reply does not parse: %v", err)
				}
				if m.XID != req.XID || !bytes.Equal(m.ClientID, req.ClientID) || !bytes.Equal(m.ServerID, s.duid) || (m.Type != MsgAdvertise && m.Type != MsgReply) {
					t.Fatalf("reply %v xid %#x client %x server %x to %v xid %#x client %x", m.Type, m.XID, m.ClientID, m.ServerID, req.Type, req.XID, req.ClientID)
				}
				for _, ia := range m.IAPD {
					for _, p := range ia.Prefixes {
						if p.Valid != 0 && (p.Bits != cfg.Delegate || MaskPrefix(p.Prefix, cfg.PoolBits) != cfg.Pool || MaskPrefix(p.Prefix, p.Bits) != p.Prefix || p.Preferred > p.Valid) {
							t.Fatalf("granted %s/%d preferred %d valid %d", addrString(p.Prefix), p.Bits, p.Preferred, p.Valid)
						}
					}
				}
			}
			s.mu.Lock()
			if len(s.byKey) != len(s.byIndex) || uint64(len(s.byIndex)) > s.size {
				t.Fatalf("%d keys, %d indexes, pool of %d", len(s.byKey), len(s.byIndex), s.size)
			}
			for k, bd := range s.byKey {
				if bd.key != k || bd.index >= s.size || s.byIndex[bd.index] != bd {
					t.Fatalf("binding %q: %+v", k, bd)
				}
			}
			s.mu.Unlock()
		}
	})
}
