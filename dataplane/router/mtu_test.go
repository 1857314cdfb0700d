package router

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/pppfwd/pppfwd/pppoe"
)

// TestWANMTU: the WAN interface's MTU for pppoe.mtu and wan.vlan: none
// beyond the standard 1500 up to 1492, the payload + 8 above (RFC 4638),
// + 4 with a tag pppfwd pushes itself.
func TestWANMTU(t *testing.T) {
	for _, c := range []struct {
		mtu  int
		vlan uint16
		want int
	}{
		{0, 0, 0}, // the default, 1492
		{0, 7, 0},
		{576, 0, 0},
		{1492, 0, 0},
		{1492, 7, 0}, // the tag of a standard frame: the drivers' 802.1Q allowance
		{1493, 0, 1501},
		{1496, 7, 1508},
		{1500, 0, 1508},
		{1500, 7, 1512},
		{1500, 4094, 1512},
	} {
		if got := WANMTU(c.mtu, c.vlan); got != c.want {
			t.Errorf("WANMTU(%d, vlan %d) = %d, want %d", c.mtu, c.vlan, got, c.want)
		}
	}
}

// fakeLink is an interface for mtuOps: its MTU, its driver's largest
// (0: unknown) and the error a set returns.
type fakeLink struct {
	mtu, max int
	setErr   error
	sets     int
}

func (f *fakeLink) ops() mtuOps {
	return mtuOps{
		get: func(string) (int, error) { return f.mtu, nil },
		max: func(string) (int, error) { return f.max, nil },
		set: func(_ string, mtu int) error {
			f.sets++
			if f.setErr != nil {
				return f.setErr
			}
			f.mtu = mtu
			return nil
		},
	}
}

// TestRaiseWANMTU: raiseWANMTU raises a lower MTU and says so in one
// line, leaves a large enough one alone (never lowers it), and when it
// cannot (no permission, the driver refuses, its maximum is too small)
// says why and the command that sets it, and runs at 1492.
func TestRaiseWANMTU(t *testing.T) {
	for _, c := range []struct {
		name      string
		mtu       int
		vlan      uint16
		link      fakeLink
		wantMTU   int
		wantOK    bool
		wantSets  int
		wantLines []string // "" for no line
	}{
		{"1500 vlan", 1500, 7, fakeLink{mtu: 1500}, 1512, true, 1,
			[]string{"wan.interface eth1: MTU 1500 -> 1512 for pppoe.mtu 1500 with wan.vlan 7 (RFC 4638)"}},
		{"1500 untagged", 1500, 0, fakeLink{mtu: 1500}, 1508, true, 1,
			[]string{"wan.interface eth1: MTU 1500 -> 1508 for pppoe.mtu 1500 (RFC 4638)"}},
		{"1492 vlan", 1492, 7, fakeLink{mtu: 1500}, 1500, true, 0, []string{""}},
		{"already", 1500, 7, fakeLink{mtu: 1512}, 1512, true, 0, []string{""}},
		{"larger kept", 1500, 7, fakeLink{mtu: 9000}, 9000, true, 0, []string{""}},
		{"eperm", 1500, 7, fakeLink{mtu: 1500, setErr: syscall.EPERM}, 1500, false, 1, []string{
			"wan.interface eth1: cannot raise the MTU 1500 -> 1512 for pppoe.mtu 1500 with wan.vlan 7 (RFC 4638): operation not permitted (pppfwd needs CAP_NET_ADMIN",
			"running at pppoe.mtu 1492: for 1500, set it with `ip link set dev eth1 mtu 1512` and restart pppfwd"}},
		{"refused", 1500, 0, fakeLink{mtu: 1500, setErr: syscall.EINVAL}, 1500, false, 1, []string{
			"invalid argument (the driver refused it)", "`ip link set dev eth1 mtu 1508`"}},
		{"driver max", 1500, 7, fakeLink{mtu: 1500, max: 1500}, 1500, false, 0, []string{
			"its driver allows at most 1500 (pppoe.mtu 1500 needs a NIC that takes 1512)", "`ip link set dev eth1 mtu 1512`"}},
		{"driver max enough", 1500, 7, fakeLink{mtu: 1500, max: 9216}, 1512, true, 1, []string{"MTU 1500 -> 1512"}},
	} {
		cfg := &Config{WANInterface: "eth1", PPPoE: pppoe.ClientConfig{MTU: c.mtu, VLAN: c.vlan}}
		l := c.link
		msg, ok := cfg.raiseWANMTU(l.ops())
		if ok != c.wantOK || l.mtu != c.wantMTU || l.sets != c.wantSets {
			t.Errorf("%s: ok %v, MTU %d after %d sets; want %v, %d, %d sets (%q)", c.name, ok, l.mtu, l.sets, c.wantOK, c.wantMTU, c.wantSets, msg)
		}
		for _, w := range c.wantLines {
			if w == "" && msg != "" || !strings.Contains(msg, w) {
				t.Errorf("%s: line %q, want %q", c.name, msg, w)
			}
		}
	}
	// An interface that cannot be read: 1492, and the port's opening
	// reports it.
	cfg := &Config{WANInterface: "eth9", PPPoE: pppoe.ClientConfig{MTU: 1500}}
	msg, ok := cfg.raiseWANMTU(mtuOps{get: func(string) (int, error) { return 0, errors.New("no such network interface") }})
	if ok || !strings.Contains(msg, "running at pppoe.mtu 1492") {
		t.Errorf("missing interface: %v %q", ok, msg)
	}
}

// TestCheckWANMTU: -check says that pppfwd raises a low MTU (and the
// command), warns when the driver cannot take it, is silent otherwise,
// and changes nothing.
func TestCheckWANMTU(t *testing.T) {
	parse := func(extra string) *Config {
		t.Helper()
		c, err := ParseConfig(strings.NewReader("lan.interface eth0\nwan.interface eth1\nlan.address 10.0.0.1/24\npppoe.user u\n" + extra))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, c := range []struct {
		extra string
		link  fakeLink
		want  string
		bad   bool
	}{
		{"pppoe.mtu 1500\nwan.vlan 7\n", fakeLink{mtu: 1500}, "line 5: wan.interface eth1: MTU 1500, pppoe.mtu 1500 with wan.vlan 7 (RFC 4638) needs 1512: pppfwd raises it at start (or: ip link set dev eth1 mtu 1512)", false},
		{"pppoe.mtu 1500\n", fakeLink{mtu: 1500, max: 1500}, "its driver allows at most 1500: pppfwd will run at pppoe.mtu 1492", true},
		{"pppoe.mtu 1500\n", fakeLink{mtu: 1508}, "", false},
		{"wan.vlan 7\n", fakeLink{mtu: 1500}, "", false},
	} {
		cfg := parse(c.extra)
		l := c.link
		msg, bad := cfg.checkWANMTU(l.ops())
		if bad != c.bad || (c.want == "") != (msg == "") || !strings.Contains(msg, c.want) || l.sets != 0 {
			t.Errorf("%q: %q bad %v (%d sets), want %q bad %v", c.extra, msg, bad, l.sets, c.want, c.bad)
		}
	}
}
