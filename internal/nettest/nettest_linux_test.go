//go:build linux

package nettest

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// udpExchange sends msg from ns `from` to dst:port and returns the source
// address the receiver in ns `to` saw.
func udpExchange(t *testing.T, from, to *NS, dst netip.Addr, msg string) netip.Addr {
	t.Helper()
	var conn *net.UDPConn
	if err := to.Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 7777})
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", to.Name, err)
	}
	defer conn.Close()
	if err := from.Do(func() error {
		c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: dst.AsSlice(), Port: 7777})
		if err != nil {
			return err
		}
		defer c.Close()
		// Resend a few times: the first packet may wait for ARP.
		for i := 0; i < 5; i++ {
			if _, err := c.Write([]byte(msg)); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	}); err != nil {
		t.Fatalf("send from %s: %v", from.Name, err)
	}
	buf := make([]byte, 100)
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, src, err := conn.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("receive in %s: %v", to.Name, err)
	}
	if got := string(buf[:n]); got != msg {
		t.Fatalf("got %q, want %q", got, msg)
	}
	return src.Addr()
}

// netnsID identifies the namespace ns.Do runs in ("net:[inode]").
func netnsID(t *testing.T, ns *NS) string {
	t.Helper()
	var id string
	if err := ns.Do(func() error {
		var err error
		id, err = os.Readlink("/proc/thread-self/ns/net")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

func nsList(t *testing.T) string {
	out, err := run(nil, "ip", "netns", "list")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestIntegrationLineRouted(t *testing.T) {
	rootFwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Skipf("no /proc/sys: %v", err)
	}
	lab := NewLab(t)
	ln, err := lab.NewLine(LineConfig{Routed: true, MTU: 1400})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ln.R.ReadSysctl("net.ipv4.ip_forward"); err != nil || v != "1" {
		t.Fatalf("R ip_forward = %q, %v; want 1", v, err)
	}
	if after, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); string(after) != string(rootFwd) {
		t.Fatalf("root ip_forward changed: %q -> %q", rootFwd, after)
	}
	for _, f := range []string{"tso", "gso", "gro", "tx"} {
		on, err := ln.R.Feature(ln.RA, f)
		if err != nil {
			t.Fatal(err)
		}
		if on {
			t.Errorf("%s still on on %s", f, ln.RA)
		}
	}
	ifi, err := ln.A.Interface(ln.AIf)
	if err != nil || ifi.MTU != 1400 {
		t.Fatalf("A MTU = %v, %v; want 1400", ifi, err)
	}
	if src := udpExchange(t, ln.A, ln.B, ln.BAddr.Addr(), "a->b"); src != ln.AAddr.Addr() {
		t.Errorf("B saw source %v, want %v (no NAT)", src, ln.AAddr.Addr())
	}
	if src := udpExchange(t, ln.B, ln.A, ln.AAddr.Addr(), "b->a"); src != ln.BAddr.Addr() {
		t.Errorf("A saw source %v, want %v", src, ln.BAddr.Addr())
	}

	// The interfaces are only visible inside their namespaces.
	if _, err := net.InterfaceByName(ln.RA); err == nil {
		t.Errorf("%s visible in the root namespace", ln.RA)
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	if l := nsList(t); strings.Contains(l, lab.Prefix()+"-") {
		t.Fatalf("namespaces left after Close:\n%s", l)
	}
}

func TestIntegrationMasquerade(t *testing.T) {
	RequireRoot(t)
	RequireCmd(t, "nft")
	ln := MustLine(t, LineConfig{Routed: true})
	if err := ln.Masquerade(); err != nil {
		t.Fatal(err)
	}
	if src := udpExchange(t, ln.A, ln.B, ln.BAddr.Addr(), "nat"); src != ln.RBAddr.Addr() {
		t.Errorf("B saw source %v, want the router's %v (masquerade)", src, ln.RBAddr.Addr())
	}
}

func TestIntegrationLineBridgedNeedsForwarder(t *testing.T) {
	ln := MustLine(t, LineConfig{})
	if ln.AAddr.Masked() != ln.BAddr.Masked() {
		t.Fatalf("bridged line: A %v and B %v in different subnets", ln.AAddr, ln.BAddr)
	}
	// Nothing bridges RA and RB, so A must not reach B.
	var conn *net.UDPConn
	if err := ln.B.Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 7778})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = ln.A.Do(func() error {
		c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: ln.BAddr.Addr().AsSlice(), Port: 7778})
		if err == nil {
			_, _ = c.Write([]byte("x"))
			c.Close()
		}
		return nil
	})
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, _, err := conn.ReadFromUDP(make([]byte, 10)); err == nil {
		t.Fatal("B received a datagram with no forwarder between the veths")
	}
}

func TestIntegrationDoRestores(t *testing.T) {
	lab := NewLab(t)
	ns, err := lab.NewNS("do")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if inside := netnsID(t, ns); inside == self {
			t.Fatalf("Do ran in the caller's namespace %s", self)
		}
	}
	// Other goroutines' threads must all still be in the original ns.
	done := make(chan string, 50)
	for i := 0; i < 50; i++ {
		go func() {
			s, _ := os.Readlink("/proc/thread-self/ns/net")
			done <- s
		}()
	}
	for i := 0; i < 50; i++ {
		if s := <-done; s != self {
			t.Fatalf("goroutine ran in %s, want %s", s, self)
		}
	}
}

func TestVethNameChecked(t *testing.T) {
	l := New()
	defer l.Close()
	if err := l.Veth("this-name-is-too-long", l.Root(), "b", l.Root(), 1); err == nil {
		t.Fatal("16+ byte interface name accepted")
	}
	if err := l.Root().LoadNft("table ip x {}"); err == nil {
		t.Fatal("nft rules loaded into the root namespace")
	}
	if err := l.Root().EnableForwarding(); err == nil {
		t.Fatal("forwarding enabled in the root namespace")
	}
}

func TestIntegrationTapCommandIPv6(t *testing.T) {
	lab := NewLab(t)
	ns, err := lab.NewNS("tap")
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.DisableIPv6(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
		if v, err := ns.ReadSysctl(k); err != nil || v != "1" {
			t.Errorf("%s = %q, %v; want 1", k, v, err)
		}
	}
	if err := lab.Root().DisableIPv6(); err == nil {
		t.Error("IPv6 disabled in the root namespace")
	}

	if err := ns.AddTap("vmtap0"); err != nil {
		t.Fatal(err)
	}
	ifi, err := ns.Interface("vmtap0")
	if err != nil {
		t.Fatal(err)
	}
	if ifi.Flags&net.FlagUp == 0 {
		t.Errorf("tap not up: %v", ifi.Flags)
	}
	if _, err := net.InterfaceByName("vmtap0"); err == nil {
		t.Error("tap visible in the root namespace")
	}
	if err := ns.AddTap("vmtap0"); err == nil {
		t.Error("second tap of the same name created")
	}
	if err := ns.AddTap("a-name-too-long-for-linux"); err == nil {
		t.Error("16+ byte tap name accepted")
	}

	// Command runs in the namespace; a nil NS in the caller's.
	inside, self := netnsID(t, ns), netnsID(t, lab.Root())
	for _, tt := range []struct {
		ns   *NS
		want string
	}{{ns, inside}, {nil, self}, {lab.Root(), self}} {
		out, err := tt.ns.Command(context.Background(), "readlink", "/proc/self/ns/net").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("Command in %v ran in %s, want %s", tt.ns, got, tt.want)
		}
	}
	cmd := ns.Command(context.Background(), "true")
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Pdeathsig == 0 {
		t.Error("Command's child does not die with its parent")
	}

	if err := ns.DelLink("vmtap0"); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Interface("vmtap0"); err == nil {
		t.Error("tap still there after DelLink")
	}
	// A tap deleted already, and one still present, are both fine at Close.
	if err := ns.AddTap("vmtap1"); err != nil {
		t.Fatal(err)
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	if l := nsList(t); strings.Contains(l, lab.Prefix()+"-") {
		t.Fatalf("namespaces left after Close:\n%s", l)
	}
}

// TestLinkSending: a link can send once it is up with its carrier and a
// queue discipline attached; noop (not yet attached), no carrier, down,
// or a line that is not `ip -o link` output cannot.
func TestLinkSending(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{"7: cwan0@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000", true},
		{"7: cwan0@if6: <UP,LOWER_UP> mtu 1500 qdisc noqueue state UP", true},
		{"7: cwan0@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noop state UP mode DEFAULT", false},
		{"7: cwan0@if6: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc noop state LOWERLAYERDOWN", false},
		{"7: cwan0@if6: <BROADCAST,MULTICAST> mtu 1500 qdisc noop state DOWN", false},
		{"7: cwan0@if6: <BROADCAST,MULTICAST,LOWER_UP> mtu 1500 qdisc noqueue state DOWN", false},
		{"Device \"cwan0\" does not exist.", false},
		{"", false},
	} {
		if got := linkSending(c.line); got != c.want {
			t.Errorf("%q: %v, want %v", c.line, got, c.want)
		}
	}
}
