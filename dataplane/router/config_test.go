package router

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/pppoe"
)

// TestWorkersKeys: workers auto leaves a CPU to the box on 2 to 4 CPUs,
// workers.poll and workers.cpus parse and write back.
func TestWorkersKeys(t *testing.T) {
	for cpus, want := range map[int]int{1: 1, 2: 1, 3: 2, 4: 3, 5: 5, 16: 16, 128: 64} {
		if got := DefaultWorkers(cpus); got != want {
			t.Errorf("DefaultWorkers(%d) = %d, want %d", cpus, got, want)
		}
	}
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	var r Config
	if err := setCPUs(&r, "1-3,7"); err != nil || fmt.Sprint(r.CPUs) != "[1 2 3 7]" {
		t.Fatalf("setCPUs(1-3,7): %v %v", r.CPUs, err)
	}
	cpu := pin.Allowed()[0] // Validate wants CPUs this process may use
	c, err := ParseConfig(strings.NewReader(base + fmt.Sprintf("workers 3\nworkers.poll block\nworkers.cpus %d\n", cpu)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Workers != 3 || c.WorkersAuto || c.Poll != dataplane.PollBlock || len(c.CPUs) != 1 || c.CPUs[0] != cpu {
		t.Fatalf("workers %d auto %v poll %v cpus %v", c.Workers, c.WorkersAuto, c.Poll, c.CPUs)
	}
	back, err := ParseConfig(strings.NewReader(c.Text()))
	if err != nil || back.Workers != 3 || back.Poll != dataplane.PollBlock || len(back.CPUs) != 1 {
		t.Fatalf("Text() did not parse back: %v %+v", err, back)
	}
	// workers.slice: the default, a duration, off; each writes back.
	for _, c := range []struct {
		line string
		want time.Duration // WorkerSlice
	}{{"", dataplane.DefaultSlice}, {"workers.slice 250us\n", 250 * time.Microsecond}, {"workers.slice off\n", 0}} {
		cfg, err := ParseConfig(strings.NewReader(base + c.line))
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		back, err := ParseConfig(strings.NewReader(cfg.Text()))
		if err != nil || cfg.WorkerSlice() != c.want || back.WorkerSlice() != c.want {
			t.Errorf("%q: slice %v, written back %v (%v), want %v", c.line, cfg.WorkerSlice(), back.WorkerSlice(), err, c.want)
		}
	}
	// workers.rtprio: the default, a priority, off; each writes back.
	for _, c := range []struct {
		line string
		want int // WorkerRTPrio
	}{{"", dataplane.DefaultRTPrio}, {"workers.rtprio 20\n", 20}, {"workers.rtprio off\n", 0}} {
		cfg, err := ParseConfig(strings.NewReader(base + c.line))
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		back, err := ParseConfig(strings.NewReader(cfg.Text()))
		if err != nil || cfg.WorkerRTPrio() != c.want || back.WorkerRTPrio() != c.want {
			t.Errorf("%q: rtprio %d, written back %d (%v), want %d", c.line, cfg.WorkerRTPrio(), back.WorkerRTPrio(), err, c.want)
		}
	}
	if (&Config{}).WorkerSlice() != dataplane.DefaultSlice {
		t.Error("a Config built in code does not get the default slice")
	}
	for _, bad := range []string{"workers.cpus 4000", "workers.cpus 3-1", "workers.cpus 1,1", "workers.cpus x", "workers.poll spin", "workers nine",
		"workers.slice 50us", "workers.slice 1s", "workers.slice soon",
		"workers.rtprio 0", "workers.rtprio 100", "workers.rtprio high"} {
		if _, err := ParseConfig(strings.NewReader(base + bad + "\n")); err == nil || !strings.Contains(err.Error(), strings.Fields(bad)[0]) {
			t.Errorf("%q: error %v, want one naming the key", bad, err)
		}
	}
}

func TestExampleConfigParses(t *testing.T) {
	f, err := os.Open("../../pppfwd.conf.example")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ParseConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Workers != DefaultWorkers(len(pin.Allowed())) || !c.WorkersAuto || c.Poll != dataplane.PollAdaptive || c.LANInterface != "eth1" || c.RouterAddr() != 0xc0a80101 || c.LANNet() != 0xc0a80100 ||
		c.Up.Rate != 450e6 || c.Down.Rate != 900e6 || c.PPPoE.Username != "user@isp.example" {
		t.Fatalf("parsed %+v", c)
	}
}

func TestConfigErrors(t *testing.T) {
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	cases := []struct{ text, want string }{
		{base + "workers 0\n", "line 5: workers"},
		{base + "bogus 1\n", "line 5: unknown key \"bogus\" (pppfwd.conf.example"},
		{base + "worker 2\n", "did you mean workers?"},
		{base + "user x\n", "did you mean pppoe.user?"},
		{base + "interface x\n", "did you mean lan.interface or wan.interface?"},
		{base + "shaper.upp bandwidth 1mbit\n", "did you mean shaper.up?"},
		{base + "workers 2\nworkers 3\n", "line 6: workers given twice (first on line 5): allowed once"},
		{base + "nat.forward tcp 80 10.0.0.5:80\nnat.forward tcp 81 10.0.1.5:80\n", "line 6: nat.forward to 10.0.1.5: not in lan.address's prefix 10.0.0.0/24"},
		{base + "nat.forward icmp 80 10.0.0.5:80\n", "protocol"},
		{base + "shaper.down bandwidth lots\n", "line 5: shaper.down: "},
		{base + "lan.address 10.0.0.1/31\n", "given twice"},
		{"wan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n", "lan.interface is required (not in the file): give the LAN port's interface name"},
		{base + "workers 8\nnat.ports 2000-2010\n", "line 6: nat.ports 2000-2010 is too small for workers 8: allowed: a range of at least 16 ports"},
		{base + "workers 64\n", ""},
		{base + "nat.ports 2000-1000\n", "line 5: nat.ports: 1000 out of range 2001..65535; allowed: LO-HI"},
		{base + "pppoe.mtu 9000\n", "line 5: pppoe.mtu: 9000 out of range 576..1500; allowed: 576..1500"},
		{base + "keyonly\n", "line 5: keyonly has no value"},
		{base + "workers #3\n", "line 5: workers has no value"},
		{base + "= 3\n", "line 5: a line starts with '='"},
		{base + "pppoe.auth mschap\n", "line 5: pppoe.auth: unknown value \"mschap\"; allowed: any | pap | chap | mschapv2"},
	}
	for _, c := range cases {
		_, err := ParseConfig(strings.NewReader(c.text))
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.text, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
	c, err := ParseConfig(strings.NewReader(base + "nat.forward tcp 443 10.0.0.9:8443\nnat.forward = udp 53 10.0.0.9:53\nnat.filtering adf\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.NAT.Forwards) != 2 || c.NAT.Forwards[0].LANPort != 8443 || c.NAT.Forwards[1].ExtPort != 53 || c.NAT.Filtering != nat.AddressDependent {
		t.Fatalf("forwards %+v", c.NAT)
	}
}

func TestConfigAuth(t *testing.T) {
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	for val, want := range map[string]pppoe.AuthProto{
		"any": pppoe.AuthAny, "pap": pppoe.AuthPAP, "chap": pppoe.AuthCHAPMD5, "mschapv2": pppoe.AuthMSCHAPv2,
	} {
		c, err := ParseConfig(strings.NewReader(base + "pppoe.auth " + val + "\n"))
		if err != nil || c.PPPoE.Auth != want {
			t.Errorf("pppoe.auth %s: %v, %v; want %v", val, c.PPPoE.Auth, err, want)
		}
	}
}

func TestConfigIPv6(t *testing.T) {
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	for _, c := range []struct{ text, want string }{
		{base + "lan.ipv6_prefix 2001:db8::/48\n", "want an IPv6 /64"},
		{base + "lan.ipv6_prefix 10.0.0.0/8\n", "want an IPv6 /64"},
		{base + "lan.ipv6_prefix 2001:db8::/64\npppoe.dhcpv6_pd on\n", "line 5: lan.ipv6_prefix and pppoe.dhcpv6_pd (line 6): choose one"},
		{base + "lan.ipv6_subnet 3\n", "line 5: lan.ipv6_subnet needs pppoe.dhcpv6_pd on"},
		{base + "pppoe.dhcpv6_pd 60\nlan.ipv6_subnet 16\n", "line 6: lan.ipv6_subnet 16 does not fit a /60 (pppoe.dhcpv6_pd): allowed: 0..15"},
		{base + "pppoe.dhcpv6_pd 70\n", "want on, off or the prefix length"},
		{base + "lan.ipv6_dns 192.0.2.1\n", "want IPv6 addresses"},
		{base + "lan.ipv6_prefix fe80::/64\n", "global unicast"},
		{base + "lan.ipv6_prefix ff00::/64\n", "global unicast"},
		{base + "lan.ipv6_prefix ::/64\n", "global unicast"},
		{base + "lan.ipv6_dns 2001:db8::53\n", "line 5: lan.ipv6_dns needs IPv6 on: set lan.ipv6_prefix or pppoe.dhcpv6_pd"},
		{base + "ipv6.allow tcp 22 any\n", "line 5: ipv6.allow needs IPv6 on"},
		{base + "ipv6.firewall maybe\n", "unknown value \"maybe\"; allowed: on | off"},
		{base + "ipv6.ipsec maybe\n", "unknown value \"maybe\"; allowed: on | off"},
		{base + "ipv6.allow tcp 443\n", "want tcp|udp PORT HOST"},
		{base + "ipv6.allow udp 0 any\n", "out of range"},
		{base + "ipv6.allow tcp 22 10.0.0.5\n", "want an IPv6 address"},
	} {
		if _, err := ParseConfig(strings.NewReader(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
	c, err := ParseConfig(strings.NewReader(base + "lan.ipv6_prefix 2001:db8:0:5::77/64\nlan.ipv6_dns 2001:db8::53, 2001:db8::54\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.IPv6() || c.PD || c.LAN6Prefix.String() != "2001:db8:0:5::/64" || len(c.dns6()) != 2 || c.dns6()[1][15] != 0x54 || c.NoFirewall6 {
		t.Fatalf("static: %+v", c)
	}
	c, err = ParseConfig(strings.NewReader(base + "pppoe.dhcpv6_pd on\nipv6.firewall off\nipv6.allow tcp 443 ::80\nipv6.allow = any 2001:db8::5\nipv6.allow udp 53 any\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Firewall6Allow()); n != 6 {
		t.Fatalf("%d openings with IPsec's, want 6", n)
	}
	c.NoIPsec6 = true
	if n := len(c.Firewall6Allow()); n != 3 {
		t.Fatalf("%d openings without IPsec's, want 3", n)
	}
	a := c.Allow6
	if !c.NoFirewall6 || len(a) != 3 || a[0].Proto != 6 || a[0].Port != 443 || a[0].Host[15] != 0x80 || a[0].Host[0] != 0 ||
		a[1].Proto != 0 || a[1].Host[0] != 0x20 || a[2].Proto != 17 || a[2].Host != [16]byte{} {
		t.Fatalf("allow %+v", a)
	}
	c, err = ParseConfig(strings.NewReader(base + "pppoe.dhcpv6_pd /56\nlan.ipv6_subnet 255\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.IPv6() || !c.PD || c.PDHint != 56 || c.LAN6Subnet != 255 {
		t.Fatalf("pd: %+v", c)
	}
	if c, _ := ParseConfig(strings.NewReader(base)); c.IPv6() {
		t.Fatal("IPv6 on by default")
	}
}

// TestLANSubnet: the LAN's /64 is number n of the delegated prefix.
func TestLANSubnet(t *testing.T) {
	p := netip.MustParseAddr("2001:db8:aa00::").As16()
	for _, c := range []struct {
		bits, n int
		want    string
	}{{56, 0, "2001:db8:aa00::"}, {56, 255, "2001:db8:aa00:ff::"}, {48, 0x1234, "2001:db8:aa00:1234::"}, {64, 0, "2001:db8:aa00::"}} {
		a, err := lanSubnet(p, c.bits, c.n)
		if err != nil || netip.AddrFrom16(a).String() != c.want {
			t.Errorf("/%d #%d: %s %v, want %s", c.bits, c.n, netip.AddrFrom16(a), err, c.want)
		}
	}
	for _, c := range []struct{ bits, n int }{{56, 256}, {64, 1}, {65, 0}} {
		if _, err := lanSubnet(p, c.bits, c.n); err == nil {
			t.Errorf("/%d #%d accepted", c.bits, c.n)
		}
	}
}

// TestBusyPollKey: afxdp.busy_poll reaches the ports' spec, is off by
// default and survives the written configuration.
func TestBusyPollKey(t *testing.T) {
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\nbackend afxdp\n"
	for _, c := range []struct {
		line string
		want bool
	}{{"", false}, {"afxdp.busy_poll on\n", true}, {"afxdp.busy_poll off\n", false}} {
		cfg, err := ParseConfig(strings.NewReader(base + c.line))
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseConfig(strings.NewReader(cfg.Text()))
		if err != nil {
			t.Fatal(err)
		}
		if s := cfg.portSpec("b", nil); s.BusyPoll != c.want || back.BusyPoll != c.want {
			t.Errorf("%q: spec busy poll %v, written back %v, want %v", c.line, s.BusyPoll, back.BusyPoll, c.want)
		}
	}
	if _, err := ParseConfig(strings.NewReader(base + "afxdp.busy_poll maybe\n")); err == nil {
		t.Error("afxdp.busy_poll maybe accepted")
	}
}
