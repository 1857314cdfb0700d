//go:build linux

// Real-kernel tests: they need root and the netmap module (/dev/netmap)
// and skip otherwise. They were run in the qemu lab VM (Debian 6.1 kernel,
// netmap built from its own sources, generic adapter on veth).

package netmap_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/netmap"
)

func need(t *testing.T) *nettest.Lab {
	nettest.RequireRoot(t)
	if _, err := os.Stat(netmap.DeviceName); err != nil {
		t.Skipf("no %s: %v", netmap.DeviceName, err)
	}
	return nettest.NewLab(t)
}

// vethNS makes namespace name holding veth pairs with queues queues each
// (pairs[i][0] -- pairs[i][1]).
func vethNS(t *testing.T, lab *nettest.Lab, name string, queues int, pairs ...[2]string) *nettest.NS {
	t.Helper()
	ns, err := lab.NewNS(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if err := lab.Veth(p[0], ns, p[1], ns, queues); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// openIn opens netmap ports by name inside ns (netmap.Open, default
// config); the test's cleanup closes them, last opened first.
func openIn(t *testing.T, ns *nettest.NS, names ...string) []*netmap.Port {
	t.Helper()
	ps := make([]*netmap.Port, len(names))
	err := ns.Do(func() (err error) {
		for i, n := range names {
			if ps[i], err = netmap.Open(n, netmap.Config{}); err != nil {
				return err
			}
			t.Cleanup(func() { ps[i].Close() })
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func frame(seq, n int) []byte {
	p := make([]byte, n)
	copy(p, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5})
	binary.BigEndian.PutUint32(p[14:], uint32(seq))
	for i := 18; i < n; i++ {
		p[i] = byte(seq*7 + i)
	}
	return p
}

func clean(t *testing.T, ps ...*netmap.Port) {
	t.Helper()
	for _, p := range ps {
		if k := p.KernelErrors(); k != 0 {
			t.Errorf("%s: %d kernel errors", p.Name(), k)
		}
		t.Logf("%s stats %+v drops %v", p.Name(), p.Stats(), p.Drops())
	}
}

// recvAll drains every queue of p.
func recvAll(t *testing.T, p *netmap.Port, in []*nic.Frame, fn func([]byte)) int {
	got := 0
	for q := 0; q < p.Queues(); q++ {
		n, err := p.Recv(q, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range in[:n] {
			fn(f.Data())
		}
		got += n
	}
	return got
}

func TestIntegrationNetmapMultiQueue(t *testing.T) {
	ns := vethNS(t, need(t), "mq", 2, [2]string{"mqa", "mqb"})
	ps := openIn(t, ns, "mqa", "mqb")
	a, b := ps[0], ps[1]
	t.Logf("queues a=%d b=%d memid %d %d", a.Queues(), b.Queues(), a.MemID(0), b.MemID(0))
	if a.Queues() != 2 || b.Queues() != 2 {
		t.Fatalf("queues %d %d, want 2", a.Queues(), b.Queues())
	}
	const count = 400
	out, in := nic.NewFrames(16), nic.NewFrames(16)
	seen := make(map[uint32]bool)
	sent, got := 0, 0
	perQ := [2]int{}
	deadline := time.Now().Add(10 * time.Second)
	for got < count && time.Now().Before(deadline) {
		if sent < count {
			q := (sent / 16) % 2
			k := min(16, count-sent)
			for i := 0; i < k; i++ {
				out[i].SetData(frame(sent+i, 64+(sent+i)%900))
			}
			n, err := a.Send(q, out[:k])
			if err != nil {
				t.Fatal(err)
			}
			sent += n
		}
		_ = b.Wait(0, 2*time.Millisecond)
		for q := 0; q < 2; q++ {
			n, err := b.Recv(q, in)
			if err != nil {
				t.Fatal(err)
			}
			perQ[q] += n
			for _, f := range in[:n] {
				d := f.Data()
				seq := binary.BigEndian.Uint32(d[14:])
				if !bytes.Equal(d, frame(int(seq), 64+int(seq)%900)) {
					t.Fatalf("frame %d corrupt", seq)
				}
				if seen[seq] {
					t.Fatalf("frame %d twice", seq)
				}
				seen[seq] = true
				got++
			}
		}
	}
	t.Logf("received %d of %d, per rx queue %v", got, count, perQ)
	if got != count {
		t.Errorf("received %d of %d", got, count)
	}
	clean(t, a, b)
}

func arpReq(src net.HardwareAddr, sip, tip netip.Addr) []byte {
	p := make([]byte, 60)
	copy(p[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(p[6:12], src)
	p[12], p[13] = 0x08, 0x06
	binary.BigEndian.PutUint16(p[14:], 1)
	binary.BigEndian.PutUint16(p[16:], 0x0800)
	p[18], p[19] = 6, 4
	binary.BigEndian.PutUint16(p[20:], 1)
	copy(p[22:28], src)
	s4, t4 := sip.As4(), tip.As4()
	copy(p[28:32], s4[:])
	copy(p[38:42], t4[:])
	return p
}

// Host rings: an ARP request handed to the host stack (host TX ring) is
// answered, and the answer comes back on the host RX ring (the stack's
// transmissions on a netmap-mode interface go to the host RX ring). Then the
// reply is forwarded host RX -> NIC TX and must appear on the peer.
func TestIntegrationNetmapHostRings(t *testing.T) {
	ns := vethNS(t, need(t), "hr", 1, [2]string{"hra", "hrb"})
	if err := ns.AddAddr("hrb", netip.MustParsePrefix("10.99.0.1/24")); err != nil {
		t.Fatal(err)
	}
	_ = ns.Sysctl("net.ipv6.conf.all.disable_ipv6", "1")
	ps := openIn(t, ns, "hra", "hrb")
	a, b := ps[0], ps[1]
	var host *netmap.Port
	if err := ns.Do(func() (err error) { host, err = netmap.OpenHost("hrb"); return err }); err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	t.Logf("memid a=%d b=%d host=%d", a.MemID(0), b.MemID(0), host.MemID(0))
	me := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x42}
	out, in := nic.NewFrames(8), nic.NewFrames(8)
	out[0].SetData(arpReq(me, netip.MustParseAddr("10.99.0.2"), netip.MustParseAddr("10.99.0.1")))
	if n, err := host.Send(0, out[:1]); n != 1 || err != nil {
		t.Fatalf("host send %d %v", n, err)
	}
	var reply []byte
	deadline := time.Now().Add(5 * time.Second)
	for reply == nil && time.Now().Before(deadline) {
		_ = host.Wait(0, 10*time.Millisecond)
		n, err := host.Recv(0, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range in[:n] {
			d := f.Data()
			t.Logf("host rx % x", d[:min(len(d), 42)])
			if len(d) >= 42 && d[12] == 8 && d[13] == 6 && d[21] == 2 && bytes.Equal(d[0:6], me) {
				reply = append([]byte(nil), d...)
			}
		}
	}
	if reply == nil {
		t.Fatal("no ARP reply from the host stack on the host RX ring")
	}
	// Forward what the host sent on hrb out of the wire: host RX -> NIC TX.
	// The ARP reply is already consumed; make the stack send something else.
	if _, err := ns.Exec("ping", "-c", "1", "-W", "1", "10.99.0.7"); err == nil {
		t.Log("ping unexpectedly answered")
	}
	moved := 0
	deadline = time.Now().Add(5 * time.Second)
	for moved == 0 && time.Now().Before(deadline) {
		_ = host.Wait(0, 10*time.Millisecond)
		n, err := netmap.Forward(host, 0, b, 0, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		moved += n
	}
	t.Logf("forwarded %d host frames to the wire", moved)
	got := 0
	deadline = time.Now().Add(5 * time.Second)
	for got == 0 && moved > 0 && time.Now().Before(deadline) {
		_ = a.Wait(0, 10*time.Millisecond)
		got += recvAll(t, a, in, func(d []byte) { t.Logf("peer rx % x", d[:min(len(d), 42)]) })
	}
	if moved == 0 || got == 0 {
		t.Errorf("host->wire: moved %d, peer got %d", moved, got)
	}
	clean(t, a, b, host)
}

// Zero-copy forwarding across two veth pairs: p1a -> p1b =Forward=> p2a -> p2b.
func TestIntegrationNetmapForwardZeroCopy(t *testing.T) {
	ns := vethNS(t, need(t), "zc", 1, [2]string{"z1a", "z1b"}, [2]string{"z2a", "z2b"})
	p := openIn(t, ns, "z1a", "z1b", "z2a", "z2b")
	t.Logf("memids %d %d %d %d", p[0].MemID(0), p[1].MemID(0), p[2].MemID(0), p[3].MemID(0))
	const count = 3000
	out, in := nic.NewFrames(32), nic.NewFrames(64)
	sent, fwd, got := 0, 0, 0
	deadline := time.Now().Add(30 * time.Second)
	for got < count && time.Now().Before(deadline) {
		if sent < count && sent-got < 128 {
			k := min(32, count-sent)
			for i := 0; i < k; i++ {
				out[i].SetData(frame(sent+i, 60+(sent+i)%1400))
			}
			n, err := p[0].Send(0, out[:k])
			if err != nil {
				t.Fatal(err)
			}
			sent += n
		}
		n, err := netmap.Forward(p[1], 0, p[2], 0, 64, func(buf []byte, n int) int {
			buf[5] = 0xfe // rewrite in place
			return n
		})
		if err != nil {
			t.Fatal(err)
		}
		fwd += n
		m, err := p[3].Recv(0, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range in[:m] {
			want := frame(got, 60+got%1400)
			want[5] = 0xfe
			if !bytes.Equal(f.Data(), want) {
				t.Fatalf("frame %d differs: got %d bytes seq %d", got, f.Len, binary.BigEndian.Uint32(f.Data()[14:]))
			}
			got++
		}
		if n == 0 && m == 0 {
			_ = p[1].Wait(0, time.Millisecond)
		}
	}
	t.Logf("sent %d forwarded %d received %d", sent, fwd, got)
	if got != count {
		t.Errorf("received %d of %d", got, count)
	}
	clean(t, p[:]...)
}

// Back-pressure: fill the TX ring with nobody draining the peer.
func TestIntegrationNetmapBackPressure(t *testing.T) {
	ns := vethNS(t, need(t), "bp", 1, [2]string{"bpa", "bpb"})
	ps := openIn(t, ns, "bpa", "bpb")
	a, b := ps[0], ps[1]
	out, in := nic.NewFrames(256), nic.NewFrames(256)
	total, short := 0, 0
	for i := 0; i < 100; i++ {
		for j := range out {
			out[j].SetData(frame(total+j, 128))
		}
		n, err := a.Send(0, out)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if n < len(out) {
			short++
		}
	}
	if err := a.Flush(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	got := 0
	for i := 0; i < 50; i++ {
		n, err := b.Recv(0, in)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	t.Logf("accepted %d (short sends %d), peer got %d", total, short, got)
	if got == 0 || got > total {
		t.Errorf("got %d of %d", got, total)
	}
	clean(t, a, b)
}

func TestIntegrationNetmapReopenExclusive(t *testing.T) {
	ns := vethNS(t, need(t), "ro", 1, [2]string{"roa", "rob"})
	if err := ns.Do(func() error {
		for i := 0; i < 20; i++ {
			a, err := netmap.Open("roa", netmap.Config{})
			if err != nil {
				return err
			}
			if err := a.Close(); err != nil {
				return err
			}
		}
		x, err := netmap.Open("roa", netmap.Config{Exclusive: true})
		if err != nil {
			return err
		}
		defer x.Close()
		y, err := netmap.Open("roa", netmap.Config{})
		if err == nil {
			y.Close()
			t.Error("second open of an exclusive port succeeded")
		} else {
			t.Logf("second open: %v", err)
		}
		_, err = netmap.Open("nosuchif0", netmap.Config{})
		t.Logf("missing if: %v", err)
		if err == nil {
			t.Error("open of a missing interface succeeded")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
