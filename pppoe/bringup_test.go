package pppoe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// logSink collects a Logf's lines.
type logSink struct{ lines []string }

func (l *logSink) logf(format string, args ...any) {
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}
func (l *logSink) count(sub string) int {
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}
func (l *logSink) String() string { return strings.Join(l.lines, "\n") }

// TestBringupNoPADO: an AC that never answers is visible: one line per
// PADI, then what to check, rate-limited over a long outage.
func TestBringupNoPADO(t *testing.T) {
	for _, vlan := range []uint16{7, 0} {
		n := newSimNet(t)
		var log logSink
		cfg := testClientConfig(n)
		cfg.VLAN, cfg.Interface, cfg.Logf = vlan, "eth0", log.logf
		cn := n.conn(1)
		cn.c = (*clientCore)(NewClient(cfg, cn, nil))
		n.start()
		n.run(time.Minute, nil)
		where := "eth0 (VLAN 7)"
		hint := "check the VLAN id (wan.vlan) and the cable"
		if vlan == 0 {
			where, hint = "eth0 (untagged)", "whether the ISP needs a VLAN (wan.vlan; Deutsche Telekom: 7)"
		}
		for _, want := range []string{
			"pppoe: discovery: PADI 1 on " + where + ", waiting ", "pppoe: discovery: PADI 3 on " + where,
			"pppoe: no PADO after 3 PADI on " + where + ": ", hint,
		} {
			if log.count(want) == 0 {
				t.Errorf("vlan %d: no line with %q in:\n%s", vlan, want, &log)
			}
		}
		// Over hours, the lines are rate-limited: the burst, then one per
		// logEvery of each kind.
		n.run(3*time.Hour, nil)
		sent := cn.c.(*clientCore).st.Counters.PADISent
		limit := logBurst + int(3*time.Hour/logEvery) + 2
		if got := log.count("discovery: PADI"); got > limit || uint64(got) >= sent {
			t.Errorf("vlan %d: %d PADI lines for %d PADIs, want at most %d", vlan, got, sent, limit)
		}
		if got := log.count("no PADO after"); got > limit || got < logBurst+1 {
			t.Errorf("vlan %d: %d no-PADO lines, want %d..%d", vlan, got, logBurst+1, limit)
		}
		if log.count("like it not logged in the last 5m0s") == 0 {
			t.Errorf("vlan %d: rate-limited lines do not say how many were left out:\n%s", vlan, &log)
		}
	}
}

// TestBringupLogNoSecrets: across a failed and a successful login, with
// each protocol, the log says what happened (discovery, authentication,
// IPCP, IPv6CP, the retry and what to check) and never shows the
// password.
func TestBringupLogNoSecrets(t *testing.T) {
	const secret = "Tr0ub4dor#3-pass"
	for _, auth := range []AuthProto{AuthPAP, AuthCHAPMD5, AuthMSCHAPv2} {
		var log logSink
		users := map[string]string{testUser: "another password"}
		p := newSimPair(t, func(c *ClientConfig) {
			c.Password, c.Logf, c.Interface, c.IPv6 = secret, log.logf, "eth0", true
		}, func(s *ServerConfig) { s.Auth, s.Users, s.IPv6 = auth, users, true })
		if !p.net.run(time.Minute, func() bool { return p.c.Status().AuthFailures > 0 }) {
			t.Fatalf("%v: no authentication failure", auth)
		}
		users[testUser] = secret // the ISP fixes its side
		p.waitUp(t, 5*time.Minute)
		p.net.run(10*time.Second, nil)
		for _, want := range []string{
			"pppoe: discovery: PADI 1 on eth0 (untagged)", `pppoe: discovery: PADO from "test-ac"`, "pppoe: discovery: PADS: session",
			"(user \"alice\"): check pppoe.user and pppoe.password", "pppoe: login refused 1 times in a row: next attempt in ",
			`pppoe: authenticated as "alice" with`, "pppoe: IPCP up: session", "DNS 8.8.8.8 1.1.1.1", "pppoe: IPv6CP up: local interface id",
		} {
			if log.count(want) == 0 {
				t.Errorf("%v: no line with %q in:\n%s", auth, want, &log)
			}
		}
		st := p.c.Status()
		for _, s := range append(log.lines, st.LastError, fmt.Sprintf("%+v", st)) {
			if strings.Contains(s, secret) || strings.Contains(s, "Tr0ub4dor") {
				t.Fatalf("%v: the password is in %q", auth, s)
			}
		}
	}
}

// TestBringupIPv6Refused: an AC without IPv6 says so once per session.
func TestBringupIPv6Refused(t *testing.T) {
	var log logSink
	p := newSimPair(t, func(c *ClientConfig) { c.IPv6, c.Logf = true, log.logf }, nil)
	p.waitUp(t, time.Minute)
	p.net.run(time.Minute, nil)
	if n := log.count("pppoe: IPv6CP not opened"); n != 1 || log.count("the session carries IPv4 only") != 1 {
		t.Fatalf("%d IPv6CP lines:\n%s", n, &log)
	}
}

// TestPADTAfterAuthFailureKeepsBackoff: after an authentication failure
// the client's link is closing (Terminate-Request sent); a PADT from the
// AC that arrives before the Terminate-Ack ends the same failed attempt,
// so the authentication-failure backoff (AuthFailDelay, 10 s doubling)
// holds, not the 1 s holdoff of a dropped session.
func TestPADTAfterAuthFailureKeepsBackoff(t *testing.T) {
	p := newSimPair(t, func(c *ClientConfig) { c.Password = "wrong" }, nil)
	var padtAt time.Time
	var starts []time.Time // the client's PADIs after a PADT
	p.net.drop = func(from *simNode, b []byte) bool {
		f, err := ParseFrame(b)
		if err != nil {
			return false
		}
		if from == p.sn && f.EtherType == hdr.EtherTypePPPoESess && len(f.Payload) >= 3 && be16(f.Payload) == pppLCP && f.Payload[2] == TermAck {
			return true // the AC's Terminate-Ack never comes: its PADT does first
		}
		if from == p.cn && f.EtherType == hdr.EtherTypePPPoESess && len(f.Payload) >= 3 && be16(f.Payload) == pppLCP && f.Payload[2] == TermReq {
			d := Discovery{Code: CodePADT, SessionID: f.SessionID}
			p.net.inject(padFrame(d.Append(appendEthernet(nil, p.cn.mac, p.sn.mac, 0, 0, hdr.EtherTypePPPoEDisc))))
			padtAt = p.net.now
		}
		if from == p.cn && f.EtherType == hdr.EtherTypePPPoEDisc && !padtAt.IsZero() {
			if d, err := ParseDiscovery(f.PPPoE); err == nil && d.Code == CodePADI {
				starts = append(starts, p.net.now)
				padtAt = time.Time{}
			}
		}
		return false
	}
	p.net.run(3*time.Minute, nil)
	st := p.c.Status()
	fails := p.s.Counters().AuthFailed
	if st.Counters.PADTReceived < 2 || fails < 2 || len(starts) < 2 {
		t.Fatalf("PADTs received %d, AC's auth failures %d, restarts %d: the test did not set the race up", st.Counters.PADTReceived, fails, len(starts))
	}
	// Each failure took the PADT path and counts as one; with the
	// auth-failure backoff the first wait is 10 s ±25 %, and they grow.
	if uint64(st.AuthFailures) != fails {
		t.Fatalf("client counts %d authentication failures, the AC %d: the PADT lost the failure", st.AuthFailures, fails)
	}
	var prev time.Duration
	for i := 1; i < len(starts); i++ {
		d := starts[i].Sub(starts[i-1])
		if d < 7*time.Second || d <= prev {
			t.Fatalf("attempt %d came %v after the one before (previous gap %v): the PADT reset the auth-failure backoff", i+1, d, prev)
		}
		prev = d
	}
}
