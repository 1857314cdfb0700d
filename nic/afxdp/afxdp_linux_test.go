package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cilium/ebpf"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
)

const testMagic = 0x70706677 // "ppfw"

// testFrame builds an Ethernet/IPv4/UDP frame of size bytes (>= 60) for
// direction dir and sequence number seq; the flow (UDP ports) is seq%flows.
//
//	dst MAC, src MAC, 0x0800 | IPv4 src > dst UDP 10000+f > 20000+f |
//	magic(4) dir(1) seq(4) filler(byte(seq+i))
func testFrame(b []byte, dst, src net.HardwareAddr, sip, dip [4]byte, dir byte, seq uint32, flows, size int) []byte {
	b = b[:size]
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:34]
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	binary.BigEndian.PutUint32(ip[4:], 0)
	ip[8], ip[9] = 64, 17
	ip[10], ip[11] = 0, 0
	copy(ip[12:16], sip[:])
	copy(ip[16:20], dip[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	f := int(seq) % flows
	udp := b[34:42]
	binary.BigEndian.PutUint16(udp[0:], uint16(10000+f))
	binary.BigEndian.PutUint16(udp[2:], uint16(20000+f))
	binary.BigEndian.PutUint16(udp[4:], uint16(size-34))
	binary.BigEndian.PutUint16(udp[6:], 0)
	p := b[42:]
	binary.BigEndian.PutUint32(p[0:], testMagic)
	p[4] = dir
	binary.BigEndian.PutUint32(p[5:], seq)
	for i := 9; i < len(p); i++ {
		p[i] = byte(seq) + byte(i)
	}
	return b
}

// parseTestFrame returns dir and seq if b is an intact test frame.
func parseTestFrame(b []byte) (dir byte, seq uint32, ok bool) {
	if len(b) < 51 || binary.BigEndian.Uint16(b[12:]) != 0x0800 || binary.BigEndian.Uint32(b[42:]) != testMagic {
		return 0, 0, false
	}
	p := b[42:]
	dir, seq = p[4], binary.BigEndian.Uint32(p[5:])
	for i := 9; i < len(p); i++ {
		if p[i] != byte(seq)+byte(i) {
			return 0, 0, false
		}
	}
	return dir, seq, true
}

func testSize(seq uint32) int { return 60 + int(seq*37)%1455 }

// rawSocket opens an AF_PACKET socket on ifname inside ns.
func rawSocket(t testing.TB, ns *nettest.NS, ifname string) int {
	t.Helper()
	var fd int
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		proto := uint16(unix.ETH_P_ALL)<<8 | uint16(unix.ETH_P_ALL)>>8
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
			return err
		}
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
		_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
		tv := unix.NsecToTimeval(int64(50 * time.Millisecond))
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	})
	if err != nil {
		t.Fatalf("raw socket on %s: %v", ifname, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// openPort opens an AF_XDP port inside ns, skipping the test if this
// kernel or its privileges cannot run AF_XDP at all.
func openPort(t testing.TB, ns *nettest.NS, ifname string, o Options) *Port {
	t.Helper()
	var p *Port
	err := ns.Do(func() (err error) {
		p, err = Open(ifname, o)
		return err
	})
	if errors.Is(err, ErrNoAFXDP) || errors.Is(err, ErrPermission) {
		t.Skipf("AF_XDP unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("open %s: %v", ifname, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func mustMAC(t testing.TB, s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// forward moves frames both ways between a and b on every queue until stop
// closes. It never drops: a frame Send refuses is retried.
func forward(a, b *Port, stop <-chan struct{}, wg *sync.WaitGroup) {
	for q := 0; q < a.Queues(); q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			frames := nic.NewFrames(64)
			move := func(from, to *Port) int {
				n, err := from.Recv(q, frames)
				if err != nil {
					return 0
				}
				for sent := 0; sent < n; {
					m, err := to.Send(q, frames[sent:n])
					if err != nil {
						return n
					}
					sent += m
					if m == 0 {
						runtime.Gosched()
					}
				}
				return n
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if move(a, b)+move(b, a) == 0 {
					a.Wait(q, 200*time.Microsecond)
				}
			}
		}()
	}
}

// TestIntegrationAFXDPForward bridges two veth links with two AF_XDP ports
// and sends many flows both ways through them with a bounded window (so
// the load stays below capacity): every frame must arrive once and intact.
func TestIntegrationAFXDPForward(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   Mode
		queues int
		filter []uint16
		busy   bool // Options.BusyPoll
	}{
		{"native-2q", ModeNative, 2, nil, false},
		{"generic-1q", ModeGeneric, 1, nil, false},
		{"auto-2q-filter", ModeAuto, 2, []uint16{EtherTypeIPv4, 0x0806}, false},
		{"native-2q-busypoll", ModeNative, 2, nil, true},
		{"generic-1q-busypoll", ModeGeneric, 1, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := nettest.MustLine(t, nettest.LineConfig{Queues: tc.queues})
			amac, bmac := mustMAC(t, ln.AMAC), mustMAC(t, ln.BMAC)
			if err := ln.A.AddNeigh(ln.AIf, ln.BAddr.Addr(), ln.BMAC); err != nil {
				t.Fatal(err)
			}
			if err := ln.B.AddNeigh(ln.BIf, ln.AAddr.Addr(), ln.AMAC); err != nil {
				t.Fatal(err)
			}
			o := Options{Mode: tc.mode, Queues: tc.queues, RingSize: 512, EtherTypes: tc.filter, BusyPoll: tc.busy}
			pa := openPort(t, ln.R, ln.RA, o)
			pb := openPort(t, ln.R, ln.RB, o)
			if tc.mode != ModeAuto && (pa.Mode() != tc.mode || pb.Mode() != tc.mode) {
				t.Fatalf("mode %v/%v, want %v", pa.Mode(), pb.Mode(), tc.mode)
			}
			// Busy polling is in effect where asked in native mode, with
			// the socket options the kernel reads back; never in generic.
			for _, p := range []*Port{pa, pb} {
				busy, err := p.BusyPoll()
				if want := tc.busy && tc.mode == ModeNative; busy != want || err != nil {
					t.Fatalf("%s: busy polling %v (%v), want %v", p.Name(), busy, err, want)
				}
				for q, x := range p.qs {
					fd := p.sys.socks[q].fd
					// (SO_BUSY_POLL_BUDGET cannot be read back: ENOPROTOOPT.)
					prefer, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PREFER_BUSY_POLL)
					usec, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL)
					if set := prefer == 1 && usec == busyPollUsec; set != busy || x.busyPoll != busy {
						t.Fatalf("%s queue %d: prefer %d, usec %d, xsk %v; busy polling %v", p.Name(), q, prefer, usec, x.busyPoll, busy)
					}
				}
			}
			t.Logf("mode %v zero-copy %v queues %d", pa.Mode(), pa.ZeroCopy(), pa.Queues())
			stop := make(chan struct{})
			var fwd sync.WaitGroup
			forward(pa, pb, stop, &fwd)
			defer func() { close(stop); fwd.Wait() }()

			const total, window, flows = 20000, 128, 64
			sa, sb := rawSocket(t, ln.A, ln.AIf), rawSocket(t, ln.B, ln.BIf)
			ip := func(p interface{ As4() [4]byte }) [4]byte { return p.As4() }
			aip, bip := ip(ln.AAddr.Addr()), ip(ln.BAddr.Addr())
			type dirState struct {
				seen  []bool
				recvd atomic.Int64
				dups  atomic.Int64
			}
			st := [2]*dirState{{seen: make([]bool, total)}, {seen: make([]bool, total)}}
			var wg sync.WaitGroup
			deadline := time.Now().Add(60 * time.Second)
			recv := func(fd int, dir byte) {
				defer wg.Done()
				buf := make([]byte, 2048)
				s := st[dir]
				for s.recvd.Load() < total && time.Now().Before(deadline) {
					n, _, err := unix.Recvfrom(fd, buf, 0)
					if err != nil {
						continue
					}
					d, seq, ok := parseTestFrame(buf[:n])
					if !ok || d != dir || seq >= total || n != testSize(seq) {
						continue
					}
					if s.seen[seq] {
						s.dups.Add(1)
						continue
					}
					s.seen[seq] = true
					s.recvd.Add(1)
				}
			}
			send := func(fd int, dir byte, dst, src net.HardwareAddr, sip, dip [4]byte) {
				defer wg.Done()
				buf := make([]byte, 2048)
				for seq := uint32(0); seq < total; seq++ {
					for int64(seq)-st[dir].recvd.Load() >= window {
						if time.Now().After(deadline) {
							return
						}
						time.Sleep(50 * time.Microsecond)
					}
					b := testFrame(buf, dst, src, sip, dip, dir, seq, flows, testSize(seq))
					for {
						_, err := unix.Write(fd, b)
						if err == nil {
							break
						}
						if !errors.Is(err, unix.ENOBUFS) && !errors.Is(err, unix.EAGAIN) {
							t.Errorf("dir %d send: %v", dir, err)
							return
						}
						time.Sleep(100 * time.Microsecond)
					}
				}
			}
			wg.Add(4)
			go recv(sb, 0)
			go recv(sa, 1)
			go send(sa, 0, bmac, amac, aip, bip)
			go send(sb, 1, amac, bmac, bip, aip)
			wg.Wait()
			for dir, s := range st {
				if got := s.recvd.Load(); got != total || s.dups.Load() != 0 {
					t.Errorf("direction %d: received %d of %d, %d duplicates", dir, got, total, s.dups.Load())
				}
			}
			for _, p := range []*Port{pa, pb} {
				s := p.Stats()
				t.Logf("%s: %+v", p.Name(), s)
				if s.RxPackets < total || s.TxPackets < total {
					t.Errorf("%s: rx %d tx %d, want >= %d", p.Name(), s.RxPackets, s.TxPackets, total)
				}
				for r := DropReason(0); r < numDropReasons; r++ {
					if r != DropTxRingFull && r != DropTxKickError && p.Drops(r) != 0 {
						t.Errorf("%s: %v drops %d", p.Name(), r, p.Drops(r))
					}
				}
				for q := 0; q < p.Queues(); q++ {
					if p.qs[q].st.rxPackets.Load() == 0 {
						t.Errorf("%s: queue %d received nothing (flows not spread)", p.Name(), q)
					}
				}
			}
		})
	}
}

// TestIntegrationAFXDPFilter checks the XDP program's EtherType filter and
// queue lookup with BPF_PROG_TEST_RUN: listed EtherTypes are redirected to
// the queue's socket, others and queues without a socket pass.
func TestIntegrationAFXDPFilter(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{Queues: 2})
	p := openPort(t, ln.R, ln.RA, Options{Queues: 1, RingSize: 64, EtherTypes: []uint16{EtherTypePPPoESession, EtherTypeIPv4}})
	frame := func(et uint16) []byte {
		b := make([]byte, 64)
		binary.BigEndian.PutUint16(b[12:], et)
		return b
	}
	for _, tc := range []struct {
		name  string
		et    uint16
		queue uint32
		want  uint32
	}{
		{"pppoe-session", 0x8864, 0, xdpRedirect},
		{"ipv4", 0x0800, 0, xdpRedirect},
		{"arp", 0x0806, 0, xdpPass},
		{"pppoe-discovery", 0x8863, 0, xdpPass},
		{"ipv6", 0x86dd, 0, xdpPass},
		{"ipv4-queue-without-socket", 0x0800, 1, xdpPass},
	} {
		ctx := make([]byte, 24) // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex
		binary.NativeEndian.PutUint32(ctx[xdpMdDataEnd:], 64)
		binary.NativeEndian.PutUint32(ctx[xdpMdRxQueueIndex:], tc.queue)
		var ret uint32
		err := ln.R.Do(func() error {
			ifi, err := net.InterfaceByName(ln.RA)
			if err != nil {
				return err
			}
			binary.NativeEndian.PutUint32(ctx[12:], uint32(ifi.Index)) // ingress_ifindex
			ret, err = p.sys.prog.Run(&ebpf.RunOptions{Data: frame(tc.et), Context: ctx})
			return err
		})
		if err != nil {
			t.Fatalf("%s: test run: %v", tc.name, err)
		}
		if ret != tc.want {
			t.Errorf("%s: XDP action %d, want %d", tc.name, ret, tc.want)
		}
	}
}

// TestIntegrationAFXDPAllocs checks that Send and Recv allocate nothing:
// frames go out of one port and into an AF_XDP port on the veth peer.
func TestIntegrationAFXDPAllocs(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	tx := openPort(t, ln.R, ln.RA, Options{Queues: 1, RingSize: 256})
	rx := openPort(t, ln.A, ln.AIf, Options{Queues: 1, RingSize: 256})
	frames := nic.NewFrames(32)
	in := nic.NewFrames(32)
	b := make([]byte, 2048)
	var got int
	allocs := testing.AllocsPerRun(200, func() {
		for i, f := range frames {
			f.SetData(testFrame(b, mustMACNoT(ln.AMAC), mustMACNoT(ln.RAMAC), [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 0, uint32(i), 8, 64))
		}
		tx.Send(0, frames)
		for try := 0; try < 100; try++ {
			n, _ := rx.Recv(0, in)
			got += n
			if n > 0 {
				break
			}
			rx.Wait(0, time.Millisecond)
		}
	})
	if allocs != 0 {
		t.Errorf("allocs per Send+Recv batch: %v", allocs)
	}
	if got == 0 {
		t.Errorf("nothing received over %d batches", 200)
	}
	t.Logf("received %d frames; tx stats %+v", got, tx.Stats())
}

var macCache sync.Map

func mustMACNoT(s string) net.HardwareAddr {
	if m, ok := macCache.Load(s); ok {
		return m.(net.HardwareAddr)
	}
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	macCache.Store(s, m)
	return m
}

// TestIntegrationAFXDPErrors checks the errors for bad setups.
func TestIntegrationAFXDPErrors(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{Queues: 2})
	// Zero-copy on veth is refused.
	err := ln.R.Do(func() error {
		p, err := Open(ln.RA, Options{Queues: 1, RingSize: 64, ZeroCopy: ZeroCopyOn, Mode: ModeNative})
		if err == nil {
			p.Close()
		}
		return err
	})
	if !errors.Is(err, ErrZeroCopy) {
		t.Errorf("zero-copy on veth: %v, want ErrZeroCopy", err)
	}
	// More queues than the interface has.
	err = ln.R.Do(func() error {
		p, err := Open(ln.RA, Options{Queues: 4, RingSize: 64})
		if err == nil {
			p.Close()
		}
		return err
	})
	if err == nil {
		t.Errorf("4 queues on a 2-queue veth: no error")
	}
	// A second port on the same interface finds the program attached.
	p := openPort(t, ln.R, ln.RA, Options{RingSize: 64})
	if p.Queues() != 2 {
		t.Errorf("default queues %d, want the veth's 2", p.Queues())
	}
	err = ln.R.Do(func() error {
		p2, err := Open(ln.RA, Options{RingSize: 64})
		if err == nil {
			p2.Close()
		}
		return err
	})
	if err == nil {
		t.Errorf("second port on %s: no error", ln.RA)
	}
	t.Logf("second port: %v", err)
	// Close wakes a blocked Wait; closed ports refuse work.
	woke := make(chan error)
	go func() { woke <- p.Wait(0, 10*time.Second) }()
	time.Sleep(50 * time.Millisecond)
	p.Close()
	select {
	case err := <-woke:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("wait during close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake Wait")
	}
	if _, err := p.Recv(0, nic.NewFrames(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("recv after close: %v", err)
	}
	if err := p.Wait(0, time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("wait after close: %v", err)
	}
	if _, err := p.Send(7, nil); !errors.Is(err, ErrQueue) {
		t.Errorf("send on queue 7: %v", err)
	}
}

// BenchmarkAFXDPForward measures an AF_XDP generator -> AF_XDP forwarder
// (one queue, copy mode over veth) -> AF_XDP sink pipeline.
func BenchmarkAFXDPForward(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			benchForward(b, size)
		})
	}
}

func benchForward(b *testing.B, size int) {
	ln := nettest.MustLine(b, nettest.LineConfig{})
	o := Options{Queues: 1, RingSize: 2048}
	gen := openPort(b, ln.A, ln.AIf, o)
	fa := openPort(b, ln.R, ln.RA, o)
	fb := openPort(b, ln.R, ln.RB, o)
	sink := openPort(b, ln.B, ln.BIf, o)
	stop := make(chan struct{})
	var fwd sync.WaitGroup
	forward(fa, fb, stop, &fwd)
	defer func() { close(stop); fwd.Wait() }()

	var got atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		in := nic.NewFrames(64)
		deadline := time.Now().Add(30*time.Second + time.Duration(b.N)*10*time.Microsecond)
		for got.Load() < int64(b.N) && time.Now().Before(deadline) {
			n, _ := sink.Recv(0, in)
			if n == 0 {
				sink.Wait(0, time.Millisecond)
			}
			got.Add(int64(n))
		}
	}()
	frames := nic.NewFrames(64)
	buf := make([]byte, 2048)
	for i, f := range frames {
		f.SetData(testFrame(buf, mustMAC(b, ln.BMAC), mustMAC(b, ln.AMAC), [4]byte{10, 77, 0, 1}, [4]byte{10, 77, 0, 2}, 0, uint32(i), 64, size))
	}
	const window = 1024
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	sent := 0
	for sent < b.N {
		select {
		case <-done:
			b.Fatalf("sink gave up: %d of %d arrived", got.Load(), b.N)
		default:
		}
		if int64(sent)-got.Load() >= window {
			runtime.Gosched()
			continue
		}
		n, _ := gen.Send(0, frames[:min(len(frames), b.N-sent)])
		sent += n
		if n == 0 {
			runtime.Gosched()
		}
	}
	<-done
	el := time.Since(start)
	b.StopTimer()
	if got.Load() < int64(b.N) {
		b.Fatalf("%d of %d frames arrived", got.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "pps")
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/pkt")
}

// TestIntegrationAFXDPVethQueues documents the veth rule: native XDP needs
// at least as many RX queues as the peer has TX queues. ModeNative fails
// with ErrXDPRefused, ModeAuto falls back to generic and works.
func TestIntegrationAFXDPVethQueues(t *testing.T) {
	lab := nettest.NewLab(t)
	ns, err := lab.NewNS("vq")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ns.Exec("ip", "link", "add", "x0", "numtxqueues", "2", "numrxqueues", "2", "type", "veth",
		"peer", "name", "x1", "numtxqueues", "1", "numrxqueues", "1"); err != nil {
		t.Fatalf("ip link add: %v: %s", err, out)
	}
	for _, ifn := range []string{"x0", "x1"} {
		if err := ns.SetUp(ifn); err != nil {
			t.Fatal(err)
		}
	}
	err = ns.Do(func() error {
		p, err := Open("x1", Options{Mode: ModeNative, Queues: 1, RingSize: 64})
		if err == nil {
			p.Close()
		}
		return err
	})
	if !errors.Is(err, ErrXDPRefused) {
		t.Fatalf("native XDP on x1 (1 RX queue, peer 2 TX): %v, want ErrXDPRefused", err)
	}
	t.Logf("native: %v", err)
	p := openPort(t, ns, "x1", Options{Mode: ModeAuto, Queues: 1, RingSize: 64})
	if p.Mode() != ModeGeneric {
		t.Fatalf("auto mode picked %v, want generic", p.Mode())
	}
}

// dropCaps removes capabilities from the calling (locked) thread's
// effective set. The thread must not be reused afterwards.
func dropCaps(caps ...int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	for _, c := range caps {
		data[c/32].Effective &^= 1 << (c % 32)
	}
	return unix.Capset(&hdr, &data[0])
}

// TestIntegrationAFXDPPermissions drops one capability at a time on the
// opening thread and checks the error names it.
func TestIntegrationAFXDPPermissions(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	for _, tc := range []struct {
		drop []int
		want string
	}{
		{[]int{unix.CAP_NET_RAW}, "CAP_NET_RAW"},
		{[]int{unix.CAP_NET_ADMIN, unix.CAP_SYS_ADMIN}, "CAP_NET_ADMIN"},
		{[]int{unix.CAP_BPF, unix.CAP_SYS_ADMIN}, "CAP_BPF"},
	} {
		errc := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
			err := ln.R.Do(func() error {
				runtime.LockOSThread()
				if err := dropCaps(tc.drop...); err != nil {
					return fmt.Errorf("capset: %w", err)
				}
				p, err := Open(ln.RA, Options{Queues: 1, RingSize: 64})
				if err == nil {
					p.Close()
				}
				return err
			})
			errc <- err
		}()
		err := <-errc
		if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("without %s: %v", tc.want, err)
		} else {
			t.Logf("without %s: %v", tc.want, err)
		}
	}
}
