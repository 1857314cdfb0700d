package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

func runArgs(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// writeConf writes a configuration file of mode 0600 and returns its path.
func writeConf(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pppfwd.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCLIConventions: version, help and usage errors, and their exit
// codes (0 clean, 2 usage).
func TestCLIConventions(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, _ := runArgs(args...)
		if code != 0 || !strings.HasPrefix(out, "pppfwd ") || !strings.Contains(out, "go1.") {
			t.Errorf("%v: %d %q", args, code, out)
		}
	}
	if code, _, _ := runArgs("version", "x"); code != 2 {
		t.Errorf("version x: %d", code)
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, out, _ := runArgs(args...)
		if code != 0 || !strings.Contains(out, "Exit status: 0 clean") || !strings.Contains(out, "-c (or -config) FILE") {
			t.Errorf("%v: %d %q", args, code, out)
		}
	}
	for _, args := range [][]string{{"run", "-h"}, {"run", "--help"}, {"lab", "-h"}, {"bench", "-h"}, {"bench", "nat", "-h"}, {"bench", "pipeline", "-help"}} {
		code, out, errOut := runArgs(args...)
		if code != 0 || out == "" || errOut != "" {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want 0 and the usage on stdout", args, code, len(out), errOut)
		}
	}
	code, out, _ := runArgs("run", "-h")
	if code != 0 || !strings.Contains(out, "-c, -config FILE") || !strings.Contains(out, "Exit status") {
		t.Errorf("run -h: %q", out)
	}
	if code, _, _ := runArgs(); code != 2 {
		t.Errorf("no arguments: %d", code)
	}
	if code, _, _ := runArgs("frobnicate"); code != 2 {
		t.Errorf("unknown command: %d", code)
	}
	file := writeConf(t, "lan.interface a\n")
	for _, args := range [][]string{
		{"run", file, "-check"}, // the old mistake: would run /etc/pppfwd.conf
		{"run", "-c", file, "-check", "extra"},
		{"run", "-c", file, "extra", "-check"},
		{"run", "-nosuchflag"},
		{"run", "-c", file, "-v"}, // -v without -check
	} {
		code, out, errOut := runArgs(args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d stdout %q stderr %q; want 2 and an error", args, code, out, errOut)
		}
	}
	if _, _, errOut := runArgs("run", file, "-check"); !strings.Contains(errOut, `unexpected argument "`+file+`"`) {
		t.Errorf("positional file: %q", errOut)
	}
}

// TestRunCheckErrors: a bad file exits 2 naming the line and key; -check
// refuses ports with kernel addresses or that do not exist.
func TestRunCheckErrors(t *testing.T) {
	base := "lan.interface lo\nwan.interface pppfwd-none0\nlan.address 10.0.0.1/24\npppoe.user u\n"
	for _, c := range []struct{ text, want string }{
		{base + "workrs 2\n", `line 5: unknown key "workrs": did you mean workers?`},
		{base + "pppoe.mtu 9000\n", "line 5: pppoe.mtu: 9000 out of range 576..1500"},
		{base, "line 1: lan.interface lo has the kernel address 127.0.0.1/8"},
		{base, "line 2: wan.interface pppfwd-none0:"},
	} {
		file := writeConf(t, c.text)
		code, out, errOut := runArgs("run", "-c", file, "-check")
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(out, "ok") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.text, code, errOut, c.want)
		}
	}
	if code, _, errOut := runArgs("run", "-config", filepath.Join(t.TempDir(), "missing.conf"), "-check"); code != 2 || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: %d %q", code, errOut)
	}
}

// TestIntegrationRunCheck: -check passes for two ports without kernel
// addresses (a veth pair in a namespace of its own) and -check -v prints
// the effective configuration with the password masked and rates in
// bit/s; an address on the LAN port then fails the check.
func TestIntegrationRunCheck(t *testing.T) {
	lab := nettest.NewLab(t)
	ns, err := lab.NewNS("chk")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("lan0", ns, "wan0", ns, 1); err != nil {
		t.Fatal(err)
	}
	file := writeConf(t, "lan.interface lan0\nwan.interface wan0\nlan.address 192.168.1.1/24\n"+
		"pppoe.user 002012345678#0001@t-online.de # Telekom\npppoe.password \"pa#ss \\\"word\\\"\"\nwan.vlan 7\nshaper.up bandwidth 40mbit\n")
	var code int
	var out, errOut string
	if err := ns.Do(func() error { code, out, errOut = runArgs("run", "-c", file, "-check", "-v"); return nil }); err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.HasSuffix(out, file+": ok\n") {
		t.Fatalf("-check -v: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{
		"pppoe.user          002012345678#0001@t-online.de\n", "pppoe.password      ******\n",
		"shaper.up           40000000 bit/s (40 Mbit/s)", "wan.vlan            7\n", "shaper.down         unlimited (default)\n",
		"nat.ports           1024-65535 (default)\n", "nat.max_per_host    8192 (default)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-check -v lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, "pa#ss") {
		t.Errorf("the password shows:\n%s%s", out, errOut)
	}
	if _, err := ns.Exec("ip", "addr", "add", "192.168.1.1/24", "dev", "lan0"); err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error { code, out, errOut = runArgs("run", "-c", file, "-check"); return nil }); err != nil {
		t.Fatal(err)
	}
	if code != 2 || !strings.Contains(errOut, "line 1: lan.interface lan0 has the kernel address 192.168.1.1/24") {
		t.Fatalf("address on the LAN port: exit %d stderr %q", code, errOut)
	}
}

// TestUsageListsEveryBench: pppfwd --help names every bench scenario
// that `pppfwd bench -h` lists, so the top-level help stays true.
func TestUsageListsEveryBench(t *testing.T) {
	for _, l := range strings.Split(benchUsage, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasPrefix(l, "  ") {
			continue
		}
		if !strings.Contains(usage, "pppfwd bench "+f[0]+" ") {
			t.Errorf("pppfwd --help does not list pppfwd bench %s", f[0])
		}
	}
}

// TestIntegrationRunCheckMTU: -check notes that pppoe.mtu 1500 with
// wan.vlan 7 needs a WAN MTU of 1512, which pppfwd sets at start, and
// the command that sets it; it changes nothing itself and still passes.
func TestIntegrationRunCheckMTU(t *testing.T) {
	lab := nettest.NewLab(t)
	ns, err := lab.NewNS("chkmtu")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("lan0", ns, "wan0", ns, 1); err != nil {
		t.Fatal(err)
	}
	file := writeConf(t, "lan.interface lan0\nwan.interface wan0\nlan.address 192.168.1.1/24\npppoe.user u\nwan.vlan 7\npppoe.mtu 1500\n")
	var code int
	var out, errOut string
	if err := ns.Do(func() error { code, out, errOut = runArgs("run", "-c", file, "-check"); return nil }); err != nil {
		t.Fatal(err)
	}
	want := "pppfwd: note: " + file + ": line 6: wan.interface wan0: MTU 1500, pppoe.mtu 1500 with wan.vlan 7 (RFC 4638) needs 1512: pppfwd raises it at start (or: ip link set dev wan0 mtu 1512)\n"
	if code != 0 || !strings.HasSuffix(out, file+": ok\n") || errOut != want {
		t.Fatalf("-check: exit %d\nstdout %s\nstderr %q\nwant %q", code, out, errOut, want)
	}
	if mtu, err := ns.Exec("cat", "/sys/class/net/wan0/mtu"); err != nil || strings.TrimSpace(mtu) != "1500" {
		t.Fatalf("-check changed the MTU: %q %v", mtu, err)
	}
}
