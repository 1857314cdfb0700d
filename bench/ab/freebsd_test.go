package ab

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ipfwBandwidth reads a dummynet bw argument as ipfw's read_bandwidth
// does (sbin/ipfw/dummynet.c): strtoul with base 0, then K, M or G
// (10^3, 10^6, 10^9), then B or "bytes" for bytes (times 8), into a C
// int, negative meaning too large. It insists on the "bit/s" ending
// dnRate writes, which ipfw skips over.
func ipfwBandwidth(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	v, err := strconv.ParseUint(s[:i], 0, 64) // strtoul(arg, &end, 0): a leading 0 is octal
	if err != nil {
		return 0, err
	}
	end := s[i:]
	switch {
	case strings.HasPrefix(end, "K") || strings.HasPrefix(end, "k"):
		v, end = v*1000, end[1:]
	case strings.HasPrefix(end, "M") || strings.HasPrefix(end, "m"):
		v, end = v*1000000, end[1:]
	case strings.HasPrefix(end, "G") || strings.HasPrefix(end, "g"):
		v, end = v*1000000000, end[1:]
	}
	if strings.HasPrefix(end, "B") && !strings.HasPrefix(end, "Bit/s") || strings.HasPrefix(end, "by") {
		v *= 8
	}
	if end != "bit/s" {
		return 0, fmt.Errorf("%q ends in %q, not bit/s", s, end)
	}
	if int32(v) < 0 || v > 1<<32-1 {
		return 0, fmt.Errorf("%q: bandwidth too large", s)
	}
	return int64(int32(v)), nil
}

// TestDnRate: every rate dummynet takes is written so that ipfw reads
// back exactly that many bit/s, in the largest exact unit.
func TestDnRate(t *testing.T) {
	for _, c := range []struct {
		bps  uint64
		want string
	}{
		{300_000_000, "300Mbit/s"}, {50_000_000, "50Mbit/s"}, {1_500_000, "1500Kbit/s"}, {64_000, "64Kbit/s"},
		{12_345_678, "12345678bit/s"}, {2_000_000_000, "2000Mbit/s"}, {MaxDummynetRate, "2147483647bit/s"},
		{100_001_000, "100001Kbit/s"}, {1_000_000_001, "1000000001bit/s"},
	} {
		if got := dnRate(c.bps); got != c.want {
			t.Errorf("dnRate(%d) = %q, want %q", c.bps, got, c.want)
		}
	}
	for bps := uint64(MinRate); bps <= MaxDummynetRate; bps = bps*7/3 + 999 {
		for _, r := range []uint64{bps, bps / 1000 * 1000, bps / 1e6 * 1e6} {
			if r < MinRate {
				continue
			}
			got, err := ipfwBandwidth(dnRate(r))
			if err != nil || uint64(got) != r {
				t.Fatalf("ipfw reads dnRate(%d) = %q as %d, %v", r, dnRate(r), got, err)
			}
		}
	}
	// The model catches what ipfw would misread.
	for _, bad := range []string{"050Mbit/s", "3000Mbit/s", "10MByte/s", "10Mbps"} {
		if v, err := ipfwBandwidth(bad); err == nil && v == 50e6 {
			t.Errorf("model read %q as %d", bad, v)
		}
	}
}

func TestFreeBSDKernel(t *testing.T) {
	sc := scenarios(t)
	shaped, plain := sc[0], sc[1]
	files := byPath(generate(t, shaped))
	mpd := files["mpd.conf"].Body
	for _, l := range []string{
		"default:\n\tload pppfwd_ab\n", "\tcreate bundle static B1\n", "\tset iface route default\n",
		"\tset ipcp ranges 0.0.0.0/0 0.0.0.0/0\n", "\tcreate link static L1 pppoe\n", "\tset link action bundle B1\n",
		"\tset link max-redial 0\n", "\tset link mtu 1492\n", "\tset link mru 1492\n", "\tset link keep-alive 10 30\n",
		"\tset auth authname \"0021#0001@isp.example\"\n", "\tset auth password \"S3cr\\\"et\\\\pw#1 x\"\n",
		"\tset pppoe iface wanx0\n", "\tset pppoe service \"\"\n", "\tset iface enable tcpmssfix\n",
	} {
		if !strings.Contains(mpd, l) {
			t.Errorf("mpd.conf lacks %q", l)
		}
	}
	if !strings.HasSuffix(mpd, "\topen\n") || strings.Contains(mpd, "max-payload") {
		t.Errorf("mpd.conf: open must end it, no max-payload at MTU 1492:\n%s", mpd)
	}
	pf := files["pf.conf"].Body
	for _, l := range []string{"set skip on lo0\n", "lan_net = \"192.168.77.0/24\"\n", "nat on $wan_if inet from $lan_net to any -> ($wan_if)\n",
		"block drop in on $wan_if all\n", "pass in on $lan_if inet from $lan_net to any keep state\n", "pass out on $wan_if inet all keep state\n"} {
		if !strings.Contains(pf, l) {
			t.Errorf("pf.conf lacks %q", l)
		}
	}
	if regexp.MustCompile(`(?m)^pass in on \$wan_if`).MatchString(pf) || strings.Contains(pf, "wanx0\"") {
		t.Errorf("pf.conf passes inbound on the session or filters on the PPPoE port:\n%s", pf)
	}
	sysctl, loader := files["sysctl.conf"].Body, files["loader.conf"].Body
	for _, c := range []struct {
		body, has, not string
	}{
		{sysctl, "\nnet.isr.dispatch=deferred\n", "maxthreads"},
		{sysctl, "\nnet.inet.ip.forwarding=1\n", "bindthreads"},
		{loader, "\nnet.isr.maxthreads=\"4\"\n", "dispatch"},
		{loader, "\nnet.isr.bindthreads=\"1\"\n", "forwarding"},
		{loader, "\nnet.inet.ip.fw.default_to_accept=\"1\"\n", "deferred"},
	} {
		if !strings.Contains(c.body, c.has) || strings.Contains(c.body, c.not) {
			t.Errorf("want %q and not %q in:\n%s", c.has, c.not, c.body)
		}
	}

	dn := files["dummynet.sh"].Body
	bw := regexp.MustCompile(`(?m)^ipfw pipe (\d) config bw (\S+)$`).FindAllStringSubmatch(dn, -1)
	if len(bw) != 2 {
		t.Fatalf("dummynet.sh: %d pipes:\n%s", len(bw), dn)
	}
	want := map[string]uint64{"1": shaped.p.Shape.Up, "2": shaped.p.Shape.Down}
	for _, m := range bw {
		got, err := ipfwBandwidth(m[2])
		if err != nil || uint64(got) != want[m[1]] {
			t.Errorf("pipe %s: bw %s reads as %d, %v; want %d", m[1], m[2], got, err, want[m[1]])
		}
	}
	for _, l := range []string{
		"ipfw sched 1 config pipe 1 type fq_codel target 5ms interval 100ms quantum 1514 limit 10240 flows 1024 ecn\n",
		"ipfw queue 1 config sched 1\n", "ipfw queue 2 config sched 2\n",
		"ipfw -q add 10100 queue 1 ip from any to any out xmit ng0\n", "ipfw -q add 10200 queue 2 ip from any to any in recv ng0\n",
		// the overhead, which dummynet cannot apply, is documented with its figures
		`"overhead 34 mpu 0 noatm"`, "(1492 B of IP, 1526 B with the overhead)", "2.28 % more IP bytes",
		fmt.Sprintf("%dbit/s (upload) and %dbit/s (download)", 50_000_000*1492/1526, 300_000_000*1492/1526),
	} {
		if !strings.Contains(dn, l) {
			t.Errorf("dummynet.sh lacks %q:\n%s", l, dn)
		}
	}
	run := files["run-ab.sh"].Body
	for _, l := range []string{"\nshaping=on\n", "\ncpus=4\n", "mpd5 -b -d \"$here\" -f mpd.conf", "pfctl -q -f \"$here/pf.conf\"",
		"kldload -n ipfw dummynet", "sh \"$here/dummynet.sh\"", "sysctl -f \"$here/sysctl.conf\"",
		"run -c \"$here/pppfwd.conf\"", "tunable net.isr.maxthreads \"$cpus\"", "\nwan_up=\"up\"\n"} {
		if !strings.Contains(run, l) {
			t.Errorf("run-ab.sh lacks %q", l)
		}
	}
	if !strings.Contains(files["pppfwd.conf"].Body, "\nbackend netmap\n") {
		t.Error("the FreeBSD pppfwd side is not on netmap")
	}

	// Unshaped, RFC 4638.
	files = byPath(generate(t, plain))
	if _, ok := files["dummynet.sh"]; ok {
		t.Error("dummynet.sh without shaping")
	}
	if strings.Contains(files["loader.conf"].Body, "ipfw") || !strings.Contains(files["loader.conf"].Body, "net.isr.maxthreads=\"2\"\n") {
		t.Errorf("loader.conf unshaped, 2 CPUs:\n%s", files["loader.conf"].Body)
	}
	for _, l := range []string{"\tset pppoe max-payload 1500\n", "\tset link mtu 1500\n", "\tset pppoe service \"svc-A\"\n"} {
		if !strings.Contains(files["mpd.conf"].Body, l) {
			t.Errorf("mpd.conf lacks %q", l)
		}
	}
	for _, l := range []string{"\nshaping=off\n", "\nwan_up=\"up mtu 1508\"\n"} {
		if !strings.Contains(files["run-ab.sh"].Body, l) {
			t.Errorf("run-ab.sh lacks %q", l)
		}
	}

	// Rates dummynet cannot take; Linux can.
	p := shaped.p
	p.Shape.Down = MaxDummynetRate + 1
	if _, err := FreeBSDKernel(p); !errors.Is(err, ErrDummynetRate) {
		t.Errorf("down %d: %v, want ErrDummynetRate", p.Shape.Down, err)
	}
	if _, err := LinuxKernel(p); err != nil {
		t.Errorf("Linux at %d: %v", p.Shape.Down, err)
	}
	p.Shape.Down = MaxDummynetRate
	if _, err := FreeBSDKernel(p); err != nil {
		t.Errorf("down %d: %v", p.Shape.Down, err)
	}

	// Without an overhead the note says there is nothing to approximate.
	p = shaped.p
	p.Shape = mustShape(t, "download 100mbit upload 10mbit")
	fl, err := FreeBSDKernel(p)
	if err != nil {
		t.Fatal(err)
	}
	dn = byPath(fl)["dummynet.sh"].Body
	if !strings.Contains(dn, "none configured") || strings.Contains(dn, "approximate") {
		t.Errorf("dummynet.sh without overhead:\n%s", dn)
	}
}
