package lab

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/nic/nettest"
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
	}{{"afpacket", 1}, {"afpacket", 2}, {"afxdp", 1}, {"afxdp", 2}} {
		backend, workers := c.backend, c.workers
		t.Run(fmt.Sprintf("%s/workers=%d", backend, workers), func(t *testing.T) {
			l, err := Start(Options{Backend: backend, Workers: workers, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.WaitUp(15 * time.Second); err != nil {
				t.Fatal(err)
			}
			out, err := l.LAN.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", LANPrefix.Addr().String())
			if err != nil || !strings.Contains(out, " 0% packet loss") {
				t.Fatalf("ping gateway: %v\n%s", err, out)
			}
			out, err = l.LAN.Exec("ping", "-c", "5", "-i", "0.2", "-W", "2", RemoteAddr.String())
			if err != nil || !strings.Contains(out, " 0% packet loss") {
				t.Fatalf("ping through PPPoE: %v\n%s", err, out)
			}
			const flows, per = 64, 20
			// Sockets are opened inside the LAN namespace (on Do's thread);
			// the goroutines using them may run on any thread.
			conns := make([]net.Conn, flows)
			err = l.LAN.Do(func() error {
				for i := range conns {
					c, err := net.Dial("udp4", fmt.Sprintf("203.0.113.%d:7", 1+i%50))
					if err != nil {
						return err
					}
					conns[i] = c
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var lost int
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, c := range conns {
				wg.Add(1)
				go func(c net.Conn) {
					defer wg.Done()
					defer c.Close()
					got := udpEcho(t, c, per)
					mu.Lock()
					lost += per - got
					mu.Unlock()
				}(c)
			}
			wg.Wait()
			if lost != 0 {
				t.Fatalf("%d of %d UDP echoes lost; counters %+v", lost, flows*per, l.R.Engine().Totals())
			}
			c := l.R.Engine().Totals()
			if c.TxWAN < flows*per || c.TxLAN < flows*per {
				t.Fatalf("counters %+v", c)
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

// udpEcho sends n datagrams on one socket and counts the echoes.
func udpEcho(t *testing.T, c net.Conn, n int) int {
	got := 0
	buf := make([]byte, 2048)
	for i := 0; i < n; i++ {
		msg := fmt.Sprintf("pppfwd %s %d", c.LocalAddr(), i)
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Error(err)
			return got
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		k, err := c.Read(buf)
		if err == nil && string(buf[:k]) == msg {
			got++
		}
	}
	return got
}
