package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/internal/nettest"
)

// TestIntegrationLab brings up the namespace lab (pppfwd's PPPoE client
// against pppfwd's access concentrator, afpacket ports) and checks what a
// user checks: the session comes up, the gateway answers ping, the
// Internet answers ping through PPPoE + NAT, and many UDP flows get their
// echoes back. Closing ends the session with PADT on both sides.
func TestIntegrationLab(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ip")
	nettest.RequireCmd(t, "ping")
	for _, c := range []struct {
		backend string
		workers int
		tap     bool
	}{{"afpacket", 1, false}, {"afpacket", 2, false}, {"afxdp", 1, false}, {"afxdp", 2, false}, {"afpacket", 2, true}} {
		backend, workers, hostTap := c.backend, c.workers, c.tap
		t.Run(fmt.Sprintf("%s/workers=%d/tap=%v", backend, workers, hostTap), func(t *testing.T) {
			resolv := filepath.Join(t.TempDir(), "resolv.conf")
			l, err := Start(Options{Backend: backend, Workers: workers, HostTap: hostTap, ResolvFile: resolv, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.WaitUp(15 * time.Second); err != nil {
				t.Fatal(err)
			}
			// The session's DNS server lands in the resolv file (the hook
			// runs off the fast path, so give it a moment).
			var rc []byte
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if rc, _ = os.ReadFile(resolv); len(rc) > 0 {
					break
				}
			}
			if !strings.Contains(string(rc), "nameserver "+DNSAddr.String()+"\n") {
				t.Fatalf("resolv file %q, want the AC's DNS server %s", rc, DNSAddr)
			}
			out, err := l.Ping(LANPrefix.Addr().String(), 3)
			if err != nil || !strings.Contains(out, " 0% packet loss") {
				t.Fatalf("ping gateway: %v\n%s", err, out)
			}
			// With a host TAP the router namespace's kernel answers for
			// the gateway; without, the control plane does.
			if st := l.R.Control().Stats(); hostTap != (st.ToHost > 0 && st.FromHost > 0) || hostTap == (st.EchoReplies > 0) {
				t.Fatalf("gateway answered by the wrong side (tap %v): %+v", hostTap, st)
			}
			out, err = l.Ping(RemoteAddr.String(), 5)
			if err != nil || !strings.Contains(out, " 0% packet loss") {
				t.Fatalf("ping through PPPoE: %v\n%s", err, out)
			}
			const flows, per = 64, 20
			got, err := l.UDPEcho(flows, per)
			if err != nil {
				t.Fatal(err)
			}
			lost := flows*per - got
			if lost != 0 {
				t.Fatalf("%d of %d UDP echoes lost; counters %+v", lost, flows*per, l.R.Engine().Totals())
			}
			// Workers publish counters every 64th iteration and when idle;
			// the last echoes can reach the host before the worker that
			// sent them publishes.
			c := l.R.Engine().Totals()
			for deadline := time.Now().Add(2 * time.Second); (c.TxWAN < flows*per || c.TxLAN < flows*per) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				c = l.R.Engine().Totals()
			}
			if c.TxWAN < flows*per || c.TxLAN < flows*per {
				t.Fatalf("counters %+v", c)
			}
			// On afpacket the WAN port's fanout program delivers every
			// reply to its owner's queue, and each worker steers its own:
			// no WAN frame was handed between workers. Elsewhere worker 0
			// steers them all.
			wantSteer := dataplane.SteerInline
			if backend == "afpacket" || workers == 1 {
				wantSteer = dataplane.SteerLocal
			}
			if m := l.R.Engine().Steering(); m != wantSteer {
				t.Fatalf("steering %v, want %v", m, wantSteer)
			}
			if wantSteer == dataplane.SteerLocal && c.SteerRedirected != 0 {
				t.Fatalf("%d WAN frames handed to another worker; counters %+v", c.SteerRedirected, c)
			}
			// Datagrams larger than an MTU cross in fragments both ways.
			if got, err := l.UDPEchoLarge(10, 3000); err != nil || got != 10 {
				t.Fatalf("fragmented UDP echo: %d of 10 came back (%v); counters %+v", got, err, l.R.Engine().Totals())
			}
			// IPv6, routed: the ISP delegates a prefix over the session
			// (DHCPv6-PD), the router advertises a /64 of it, the LAN host
			// numbers itself (SLAAC) and reaches the Internet host.
			a6, err := l.WaitAddr6(15 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := l.Delegated(); !ok || !d.Contains(a6) {
				t.Fatalf("LAN host address %s, delegated %v %v", a6, d, ok)
			}
			out, err = l.Ping6(Remote6Addr.String(), 5)
			if err != nil || !strings.Contains(out, " 0% packet loss") {
				t.Fatalf("ping6 through PPPoE: %v\n%s\ncounters %+v", err, out, l.R.Engine().Totals())
			}
			if got, err := l.UDPEcho6(16, 10); err != nil || got != 160 {
				t.Fatalf("UDP echo over IPv6: %d of 160 came back (%v); counters %+v", got, err, l.R.Engine().Totals())
			}
			// (Counters are published every 64th loop and when idle:
			// give the workers a moment, as for IPv4 above.)
			c6 := l.R.Engine().Totals()
			for deadline := time.Now().Add(2 * time.Second); (c6.IPv6Up < 160 || c6.IPv6Down < 160) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				c6 = l.R.Engine().Totals()
			}
			if c6.IPv6Up < 160 || c6.IPv6Down < 160 {
				t.Fatalf("IPv6 counters up %d down %d", c6.IPv6Up, c6.IPv6Down)
			}
			// What the LAN host did not ask for stays out.
			if blocked, err := l.Unsolicited6(a6, 3); err != nil || !blocked {
				t.Fatalf("unsolicited IPv6 to the LAN host not dropped by the firewall (%v): %v", err, l.R.Engine().Totals().DropMap())
			}
			if len(l.AC.Sessions()) != 1 {
				t.Fatalf("AC sessions %+v", l.AC.Sessions())
			}
			ac := l.AC
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if n := ac.Counters().PADTReceived; n == 0 {
				t.Fatalf("AC saw no PADT on shutdown: %+v", ac.Counters())
			}
		})
	}
}
