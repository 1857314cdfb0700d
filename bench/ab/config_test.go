package ab

import (
	"bytes"
	"errors"
	"flag"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane/router"
	"github.com/pppfwd/pppfwd/shaper"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The scenarios' distinctive names: a test that finds them in a file
// found the configured value, not a default.
const (
	testWAN      = "wanx0"
	testLAN      = "lanx1"
	testPassword = `S3cr"et\pw#1 x` // a quote, a backslash, a '#' and a blank
)

func mustShape(t testing.TB, s string) Shape {
	t.Helper()
	sh, err := ParseShape(s)
	if err != nil {
		t.Fatalf("ParseShape(%q): %v", s, err)
	}
	return sh
}

func baseParams() Params {
	return Params{
		WAN: testWAN, LAN: testLAN,
		User: "0021#0001@isp.example", Password: testPassword,
		LANNet: netip.MustParsePrefix("192.168.77.0/24"), Router: netip.MustParseAddr("192.168.77.1"),
		CPUs: 4,
	}
}

type scenario struct {
	name, goos string
	p          Params
}

// scenarios covers both OSes, shaped and not, default and RFC 4638 MTU,
// with and without a Service-Name, ATM-free and PTM overheads.
func scenarios(t testing.TB) []scenario {
	fs := baseParams()
	fs.Shape = mustShape(t, "download 300000000 upload 50000000 overhead 34")
	fo := baseParams()
	fo.MTU, fo.Service, fo.CPUs, fo.Workers = 1500, "svc-A", 2, 1
	ls := baseParams()
	ls.Shape = mustShape(t, "download 250mbit upload 40000000 pppoe-ptm")
	ls.Workers = 4
	lo := baseParams()
	lo.Service, lo.MTU = "svc-B", 1500
	lo.LANNet, lo.Router = netip.MustParsePrefix("10.20.0.0/16"), netip.MustParseAddr("10.20.30.40")
	return []scenario{
		{"freebsd-shaped", "freebsd", fs},
		{"freebsd-unshaped-mtu1500", "freebsd", fo},
		{"linux-shaped-ptm", "linux", ls},
		{"linux-unshaped-mtu1500", "linux", lo},
	}
}

func generate(t testing.TB, sc scenario) []File {
	t.Helper()
	files, err := Files(sc.goos, sc.p, DefaultBackend(sc.goos))
	if err != nil {
		t.Fatalf("%s: %v", sc.name, err)
	}
	return files
}

func byPath(files []File) map[string]File {
	m := map[string]File{}
	for _, f := range files {
		m[f.Path] = f
	}
	return m
}

// TestGolden: the generated files are the ones in testdata (go test
// ./bench/ab -run TestGolden -update rewrites them).
func TestGolden(t *testing.T) {
	for _, sc := range scenarios(t) {
		var b bytes.Buffer
		if err := Write(&b, generate(t, sc)); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", sc.name+".golden")
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs from %s (run with -update after checking the change):\n%s", sc.name, path, firstDiff(b.String(), string(want)))
		}
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n got  " + gl + "\n want " + wl
		}
	}
	return ""
}

// TestSecrets: the password is in the files of mode 0600 and in no
// other, each file's mode fits its kind, and the secrets files are the
// ones each path needs.
func TestSecrets(t *testing.T) {
	wantSecret := map[string][]string{
		"freebsd": {"mpd.conf", "pppfwd.conf"},
		"linux":   {"chap-secrets", "pap-secrets", "pppfwd.conf"},
	}
	for _, sc := range scenarios(t) {
		var secret []string
		files := generate(t, sc)
		checkSecrets(t, sc.name, sc.p, files)
		for _, f := range files {
			if !f.Secret() && strings.Contains(f.Body, "S3cr") {
				t.Errorf("%s %s (mode %04o) holds the password", sc.name, f.Path, f.Mode)
			}
			if f.Secret() {
				secret = append(secret, f.Path)
			}
			isScript := strings.HasSuffix(f.Path, ".sh")
			switch {
			case isScript && (f.Mode != 0o755 || !strings.HasPrefix(f.Body, "#!/bin/sh\n")):
				t.Errorf("%s %s: script of mode %04o starting %.12q", sc.name, f.Path, f.Mode, f.Body)
			case !isScript && f.Mode != 0o644 && f.Mode != 0o600:
				t.Errorf("%s %s: mode %04o", sc.name, f.Path, f.Mode)
			}
		}
		if got, want := strings.Join(secret, " "), strings.Join(wantSecret[sc.goos], " "); got != want {
			t.Errorf("%s: secrets files %q, want %q", sc.name, got, want)
		}
	}
}

// checkSecrets: files are what goos's A/B generates for p. Each secret
// file holds p's password as the formats quote it; the other files do
// not depend on the password (the same Params with another password
// give them byte for byte), nor do the scripts on the login.
func checkSecrets(t testing.TB, name string, p Params, files []File) {
	t.Helper()
	goos := "linux"
	if _, ok := byPath(files)["mpd.conf"]; ok {
		goos = "freebsd"
	}
	other := p
	other.Password = "Zz" + p.Password[:min(len(p.Password), maxText-2)]
	other.User = "Zz" + p.User[:min(len(p.User), maxText-2)]
	alt, err := Files(goos, other, DefaultBackend(goos))
	if err != nil || len(alt) != len(files) {
		t.Fatalf("%s: with another password: %d files, %v", name, len(alt), err)
	}
	for i, f := range files {
		a := alt[i]
		switch {
		case f.Secret() && !strings.Contains(f.Body, quote(p.Password)):
			t.Errorf("%s %s: mode 0600 but not the password", name, f.Path)
		case !f.Secret() && strings.ReplaceAll(a.Body, quote(other.User), quote(p.User)) != f.Body:
			t.Errorf("%s %s (mode %04o) depends on the password", name, f.Path, f.Mode)
		case f.Mode == scriptMode && a.Body != f.Body:
			t.Errorf("%s %s: a script depends on the login", name, f.Path)
		}
	}
}

// TestFilesNameInterfaces: each file names the configured ports where
// it configures them, and every file's header names both.
func TestFilesNameInterfaces(t *testing.T) {
	want := map[string][]string{
		// FreeBSD
		"mpd.conf":    {"\tset pppoe iface " + testWAN + "\n"},
		"pf.conf":     {"wan_if = \"ng0\"\n", "lan_if = \"" + testLAN + "\"\n", "nat on $wan_if inet from $lan_net to any -> ($wan_if)\n"},
		"dummynet.sh": {"out xmit ng0\n", "in recv ng0\n"},
		// Linux
		"pppd.peer":    {"\nnic-" + testWAN + "\n"},
		"nftables.nft": {"oifname \"ppp0\" ip saddr ", "iifname \"" + testLAN + "\" oifname \"ppp0\" ip saddr "},
		"tc-cake.sh":   {"dev ppp0 root cake", "dev " + testLAN + " root cake"},
		"tc-fq_codel.sh": {"dev ppp0 root handle 1:", "dev " + testLAN + " root handle 1:",
			"dev ppp0 parent 1:1 handle 10: fq_codel", "dev " + testLAN + " parent 1:1 handle 10: fq_codel"},
		// both
		"run-ab.sh":   {"\nwan=" + testWAN + "\n", "\nlan=" + testLAN + "\n"},
		"pppfwd.conf": {"\nwan.interface " + testWAN + "\n", "\nlan.interface " + testLAN + "\n"},
	}
	head := "# pppfwd bench ab: WAN " + testWAN + " (PPPoE), LAN " + testLAN + " ("
	for _, sc := range scenarios(t) {
		for _, f := range generate(t, sc) {
			if !strings.Contains(f.Body, head) {
				t.Errorf("%s %s: no header naming the ports", sc.name, f.Path)
			}
			for _, s := range want[f.Path] {
				if !strings.Contains(f.Body, s) {
					t.Errorf("%s %s lacks %q", sc.name, f.Path, s)
				}
			}
		}
	}
}

// TestPppfwdConfigParses: pppfwd's own parser reads pppfwd.conf back to
// the A/B's ports, account, MTU, keepalive, shaping and workers.
func TestPppfwdConfigParses(t *testing.T) {
	for _, sc := range scenarios(t) {
		p := sc.p.WithDefaults()
		f := byPath(generate(t, sc))["pppfwd.conf"]
		c, err := router.ParseConfig(strings.NewReader(f.Body))
		if err != nil {
			t.Fatalf("%s: router.ParseConfig: %v\n%s", sc.name, err, f.Body)
		}
		checkConfig(t, sc.name, c, p, DefaultBackend(sc.goos))
	}
	for _, b := range Backends {
		f, err := PppfwdConfig(baseParams(), b)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := router.ParseConfig(strings.NewReader(f.Body)); err != nil || c.Backend != b {
			t.Errorf("backend %s: %v, %+v", b, err, c)
		}
	}
	if _, err := PppfwdConfig(baseParams(), "dpdk"); !errors.Is(err, ErrBackend) {
		t.Errorf("backend dpdk: %v, want ErrBackend", err)
	}
}

// checkConfig compares what router.ParseConfig read with p.
func checkConfig(t testing.TB, name string, c *router.Config, p Params, backend string) {
	t.Helper()
	for _, d := range []struct {
		what      string
		got, want any
	}{
		{"backend", c.Backend, backend},
		{"workers", c.Workers, p.Workers},
		{"workers auto", c.WorkersAuto, false},
		{"wan", c.WANInterface, p.WAN},
		{"lan", c.LANInterface, p.LAN},
		{"lan.address", c.LANAddr, netip.PrefixFrom(p.Router, p.LANNet.Bits())},
		{"user", c.PPPoE.Username, p.User},
		{"password", c.PPPoE.Password == p.Password, true},
		{"service", c.PPPoE.ServiceName, p.Service},
		{"mtu", c.PPPoE.MTU, p.MTU},
		{"echo interval s", c.PPPoE.EchoInterval.Seconds(), float64(echoInterval)},
		{"echo failures", c.PPPoE.EchoFailures, echoFailures},
		{"up rate", c.Up.Rate, p.Shape.Up},
		{"down rate", c.Down.Rate, p.Shape.Down},
		{"up overhead", c.Up.Config.Overhead, p.Shape.Overhead},
		{"down overhead", c.Down.Config.Overhead, p.Shape.Overhead},
		{"up host fairness", c.Up.Config.HostFair, false},
		{"down host fairness", c.Down.Config.HostFair, false},
	} {
		if d.got != d.want {
			t.Errorf("%s: pppfwd.conf's %s is %v, want %v", name, d.what, d.got, d.want)
		}
	}
}

// TestShellSyntax: sh -n accepts every generated script, and rejects a
// broken one (the check can fail).
func TestShellSyntax(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	shn := func(body string) error {
		cmd := exec.Command("sh", "-n")
		cmd.Stdin = strings.NewReader(body)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return errors.New(err.Error() + ": " + string(out))
		}
		return nil
	}
	if err := shn("if then fi\n"); err == nil {
		t.Fatal("sh -n accepted a broken script")
	}
	n := 0
	for _, sc := range scenarios(t) {
		for _, f := range generate(t, sc) {
			if f.Mode != scriptMode {
				continue
			}
			n++
			if err := shn(f.Body); err != nil {
				t.Errorf("%s %s: sh -n: %v", sc.name, f.Path, err)
			}
			if strings.Contains(f.Body, "[[") || strings.Contains(f.Body, "function ") || strings.Contains(f.Body, "local ") {
				t.Errorf("%s %s: bash-only syntax", sc.name, f.Path)
			}
		}
	}
	if n < 6 {
		t.Errorf("checked %d scripts", n)
	}
}

func TestParseShape(t *testing.T) {
	ok := []struct {
		in   string
		want Shape
	}{
		{"off", Shape{}},
		{"", Shape{}},
		{"download 300000000 upload 50000000 overhead 34", Shape{Down: 300_000_000, Up: 50_000_000, Overhead: shaper.Overhead{Bytes: 34}}},
		{"upload 50mbit download 1gbit", Shape{Down: 1_000_000_000, Up: 50_000_000}},
		{"download 64kbit upload 64000bit", Shape{Down: 64_000, Up: 64_000}},
		{"DOWNLOAD 300Mbit upload 50mbit pppoe-ptm", Shape{Down: 300e6, Up: 50e6, Overhead: shaper.Overhead{Bytes: 30, Framing: shaper.FramingPTM}}},
		{"download 300mbit upload 50mbit ethernet", Shape{Down: 300e6, Up: 50e6, Overhead: shaper.Overhead{Bytes: 38, MPU: 84}}},
		{"download 300mbit upload 50mbit pppoe-ptm ether-vlan", Shape{Down: 300e6, Up: 50e6, Overhead: shaper.Overhead{Bytes: 34, Framing: shaper.FramingPTM}}},
		{"download 123456789 upload 98765 overhead -4 mpu 64", Shape{Down: 123456789, Up: 98765, Overhead: shaper.Overhead{Bytes: -4, MPU: 64}}},
		{"download 10gbit upload 10000000000", Shape{Down: MaxRate, Up: MaxRate}},
	}
	for _, c := range ok {
		got, err := ParseShape(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseShape(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if back, err := ParseShape(got.String()); err != nil || back != got {
			t.Errorf("ParseShape(%q.String() = %q) = %+v, %v", c.in, got.String(), back, err)
		}
	}
	for _, in := range []string{
		"download 300mbps upload 50mbit",       // tc's megabytes per second
		"download 300000000 upload 6kbps",      // bytes again
		"download 300000000",                   // no upload
		"upload 5mbit",                         // no download
		"download 1mbit upload 1mbit upload 2", // twice
		"download 1.5mbit upload 1mbit",        // not whole
		"download 0 upload 1mbit",              // below MinRate
		"download 63999 upload 1mbit",          // below MinRate
		"download 11gbit upload 1mbit",         // above MaxRate
		"download 99999999999999999999 upload 1mbit",
		"download upload 1mbit",
		"download 1mbit upload",
		"download 1mbit upload 1mbit overhead 999",
		"download 1mbit upload 1mbit overhead",
		"download 1mbit upload 1mbit dual-srchost", // not an overhead keyword
		"overhead 34",
		"on",
		"download -1mbit upload 1mbit",
	} {
		if sh, err := ParseShape(in); !errors.Is(err, ErrShape) {
			t.Errorf("ParseShape(%q) = %+v, %v; want ErrShape", in, sh, err)
		}
	}
	if _, err := ParseShape("download 300mbps upload 50mbit"); err == nil || !strings.Contains(err.Error(), "bytes per second") {
		t.Errorf("mbps error does not explain the trap: %v", err)
	}
}

func TestParamsValidate(t *testing.T) {
	if err := baseParams().Validate(); err != nil {
		t.Fatalf("base: %v", err)
	}
	if p := baseParams().WithDefaults(); p.MTU != DefaultMTU || p.Workers != router.DefaultWorkers(4) {
		t.Errorf("defaults: mtu %d workers %d", p.MTU, p.Workers)
	}
	for _, c := range []struct {
		name string
		mod  func(p *Params)
		want error
	}{
		{"no wan", func(p *Params) { p.WAN = "" }, ErrInterface},
		{"long wan", func(p *Params) { p.WAN = "abcdefghijklmnop" }, ErrInterface},
		{"blank in lan", func(p *Params) { p.LAN = "eth 1" }, ErrInterface},
		{"quote in lan", func(p *Params) { p.LAN = `eth1"` }, ErrInterface},
		{"dash first", func(p *Params) { p.LAN = "-eth1" }, ErrInterface},
		{"same ports", func(p *Params) { p.LAN = p.WAN }, ErrInterface},
		{"wan is ppp0", func(p *Params) { p.WAN = "ppp0" }, ErrInterface},
		{"lan is ng0", func(p *Params) { p.LAN = "ng0" }, ErrInterface},
		{"no user", func(p *Params) { p.User = "" }, ErrUser},
		{"user newline", func(p *Params) { p.User = "a\nb" }, ErrUser},
		{"user utf-8", func(p *Params) { p.User = "müller" }, ErrUser},
		{"no password", func(p *Params) { p.Password = "" }, ErrPassword},
		{"long password", func(p *Params) { p.Password = strings.Repeat("x", 256) }, ErrPassword},
		{"password tab", func(p *Params) { p.Password = "a\tb" }, ErrPassword},
		{"service nul", func(p *Params) { p.Service = "a\x00" }, ErrService},
		{"mtu low", func(p *Params) { p.MTU = 575 }, ErrMTU},
		{"mtu high", func(p *Params) { p.MTU = 1501 }, ErrMTU},
		{"no lan net", func(p *Params) { p.LANNet = netip.Prefix{} }, ErrLAN},
		{"ipv6 lan", func(p *Params) { p.LANNet = netip.MustParsePrefix("fd00::/64") }, ErrLAN},
		{"lan /31", func(p *Params) {
			p.LANNet, p.Router = netip.MustParsePrefix("192.168.77.0/31"), netip.MustParseAddr("192.168.77.1")
		}, ErrLAN},
		{"host bits", func(p *Params) { p.LANNet = netip.MustParsePrefix("192.168.77.1/24") }, ErrLAN},
		{"router outside", func(p *Params) { p.Router = netip.MustParseAddr("192.168.78.1") }, ErrLAN},
		{"router is network", func(p *Params) { p.Router = netip.MustParseAddr("192.168.77.0") }, ErrLAN},
		{"router is broadcast", func(p *Params) { p.Router = netip.MustParseAddr("192.168.77.255") }, ErrLAN},
		{"no router", func(p *Params) { p.Router = netip.Addr{} }, ErrLAN},
		{"one rate", func(p *Params) { p.Shape = Shape{Down: 1e6} }, ErrShape},
		{"overhead only", func(p *Params) { p.Shape = Shape{Overhead: shaper.Overhead{Bytes: 8}} }, ErrShape},
		{"bad overhead", func(p *Params) { p.Shape = Shape{Down: 1e6, Up: 1e6, Overhead: shaper.Overhead{Bytes: 300}} }, ErrShape},
		{"no cpus", func(p *Params) { p.CPUs = 0 }, ErrCPUs},
		{"too many cpus", func(p *Params) { p.CPUs = MaxCPUs + 1 }, ErrCPUs},
		{"workers > cpus", func(p *Params) { p.Workers = 5 }, ErrWorkers},
		{"negative workers", func(p *Params) { p.Workers = -1 }, ErrWorkers},
		{"workers > 64", func(p *Params) { p.CPUs, p.Workers = 128, 65 }, ErrWorkers},
	} {
		p := baseParams()
		c.mod(&p)
		err := p.Validate()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "S3cr") {
			t.Errorf("%s: the error quotes the password: %v", c.name, err)
		}
		for _, goos := range []string{"linux", "freebsd"} {
			if _, gerr := Files(goos, p, DefaultBackend(goos)); !errors.Is(gerr, c.want) {
				t.Errorf("%s: Files(%s): %v, want %v", c.name, goos, gerr, c.want)
			}
		}
	}
	if _, err := Files("windows", baseParams(), "afpacket"); !errors.Is(err, ErrOS) {
		t.Errorf("windows: %v", err)
	}
}

// FuzzParseShape: ParseShape never panics; what it accepts is valid and
// reads back from its String to the same Shape.
func FuzzParseShape(f *testing.F) {
	for _, s := range []string{"off", "download 300000000 upload 50000000 overhead 34", "download 1gbit upload 50mbit pppoe-ptm ether-vlan",
		"download 64kbit upload 64kbit mpu 84 atm", "download 300mbps upload 1", "upload 1 download 2 overhead -64"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseShape(s)
		if err != nil {
			if !errors.Is(err, ErrShape) {
				t.Fatalf("ParseShape(%q): %v is not an ErrShape", s, err)
			}
			return
		}
		if err := sh.Validate(); err != nil {
			t.Fatalf("ParseShape(%q) = %+v, invalid: %v", s, sh, err)
		}
		back, err := ParseShape(sh.String())
		if err != nil || back != sh {
			t.Fatalf("ParseShape(%q) = %+v; its String %q reads back as %+v, %v", s, sh, sh.String(), back, err)
		}
	})
}

// FuzzParams: for any Params Validate accepts, both OSes' files
// generate, the password is only in the secrets files, the shell
// scripts hold no part of the login, and pppfwd's parser reads the
// same account back from pppfwd.conf.
func FuzzParams(f *testing.F) {
	f.Add("eth0", "eth1", "user@isp", `pw"\#x`, "", 1492, "download 300mbit upload 50mbit overhead 34")
	f.Add("igb0", "igb1", `a "b" \c`, "p w", `svc "x"`, 1500, "off")
	f.Add("em0", "em0", "u", "p", "", 0, "off")
	f.Fuzz(func(t *testing.T, wan, lan, user, password, service string, mtu int, shape string) {
		sh, err := ParseShape(shape)
		if err != nil {
			return
		}
		p := baseParams()
		p.WAN, p.LAN, p.User, p.Password, p.Service, p.MTU, p.Shape = wan, lan, user, password, service, mtu, sh
		if err := p.Validate(); err != nil {
			if strings.Contains(err.Error(), password) && len(password) > 3 {
				t.Fatalf("error quotes the password: %v", err)
			}
			return
		}
		p = p.WithDefaults()
		for _, goos := range []string{"linux", "freebsd"} {
			files, err := Files(goos, p, DefaultBackend(goos))
			if errors.Is(err, ErrDummynetRate) && goos == "freebsd" {
				continue
			}
			if err != nil {
				t.Fatalf("%s: valid %+v: %v", goos, p, err)
			}
			checkSecrets(t, goos, p, files)
			conf := byPath(files)["pppfwd.conf"]
			c, err := router.ParseConfig(strings.NewReader(conf.Body))
			if err != nil {
				t.Fatalf("%s: router.ParseConfig: %v\n%s", goos, err, conf.Body)
			}
			checkConfig(t, goos, c, p, DefaultBackend(goos))
		}
	})
}
