package router

import (
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
)

// TestConfigForwardToHost: nat.forward PROTO PORT host (or host:PORT, or
// the router's own LAN address) forwards to the router's host stack,
// which needs host.tap; the canonical text names it host, wherever
// lan.address is in the file.
func TestConfigForwardToHost(t *testing.T) {
	base := "lan.interface a\nwan.interface b\npppoe.user u\n"
	c, err := ParseConfig(strings.NewReader("nat.forward udp 51820 host\n" + base +
		"nat.forward tcp 2222 host:22\nnat.forward tcp 8443 10.0.0.1:443\nnat.forward tcp 443 10.0.0.9:443\nhost.tap pppfwd0\nlan.address 10.0.0.1/24\n"))
	if err != nil {
		t.Fatal(err)
	}
	router := c.RouterAddr()
	want := []nat.Forward{
		{Proto: hdr.ProtoUDP, ExtPort: 51820, LANAddr: router, LANPort: 51820},
		{Proto: hdr.ProtoTCP, ExtPort: 2222, LANAddr: router, LANPort: 22},
		{Proto: hdr.ProtoTCP, ExtPort: 8443, LANAddr: router, LANPort: 443},
		{Proto: hdr.ProtoTCP, ExtPort: 443, LANAddr: 0x0a000009, LANPort: 443},
	}
	if len(c.NAT.Forwards) != len(want) {
		t.Fatalf("forwards %+v", c.NAT.Forwards)
	}
	for i, f := range c.NAT.Forwards {
		if f != want[i] {
			t.Errorf("forward %d: %+v, want %+v", i, f, want[i])
		}
	}
	if got := strings.Join(forwardText(c), "|"); got != "udp 51820 host|tcp 2222 host:22|tcp 8443 host:443|tcp 443 10.0.0.9:443" {
		t.Errorf("canonical text %q", got)
	}
	for _, bad := range []struct{ text, want string }{
		{"nat.forward udp 51820 host\n", "line 4: nat.forward to the router's own address (host) needs host.tap"},
		{"nat.forward udp 51820 10.0.0.1:51820\n", "needs host.tap"},
		{"nat.forward udp 51820 host:0\n", "line 4: nat.forward: 0 out of range 1..65535"},
		{"nat.forward udp 51820 hostx\n", "want IPv4ADDR:PORT or host[:PORT]"},
		{"nat.forward udp 51820\n", "want PROTO EXTPORT ADDR:PORT or PROTO EXTPORT host[:PORT]"},
	} {
		_, err := ParseConfig(strings.NewReader(base + bad.text + "lan.address 10.0.0.1/24\n"))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want %q", bad.text, err, bad.want)
		}
	}
}
