package router

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const syntaxBase = "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\n"

// TestConfigComments: '#' starts a comment only at the start of a line
// or after a blank, so a Deutsche Telekom login keeps its '#'.
func TestConfigComments(t *testing.T) {
	for _, c := range []struct{ line, user string }{
		{"pppoe.user 002012345678901234567890#0001@t-online.de", "002012345678901234567890#0001@t-online.de"},
		{"pppoe.user 0020123#0001@t-online.de # my login", "0020123#0001@t-online.de"},
		{"pppoe.user 0020123#0001@t-online.de\t# my login", "0020123#0001@t-online.de"},
		{"  pppoe.user = a#b#c  ", "a#b#c"},
		{"pppoe.user=#x", "#x"},
		{"pppoe.user a b  c # d", "a b  c"},
		{"pppoe.user a\r", "a"},
		{`pppoe.user "a #b"`, "a #b"},
		{`pppoe.user "a #b" # comment`, "a #b"},
		{`pppoe.user " lead and trail "`, " lead and trail "},
		{`pppoe.user "q\"uote\\back"`, `q"uote\back`},
		{`pppoe.user a"b`, `a"b`},
		{`pppoe.user a\b`, `a\b`},
	} {
		cfg, err := ParseConfig(strings.NewReader("# comment\n   # indented comment\n" + syntaxBase + c.line + "\n"))
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if cfg.PPPoE.Username != c.user {
			t.Errorf("%q: user %q, want %q", c.line, cfg.PPPoE.Username, c.user)
		}
	}
	for _, c := range []struct{ line, want string }{
		{`pppoe.user "abc`, `line 4: pppoe.user unterminated quoted value`},
		{`pppoe.user "abc\"`, `line 4: pppoe.user unterminated quoted value`},
		{`pppoe.user "a\nb"`, `line 4: pppoe.user unknown escape in a quoted value: only \" and \\ are allowed`},
		{`pppoe.user "a"b`, `line 4: pppoe.user text after the closing quote`},
		{`pppoe.user "a"#b`, `line 4: pppoe.user text after the closing quote`},
		{`pppoe.user "a" b`, `line 4: pppoe.user text after the closing quote`},
		{`pppoe.user # all comment`, `line 4: pppoe.user has no value`},
	} {
		_, err := ParseConfig(strings.NewReader(syntaxBase + c.line + "\n"))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.line, err, c.want)
		}
	}
}

// TestConfigPasswordQuoting: any password can be written (quote), and
// errors about the line never show it.
func TestConfigPasswordQuoting(t *testing.T) {
	for _, pw := range []string{"plain", "has#hash", "has # blank hash", `"`, `\`, `a"b\c`, " x ", "=x", "", "#", "tab\there", "é#ü"} {
		text := syntaxBase + "pppoe.user u\npppoe.password " + quote(pw) + "\n"
		c, err := ParseConfig(strings.NewReader(text))
		if err != nil {
			t.Errorf("%q as %q: %v", pw, quote(pw), err)
			continue
		}
		if c.PPPoE.Password != pw {
			t.Errorf("%q as %q: read %q", pw, quote(pw), c.PPPoE.Password)
		}
	}
	for _, line := range []string{`pppoe.password "s3cr3t`, `pppoe.password "s3cr3t\x"`, `pppoe.password "s3cr3t"junk`} {
		_, err := ParseConfig(strings.NewReader(syntaxBase + "pppoe.user u\n" + line + "\n"))
		if err == nil || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%q: error %v (must not show the password)", line, err)
		}
	}
}

// TestConfigPasswordFile: pppoe.password_file is read, refused when
// group or others can read it, and exclusive with pppoe.password.
func TestConfigPasswordFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("pw", "pa ss#word\n", 0o600)
	base := syntaxBase + "pppoe.user u\n"
	c, err := ParseConfig(strings.NewReader(base + "pppoe.password_file " + good + "\n"))
	if err != nil || c.PPPoE.Password != "pa ss#word" || c.PasswordFile != good {
		t.Fatalf("password file: %q %v", c.PPPoE.Password, err)
	}
	if strings.Contains(c.Text(), "pa ss") {
		t.Errorf("Text holds the file's password: %q", c.Text())
	}
	crlf := write("crlf", "pw\r\n", 0o400)
	if c, err := ParseConfig(strings.NewReader(base + "pppoe.password_file " + crlf + "\n")); err != nil || c.PPPoE.Password != "pw" {
		t.Errorf("CRLF file: %v", err)
	}
	for _, cs := range []struct{ text, want string }{
		{"pppoe.password_file " + write("g", "x\n", 0o640) + "\n", "line 5: pppoe.password_file: " + dir + "/g: mode 0640: group or others can read the password: chmod 600"},
		{"pppoe.password_file " + write("o", "x\n", 0o604) + "\n", "mode 0604"},
		{"pppoe.password_file " + write("e", "", 0o600) + "\n", "is empty"},
		{"pppoe.password_file " + write("n", "\n", 0o600) + "\n", "is empty"},
		{"pppoe.password_file " + write("2", "a\nb\n", 0o600) + "\n", "more than one line"},
		{"pppoe.password_file " + dir + "/missing\n", "no such file"},
		{"pppoe.password_file " + dir + "\n", "not a regular file"},
		{"pppoe.password x\npppoe.password_file " + good + "\n", "line 6: pppoe.password and pppoe.password_file: choose one"},
		{"pppoe.password_file " + good + "\npppoe.password x\n", "line 5: pppoe.password and pppoe.password_file: choose one"},
	} {
		_, err := ParseConfig(strings.NewReader(base + cs.text))
		if err == nil || !strings.Contains(err.Error(), cs.want) {
			t.Errorf("%q: error %v, want %q", cs.text, err, cs.want)
		}
	}
}

// TestConfigTextRoundTrip: Text writes a configuration ParseConfig reads
// back to the same one, and ChangedKeys names exactly the keys that
// differ.
func TestConfigTextRoundTrip(t *testing.T) {
	f, err := os.ReadFile("../../pppfwd.conf.example")
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{string(f), syntaxBase + "pppoe.user \"a #b\"\npppoe.password \"x\\\"y\"\nwan.vlan 7\nwan.vlan_prio 3\npppoe.mtu 1500\n" +
		"pppoe.dhcpv6_pd 56\nlan.ipv6_subnet 3\nlan.ipv6_dns 2001:db8::53 2001:db8::54\nipv6.allow tcp 22 ::1\nipv6.allow any any\nipv6.allow udp 53 2001:db8::9\n" +
		"ipv6.firewall off\nipv6.ipsec off\nnat.forward tcp 80 10.0.0.5:8080\nnat.forward udp 53 10.0.0.6:53\nnat.filtering adf\nnat.capacity 4096\n" +
		"pppoe.auth chap\npppoe.echo_interval 5s\npppoe.echo_failures 5\nstats.interval 1m\nshaper.up bandwidth 40mbit overhead 34 mpu 64 noecn\n"}
	for _, text := range texts {
		a, err := ParseConfig(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		b, err := ParseConfig(strings.NewReader(a.Text()))
		if err != nil {
			t.Fatalf("Text %q: %v", a.Text(), err)
		}
		if a.Text() != b.Text() || !sameConfig(a, b) {
			t.Fatalf("round trip:\n%s\n%s", a.Text(), b.Text())
		}
		if ch := ChangedKeys(a, b); len(ch) != 0 {
			t.Fatalf("changed %v after a round trip", ch)
		}
	}
	a, _ := ParseConfig(strings.NewReader(texts[1]))
	b, _ := ParseConfig(strings.NewReader(strings.Replace(strings.Replace(texts[1], "wan.vlan 7", "wan.vlan 8", 1), "udp 53 2001:db8::9", "udp 54 2001:db8::9", 1) + "host.tap t0\n"))
	if ch := strings.Join(ChangedKeys(a, b), " "); ch != "ipv6.allow wan.vlan host.tap" {
		t.Fatalf("changed %q", ch)
	}
}

// TestSuggestKey: a near miss names the key meant.
func TestSuggestKey(t *testing.T) {
	for in, want := range map[string]string{
		"pppoe.usr": "pppoe.user", "pppoe.passwd": "pppoe.password", "password": "pppoe.password", "mtu": "pppoe.mtu",
		"vlan": "wan.vlan", "lan.adress": "lan.address", "shaper_up": "shaper.up", "nat.forwrad": "nat.forward", "xyzzy": "",
	} {
		if got := suggestKey(in); got != want {
			t.Errorf("suggestKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestKeyTable: every key has what the example, the errors and the
// reload diff need.
func TestKeyTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range keyTable {
		if seen[k.Name] {
			t.Errorf("%s twice", k.Name)
		}
		seen[k.Name] = true
		if k.Allowed == "" || k.Help == "" || k.v == nil {
			t.Errorf("%s: Allowed, Help and a value are required", k.Name)
		}
		if k.Secret && k.Example != "" && k.Name != "pppoe.password" {
			t.Errorf("%s: a secret with an example", k.Name)
		}
	}
}

// TestDescribe: -check -v's lines mask secrets and give rates in bit/s.
func TestDescribe(t *testing.T) {
	c, err := ParseConfig(strings.NewReader(syntaxBase + "pppoe.user u\npppoe.password hunter2\nshaper.up bandwidth 40mbit overhead 34\nshaper.down bandwidth 1500kbit\n"))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(c.Describe(), "\n")
	for _, want := range []string{
		"pppoe.password      ******", "shaper.up           40000000 bit/s (40 Mbit/s), ", "overhead 34",
		"shaper.down         1500000 bit/s (1.5 Mbit/s)", "pppoe.mtu           1492 (default)", "workers             auto (default)\n",
		"host.tap            (not set)", "nat.max_per_host    8192 (default)\n",
		// Keys whose default ParseConfig fills in (or derives) are marked
		// as well as those whose value stays unset.
		"nat.ports           1024-65535 (default)\n", "backend             afpacket (default)\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Describe lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "hunter2") {
		t.Errorf("Describe shows the password:\n%s", all)
	}
	if len(c.Describe()) != len(keyTable) {
		t.Errorf("%d lines for %d keys", len(c.Describe()), len(keyTable))
	}
	// Given in the file, a value is not marked, even the default's; one
	// derived from another key is the default all the same.
	c, err = ParseConfig(strings.NewReader(syntaxBase + "pppoe.user u\nbackend afpacket\nnat.ports 1024-65535\nnat.capacity 1024\n"))
	if err != nil {
		t.Fatal(err)
	}
	all = strings.Join(c.Describe(), "\n") + "\n"
	for _, want := range []string{"backend             afpacket\n", "nat.ports           1024-65535\n", "nat.capacity        1024\n",
		"nat.max_per_host    128 (default)\n"} {
		if !strings.Contains(all, want) {
			t.Errorf("Describe lacks %q:\n%s", want, all)
		}
	}
}

func TestHumanRate(t *testing.T) {
	for bps, want := range map[uint64]string{40e6: "40 Mbit/s", 1.5e9: "1.5 Gbit/s", 640e3: "640 kbit/s", 999: "999 bit/s", 1234567: "1.234567 Mbit/s"} {
		if got := humanRate(bps); got != want {
			t.Errorf("humanRate(%d) = %q, want %q", bps, got, want)
		}
	}
}
