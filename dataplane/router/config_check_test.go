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
