package afxdp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
)

// exchange sends a test frame from one port and reports whether the
// other received it within d.
func exchange(ln *nettest.Line, from, to *Port, d time.Duration) bool {
	frames := nic.NewFrames(1)
	b := make([]byte, 2048)
	frames[0].SetData(testFrame(b, mustMACNoT(ln.AMAC), mustMACNoT(ln.RAMAC), [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 0, 7, 1, 64))
	_, _ = from.Send(0, frames)
	in := nic.NewFrames(32)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		n, _ := to.Recv(0, in)
		for _, f := range in[:n] {
			if _, seq, ok := parseTestFrame(f.Data()); ok && seq == 7 {
				return true
			}
		}
		if n == 0 {
			_ = to.Wait(0, time.Millisecond)
		}
		_ = from.Flush(0)
	}
	return false
}

// TestIntegrationAFXDPLinkFlap takes a port's interface down and up: the
// socket stays bound and the XDP program attached, so the same port
// sends and receives again once the link is back.
func TestIntegrationAFXDPLinkFlap(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	p := openPort(t, ln.R, ln.RA, Options{Queues: 1, RingSize: 256})
	peer := openPort(t, ln.A, ln.AIf, Options{Queues: 1, RingSize: 256})
	if !exchange(ln, p, peer, 2*time.Second) || !exchange(ln, peer, p, 2*time.Second) {
		t.Fatal("no exchange before the flap")
	}
	if _, err := ln.R.Exec("ip", "link", "set", "dev", ln.RA, "down"); err != nil {
		t.Fatal(err)
	}
	f := nic.NewFrames(1)
	f[0].SetData(make([]byte, 60))
	n, err := p.Send(0, f)
	t.Logf("Send while down: %d, %v", n, err)
	if errors.Is(err, nic.ErrLinkGone) {
		t.Fatalf("Send while down = %v: the interface is down, not gone", err)
	}
	for i := 0; i < 2*linkCheckEvery; i++ {
		if _, err := p.Recv(0, f); err != nil {
			t.Fatalf("Recv while down: %v", err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := ln.R.Exec("ip", "link", "set", "dev", ln.RA, "up"); err != nil {
		t.Fatal(err)
	}
	ok := false
	for deadline := time.Now().Add(5 * time.Second); !ok && time.Now().Before(deadline); {
		ok = exchange(ln, p, peer, 200*time.Millisecond)
	}
	if !ok {
		t.Fatalf("the flapped port sends nothing after up; stats %+v, drops kick %d", p.Stats(), p.Drops(DropTxKickError))
	}
	if !exchange(ln, peer, p, 2*time.Second) {
		t.Fatalf("the flapped port receives nothing after up; stats %+v", p.Stats())
	}
}

// TestIntegrationAFXDPLinkGone deletes the port's interface and makes a
// new one of the same name: the socket was unbound by the kernel, so Recv
// and Send report an error wrapping nic.ErrLinkGone naming the interface.
func TestIntegrationAFXDPLinkGone(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	p := openPort(t, ln.R, ln.RA, Options{Queues: 1, RingSize: 256})
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
	fr[0].SetData(make([]byte, 60))
	if _, err := p.Send(0, fr[:1]); !errors.Is(err, nic.ErrLinkGone) {
		t.Fatalf("Send after the interface was replaced: %v, want %v", err, nic.ErrLinkGone)
	}
	if err := p.Wait(0, time.Millisecond); !errors.Is(err, nic.ErrLinkGone) {
		t.Fatalf("Wait after the interface was replaced: %v, want %v", err, nic.ErrLinkGone)
	}
	if err := p.Close(); err != nil {
		t.Logf("Close after the interface was replaced: %v", err)
	}
}
