package router

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// FuzzConfig: ParseConfig never panics on arbitrary text; an accepted
// configuration passes Validate; a second parse of the same text gives
// the same result; what the syntax says does not matter (blanks around a
// line, a comment after a blank, comment lines after the last) changes
// neither the configuration nor the error; and an accepted
// configuration's canonical text (Config.Text) reads back to the same
// configuration, with no key changed (ChangedKeys). pppoe.password_file
// is not read: its stand-in gives the file's name as the password.
func FuzzConfig(f *testing.F) {
	read := readPasswordFile
	readPasswordFile = func(name string) (string, error) { return passwordFromFile(name, []byte(name)) }
	f.Cleanup(func() { readPasswordFile = read })
	b, _ := os.ReadFile("../../pppfwd.conf.example")
	f.Add(string(b))
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	for _, s := range []string{
		base + "nat.forward tcp 1 10.0.0.2:3\n",
		base + "nat.forward udp 51820 host\nnat.forward tcp 2 host:22\nnat.forward tcp 3 10.0.0.1:4\nhost.tap t0\n",
		base + "nat.forward = udp 53 10.0.0.9:53\r\nnat.filtering adf\nnat.max_per_host 0\nnat.capacity 4096\n",
		base + "pppoe.dhcpv6_pd /56\nlan.ipv6_subnet 255\nipv6.allow tcp 443 ::80\nipv6.allow any any\nlan.ipv6_dns 2001:db8::53, 2001:db8::54\n",
		base + "lan.ipv6_prefix 2001:db8:0:5::77/64\nipv6.firewall off\nipv6.ipsec no\nlan.ipv6_script /x\n",
		base + "shaper.up bandwidth 35mbit overhead 34\nshaper.down bandwidth 180mbit pppoe-ptm\nworkers 64\nnat.ports 1024-1088\n",
		base + "wan.vlan 7\nwan.vlan_prio 3\npppoe.mtu 1500\npppoe.echo_interval 1s\npppoe.echo_failures 100\npppoe.auth mschapv2\n",
		base + "workers 2\nworkers 3\n",
		"lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user 0020#0001@t-online.de # login\npppoe.password \"p#w \\\"q\\\\\" # c\n",
		base + "pppoe.password_file /etc/pppfwd/pw\n",
		base + "pppoe.password x\npppoe.password_file /pw\n",
		base + "pppoe.service \"\"\npppoe.user2 x\n",
		base + "pppoe.password \"abc\\\n",
		"keyonly\n",
		"= x\n",
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
			text := c.Text()
			ct, terr := ParseConfig(strings.NewReader(text))
			if terr != nil {
				t.Fatalf("canonical text %q: %v", text, terr)
			}
			if !sameConfig(c, ct) || ct.Text() != text {
				t.Fatalf("canonical text %q reads back differently:\n%+v\n%+v", text, c, ct)
			}
			if ch := ChangedKeys(c, ct); len(ch) != 0 {
				t.Fatalf("canonical text changes %v", ch)
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
		// Lines are added only at the end, so errors keep their numbers.
		d := strings.Join(lines, "\n") + "\n# trailing comment\n\n"
		cd, errd := ParseConfig(strings.NewReader(d))
		if err != nil && errd != nil {
			if errd.Error() != err.Error() {
				t.Fatalf("decorated text: error %q, want %q", errd, err)
			}
			return
		}
		if (err == nil) != (errd == nil) || !sameConfig(c, cd) {
			t.Fatalf("decorated text parses differently:\n%+v %v\n%+v %v", c, err, cd, errd)
		}
	})
}

func sameParse(a *Config, aerr error, b *Config, berr error) bool {
	if (aerr == nil) != (berr == nil) || (aerr != nil && aerr.Error() != berr.Error()) {
		return false
	}
	return sameConfig(a, b)
}

// sameConfig compares configurations but not where their keys were.
func sameConfig(a, b *Config) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.lines, y.lines = nil, nil
	return reflect.DeepEqual(x, y)
}
