//go:build linux

package afpacket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/ethtool"
)

func openIn(t testing.TB, ns *nettest.NS, ifname string, cfg Config) *Port {
	t.Helper()
	var p *Port
	if err := ns.Do(func() error {
		var err error
		p, err = Open(ifname, cfg)
		return err
	}); err != nil {
		t.Fatalf("Open(%s in %s): %v", ifname, ns.Name, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// bridge forwards every frame between a and b, queue q to queue q, until
// stop is closed. It retries frames the TX ring refuses, so nothing is
// dropped below capacity.
func bridge(a, b nic.Port, stop chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	one := func(src, dst nic.Port, q int) {
		defer wg.Done()
		frames := nic.NewFrames(64)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := src.Recv(q, frames)
			if err != nil {
				return
			}
			if n == 0 {
				_ = src.Wait(q, 2*time.Millisecond)
				continue
			}
			for sent := 0; sent < n; {
				k, err := dst.Send(q, frames[sent:n])
				if err != nil {
					return
				}
				sent += k
				if k == 0 {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}
	}
	for q := 0; q < a.Queues(); q++ {
		wg.Add(2)
		go one(a, b, q)
		go one(b, a, q)
	}
	return &wg
}

type flowRx struct {
	mu   sync.Mutex
	seen map[uint64]int // flow<<32|seq -> count
}

// listenUDP opens a UDP socket in ns with a receive buffer big enough for
// a whole test run and collects datagrams until it is closed.
func listenUDP(t *testing.T, ns *nettest.NS, port int, rx *flowRx) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := ns.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	raw, _ := c.SyscallConn()
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
	})
	go func() {
		buf := make([]byte, 2048)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if n < 8 {
				continue
			}
			k := uint64(binary.BigEndian.Uint32(buf[0:]))<<32 | uint64(binary.BigEndian.Uint32(buf[4:]))
			rx.mu.Lock()
			rx.seen[k]++
			rx.mu.Unlock()
		}
	}()
	t.Cleanup(func() { c.Close() })
	return c
}

// sendFlows sends perFlow datagrams on each of flows UDP flows from ns to
// dst, one per flow per round, pausing between rounds to stay below
// capacity.
func sendFlows(ns *nettest.NS, dst netip.AddrPort, flows, perFlow, size int) error {
	return ns.Do(func() error {
		conns := make([]*net.UDPConn, flows)
		for i := range conns {
			c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(dst))
			if err != nil {
				return err
			}
			defer c.Close()
			conns[i] = c
		}
		msg := make([]byte, size)
		for seq := 0; seq < perFlow; seq++ {
			for f, c := range conns {
				binary.BigEndian.PutUint32(msg[0:], uint32(f))
				binary.BigEndian.PutUint32(msg[4:], uint32(seq))
				if _, err := c.Write(msg); err != nil {
					return err
				}
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
}

func waitAll(rx *flowRx, want int, d time.Duration) (got, dups int) {
	deadline := time.Now().Add(d)
	for {
		rx.mu.Lock()
		got, dups = len(rx.seen), 0
		for _, c := range rx.seen {
			dups += c - 1
		}
		rx.mu.Unlock()
		if got >= want || time.Now().After(deadline) {
			return got, dups
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIntegrationAFPacketBridge joins two namespaces through an L2 bridge
// built from two multi-queue Ports and checks that many flows in both
// directions arrive complete, spread over all queues, with no drops.
func TestIntegrationAFPacketBridge(t *testing.T) {
	const queues, flows, perFlow, size = 2, 64, 40, 200
	ln := nettest.MustLine(t, nettest.LineConfig{})
	for _, e := range []struct {
		ns  *nettest.NS
		ifn string
		ip  netip.Addr
		mac string
	}{{ln.A, ln.AIf, ln.BAddr.Addr(), ln.BMAC}, {ln.B, ln.BIf, ln.AAddr.Addr(), ln.AMAC}} {
		if err := e.ns.AddNeigh(e.ifn, e.ip, e.mac); err != nil {
			t.Fatal(err)
		}
	}
	pa := openIn(t, ln.R, ln.RA, Config{Queues: queues, Promisc: true})
	pb := openIn(t, ln.R, ln.RB, Config{Queues: queues, Promisc: true})
	stop := make(chan struct{})
	wg := bridge(pa, pb, stop)
	defer func() { close(stop); wg.Wait() }()

	rxB := &flowRx{seen: map[uint64]int{}}
	rxA := &flowRx{seen: map[uint64]int{}}
	listenUDP(t, ln.B, 9000, rxB)
	listenUDP(t, ln.A, 9001, rxA)
	errc := make(chan error, 2)
	go func() { errc <- sendFlows(ln.A, netip.AddrPortFrom(ln.BAddr.Addr(), 9000), flows, perFlow, size) }()
	go func() { errc <- sendFlows(ln.B, netip.AddrPortFrom(ln.AAddr.Addr(), 9001), flows, perFlow, size) }()
	for i := 0; i < 2; i++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	want := flows * perFlow
	for name, rx := range map[string]*flowRx{"A->B": rxB, "B->A": rxA} {
		got, dups := waitAll(rx, want, 5*time.Second)
		if got != want || dups != 0 {
			t.Errorf("%s: %d of %d datagrams arrived, %d duplicates", name, got, want, dups)
		}
	}
	for _, p := range []*Port{pa, pb} {
		for q := 0; q < queues; q++ {
			qs := p.QueueStats(q)
			t.Logf("%s q%d: %+v", p.Name(), q, qs)
			if qs.RxPackets == 0 {
				t.Errorf("%s queue %d received nothing: fanout did not spread %d flows", p.Name(), q, flows)
			}
			if qs.KernelDrops != 0 || qs.RxOversize != 0 || qs.RxGSO != 0 || qs.RxCsumPartial != 0 || qs.TxOversize != 0 || qs.TxWrongFormat != 0 {
				t.Errorf("%s queue %d: unexpected drops or superframes: %+v", p.Name(), q, qs)
			}
		}
		if s := p.Stats(); s.RxDrops != 0 || s.RxPackets < uint64(want) || s.TxPackets < uint64(want) {
			t.Errorf("%s stats %+v, want >= %d packets each way and no RX drops", p.Name(), s, want)
		}
	}
}

// ethFrame builds an Ethernet frame of n bytes with a marker source MAC.
func ethFrame(n int, tags ...[2]uint16) []byte {
	b := make([]byte, n)
	copy(b[0:6], []byte{0x02, 0, 0, 0, 0, 0xbb})
	copy(b[6:12], []byte{0x02, 0xaf, 0xaf, 0, 0, 0x01})
	off := 12
	for _, tg := range tags {
		binary.BigEndian.PutUint16(b[off:], tg[0])
		binary.BigEndian.PutUint16(b[off+2:], tg[1])
		off += 4
	}
	binary.BigEndian.PutUint16(b[off:], 0x88b5) // local experimental
	for i := off + 2; i < n; i++ {
		b[i] = byte(i * 7)
	}
	return b
}

func isMarked(b []byte) bool { return len(b) >= 12 && b[7] == 0xaf && b[8] == 0xaf }

// recvMarked receives until want marked frames arrived or the deadline passed.
func recvMarked(p *Port, want int, d time.Duration) [][]byte {
	var out [][]byte
	frames := nic.NewFrames(64)
	deadline := time.Now().Add(d)
	for len(out) < want && time.Now().Before(deadline) {
		n, err := p.Recv(0, frames)
		if err != nil {
			break
		}
		if n == 0 {
			_ = p.Wait(0, 5*time.Millisecond)
		}
		for _, f := range frames[:n] {
			if f.Off != nic.Headroom || f.Queue != 0 {
				panic("bad frame metadata")
			}
			if isMarked(f.Data()) {
				out = append(out, append([]byte(nil), f.Data()...))
			}
		}
	}
	return out
}

// TestIntegrationAFPacketRoundTrip sends frames of various shapes from a
// port on one veth end and checks that a port on the other end receives
// them byte for byte, VLAN tags included (the kernel strips them on RX and
// the port puts them back).
func TestIntegrationAFPacketRoundTrip(t *testing.T) {
	for _, mode := range []TxMode{TxRing, TxCopy} {
		t.Run(mode.String(), func(t *testing.T) { testRoundTrip(t, mode) })
	}
}

func testRoundTrip(t *testing.T, mode TxMode) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	tx := openIn(t, ln.R, ln.RA, Config{TxMode: mode})
	if tx.TxMode() != mode {
		t.Fatalf("TxMode() = %v, want %v", tx.TxMode(), mode)
	}
	rx := openIn(t, ln.A, ln.AIf, Config{Promisc: true})
	cases := []struct {
		name string
		b    []byte
	}{
		{"min", ethFrame(60)},
		{"mtu", ethFrame(1514)},
		{"vlan", ethFrame(100, [2]uint16{0x8100, 0x2005})},
		{"qinq", ethFrame(100, [2]uint16{0x88a8, 0x0064}, [2]uint16{0x8100, 0x0007})},
		{"vlan-mtu", ethFrame(1518, [2]uint16{0x8100, 42})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := nic.NewFrame()
			f.SetData(c.b)
			if n, err := tx.Send(0, []*nic.Frame{f}); n != 1 || err != nil {
				t.Fatalf("Send = %d, %v", n, err)
			}
			got := recvMarked(rx, 1, 2*time.Second)
			if len(got) != 1 {
				t.Fatalf("received %d marked frames, want 1", len(got))
			}
			if !bytes.Equal(got[0], c.b) {
				t.Fatalf("frame changed on the way:\n got %x\nwant %x", got[0], c.b)
			}
		})
	}
	// A frame too long for a TX slot (TxRing) or for the interface
	// (TxCopy: the kernel refuses it) is dropped and counted, not sent;
	// the frames around it in the batch go out.
	big := nic.NewFrame()
	big.Off, big.Len = 0, nic.BufSize
	before, after := nic.NewFrame(), nic.NewFrame()
	before.SetData(ethFrame(70))
	after.SetData(ethFrame(80))
	if n, err := tx.Send(0, []*nic.Frame{before, big, after}); n != 3 || err != nil {
		t.Fatalf("Send(ok, oversize, ok) = %d, %v; want all 3 accepted (one dropped)", n, err)
	}
	qs := tx.QueueStats(0)
	if qs.TxOversize != 1 || qs.TxPackets != uint64(len(cases))+2 {
		t.Fatalf("TxOversize = %d, TxPackets = %d; want 1 and %d", qs.TxOversize, qs.TxPackets, len(cases)+2)
	}
	got := recvMarked(rx, 2, 2*time.Second)
	if len(got) != 2 || len(got[0]) != 70 || len(got[1]) != 80 {
		t.Fatalf("after the oversize batch received %d frames, want the 70- and 80-byte ones in order", len(got))
	}
	if s := rx.Stats(); s.RxPackets < uint64(len(cases)) {
		t.Errorf("rx stats %+v, want >= %d packets", s, len(cases))
	}
}

// TestIntegrationAFPacketTxAuto checks that TxAuto picks TxCopy on veth
// (ethtool reports the driver) and that a malformed frame (out of its
// buffer's bounds) is dropped and counted in TxCopy without a system call
// refusing the batch.
func TestIntegrationAFPacketTxAuto(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	var drv string
	if err := ln.R.Do(func() (err error) { drv, err = ethtool.Driver(ln.RA); return }); err != nil || drv != "veth" {
		t.Fatalf("ethtool.Driver(%s) = %q, %v; want veth", ln.RA, drv, err)
	}
	if err := ln.R.Do(func() error { _, err := ethtool.Driver("pf-no-such-if0"); return err }); err == nil {
		t.Fatal("ethtool.Driver of a missing interface: no error")
	}
	p := openIn(t, ln.R, ln.RA, Config{})
	if p.TxMode() != TxCopy {
		t.Fatalf("TxAuto on veth resolved to %v, want copy", p.TxMode())
	}
	bad := nic.NewFrame()
	bad.Off, bad.Len = len(bad.Buf)-10, 20
	ok := nic.NewFrame()
	ok.SetData(ethFrame(60))
	if n, err := p.Send(0, []*nic.Frame{bad, ok}); n != 2 || err != nil {
		t.Fatalf("Send(malformed, ok) = %d, %v; want 2 accepted", n, err)
	}
	if qs := p.QueueStats(0); qs.TxOversize != 1 || qs.TxPackets != 1 {
		t.Fatalf("TxOversize %d TxPackets %d, want 1 and 1", qs.TxOversize, qs.TxPackets)
	}
	// With the peer down, veth drops what it is handed and the kernel
	// answers ENOBUFS: TxCopy counts those frames as device drops, keeps
	// going with the rest of the batch, and returns no error.
	if _, err := ln.A.Exec("ip", "link", "set", "dev", ln.AIf, "down"); err != nil {
		t.Fatal(err)
	}
	batch := nic.NewFrames(10)
	for _, f := range batch {
		f.SetData(ethFrame(60))
	}
	if n, err := p.Send(0, batch); n != len(batch) || err != nil {
		t.Fatalf("Send with the peer down = %d, %v; want %d accepted, no error", n, err, len(batch))
	}
	qs := p.QueueStats(0)
	if qs.TxDeviceDrops != uint64(len(batch)) || qs.TxPackets != 1 || qs.TxFull != 0 {
		t.Fatalf("peer down: TxDeviceDrops %d TxPackets %d TxFull %d; want %d, 1, 0", qs.TxDeviceDrops, qs.TxPackets, qs.TxFull, len(batch))
	}
	if s := p.Stats(); s.TxDrops != 1+uint64(len(batch)) {
		t.Fatalf("Stats().TxDrops = %d, want %d (one malformed, %d device drops)", s.TxDrops, 1+len(batch), len(batch))
	}
	for _, s := range []string{"auto", "ring", "copy"} {
		if m, err := ParseTxMode(s); err != nil || m.String() != s {
			t.Errorf("ParseTxMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseTxMode("zerocopy"); err == nil {
		t.Error("ParseTxMode(zerocopy): no error")
	}
}

// TestIntegrationAFPacketTxFull fills the TX ring faster than the kernel
// drains it and checks that Send refuses (never overwrites) and counts.
func TestIntegrationAFPacketTxFull(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	tx := openIn(t, ln.R, ln.RA, Config{TxMode: TxRing, TxFrames: 32})
	frames := nic.NewFrames(1024)
	for _, f := range frames {
		f.SetData(ethFrame(60))
	}
	var accepted int
	for i := 0; i < 20; i++ {
		n, err := tx.Send(0, frames)
		if err != nil {
			t.Fatal(err)
		}
		if n > 32 {
			t.Fatalf("Send accepted %d frames into a 32-slot ring", n)
		}
		accepted += n
	}
	qs := tx.QueueStats(0)
	if qs.TxPackets != uint64(accepted) || qs.TxFull != uint64(20*len(frames)-accepted) {
		t.Fatalf("stats %+v, want TxPackets %d TxFull %d", qs, accepted, 20*len(frames)-accepted)
	}
	deadline := time.Now().Add(2 * time.Second)
	for tx.TxPending(0) > 0 && time.Now().Before(deadline) {
		_ = tx.Flush(0)
		time.Sleep(time.Millisecond)
	}
	if n := tx.TxPending(0); n != 0 {
		t.Fatalf("%d TX slots still pending", n)
	}
}

// TestIntegrationAFPacketOffloads checks that Open switches coalescing
// offloads off and that unfinished checksums from a peer with tx
// checksumming on are counted.
func TestIntegrationAFPacketOffloads(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{KeepOffloads: true})
	for _, f := range []string{"tso", "gso"} {
		if err := ln.R.SetFeature(ln.RA, f, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := ln.A.SetFeature(ln.AIf, "tx", true); err != nil {
		t.Fatal(err)
	}
	p := openIn(t, ln.R, ln.RA, Config{})
	for _, f := range []string{"tso", "gso", "gro", "lro"} {
		on, err := ln.R.Feature(ln.RA, f)
		if err != nil {
			t.Fatal(err)
		}
		if on {
			t.Errorf("%s still on after Open", f)
		}
	}
	if err := ln.A.AddNeigh(ln.AIf, ln.BAddr.Addr(), ln.BMAC); err != nil {
		t.Fatal(err)
	}
	if err := sendFlows(ln.A, netip.AddrPortFrom(ln.BAddr.Addr(), 9), 4, 2, 100); err != nil {
		t.Fatal(err)
	}
	frames := nic.NewFrames(16)
	deadline := time.Now().Add(2 * time.Second)
	marked := 0
	for p.QueueStats(0).RxCsumPartial < 8 && time.Now().Before(deadline) {
		n, _ := p.Recv(0, frames)
		if n == 0 {
			_ = p.Wait(0, 5*time.Millisecond)
		}
		for _, f := range frames[:n] {
			if f.Rx&nic.RxCsumPartial != 0 {
				marked++
			}
		}
	}
	if qs := p.QueueStats(0); qs.RxCsumPartial < 8 || marked != int(qs.RxCsumPartial) {
		t.Errorf("RxCsumPartial = %d, %d frames marked nic.RxCsumPartial, want >= 8 UDP frames with unfinished checksums, each marked", qs.RxCsumPartial, marked)
	}
}

func TestIntegrationAFPacketWaitClose(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	// A quiet line: without IPv6, A's kernel sends no router or multicast
	// listener solicitations, which would end a Wait as they should.
	for _, ns := range []*nettest.NS{ln.A, ln.R} {
		if err := ns.Sysctl("net.ipv6.conf.all.disable_ipv6", "1"); err != nil {
			t.Fatal(err)
		}
	}
	p := openIn(t, ln.R, ln.RA, Config{})
	for n := 1; n > 0; {
		n, _ = p.Recv(0, nic.NewFrames(64))
	}
	t0 := time.Now()
	if err := p.Wait(0, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 25*time.Millisecond {
		t.Errorf("Wait on an idle ring returned after %v, before its timeout", d)
	}
	var done atomic.Bool
	errc := make(chan error)
	go func() { err := p.Wait(0, time.Hour); done.Store(true); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	if done.Load() {
		t.Fatal("Wait(1h) returned before Close")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait after Close = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not wake Wait")
	}
	if _, err := p.Recv(0, nic.NewFrames(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv after Close = %v", err)
	}
	if _, err := p.Send(0, nic.NewFrames(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v", err)
	}
}

func TestIntegrationAFPacketErrors(t *testing.T) {
	nettest.RequireRoot(t)
	if _, err := Open("pf-no-such-if0", Config{}); err == nil {
		t.Fatal("Open on a missing interface succeeded")
	}
	ln := nettest.MustLine(t, nettest.LineConfig{})
	var err error
	_ = ln.R.Do(func() error {
		_, err = Open(ln.RA, Config{BlockSize: 1000})
		return nil
	})
	if err == nil {
		t.Fatal("BlockSize 1000 accepted")
	}
}

// TestIntegrationAFPacketAllocs checks that Recv and Send allocate nothing
// with frames prepared.
func TestIntegrationAFPacketAllocs(t *testing.T) {
	for _, mode := range []TxMode{TxRing, TxCopy} {
		t.Run(mode.String(), func(t *testing.T) { testAllocs(t, mode) })
	}
}

func testAllocs(t *testing.T, mode TxMode) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	tx := openIn(t, ln.R, ln.RA, Config{TxMode: mode})
	rx := openIn(t, ln.A, ln.AIf, Config{Promisc: true})
	const batch = 32
	out := nic.NewFrames(batch)
	for _, f := range out {
		f.SetData(ethFrame(64))
	}
	in := nic.NewFrames(batch)
	var got, rounds int
	allocs := testing.AllocsPerRun(50, func() {
		rounds++
		sent := 0
		for sent < batch {
			n, _ := tx.Send(0, out[sent:])
			sent += n
		}
		deadline := time.Now().Add(time.Second)
		for r := 0; r < batch && time.Now().Before(deadline); {
			n, _ := rx.Recv(0, in)
			for _, f := range in[:n] {
				if isMarked(f.Data()) {
					r++
					got++
				}
			}
			if n == 0 {
				_ = rx.Wait(0, time.Millisecond)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("Send+Recv+Wait allocate %v per batch", allocs)
	}
	if got < rounds*batch {
		t.Errorf("received %d of %d frames", got, rounds*batch)
	}
}

// BenchmarkAFPacketSendRecv moves 64-byte frames from a port on one veth
// end to a port on the other, in batches, and reports the receive rate.
func BenchmarkAFPacketSendRecv(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(map[int]string{64: "64B", 1500: "1500B"}[size], func(b *testing.B) {
			ln := nettest.MustLine(b, nettest.LineConfig{})
			tx := openIn(b, ln.R, ln.RA, Config{TxMode: TxRing})
			rx := openIn(b, ln.A, ln.AIf, Config{Promisc: true})
			const batch, window = 64, 512
			out := nic.NewFrames(batch)
			for _, f := range out {
				f.SetData(ethFrame(size))
			}
			in := nic.NewFrames(batch)
			var sent, recvd int
			lastProgress := time.Now()
			b.ResetTimer()
			start := time.Now()
			for recvd < b.N {
				if sent < b.N && sent-recvd < window {
					k := min(batch, b.N-sent)
					n, _ := tx.Send(0, out[:k])
					sent += n
				}
				n, _ := rx.Recv(0, in)
				for _, f := range in[:n] {
					if isMarked(f.Data()) {
						recvd++
					}
				}
				if n > 0 {
					lastProgress = time.Now()
				} else if sent == b.N || sent-recvd >= window {
					if time.Since(lastProgress) > 200*time.Millisecond {
						// Lost in the kernel (veth backlog): stop waiting.
						break
					}
					_ = rx.Wait(0, time.Millisecond)
				}
			}
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(recvd)/el.Seconds(), "pps")
			b.ReportMetric(float64(el.Nanoseconds())/float64(max(recvd, 1)), "ns/pkt")
			b.ReportMetric(float64(sent-recvd), "lost")
		})
	}
}
