package main

import (
	"os"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// TestIntegrationLabConfig: `pppfwd lab --config FILE` runs the README's
// Telekom example in the lab: the router logs in on VLAN 7 with the whole
// login (its '#' kept) and the quoted password, the LAN host's ping and
// UDP cross the session, and `pppfwd status` on the lab's socket shows
// the session up with its shaper; the lab's changes to the file are
// listed, and the password never shows.
func TestIntegrationLabConfig(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ip")
	nettest.RequireCmd(t, "ping")
	b, err := os.ReadFile("../../docs/examples/telekom.conf")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runArgs("lab", "--config", writeConf(t, string(b)))
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{
		"wan.interface eth0 -> rwan", "lan.address 192.168.1.1/24 -> 192.168.77.1/24",
		"PADI 1 on rwan (VLAN 7)",
		`authenticated as "002012345678551234567890#0001@t-online.de"`,
		"UDP echo 160/160 through the session",
		"# pppfwd status -s " + labSocket, "session     up", "shaper      up 38 Mbit/s  down 230 Mbit/s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, "k#nn") {
		t.Errorf("the password shows:\n%s%s", out, errOut)
	}
}
