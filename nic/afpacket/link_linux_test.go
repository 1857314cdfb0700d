//go:build linux

package afpacket

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
)

// TestIntegrationAFPacketLinkFlap takes the sending port's interface down
// and up again: while it is down Send fails (the frames are refused, not
// lost silently) and Wait does not spin on the socket's pending error;
// once it is up the same port sends and receives again.
func TestIntegrationAFPacketLinkFlap(t *testing.T) {
	for _, mode := range []TxMode{TxRing, TxCopy} {
		t.Run(mode.String(), func(t *testing.T) {
			ln := nettest.MustLine(t, nettest.LineConfig{})
			tx := openIn(t, ln.R, ln.RA, Config{TxMode: mode})
			rx := openIn(t, ln.A, ln.AIf, Config{Promisc: true})
			send := func() (int, error) {
				f := nic.NewFrame()
				f.SetData(ethFrame(60))
				return tx.Send(0, []*nic.Frame{f})
			}
			if n, err := send(); n != 1 || err != nil {
				t.Fatalf("Send before the flap = %d, %v", n, err)
			}
			if got := recvMarked(rx, 1, 2*time.Second); len(got) != 1 {
				t.Fatal("nothing received before the flap")
			}
			if _, err := ln.R.Exec("ip", "link", "set", "dev", ln.RA, "down"); err != nil {
				t.Fatal(err)
			}
			n, err := send()
			t.Logf("Send while down: %d, %v", n, err)
			if errors.Is(err, nic.ErrLinkGone) {
				t.Fatalf("Send while down = %v: the interface is down, not gone", err)
			}
			// Wait must sleep out its timeout, not return at once on the
			// socket's pending ENETDOWN over and over.
			start := time.Now()
			for i := 0; i < 5; i++ {
				if err := tx.Wait(0, 20*time.Millisecond); err != nil {
					t.Fatalf("Wait while down: %v", err)
				}
			}
			if d := time.Since(start); d < 60*time.Millisecond {
				t.Fatalf("5 Waits of 20 ms while down returned after %v: spinning on the socket error", d)
			}
			fr := nic.NewFrames(8)
			if _, err := tx.Recv(0, fr); err != nil {
				t.Fatalf("Recv while down: %v", err)
			}
			if _, err := ln.R.Exec("ip", "link", "set", "dev", ln.RA, "up"); err != nil {
				t.Fatal(err)
			}
			var got [][]byte
			for deadline := time.Now().Add(5 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
				if n, err := send(); n != 1 || err != nil {
					t.Logf("Send after up = %d, %v", n, err)
				}
				got = recvMarked(rx, 1, 100*time.Millisecond)
			}
			if len(got) == 0 {
				t.Fatal("nothing received after the interface came back up")
			}
			// And the other way: the port still receives.
			f := nic.NewFrame()
			f.SetData(ethFrame(60))
			if n, err := rx.Send(0, []*nic.Frame{f}); n != 1 || err != nil {
				t.Fatalf("peer Send = %d, %v", n, err)
			}
			if got := recvMarked(tx, 1, 2*time.Second); len(got) != 1 {
				t.Fatal("the flapped port receives nothing after up")
			}
		})
	}
}

// TestIntegrationAFPacketLinkGone deletes the port's interface and makes
// a new one of the same name: the port's sockets are bound to the old
// interface index, so Send and Recv report an error wrapping
// nic.ErrLinkGone that names the interface, and keep reporting it.
func TestIntegrationAFPacketLinkGone(t *testing.T) {
	for _, mode := range []TxMode{TxRing, TxCopy} {
		t.Run(mode.String(), func(t *testing.T) {
			ln := nettest.MustLine(t, nettest.LineConfig{})
			p := openIn(t, ln.R, ln.RA, Config{TxMode: mode, Queues: 1})
			if err := ln.R.DelLink(ln.RA); err != nil {
				t.Fatal(err)
			}
			if _, err := ln.R.Exec("ip", "link", "add", ln.RA, "type", "veth", "peer", "name", ln.AIf, "netns", ln.A.Name); err != nil {
				t.Fatal(err)
			}
			_ = ln.R.SetUp(ln.RA)
			_ = ln.A.SetUp(ln.AIf)
			fr := nic.NewFrames(8)
			var rerr error
			for deadline := time.Now().Add(2 * time.Second); rerr == nil && time.Now().Before(deadline); {
				_, rerr = p.Recv(0, fr)
			}
			if !errors.Is(rerr, nic.ErrLinkGone) || !strings.Contains(rerr.Error(), ln.RA) {
				t.Fatalf("Recv after the interface was replaced: %v, want %v naming %s", rerr, nic.ErrLinkGone, ln.RA)
			}
			f := nic.NewFrame()
			f.SetData(ethFrame(60))
			_, serr := p.Send(0, []*nic.Frame{f})
			if !errors.Is(serr, nic.ErrLinkGone) || !strings.Contains(serr.Error(), ln.RA) {
				t.Fatalf("Send after the interface was replaced: %v, want %v naming %s", serr, nic.ErrLinkGone, ln.RA)
			}
		})
	}
}
