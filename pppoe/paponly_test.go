package pppoe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// lcpFrames returns the LCP packets (code, identifier, length, options)
// that nd sent, in order.
func lcpFrames(n *simNet, nd *simNode) [][]byte {
	var out [][]byte
	for _, f := range n.framesFrom(nd) {
		if f.EtherType == hdr.EtherTypePPPoESess && len(f.Payload) >= 6 && be16(f.Payload) == pppLCP {
			out = append(out, f.Payload[2:])
		}
	}
	return out
}

// hasAuthOpt reports whether the options of LCP packet p include the
// Authentication-Protocol option.
func hasAuthOpt(p []byte) bool {
	c, err := ParseControl(p)
	if err != nil {
		return false
	}
	opts, err := ParseOptions(c.Data)
	if err != nil {
		return false
	}
	for _, o := range opts {
		if o.Type == OptAuthProto {
			return true
		}
	}
	return false
}

// TestPAPOnlyAC: an AC that can only do PAP and answers the client's Nak
// for CHAP as pppd with require-pap does (it drops the authentication
// option, and terminates once LCP is open without it: "peer refused to
// authenticate") is known as PAP-only after the first attempt: the
// client ends that attempt without acknowledging the request without
// authentication, takes PAP at once on the next one, with the warning,
// and again at once when it reconnects to the same AC.
func TestPAPOnlyAC(t *testing.T) {
	var log []string
	p := newSimPair(t, func(c *ClientConfig) {
		c.Logf = func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	}, func(s *ServerConfig) { s.Auth = AuthPAP })
	p.s.dropAuthOnNak = true
	p.waitUp(t, time.Minute)
	st := p.c.Status()
	if st.AuthProto != AuthPAP || st.Counters.SessionsUp != 1 || st.Counters.Reconnects != 1 || st.Counters.PAPRefused != 0 {
		t.Fatalf("auth %v, sessions up %d, reconnects %d, PAP refused %d, last error %q",
			st.AuthProto, st.Counters.SessionsUp, st.Counters.Reconnects, st.Counters.PAPRefused, st.LastError)
	}
	if all := strings.Join(log, "\n"); !strings.Contains(all, "PAP sends the password in clear") || !strings.Contains(all, "cannot do CHAP") {
		t.Fatalf("log %q", log)
	}
	naks := func() int {
		n := 0
		for _, b := range lcpFrames(p.net, p.cn) {
			switch {
			case b[0] == ConfNak && hasAuthOpt(b):
				n++
			case b[0] == ConfAck && !hasAuthOpt(b):
				t.Fatalf("the client acknowledged a request without authentication: % x", b)
			}
		}
		return n
	}
	if n := naks(); n != 1 {
		t.Fatalf("%d Naks of the authentication protocol, want 1", n)
	}
	// The AC drops the session: the client comes back with PAP at once.
	if err := p.s.Kill(st.SessionID); err != nil {
		t.Fatal(err)
	}
	if !p.net.run(time.Minute, func() bool { return p.up() && p.c.st.Counters.SessionsUp == 2 }) {
		t.Fatalf("not up again: %q", p.c.st.LastError)
	}
	if n := naks(); n != 1 || p.c.Status().AuthProto != AuthPAP {
		t.Fatalf("%d Naks of the authentication protocol after reconnecting, auth %v", n, p.c.Status().AuthProto)
	}
}

// TestPAPOnlyACTerminates: an AC that answers the client's Nak for CHAP
// by ending the session (LCP Terminate-Request, or a bare PADT), every
// time, is known as PAP-only too: the next attempt takes its PAP at once.
func TestPAPOnlyACTerminates(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(s *Server, id uint16) error
	}{
		{"terminate-request", (*Server).Hangup},
		{"padt", (*Server).Kill},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newSimPair(t, nil, func(s *ServerConfig) { s.Auth = AuthPAP })
			ended := 0
			p.net.drop = func(from *simNode, b []byte) bool {
				f, err := ParseFrame(b)
				if from == p.cn && err == nil && f.EtherType == hdr.EtherTypePPPoESess && len(f.Payload) > 2 &&
					be16(f.Payload) == pppLCP && f.Payload[2] == ConfNak && hasAuthOpt(f.Payload[2:]) {
					ended++
					if err := tc.end(p.s, f.SessionID); err != nil {
						t.Fatal(err)
					}
				}
				return false
			}
			p.waitUp(t, time.Minute)
			st := p.c.Status()
			if ended != 1 || st.AuthProto != AuthPAP || st.Counters.SessionsUp != 1 || st.Counters.Reconnects != 1 {
				t.Fatalf("ended %d times, auth %v, sessions up %d, reconnects %d, last error %q",
					ended, st.AuthProto, st.Counters.SessionsUp, st.Counters.Reconnects, st.LastError)
			}
		})
	}
}

// TestLCPPAPOnly: the client's LCP after it Nak'd the AC's request for
// PAP proposing CHAP. A request without authentication that follows
// (the AC dropped it: it cannot do CHAP), or the AC's Terminate-Request,
// ends the attempt with the AC marked PAP-only, or refused under
// refusePAP; an AC known as PAP-only gets PAP at once (refused under
// refusePAP); a request without authentication that does not follow a
// Nak of ours is acknowledged (the AC does not authenticate us).
func TestLCPPAPOnly(t *testing.T) {
	pap := []byte{OptAuthProto, 4, 0xc0, 0x23}
	mru := []byte{OptMRU, 4, 0x05, 0xd4}
	for _, tc := range []struct {
		name             string
		refusePAP, papAC bool
		pkts             [][]byte // from the AC, in order
		want             uint8    // the reply to the last one (0: none)
		papOnly, refused bool
		closed           bool
	}{
		{name: "nak, then no auth: pap-only", pkts: [][]byte{ctl(ConfReq, 1, pap...), ctl(ConfReq, 2, mru...)}, papOnly: true, closed: true},
		{name: "nak, then terminate: pap-only", pkts: [][]byte{ctl(ConfReq, 1, pap...), ctl(TermReq, 2)}, want: TermAck, papOnly: true, closed: true},
		{name: "nak, then no auth, chap seen: refused", refusePAP: true, pkts: [][]byte{ctl(ConfReq, 1, pap...), ctl(ConfReq, 2, mru...)}, refused: true, closed: true},
		{name: "known pap-only: ack at once", papAC: true, pkts: [][]byte{ctl(ConfReq, 1, pap...)}, want: ConfAck},
		{name: "known pap-only, chap seen: refused", papAC: true, refusePAP: true, pkts: [][]byte{ctl(ConfReq, 1, pap...)}, refused: true, closed: true},
		{name: "no auth, no nak before: ack", pkts: [][]byte{ctl(ConfReq, 1, mru...)}, want: ConfAck},
		{name: "nak, then pap again: ack", pkts: [][]byte{ctl(ConfReq, 1, pap...), ctl(ConfReq, 2, pap...)}, want: ConfAck},
		{name: "pap acked, then no auth: ack", pkts: [][]byte{ctl(ConfReq, 1, pap...), ctl(ConfReq, 2, pap...), ctl(ConfReq, 3, mru...)}, want: ConfAck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &recOwner{}
			cfg := &linkConfig{role: roleClient, mru: 1492, auth: AuthAny, restart: time.Second, maxConfigure: 10,
				echoInterval: -1, authTimeout: time.Minute, rand: func() uint64 { return 0x11223344 },
				refusePAP: tc.refusePAP, papAC: tc.papAC}
			l := newLink(cfg, o, time.Unix(1, 0))
			l.start()
			var got uint8
			for _, b := range tc.pkts {
				o.sent = nil
				l.input(l.now, pppLCP, b)
				got = 0
				for _, s := range o.sent {
					if be16(s) == pppLCP && s[2] >= ConfAck && s[2] <= TermAck && s[2] != TermReq {
						got = s[2]
					}
				}
			}
			if got != tc.want {
				t.Fatalf("reply code %d, want %d (sent % x)", got, tc.want, o.sent)
			}
			closed := l.phase == phaseTerminate && o.last(pppLCP)[0] == TermReq
			if l.papOnly != tc.papOnly || l.papRefused != tc.refused || closed != tc.closed {
				t.Fatalf("papOnly %v refused %v closed %v (phase %v, reason %q)", l.papOnly, l.papRefused, closed, l.phase, l.lcp.reason)
			}
		})
	}
}
