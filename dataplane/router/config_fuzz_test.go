package router

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzConfig: ParseConfig never panics on arbitrary text; an accepted
// configuration passes Validate; a second parse of the same text gives
// the same result; and what the syntax says does not matter (blanks
// around a line, a comment after it, blank and comment lines between)
// changes neither the configuration nor the error. Config has no
// canonical text form to re-parse, so this decoration stands in for the
// round trip.
func FuzzConfig(f *testing.F) {
	b, _ := os.ReadFile("../../pppfwd.conf.example")
	f.Add(string(b))
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	for _, s := range []string{
		base + "nat.forward tcp 1 10.0.0.2:3\n",
		base + "nat.forward = udp 53 10.0.0.9:53\r\nnat.filtering adf\nnat.max_per_host 0\nnat.capacity 4096\n",
		base + "pppoe.dhcpv6_pd /56\nlan.ipv6_subnet 255\nipv6.allow tcp 443 ::80\nipv6.allow any any\nlan.ipv6_dns 2001:db8::53, 2001:db8::54\n",
		base + "lan.ipv6_prefix 2001:db8:0:5::77/64\nipv6.firewall off\nipv6.ipsec no\nlan.ipv6_script /x\n",
		base + "shaper.up bandwidth 35mbit overhead 34\nshaper.down bandwidth 180mbit pppoe-ptm\nworkers 64\nnat.ports 1024-1088\n",
		base + "wan.vlan 7\nwan.vlan_prio 3\npppoe.mtu 1500\npppoe.echo_interval 1s\npppoe.echo_failures 100\npppoe.auth mschapv2\n",
		base + "workers 2\nworkers 3\n",
		"keyonly\n",
		"# only a comment\n\n\t\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig(strings.NewReader(s))
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("accepted configuration fails Validate: %v", verr)
			}
		}
		c2, err2 := ParseConfig(strings.NewReader(s))
		if !sameParse(c, err, c2, err2) {
			t.Fatalf("two parses differ:\n%+v %v\n%+v %v", c, err, c2, err2)
		}
		lines := strings.Split(s, "\n")
		for _, l := range lines {
			if len(l) > 60000 {
				return // near the line length limit, decoration could pass it
			}
		}
		for i, l := range lines {
			if i < len(lines)-1 || l != "" {
				lines[i] = " \t" + l + " \t# decoration"
			}
		}
		d := "# leading comment\n\n" + strings.Join(lines, "\n")
		cd, errd := ParseConfig(strings.NewReader(d))
		// The two added lines shift an error's line number by two.
		if err != nil && errd != nil {
			if want := shiftLine(err.Error(), 2); errd.Error() != want {
				t.Fatalf("decorated text: error %q, want %q", errd, want)
			}
			return
		}
		if (err == nil) != (errd == nil) || !reflect.DeepEqual(c, cd) {
			t.Fatalf("decorated text parses differently:\n%+v %v\n%+v %v", c, err, cd, errd)
		}
	})
}

func sameParse(a *Config, aerr error, b *Config, berr error) bool {
	if (aerr == nil) != (berr == nil) || (aerr != nil && aerr.Error() != berr.Error()) {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// shiftLine adds n to the line number an error from ParseConfig starts
// with ("line N: ..."); other errors are returned as they are.
func shiftLine(msg string, n int) string {
	rest, ok := strings.CutPrefix(msg, "line ")
	if !ok {
		return msg
	}
	num, tail, ok := strings.Cut(rest, ":")
	v, err := atoiRange(num, 1, 1<<30)
	if !ok || err != nil {
		return msg
	}
	return "line " + strconv.Itoa(v+n) + ":" + tail
}
