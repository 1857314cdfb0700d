package rawsock

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/pppoe"
)

// The method set matches pppoe.Conn.
var _ pppoe.Conn = (*Conn)(nil)

func vethPair(t *testing.T) (*Conn, *Conn) {
	lab := nettest.NewLab(t)
	nsA, err := lab.NewNS("a")
	if err != nil {
		t.Fatal(err)
	}
	nsB, err := lab.NewNS("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("wan0", nsA, "bras0", nsB, 1); err != nil {
		t.Fatal(err)
	}
	var a, b *Conn
	if err := nsA.Do(func() (err error) { a, err = Open("wan0", 0x8863, 0x8864); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := nsB.Do(func() (err error) { b, err = Open("bras0", 0x8863, 0x8864); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

func TestIntegrationRawsockFrames(t *testing.T) {
	a, b := vethPair(t)
	buf := make([]byte, 2048)
	if _, err := a.ReadFrame(buf, 50*time.Millisecond); !errors.Is(err, ErrTimeout) || !errors.Is(err, pppoe.ErrTimeout) {
		t.Fatalf("empty read: %v", err)
	}
	bm, am := b.HardwareAddr(), a.HardwareAddr()
	mk := func(et uint16, vlan uint16) []byte {
		f := append(append([]byte{}, bm[:]...), am[:]...)
		if vlan != 0 {
			f = append(f, 0x81, 0x00, byte(5<<5|vlan>>8), byte(vlan))
		}
		f = binary.BigEndian.AppendUint16(f, et)
		f = append(f, 0x11, 0x09, 0, 0, 0, 4, 1, 1, 0, 0)
		for len(f) < 60 {
			f = append(f, 0)
		}
		return f
	}
	// Filtered out (IPv4), then untagged and VLAN-7 PPPoE frames.
	for _, f := range [][]byte{mk(0x0800, 0), mk(0x8863, 0), mk(0x8863, 7)} {
		if err := a.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range [][]byte{mk(0x8863, 0), mk(0x8863, 7)} {
		n, err := b.ReadFrame(buf, 2*time.Second)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("got % x (%v), want % x", buf[:n], err, want)
		}
	}
	// Our own transmissions are not read back.
	if n, err := a.ReadFrame(buf, 100*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("read own frame % x (%v)", buf[:n], err)
	}
}

// TestIntegrationPPPoEOverVeth runs pppfwd's client against its access
// concentrator over AF_PACKET sockets on a VLAN-7 tagged veth pair.
func TestIntegrationPPPoEOverVeth(t *testing.T) {
	a, b := vethPair(t)
	srv := pppoe.NewServer(pppoe.ServerConfig{Auth: pppoe.AuthPAP, Users: map[string]string{"u": "p"},
		LocalAddr: 0x0a000001, PoolFirst: 0x0a000002, PoolLast: 0x0a000010, DNS: [2]uint32{0x08080808}, VLAN: 7}, b)
	ups := make(chan *hdr.Session, 4)
	cli := pppoe.NewClient(pppoe.ClientConfig{Username: "u", Password: "p", VLAN: 7, VLANPrio: 1, HostUniq: true,
		TerminateTimeout: time.Second}, a, func(s *hdr.Session) { ups <- s })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cctx, ccancel := context.WithCancel(ctx)
	errc := make(chan error, 2)
	go func() { errc <- srv.Run(ctx) }()
	go func() { errc <- cli.Run(cctx) }()
	select {
	case s := <-ups:
		if s == nil || s.LocalAddr != 0x0a000002 || s.DNS[0] != 0x08080808 || s.VLAN != 7 {
			t.Fatalf("session %+v", s)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("not up: %+v", cli.Status())
	}
	ccancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.Sessions()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(srv.Sessions()); n != 0 {
		t.Fatalf("AC holds %d sessions after client shutdown", n)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationPPPoEControl: the control socket gets discovery and PPP
// control frames, not session data (IPv4, IPv6) nor other EtherTypes.
func TestIntegrationPPPoEControl(t *testing.T) {
	lab := nettest.NewLab(t)
	nsA, err := lab.NewNS("ca")
	if err != nil {
		t.Fatal(err)
	}
	nsB, err := lab.NewNS("cb")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("cwan0", nsA, "cbras0", nsB, 1); err != nil {
		t.Fatal(err)
	}
	var tx, rx *Conn
	if err := nsA.Do(func() (err error) { tx, err = Open("cwan0"); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	if err := nsB.Do(func() (err error) { rx, err = OpenPPPoEControl("cbras0"); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rx.Close() })
	rm, tm := rx.HardwareAddr(), tx.HardwareAddr()
	mk := func(et, proto uint16) []byte {
		f := append(append([]byte{}, rm[:]...), tm[:]...)
		f = binary.BigEndian.AppendUint16(f, et)
		f = append(f, 0x11, 0, 0, 1, 0, 8)
		f = binary.BigEndian.AppendUint16(f, proto)
		for len(f) < 60 {
			f = append(f, byte(len(f)))
		}
		return f
	}
	frames := []struct {
		f    []byte
		want bool
	}{
		{mk(0x0800, 0x4500), false},
		{mk(0x8864, 0x0021), false},
		{mk(0x8864, 0x0057), false},
		{mk(0x8864, 0xc021), true},
		{mk(0x8863, 0x0000), true},
		{mk(0x8864, 0x8021), true},
		{mk(0x86dd, 0x6000), false},
	}
	for _, fr := range frames {
		if err := tx.WriteFrame(fr.f); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 2048)
	for _, fr := range frames {
		if !fr.want {
			continue
		}
		n, err := rx.ReadFrame(buf, 2*time.Second)
		if err != nil || !bytes.Equal(buf[:n], fr.f) {
			t.Fatalf("got % x (%v), want % x", buf[:n], err, fr.f)
		}
	}
	if n, err := rx.ReadFrame(buf, 100*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("data frame admitted: % x (%v)", buf[:n], err)
	}
}

// TestIntegrationUDPPort: the probe socket gets UDP frames from or to its
// port, plain or in a PPPoE session, and nothing else; OpenTCPPort's
// socket the same for TCP, side by side on one interface.
func TestIntegrationUDPPort(t *testing.T) {
	lab := nettest.NewLab(t)
	nsA, err := lab.NewNS("ua")
	if err != nil {
		t.Fatal(err)
	}
	nsB, err := lab.NewNS("ub")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("uwan0", nsA, "ubras0", nsB, 1); err != nil {
		t.Fatal(err)
	}
	// Frames sent before the kernel has processed the carrier change
	// are dropped (the device has no qdisc yet).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, err := nsA.Exec("ip", "link", "show", "uwan0")
		if err == nil && strings.Contains(out, "state UP") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("uwan0 not up: %s %v", out, err)
		}
	}
	var tx, udp, tcp *Conn
	if err := nsA.Do(func() (err error) { tx, err = Open("uwan0"); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	if err := nsB.Do(func() (err error) { udp, err = OpenUDPPort("ubras0", 7); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	if err := nsB.Do(func() (err error) { tcp, err = OpenTCPPort("ubras0", 7); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	rm, tm := udp.HardwareAddr(), tx.HardwareAddr()
	mk := func(pppoe bool, proto uint8, sport, dport uint16) []byte {
		f := append(append([]byte{}, rm[:]...), tm[:]...)
		if pppoe {
			f = binary.BigEndian.AppendUint16(f, 0x8864)
			f = append(f, 0x11, 0, 0, 1, 0, 30, 0x00, 0x21)
		} else {
			f = binary.BigEndian.AppendUint16(f, 0x0800)
		}
		ip := []byte{0x45, 0, 0, 28, 0, 1, 0, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
		f = append(f, ip...)
		f = binary.BigEndian.AppendUint16(f, sport)
		f = binary.BigEndian.AppendUint16(f, dport)
		f = append(f, 0, 8, 0, 0)
		for len(f) < 60 {
			f = append(f, 0)
		}
		return f
	}
	// want: which socket admits the frame (17 UDP, 6 TCP, 0 neither).
	frames := []struct {
		f    []byte
		want uint8
	}{
		{mk(false, 17, 40000, 7), 17},
		{mk(false, 17, 7, 40000), 17},
		{mk(false, 17, 40000, 8), 0},
		{mk(false, 6, 40000, 7), 6},
		{mk(false, 6, 7, 5201), 6},
		{mk(false, 6, 40000, 8), 0},
		{mk(false, 1, 7, 7), 0},
		{mk(true, 17, 40000, 7), 17},
		{mk(true, 17, 7, 40001), 17},
		{mk(true, 17, 20000, 443), 0},
		{mk(true, 6, 7, 7), 6},
		{mk(true, 6, 5201, 7), 6},
		{mk(true, 6, 20000, 443), 0},
	}
	lcp := mk(true, 17, 7, 7)
	lcp[20], lcp[21] = 0xc0, 0x21
	frames = append(frames, struct {
		f    []byte
		want uint8
	}{lcp, 0})
	for _, fr := range frames {
		if err := tx.WriteFrame(fr.f); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 2048)
	for _, rx := range []struct {
		proto uint8
		c     *Conn
	}{{17, udp}, {6, tcp}} {
		for i, fr := range frames {
			if fr.want != rx.proto {
				continue
			}
			n, err := rx.c.ReadFrame(buf, 2*time.Second)
			if err != nil || !bytes.Equal(buf[:n], fr.f) {
				t.Fatalf("proto %d: frame %d: got % x (%v), want % x", rx.proto, i, buf[:n], err, fr.f)
			}
		}
		if n, err := rx.c.ReadFrame(buf, 100*time.Millisecond); !errors.Is(err, ErrTimeout) {
			t.Fatalf("proto %d: admitted % x (%v)", rx.proto, buf[:n], err)
		}
	}
}
