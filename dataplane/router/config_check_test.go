package router

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestCheckInterfaces: the ports must exist, differ, and hold no kernel
// address but link-local ones; each error names the key and its line.
func TestCheckInterfaces(t *testing.T) {
	kernel := map[string][]netip.Prefix{
		"eth0":  {netip.MustParsePrefix("fe80::1/64")},
		"eth1":  {netip.MustParsePrefix("fe80::2/64"), netip.MustParsePrefix("169.254.3.4/16")},
		"addr4": {netip.MustParsePrefix("192.168.1.1/24")},
		"addr6": {netip.MustParsePrefix("fe80::3/64"), netip.MustParsePrefix("2001:db8::1/64")},
	}
	lookup := func(name string) ([]netip.Prefix, error) {
		if a, ok := kernel[name]; ok {
			return a, nil
		}
		return nil, errors.New("no such network interface")
	}
	parse := func(lan, wan, extra string) *Config {
		t.Helper()
		c, err := ParseConfig(strings.NewReader("lan.interface " + lan + "\nwan.interface " + wan + "\nlan.address 10.0.0.1/24\npppoe.user u\n" + extra))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := parse("eth1", "eth0", "host.tap pppfwd0\n").checkInterfaces(lookup); err != nil {
		t.Fatalf("good ports: %v", err)
	}
	for _, c := range []struct {
		lan, wan, extra string
		want            []string
	}{
		{"eth1", "eth1", "", []string{"line 2: lan.interface and wan.interface (line 1) are both eth1"}},
		{"eth1", "eth0", "host.tap eth0\n", []string{"line 5: host.tap eth0 is a port of pppfwd's"}},
		{"eth9", "eth0", "", []string{"line 1: lan.interface eth9: no such network interface: allowed: an existing interface"}},
		{"eth1", "eth9", "", []string{"line 2: wan.interface eth9: no such"}},
		{"addr4", "eth0", "", []string{"line 1: lan.interface addr4 has the kernel address 192.168.1.1/24", "host.tap instead", "allowed: none but link-local"}},
		{"eth1", "addr6", "", []string{"line 2: wan.interface addr6 has the kernel address 2001:db8::1/64"}},
		{"addr4", "addr6", "", []string{"lan.interface addr4 has", "wan.interface addr6 has"}},
	} {
		err := parse(c.lan, c.wan, c.extra).checkInterfaces(lookup)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("lan %s wan %s %q: error %v, want %q", c.lan, c.wan, c.extra, err, w)
			}
		}
	}
	// The real lookup: loopback holds 127.0.0.1.
	c := parse("lo", "lo", "")
	c.WANInterface = "pppfwd-no-such-if"
	err := c.CheckInterfaces()
	if err == nil || !strings.Contains(err.Error(), "lan.interface lo has the kernel address 127.0.0.1/8") || !strings.Contains(err.Error(), "wan.interface pppfwd-no-such-if") {
		t.Fatalf("lo: %v", err)
	}
}

// TestCheckInterfacesHostRings: with netmap's host rings the LAN
// interface is the box's own stack's: it must hold lan.address, exactly,
// and may hold other addresses; the WAN port is checked as always.
func TestCheckInterfacesHostRings(t *testing.T) {
	kernel := map[string][]netip.Prefix{
		"igb0":  {netip.MustParsePrefix("fe80::1/64")},
		"igb1":  {netip.MustParsePrefix("10.0.0.1/24"), netip.MustParsePrefix("fe80::2/64"), netip.MustParsePrefix("10.0.0.2/24")},
		"bare":  {netip.MustParsePrefix("fe80::3/64")},
		"other": {netip.MustParsePrefix("10.0.0.1/16")},
		"wan4":  {netip.MustParsePrefix("192.0.2.1/24")},
	}
	lookup := func(name string) ([]netip.Prefix, error) { return kernel[name], nil }
	parse := func(lan, wan, extra string) *Config {
		t.Helper()
		c, err := ParseConfig(strings.NewReader("backend netmap\nlan.interface " + lan + "\nwan.interface " + wan + "\nlan.address 10.0.0.1/24\npppoe.user u\n" + extra))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := parse("igb1", "igb0", "").checkInterfaces(lookup); err != nil {
		t.Fatalf("LAN with lan.address: %v", err)
	}
	for _, c := range []struct {
		lan, wan, extra string
		want            []string
	}{
		{"bare", "igb0", "", []string{"line 2: lan.interface bare lacks lan.address 10.0.0.1/24 (line 4)", "host.netmap off"}},
		{"other", "igb0", "", []string{"lan.interface other lacks lan.address 10.0.0.1/24"}},
		{"igb1", "wan4", "", []string{"line 3: wan.interface wan4 has the kernel address 192.0.2.1/24"}},
		{"igb1", "igb0", "host.netmap off\n", []string{"lan.interface igb1 has the kernel address 10.0.0.1/24"}},
	} {
		err := parse(c.lan, c.wan, c.extra).checkInterfaces(lookup)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("lan %s wan %s %q: error %v, want %q", c.lan, c.wan, c.extra, err, w)
			}
		}
	}
}

// TestConfigHostNetmap: the host rings are on by default with backend
// netmap, only there, and not beside host.tap; a forward to host needs a
// host port of either kind.
func TestConfigHostNetmap(t *testing.T) {
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	for _, c := range []struct {
		extra       string
		rings, host bool
		want        string // error
		textOff     bool
	}{
		{extra: "backend netmap\n", rings: true, host: true},
		{extra: "backend netmap\nhost.netmap on\n", rings: true, host: true},
		{extra: "backend netmap\nhost.netmap off\n", textOff: true},
		{extra: "backend netmap\nhost.tap pppfwd0\n", host: true},
		{extra: "backend netmap\nhost.netmap off\nhost.tap pppfwd0\n", host: true, textOff: true},
		{extra: "", host: false},
		{extra: "host.tap pppfwd0\n", host: true},
		{extra: "backend netmap\nnat.forward udp 51820 host\n", rings: true, host: true},
		{extra: "backend afxdp\nhost.netmap on\n", want: "line 6: host.netmap on: the host rings are netmap's: allowed with backend netmap (for afxdp, host.tap)"},
		{extra: "backend netmap\nhost.netmap on\nhost.tap t0\n", want: "line 6: host.netmap on and host.tap (line 7): choose one host port"},
		{extra: "backend netmap\nhost.netmap off\nnat.forward udp 51820 host\n", want: "line 7: nat.forward to the router's own address (host) needs host.tap or netmap's host rings"},
		{extra: "host.netmap maybe\n", want: "line 5: host.netmap: unknown value \"maybe\"; allowed: on | off"},
	} {
		cfg, err := ParseConfig(strings.NewReader(base + c.extra))
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: error %v, want %q", c.extra, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.extra, err)
			continue
		}
		if cfg.HostRings() != c.rings || cfg.HasHost() != c.host {
			t.Errorf("%q: HostRings %v HasHost %v, want %v %v", c.extra, cfg.HostRings(), cfg.HasHost(), c.rings, c.host)
		}
		if got := strings.Contains(cfg.Text(), "host.netmap off"); got != c.textOff {
			t.Errorf("%q: text %q", c.extra, cfg.Text())
		}
	}
}
