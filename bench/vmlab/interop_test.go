package vmlab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/internal/rawsock"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/pppoe"
)

// Interop tests against real PPP implementations running in the lab VM:
// the kernel's ppp_generic/pppoe, pppd 2.4.9 with rp-pppoe.so, and
// rp-pppoe 3.15's pppoe-server.

func ip4(a, b, c, d byte) uint32 { return uint32(a)<<24 | uint32(b)<<16 | uint32(c)<<8 | uint32(d) }

func ipString(a uint32) string {
	return fmt.Sprintf("%d.%d.%d.%d", byte(a>>24), byte(a>>16), byte(a>>8), byte(a))
}

// linkLocal is the fe80::/64 address of an IPv6CP interface identifier,
// as pppd and ip print it.
// exchange sends the IP packet pkt over session s on data and reads for
// wait until a frame that decapsulates as want carries a packet match
// accepts.
func exchange(t *testing.T, data *rawsock.Conn, s *hdr.Session, pkt []byte, want hdr.DecapResult, wait time.Duration, match func(ip []byte) bool) bool {
	t.Helper()
	f := nic.NewFrame()
	f.SetData(pkt)
	if !s.Encap(f) {
		t.Fatal("Encap: no headroom")
	}
	if err := data.WriteFrame(f.Data()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		n, err := data.ReadFrame(buf, time.Until(deadline))
		if errors.Is(err, rawsock.ErrTimeout) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		f.SetData(buf[:n])
		if s.Decap(f) == want && match(f.Data()) {
			return true
		}
	}
	return false
}

func linkLocal(ifid [8]byte) string {
	ip := make(net.IP, 16)
	ip[0], ip[1] = 0xfe, 0x80
	copy(ip[8:], ifid[:])
	return ip.String()
}

// icmpEcho builds an IPv4 ICMP echo request (typ 8) or reply (typ 0).
func icmpEcho(src, dst uint32, typ uint8, id, seq uint16, payload []byte) []byte {
	b := make([]byte, 20+8+len(payload))
	b[0], b[8], b[9] = 0x45, 64, 1
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	binary.BigEndian.PutUint32(b[12:], src)
	binary.BigEndian.PutUint32(b[16:], dst)
	hdr.IPv4(b).ComputeChecksum()
	m := b[20:]
	m[0] = typ
	binary.BigEndian.PutUint16(m[4:], id)
	binary.BigEndian.PutUint16(m[6:], seq)
	copy(m[8:], payload)
	binary.BigEndian.PutUint16(m[2:], hdr.Checksum(m, 0))
	return b
}

type echoMsg struct {
	src, dst uint32
	typ      uint8
	id, seq  uint16
	payload  string
}

// parseEcho decodes an ICMP echo request/reply, verifying both checksums.
func parseEcho(ip []byte) (echoMsg, bool) {
	v := hdr.IPv4(ip)
	if !v.IsValid() || v.Protocol() != 1 || !v.HeaderChecksumOK() || v.IsFragment() {
		return echoMsg{}, false
	}
	m := v.Payload()
	if len(m) < 8 || (m[0] != 0 && m[0] != 8) || hdr.Fold(hdr.Sum(m, 0)) != 0xffff {
		return echoMsg{}, false
	}
	return echoMsg{v.Src(), v.Dst(), m[0], binary.BigEndian.Uint16(m[4:]),
		binary.BigEndian.Uint16(m[6:]), string(m[8:])}, true
}

// echoReplyTo turns a request into its reply.
func echoReplyTo(ip []byte) []byte {
	e, _ := parseEcho(ip)
	return icmpEcho(e.dst, e.src, 0, e.id, e.seq, []byte(e.payload))
}

// pingOK checks busybox ping's summary for at least min replies.
func pingReceived(out string) int {
	m := regexp.MustCompile(`(\d+) packets received`).FindStringSubmatch(out)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkInteropCapture requires discovery, LCP, IPCP, ICMP and the
// authentication protocol of every subtest that ran in the capture (which
// startCapture has already checked for malformed or unknown frames).
func checkInteropCapture(t *testing.T, r *PcapReport, auths []string) {
	if len(auths) == 0 {
		return
	}
	for _, p := range append([]string{"pppoed", "pppoes", "lcp", "ipcp", "icmp"}, auths...) {
		if !r.Has(p) {
			t.Errorf("capture has no %s frame: %s", p, r)
		}
	}
}

const (
	brasUser, brasPass = "alice", "s3cret pass"
	brasLocal          = "10.99.0.1"
)

var (
	brasPeer = ip4(10, 99, 0, 1)
	brasPool = [2]uint32{ip4(10, 99, 0, 10), ip4(10, 99, 0, 13)}
	brasDNS  = [2]uint32{ip4(10, 99, 0, 53), ip4(10, 99, 0, 54)}
)

// TestIntegrationRealBRAS runs pppfwd's client against rp-pppoe's
// pppoe-server and pppd in the VM, with CHAP, PAP and MS-CHAPv2 (pppd's
// authenticator response checked; with require-pap, pppd answers our Nak
// for CHAP by dropping authentication, and the client takes PAP on its
// next attempt): session up, IPCP
// address and DNS learned, ICMP both ways, LCP echoes answered, the server
// hanging up (pppd terminated: LCP Terminate + PADT; pppd killed: bare
// PADT) and the client reconnecting, and the client's own shutdown ending
// the server's session. Debian's pppoe-server is built without kernel mode
// (-k), so its data path is the user-mode pppoe relay on a pty (ppp_async);
// TestIntegrationRealClient covers the kernel's PPPoE data path.
func TestIntegrationRealBRAS(t *testing.T) {
	requireLab(t, true)
	ns, vm := newLab(t)
	var ran []string // authentication protocols of the subtests that ran
	pcap := startCapture(t, ns, "vmtap0", func(r *PcapReport) { checkInteropCapture(t, r, ran) })
	secrets := fmt.Sprintf("%s * \"%s\" *\n", brasUser, brasPass)
	for _, f := range []string{"/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets"} {
		if err := vm.WriteFile(f, []byte(secrets), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		auth    pppoe.AuthProto
		proto   string // tshark's name for it
		require string
		mtu     int  // the client's ClientConfig.MTU
		ipv6    bool // the client negotiates IPv6CP too
	}{
		{"CHAP", pppoe.AuthCHAPMD5, "chap", "require-chap", 0, false},
		{"PAP-IPv6CP", pppoe.AuthPAP, "pap", "require-pap", 0, true},
		// rp-pppoe's pppoe-server does not implement RFC 4638: a client
		// asking for 1500 must fall back to 1492.
		{"CHAP-MTU1500-fallback", pppoe.AuthCHAPMD5, "chap", "require-chap", 1500, false},
		// MS-CHAPv2, the server's authenticator response checked.
		{"MSCHAPv2", pppoe.AuthMSCHAPv2, "chap", "require-mschap-v2", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = append(ran, tc.proto)
			testRealBRAS(t, ns, vm, pcap, tc.auth, tc.require, tc.mtu, tc.ipv6)
		})
	}
}

func testRealBRAS(t *testing.T, ns *nettest.NS, vm *VM, pcap string, auth pppoe.AuthProto, require string, mtu int, ipv6 bool) {
	opts := strings.Join([]string{require, "lcp-echo-interval 1", "lcp-echo-failure 10",
		"ms-dns " + ipString(brasDNS[0]), "ms-dns " + ipString(brasDNS[1]),
		"debug", "logfile /var/log/pppd.log", ""}, "\n")
	if err := vm.WriteFile("/etc/ppp/pppoe-server-options", []byte(opts), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.Run("killall pppoe-server pppd pppoe 2>/dev/null; sleep 0.5; rm -f /var/log/pppd.log; " +
		"pppoe-server -I eth0 -C vmlab-bras -L " + brasLocal + " -R " + ipString(brasPool[0]) +
		" -N 4 -O /etc/ppp/pppoe-server-options"); err != nil {
		t.Fatal(err)
	}
	conn := openRaw(t, ns, "vmtap0", 0x8863, 0x8864)
	data := openRaw(t, ns, "vmtap0", 0x8864)
	delivered := make(chan []byte, 64)
	var logMu sync.Mutex
	var logged []string
	clientLog := func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return strings.Join(logged, "\n")
	}
	client := pppoe.NewClient(pppoe.ClientConfig{
		Username: brasUser, Password: brasPass, Auth: pppoe.AuthAny, MTU: mtu, IPv6: ipv6,
		EchoInterval: time.Second, EchoFailures: 10,
		HoldoffDelay: 200 * time.Millisecond, MaxHoldoff: time.Second,
		Deliver: func(ip []byte) {
			select {
			case delivered <- append([]byte(nil), ip...):
			default:
			}
		},
		Logf: func(f string, a ...any) {
			logMu.Lock()
			logged = append(logged, fmt.Sprintf(f, a...))
			logMu.Unlock()
			t.Logf(f, a...)
		},
	}, conn, nil)
	stop := runUntilStopped(t, "client", client.Run)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := vm.Run("tail -n 80 /var/log/pppd.log; grep -i pppoe /var/log/messages | tail -n 20; " +
				"ip -s link show; ip addr; ip route; grep -E '^(Ip|Icmp):' /proc/net/snmp")
			t.Logf("pppd (server) log:\n%s", out)
		}
	})

	// Session up with everything IPCP gave us.
	var s *hdr.Session
	if !waitFor(90*time.Second, func() bool { s = client.Session(); return s != nil }) {
		t.Fatalf("no session after 90 s; status %+v", client.Status())
	}
	st := client.Status()
	t.Logf("session %#04x up: local %s peer %s dns %s,%s mtu %d auth %v",
		s.ID, ipString(s.LocalAddr), ipString(s.PeerAddr), ipString(s.DNS[0]), ipString(s.DNS[1]), s.MTU, st.AuthProto)
	if st.AuthProto != auth {
		t.Errorf("authenticated with %v, server required %v", st.AuthProto, auth)
	}
	if s.LocalAddr < brasPool[0] || s.LocalAddr > brasPool[1] {
		t.Errorf("local address %s outside the server's pool", ipString(s.LocalAddr))
	}
	if s.PeerAddr != brasPeer {
		t.Errorf("peer address %s, want %s", ipString(s.PeerAddr), brasLocal)
	}
	if s.DNS != brasDNS {
		t.Errorf("DNS %s,%s, want %s,%s", ipString(s.DNS[0]), ipString(s.DNS[1]), ipString(brasDNS[0]), ipString(brasDNS[1]))
	}
	if s.MTU != 1492 || st.MTU != 1492 || st.MaxPayload {
		t.Errorf("MTU %d (status %d, MaxPayload %v), want 1492 without PPP-Max-Payload", s.MTU, st.MTU, st.MaxPayload)
	}
	if ipv6 {
		// IPv6CP: both interface identifiers agreed, and pppd's ppp0
		// link-local addresses are built from them.
		if !waitFor(10*time.Second, func() bool {
			st = client.Status()
			return st.LocalIfID != [8]byte{} && st.PeerIfID != [8]byte{}
		}) {
			t.Errorf("IPv6CP: interface identifiers local %x peer %x", st.LocalIfID, st.PeerIfID)
		}
		// pppd prints e.g. "remote LL address fe80::0df7:e718:e1a2:f944".
		out, _ := vm.Run("grep -E '(local|remote) +LL address' /var/log/pppd.log | tail -n 2")
		got := map[string]string{}
		for _, m := range regexp.MustCompile(`(local|remote) +LL address (\S+)`).FindAllStringSubmatch(out, -1) {
			if ip := net.ParseIP(m[2]); ip != nil {
				got[m[1]] = ip.String()
			}
		}
		if got["local"] != linkLocal(st.PeerIfID) || got["remote"] != linkLocal(st.LocalIfID) {
			t.Errorf("pppd's LL addresses %v, want local %s remote %s (log %q)", got,
				linkLocal(st.PeerIfID), linkLocal(st.LocalIfID), out)
		}
	}
	if mtu > 1492 {
		// The client asked (PADI with PPP-Max-Payload); the AC did not echo.
		if n := countFrames(t, pcap, "pppoe.code == 0x09 && pppoed.tags.max_payload"); n == 0 {
			t.Error("no PADI with PPP-Max-Payload in the capture")
		}
		if n := countFrames(t, pcap, "pppoe.code == 0x65 && pppoed.tags.max_payload"); n != 0 {
			t.Errorf("%d PADS with PPP-Max-Payload from rp-pppoe, which does not implement it", n)
		}
	}
	if s.PeerMAC != DefaultMAC(0) || s.LocalMAC != conn.HardwareAddr() {
		t.Errorf("session MACs local %x peer %x", s.LocalMAC, s.PeerMAC)
	}
	if st.ACName != "vmlab-bras" {
		t.Errorf("AC-Name %q, want vmlab-bras", st.ACName)
	}
	if auth == pppoe.AuthPAP {
		// pppd with require-pap answers our Nak for CHAP by dropping
		// authentication: the client takes it as PAP-only, once, and logs
		// that PAP sends the password in clear.
		if l := clientLog(); strings.Count(l, "cannot do CHAP (") != 1 || !strings.Contains(l, "PAP sends the password in clear") {
			t.Errorf("client log lacks the PAP-only AC or the PAP warning:\n%s", l)
		}
	}

	// Client -> pppd: echo requests built with Session.Encap on a second
	// socket; replies decapsulated with Session.Decap, and also seen by
	// the client's Deliver.
	// pppd may still be bringing ppp0 up (ip-up) when its IPCP is open,
	// so the first request is retried once a second.
	for seq := uint16(1); seq <= 3; seq++ {
		payload := fmt.Sprintf("pppfwd-%d", seq)
		got := false
		for try := 0; try < 10 && !got; try++ {
			got = exchange(t, data, s, icmpEcho(s.LocalAddr, s.PeerAddr, 8, 0x4242, seq, []byte(payload)), hdr.DecapIPv4, time.Second,
				func(ip []byte) bool {
					e, ok := parseEcho(ip)
					return ok && e.typ == 0 && e.id == 0x4242 && e.seq == seq && e.payload == payload &&
						e.src == s.PeerAddr && e.dst == s.LocalAddr
				})
		}
		if !got {
			t.Fatalf("no echo reply %d from pppd's %s", seq, brasLocal)
		}
	}
	if !waitFor(5*time.Second, func() bool {
		for {
			select {
			case ip := <-delivered:
				if e, ok := parseEcho(ip); ok && e.typ == 0 && e.id == 0x4242 {
					return true
				}
			default:
				return false
			}
		}
	}) {
		t.Error("client's Deliver never received an echo reply")
	}

	if ipv6 {
		// IPv6 data over the session (PPP 0x0057, as pppfwd's workers
		// send it): an ICMPv6 echo from our link-local address to
		// pppd's, answered by the VM's kernel on ppp0 (retried while
		// ppp0's addresses settle).
		s = client.Session()
		if !s.IPv6 {
			t.Fatal("the published session does not carry IPv6 with IPv6CP open")
		}
		src, dst := [16]byte{0: 0xfe, 1: 0x80}, [16]byte{0: 0xfe, 1: 0x80}
		copy(src[8:], s.LocalIfID[:])
		copy(dst[8:], s.PeerIfID[:])
		got := false
		for try := 0; try < 20 && !got; try++ {
			pkt := make([]byte, hdr.IPv6Len+8+6)
			hdr.IPv6(pkt).SetHeader(hdr.ProtoICMP6, 64, 8+6, &src, &dst)
			m := pkt[hdr.IPv6Len:]
			m[0] = hdr.ICMP6EchoRequest
			binary.BigEndian.PutUint16(m[4:], 0x6666)
			binary.BigEndian.PutUint16(m[6:], uint16(try))
			copy(m[8:], "pppfwd")
			hdr.ICMP6Checksum(m, &src, &dst)
			got = exchange(t, data, s, pkt, hdr.DecapIPv6, 500*time.Millisecond, func(b []byte) bool {
				ip := hdr.IPv6(b)
				if !ip.IsValid() || ip.NextHeader() != hdr.ProtoICMP6 || ip.Src() != dst || ip.Dst() != src {
					return false
				}
				r := ip.Payload()
				return len(r) >= 8 && r[0] == hdr.ICMP6EchoReply && binary.BigEndian.Uint16(r[4:]) == 0x6666 &&
					hdr.ICMP6ChecksumOK(r, &dst, &src) && string(r[8:]) == "pppfwd"
			})
		}
		if !got {
			t.Errorf("no ICMPv6 echo reply from pppd's %s over the session", linkLocal(s.PeerIfID))
		}
	}

	// pppd -> client: the VM pings our address; the test answers through
	// Deliver and Client.SendIPv4.
	respond, respondDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(respondDone)
		for {
			select {
			case <-respond:
				return
			case ip := <-delivered:
				if e, ok := parseEcho(ip); ok && e.typ == 8 && e.dst == s.LocalAddr {
					if err := client.SendIPv4(echoReplyTo(ip)); err != nil {
						t.Errorf("SendIPv4: %v", err)
					}
				}
			}
		}
	}()
	out, err := vm.Run("ping -c 3 -W 5 " + ipString(s.LocalAddr))
	close(respond)
	<-respondDone
	if n := pingReceived(out); err != nil || n < 2 {
		t.Errorf("ping from the VM: %v, %d replies:\n%s", err, n, out)
	}

	// LCP echoes both ways: pppd's (lcp-echo-interval 1) answered by us,
	// ours answered by pppd.
	if !waitFor(10*time.Second, func() bool {
		st := client.Status()
		return st.Counters.EchoReplies > 0 && st.EchoRTT > 0
	}) {
		t.Errorf("no LCP echo reply from pppd: %+v", client.Status().Counters)
	}
	if out, err := vm.Run("grep -c 'rcvd \\[LCP EchoRep' /var/log/pppd.log"); err != nil {
		t.Errorf("pppd logged no LCP Echo-Reply from the client: %v %s", err, out)
	}

	// The server hangs up, twice: SIGTERM (LCP Terminate-Request, then the
	// pppoe relay sends PADT) and SIGKILL (no Terminate: only the relay's
	// PADT). The client must come back each time.
	for _, sig := range []string{"TERM", "KILL"} {
		old := client.Session()
		before := client.Status().Counters
		if out, err := vm.Run("kill -" + sig + " $(pidof pppd)"); err != nil {
			t.Fatalf("kill -%s pppd: %v %s", sig, err, out)
		}
		var ns *hdr.Session
		if !waitFor(60*time.Second, func() bool {
			ns = client.Session()
			return ns != nil && ns != old && ns.ID != old.ID
		}) {
			t.Fatalf("SIG%s: client did not reconnect within 60 s; status %+v", sig, client.Status())
		}
		after := client.Status().Counters
		t.Logf("after SIG%s: session %#04x, counters PADT rx %d, reconnects %d, sessions up %d", sig, ns.ID,
			after.PADTReceived, after.Reconnects, after.SessionsUp)
		if after.SessionsUp != before.SessionsUp+1 {
			t.Errorf("SIG%s: SessionsUp %d -> %d, want one more", sig, before.SessionsUp, after.SessionsUp)
		}
		if sig == "KILL" && after.PADTReceived <= before.PADTReceived {
			t.Errorf("SIG%s: no PADT counted (%d -> %d)", sig, before.PADTReceived, after.PADTReceived)
		}
	}

	if auth == pppoe.AuthPAP {
		// The reconnections to the PAP-only AC took PAP at once.
		if n := strings.Count(clientLog(), "cannot do CHAP ("); n != 1 {
			t.Errorf("the AC was taken as PAP-only %d times, want once", n)
		}
	}

	// Our shutdown (LCP Terminate + PADT) ends the server's session.
	if err := stop(); err != nil {
		t.Fatalf("client Run: %v", err)
	}
	if client.Status().Counters.PADTSent == 0 {
		t.Error("client sent no PADT on shutdown")
	}
	if !waitFor(15*time.Second, func() bool { _, err := vm.Run("pidof pppd"); return err != nil }) {
		t.Error("server's pppd still running 15 s after the client shut down")
	}
}

const (
	acUser, acPass = "bob", "pw-bob"
)

var (
	acLocal = ip4(10, 98, 0, 1)
	acPool  = [2]uint32{ip4(10, 98, 0, 10), ip4(10, 98, 0, 19)}
	acDNS   = [2]uint32{ip4(10, 98, 0, 53), ip4(10, 98, 0, 54)}
)

// TestIntegrationRealClient runs pppfwd's access concentrator on the tap
// against the kernel pppd client (rp-pppoe.so plugin) in the VM, with CHAP,
// PAP and MS-CHAPv2 (pppd checks our authenticator response): session up, address and DNS assigned, pppd hanging up (the AC
// drops the session on its PADT) and dialling again, ping both ways, and the
// AC's shutdown ending pppd's session.
func TestIntegrationRealClient(t *testing.T) {
	requireLab(t, true)
	ns, vm := newLab(t)
	var ran []string
	pcap := startCapture(t, ns, "vmtap0", func(r *PcapReport) { checkInteropCapture(t, r, ran) })
	for _, tc := range []struct {
		name  string
		auth  pppoe.AuthProto
		proto string
		mtu   int
		ipv6  bool // IPv6CP on both sides
	}{
		{"CHAP", pppoe.AuthCHAPMD5, "chap", 1492, false},
		{"PAP-IPv6CP", pppoe.AuthPAP, "pap", 1492, true},
		// RFC 4638: baby-jumbo (1508-byte) Ethernet MTU on both ends,
		// pppd asks for PPP-Max-Payload 1500.
		{"CHAP-MTU1500", pppoe.AuthCHAPMD5, "chap", 1500, false},
		{"MSCHAPv2", pppoe.AuthMSCHAPv2, "chap", 1492, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = append(ran, tc.proto)
			testRealClient(t, ns, vm, pcap, tc.auth, tc.mtu, tc.ipv6)
		})
	}
}

func testRealClient(t *testing.T, ns *nettest.NS, vm *VM, pcap string, auth pppoe.AuthProto, mtu int, ipv6 bool) {
	pppdMTU := ""
	if ipv6 {
		pppdMTU = " +ipv6"
	} else {
		pppdMTU = " noipv6"
	}
	if mtu > 1492 {
		ethMTU := strconv.Itoa(mtu + 8)
		if err := ns.SetMTU("vmtap0", mtu+8); err != nil {
			t.Fatal(err)
		}
		if _, err := vm.Run("ip link set eth0 mtu " + ethMTU); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = ns.SetMTU("vmtap0", 1500)
			_, _ = vm.Run("ip link set eth0 mtu 1500")
		})
		pppdMTU += fmt.Sprintf(" mtu %d mru %d", mtu, mtu)
	}
	conn := openRaw(t, ns, "vmtap0", 0x8863, 0x8864)
	delivered := make(chan []byte, 64)
	srv := pppoe.NewServer(pppoe.ServerConfig{
		ACName: "pppfwd-ac", Auth: auth, Users: map[string]string{acUser: acPass}, MTU: mtu, IPv6: ipv6,
		LocalAddr: acLocal, PoolFirst: acPool[0], PoolLast: acPool[1], DNS: acDNS,
		EchoInterval: time.Second, EchoFailures: 10,
		Deliver: func(_ pppoe.SessionInfo, ip []byte) {
			select {
			case delivered <- append([]byte(nil), ip...):
			default:
			}
		},
		Logf: t.Logf,
	}, conn)
	stop := runUntilStopped(t, "server", srv.Run)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := vm.Run("tail -n 80 /var/log/pppc.log")
			t.Logf("pppd (client) log:\n%s", out)
		}
		_, _ = vm.Run("killall pppd 2>/dev/null; sleep 0.5; true")
	})

	startPppd := func() {
		t.Helper()
		if _, err := vm.Run("rm -f /var/log/pppc.log /etc/ppp/resolv.conf; " +
			"pppd plugin rp-pppoe.so nic-eth0 user " + acUser + " password " + acPass +
			" noauth noipdefault usepeerdns nodefaultroute lcp-echo-interval 1 lcp-echo-failure 10" + pppdMTU +
			" debug logfile /var/log/pppc.log nodetach >/dev/null 2>&1 &"); err != nil {
			t.Fatal(err)
		}
	}
	// waitUp waits until pppd's ppp0 has an address and the AC lists the
	// session as up, and returns the session and ppp0's local and peer
	// addresses.
	addrRe := regexp.MustCompile(`inet (\d+\.\d+\.\d+\.\d+) peer (\d+\.\d+\.\d+\.\d+)`)
	waitUp := func() (pppoe.SessionInfo, []string) {
		t.Helper()
		var m []string
		if !waitFor(90*time.Second, func() bool {
			out, err := vm.Run("ip -4 addr show dev ppp0")
			m = addrRe.FindStringSubmatch(out)
			return err == nil && m != nil
		}) {
			t.Fatalf("pppd's ppp0 got no address in 90 s; AC counters %+v", srv.Counters())
		}
		var info pppoe.SessionInfo
		if !waitFor(5*time.Second, func() bool {
			ss := srv.Sessions()
			if len(ss) == 1 && ss[0].Up {
				info = ss[0]
				return true
			}
			return false
		}) {
			t.Fatalf("AC sessions %+v, want one up", srv.Sessions())
		}
		return info, m
	}

	// pppd hangs up first (LCP Terminate + PADT): the AC must drop the
	// session. Then pppd dials again for the rest of the test.
	startPppd()
	first, _ := waitUp()
	before := srv.Counters()
	if out, err := vm.Run("kill -TERM $(pidof pppd)"); err != nil {
		t.Fatalf("kill pppd: %v %s", err, out)
	}
	if !waitFor(15*time.Second, func() bool { return len(srv.Sessions()) == 0 }) {
		t.Fatalf("AC still lists %+v 15 s after pppd hung up", srv.Sessions())
	}
	// pppd sends LCP Terminate-Request, then PADT; the AC may end the
	// session on either, so only the outcome is checked.
	after := srv.Counters()
	t.Logf("after pppd's hangup: AC PADT rx %d -> %d", before.PADTReceived, after.PADTReceived)
	if !waitFor(10*time.Second, func() bool { _, err := vm.Run("pidof pppd"); return err != nil }) {
		t.Fatal("pppd did not exit after SIGTERM")
	}
	startPppd()
	info, m := waitUp()
	if info.ID == first.ID {
		t.Errorf("second session reused id %#04x", info.ID)
	}
	t.Logf("pppd's ppp0: %s peer %s; AC session %#04x user %q addr %s", m[1], m[2], info.ID, info.User, ipString(info.Addr))
	if m[1] != ipString(info.Addr) || info.Addr < acPool[0] || info.Addr > acPool[1] {
		t.Errorf("pppd has %s, AC assigned %s from pool %s-%s", m[1], ipString(info.Addr), ipString(acPool[0]), ipString(acPool[1]))
	}
	if m[2] != ipString(acLocal) {
		t.Errorf("pppd's peer %s, want %s", m[2], ipString(acLocal))
	}
	if info.User != acUser || info.PeerMAC != DefaultMAC(0) {
		t.Errorf("AC session user %q peer %x", info.User, info.PeerMAC)
	}
	out, _ := vm.Run("cat /etc/ppp/resolv.conf")
	for _, d := range acDNS {
		if !strings.Contains(out, "nameserver "+ipString(d)) {
			t.Errorf("pppd did not learn DNS %s: %q", ipString(d), out)
		}
	}
	if out, _ := vm.Run("grep -E 'CHAP authentication succeeded|PAP authentication succeeded' /var/log/pppc.log"); !strings.Contains(out, map[pppoe.AuthProto]string{pppoe.AuthCHAPMD5: "CHAP", pppoe.AuthPAP: "PAP"}[auth]) {
		t.Errorf("pppd did not log %v success: %q", auth, out)
	}

	// VM -> AC: pppd's kernel pings the AC's address; the test answers
	// through Deliver and Server.SendIPv4. AC -> VM: Server.SendIPv4 to
	// the client's address, the guest kernel answers.
	respond, respondDone := make(chan struct{}), make(chan struct{})
	replies := make(chan echoMsg, 16)
	var fullSized atomic.Int32 // unfragmented echo requests of exactly mtu bytes
	go func() {
		defer close(respondDone)
		for {
			select {
			case <-respond:
				return
			case ip := <-delivered:
				e, ok := parseEcho(ip)
				switch {
				case ok && e.typ == 8 && e.dst == acLocal:
					if len(ip) == mtu {
						fullSized.Add(1)
					}
					if err := srv.SendIPv4(echoReplyTo(ip)); err != nil {
						t.Errorf("SendIPv4: %v", err)
					}
				case ok && e.typ == 0:
					replies <- e
				}
			}
		}
	}()
	defer func() {
		close(respond)
		<-respondDone
	}()
	out, err := vm.Run("ping -c 3 -W 5 " + ipString(acLocal))
	if n := pingReceived(out); err != nil || n < 2 {
		t.Errorf("ping from pppd's side: %v, %d replies:\n%s", err, n, out)
	}
	// Full-sized packets both ways: mtu-byte IP packets, unfragmented.
	out, err = vm.Run(fmt.Sprintf("ip link show ppp0; ping -c 2 -W 5 -s %d %s", mtu-28, ipString(acLocal)))
	if n := pingReceived(out); err != nil || n < 1 || fullSized.Load() == 0 {
		t.Errorf("%d-byte ping from pppd's side: %v, %d replies, %d full-sized requests at the AC:\n%s",
			mtu, err, n, fullSized.Load(), out)
	}
	if !strings.Contains(out, fmt.Sprintf("mtu %d ", mtu)) {
		t.Errorf("pppd's ppp0 MTU is not %d:\n%s", mtu, out)
	}
	if info.MTU != mtu || info.MaxPayload != (mtu > 1492) {
		t.Errorf("AC session MTU %d MaxPayload %v, want %d %v", info.MTU, info.MaxPayload, mtu, mtu > 1492)
	}
	if ipv6 {
		// IPv6CP: the AC learned pppd's interface identifier, and ppp0's
		// link-local address is built from it.
		if !waitFor(10*time.Second, func() bool {
			ss := srv.Sessions()
			return len(ss) == 1 && ss[0].PeerIfID != [8]byte{}
		}) {
			t.Errorf("IPv6CP: AC sessions %+v, want pppd's interface identifier", srv.Sessions())
		} else if ll := linkLocal(srv.Sessions()[0].PeerIfID); !waitFor(10*time.Second, func() bool {
			out, _ := vm.Run("ip -6 addr show dev ppp0")
			return strings.Contains(out, ll)
		}) {
			out, _ := vm.Run("ip -6 addr show dev ppp0")
			t.Errorf("ppp0 lacks %s:\n%s", ll, out)
		}
	}
	if mtu > 1492 {
		// pppd's PADR asked for it, and our PADS echoed it (RFC 4638).
		for _, f := range []string{"pppoe.code == 0x19 && pppoed.tags.max_payload", "pppoe.code == 0x65 && pppoed.tags.max_payload"} {
			if n := countFrames(t, pcap, f); n == 0 {
				t.Errorf("no frame matching %q in the capture", f)
			}
		}
	}
	for seq := uint16(1); seq <= 3; seq++ {
		if err := srv.SendIPv4(icmpEcho(acLocal, info.Addr, 8, 0x5151, seq, []byte("from-ac"))); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-replies:
			if e.id != 0x5151 || e.seq != seq || e.src != info.Addr || e.payload != "from-ac" {
				t.Errorf("unexpected echo reply %+v", e)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no echo reply %d from pppd's side", seq)
		}
	}
	if c := srv.Counters(); c.IPv4In < 3 || c.IPv4Out < 3 {
		t.Errorf("AC counters IPv4 in %d out %d, want >= 3 each", c.IPv4In, c.IPv4Out)
	}
	if out, err := vm.Run("grep -c 'rcvd \\[LCP EchoRep' /var/log/pppc.log"); err != nil {
		t.Errorf("pppd logged no LCP Echo-Reply from the AC: %v %s", err, out)
	}

	// The AC's shutdown (LCP Terminate + PADT) ends pppd.
	if err := stop(); err != nil {
		t.Fatalf("server Run: %v", err)
	}
	if !waitFor(15*time.Second, func() bool { _, err := vm.Run("pidof pppd"); return err != nil }) {
		out, _ := vm.Run("tail -n 5 /var/log/pppc.log")
		t.Errorf("pppd still running 15 s after the AC shut down:\n%s", out)
	}
}

// runUntilStopped runs run in a goroutine and returns the function that
// cancels it and waits (10 s at most) for it to return; the test's
// cleanup calls it too. Calling it twice is harmless.
func runUntilStopped(t *testing.T, what string, run func(context.Context) error) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- run(ctx) }()
	var stopOnce sync.Once
	var err error
	stop := func() error {
		stopOnce.Do(func() {
			cancel()
			select {
			case err = <-runErr:
			case <-time.After(10 * time.Second):
				err = fmt.Errorf("%s Run did not return 10 s after cancel", what)
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}
