package router

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/pppoe"
)

// TestISPExamples: the README's three ISP examples (docs/examples/*.conf)
// parse and validate, and say what the README says they do: the '#' of a
// Telekom login and of a quoted password stay, VLAN 7; RFC 4638 with MTU
// 1500 and DHCPv6-PD; an untagged line with a quoted blank in the login
// and CHAP only. pppoe.password_file is pointed at a file of the test's.
func TestISPExamples(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte("from file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file  string
		check func(*Config) string
	}{
		{"telekom.conf", func(c *Config) string {
			if c.PPPoE.VLAN != 7 || c.PPPoE.Username != "002012345678551234567890#0001@t-online.de" ||
				c.PPPoE.Password != "k#nn wort" || c.PPPoE.MTU != 0 && c.PPPoE.MTU != 1492 || c.HostTap != "pppfwd0" {
				return "want VLAN 7, the whole login and password, MTU 1492, host.tap"
			}
			return ""
		}},
		{"rfc4638.conf", func(c *Config) string {
			if c.PPPoE.MTU != 1500 || c.PPPoE.VLAN != 10 || c.PPPoE.Password != "from file" || !c.PD {
				return "want MTU 1500, VLAN 10, the password from its file, DHCPv6-PD"
			}
			return ""
		}},
		{"untagged.conf", func(c *Config) string {
			if c.PPPoE.VLAN != 0 || c.PPPoE.Username != "john doe" || c.PPPoE.Auth != pppoe.AuthCHAPMD5 || c.ResolvFile == "" {
				return "want untagged, the quoted login, CHAP only, pppoe.resolv"
			}
			return ""
		}},
	} {
		b, err := os.ReadFile(filepath.Join("../../docs/examples", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "/etc/pppfwd/password", pwFile)
		c, err := ParseConfig(strings.NewReader(text))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if msg := tc.check(c); msg != "" {
			t.Errorf("%s: %s; got VLAN %d user %q MTU %d auth %v PD %v", tc.file, msg, c.PPPoE.VLAN, c.PPPoE.Username, c.PPPoE.MTU, c.PPPoE.Auth, c.PD)
		}
	}
}
