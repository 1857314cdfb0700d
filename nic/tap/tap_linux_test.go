//go:build linux

package tap

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
)

var (
	peerMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}
	peerIP  = netip.MustParseAddr("10.88.0.2")
	hostIP  = netip.MustParseAddr("10.88.0.1")
)

// setup creates a namespace with a TAP port whose host side is 10.88.0.1/24.
func setup(t *testing.T, cfg Config) (*nettest.NS, *Port, net.HardwareAddr) {
	t.Helper()
	lab := nettest.NewLab(t)
	ns, err := lab.NewNS("tap")
	if err != nil {
		t.Fatal(err)
	}
	var p *Port
	if err := ns.Do(func() error {
		var err error
		p, err = Open("pftap%d", cfg)
		return err
	}); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	if err := ns.Sysctl("net.ipv6.conf."+p.Name()+".disable_ipv6", "1"); err != nil {
		t.Fatal(err)
	}
	if err := ns.AddAddr(p.Name(), netip.PrefixFrom(hostIP, 24)); err != nil {
		t.Fatal(err)
	}
	ifi, err := ns.Interface(p.Name())
	if err != nil {
		t.Fatal(err)
	}
	if ifi.Flags&net.FlagUp == 0 {
		t.Fatalf("%s not up", p.Name())
	}
	return ns, p, ifi.HardwareAddr
}

func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func arpRequest(t testing.TB) []byte {
	return serialize(t,
		&layers.Ethernet{SrcMAC: peerMAC, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPRequest, SourceHwAddress: peerMAC, SourceProtAddress: peerIP.AsSlice(),
			DstHwAddress: make([]byte, 6), DstProtAddress: hostIP.AsSlice()})
}

func udpFrame(t testing.TB, dstMAC net.HardwareAddr, sport, dport int, payload string) []byte {
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: peerIP.AsSlice(), DstIP: hostIP.AsSlice()}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	_ = udp.SetNetworkLayerForChecksum(ip)
	return serialize(t, &layers.Ethernet{SrcMAC: peerMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv4},
		ip, udp, gopacket.Payload(payload))
}

func send(t testing.TB, p *Port, b []byte) {
	t.Helper()
	f := nic.NewFrame()
	f.SetData(b)
	if n, err := p.Send(0, []*nic.Frame{f}); n != 1 || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
}

// recvUntil receives from every queue until match accepts a frame.
func recvUntil(t testing.TB, p *Port, match func(gopacket.Packet) bool) gopacket.Packet {
	t.Helper()
	frames := nic.NewFrames(16)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for q := 0; q < p.Queues(); q++ {
			n, err := p.Recv(q, frames)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range frames[:n] {
				pkt := gopacket.NewPacket(append([]byte(nil), f.Data()...), layers.LayerTypeEthernet, gopacket.Default)
				if match(pkt) {
					return pkt
				}
			}
			if n == 0 {
				_ = p.Wait(q, 2*time.Millisecond)
			}
		}
	}
	t.Fatal("expected frame never came from the host stack")
	return nil
}

// TestIntegrationTap runs the exception path both ways: an ARP request and
// a UDP datagram for the router's own address go into the TAP, the host
// stack answers, and the answers come back out of the port.
func TestIntegrationTap(t *testing.T) {
	ns, p, tapMAC := setup(t, Config{Up: true, MTU: 1500})

	send(t, p, arpRequest(t))
	reply := recvUntil(t, p, func(pkt gopacket.Packet) bool {
		a, ok := pkt.Layer(layers.LayerTypeARP).(*layers.ARP)
		return ok && a.Operation == layers.ARPReply
	})
	arp := reply.Layer(layers.LayerTypeARP).(*layers.ARP)
	if !bytes.Equal(arp.SourceHwAddress, tapMAC) || !bytes.Equal(arp.SourceProtAddress, hostIP.AsSlice()) ||
		!bytes.Equal(arp.DstHwAddress, peerMAC) {
		t.Fatalf("bad ARP reply: %v", arp)
	}

	var conn *net.UDPConn
	if err := ns.Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 7000})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send(t, p, udpFrame(t, tapMAC, 4000, 7000, "hello"))
	buf := make([]byte, 100)
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	n, from, err := conn.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("host stack did not get the datagram: %v", err)
	}
	if string(buf[:n]) != "hello" || from != netip.AddrPortFrom(peerIP, 4000) {
		t.Fatalf("host got %q from %v", buf[:n], from)
	}
	if _, err := conn.WriteToUDPAddrPort([]byte("world"), from); err != nil {
		t.Fatal(err)
	}
	pkt := recvUntil(t, p, func(pkt gopacket.Packet) bool {
		u, ok := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		return ok && u.DstPort == 4000
	})
	eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if !bytes.Equal(eth.DstMAC, peerMAC) || !ip.DstIP.Equal(peerIP.AsSlice()) || string(pkt.ApplicationLayer().Payload()) != "world" {
		t.Fatalf("bad reply frame: %v", pkt)
	}
	if s := p.Stats(); s.TxPackets != 2 || s.RxPackets < 2 || s.TxDrops != 0 {
		t.Fatalf("stats %+v, want 2 sent, >= 2 received", s)
	}

	name := p.Name()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Interface(name); err == nil {
		t.Fatalf("%s still exists after Close", name)
	}
	if _, err := p.Recv(0, nic.NewFrames(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv after Close = %v", err)
	}
}

// TestIntegrationTapMultiQueue checks that with two queues everything the
// host sends arrives exactly once, spread over both queues.
func TestIntegrationTapMultiQueue(t *testing.T) {
	ns, p, _ := setup(t, Config{Up: true, Queues: 2})
	if err := ns.AddNeigh(p.Name(), peerIP, peerMAC.String()); err != nil {
		t.Fatal(err)
	}
	const flows = 32
	if err := ns.Do(func() error {
		for i := 0; i < flows; i++ {
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: peerIP.AsSlice(), Port: 8000 + i})
			if err != nil {
				return err
			}
			_, err = c.Write([]byte("x"))
			c.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	perQueue := make([]int, 2)
	frames := nic.NewFrames(16)
	deadline := time.Now().Add(3 * time.Second)
	for len(seen) < flows && time.Now().Before(deadline) {
		for q := 0; q < 2; q++ {
			n, _ := p.Recv(q, frames)
			for _, f := range frames[:n] {
				pkt := gopacket.NewPacket(f.Data(), layers.LayerTypeEthernet, gopacket.NoCopy)
				if u, ok := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP); ok && u.DstPort >= 8000 && u.DstPort < 8000+flows {
					seen[int(u.DstPort)]++
					perQueue[q]++
				}
			}
		}
		time.Sleep(time.Millisecond)
	}
	if len(seen) != flows {
		t.Fatalf("received %d of %d flows", len(seen), flows)
	}
	for port, c := range seen {
		if c != 1 {
			t.Errorf("flow to %d received %d times", port, c)
		}
	}
	if perQueue[0] == 0 || perQueue[1] == 0 {
		t.Errorf("frames per queue %v: the kernel did not spread %d flows", perQueue, flows)
	}
}

func TestIntegrationTapWaitClose(t *testing.T) {
	_, p, _ := setup(t, Config{Up: true})
	errc := make(chan error)
	go func() { errc <- p.Wait(0, time.Hour) }()
	time.Sleep(20 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait after Close = %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not wake Wait")
	}
}

// TestIntegrationTapAllocs checks that Send and Recv allocate nothing.
func TestIntegrationTapAllocs(t *testing.T) {
	_, p, _ := setup(t, Config{Up: true})
	out := nic.NewFrames(1)
	out[0].SetData(arpRequest(t))
	in := nic.NewFrames(8)
	var got int
	allocs := testing.AllocsPerRun(50, func() {
		_, _ = p.Send(0, out)
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			n, _ := p.Recv(0, in)
			if n > 0 {
				got += n
				return
			}
			_ = p.Wait(0, time.Millisecond)
		}
	})
	if allocs != 0 {
		t.Errorf("Send+Recv allocate %v per round", allocs)
	}
	if got < 50 {
		t.Errorf("got %d ARP replies for 51 requests", got)
	}
}

func TestOpenBadName(t *testing.T) {
	if _, err := Open("this-name-is-far-too-long", Config{}); err == nil {
		t.Fatal("long name accepted")
	}
}

func BenchmarkTapSendRecv(b *testing.B) {
	nettest.RequireRoot(b)
	lab := nettest.NewLab(b)
	ns, err := lab.NewNS("tapb")
	if err != nil {
		b.Fatal(err)
	}
	var p *Port
	if err := ns.Do(func() error { var err error; p, err = Open("pftap0", Config{Up: true}); return err }); err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	_ = ns.AddAddr(p.Name(), netip.PrefixFrom(hostIP, 24))
	out := nic.NewFrames(1)
	out[0].SetData(arpRequest(b))
	in := nic.NewFrames(8)
	b.ResetTimer()
	start := time.Now()
	got := 0
	for i := 0; i < b.N; i++ {
		_, _ = p.Send(0, out)
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
			n, _ := p.Recv(0, in)
			if n > 0 {
				got += n
				break
			}
			_ = p.Wait(0, time.Millisecond)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(got)/el.Seconds(), "frames/s")
}
