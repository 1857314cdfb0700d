package ab

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// pppdWords splits a line of pppd options or secrets into words as
// pppd's getword does for what the generators write: blanks separate
// words, '#' at a word's start comments out the rest, and inside double
// quotes a backslash takes the next character as it is.
func pppdWords(line string) []string {
	var words []string
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) || line[i] == '#' {
			break
		}
		var w strings.Builder
		quoted := false
		for ; i < len(line); i++ {
			c := line[i]
			switch {
			case quoted && c == '\\' && i+1 < len(line):
				i++
				w.WriteByte(line[i])
			case c == '"':
				quoted = !quoted
			case !quoted && (c == ' ' || c == '\t'):
				goto done
			default:
				w.WriteByte(c)
			}
		}
	done:
		words = append(words, w.String())
	}
	return words
}

// options returns a file's non-comment lines split into words.
func options(body string) [][]string {
	var out [][]string
	for _, l := range strings.Split(body, "\n") {
		if w := pppdWords(l); len(w) > 0 {
			out = append(out, w)
		}
	}
	return out
}

func TestLinuxKernel(t *testing.T) {
	sc := scenarios(t)
	shaped, plain := sc[2], sc[3]
	files := byPath(generate(t, shaped))

	peer := options(files["pppd.peer"].Body)
	have := map[string]string{}
	for _, w := range peer {
		have[w[0]] = strings.Join(w[1:], " ")
	}
	for k, v := range map[string]string{
		"plugin": "rp-pppoe.so", "nic-" + testWAN: "", "user": shaped.p.User, "unit": "0", "linkname": pppLinkname,
		"noipdefault": "", "defaultroute": "", "persist": "", "maxfail": "0", "mtu": "1492", "mru": "1492",
		"noauth": "", "hide-password": "", "lcp-echo-interval": "10", "lcp-echo-failure": "3",
	} {
		if got, ok := have[k]; !ok || got != v {
			t.Errorf("pppd.peer: %s %q (present %v), want %q", k, got, ok, v)
		}
	}
	if peer[0][0] != "plugin" || peer[1][0] != "nic-"+testWAN {
		t.Errorf("pppd.peer must load the plugin before naming its interface: %v", peer[:2])
	}
	for _, k := range []string{"password", "rp_pppoe_service"} {
		if _, ok := have[k]; ok {
			t.Errorf("pppd.peer has %s", k)
		}
	}
	for _, name := range []string{"chap-secrets", "pap-secrets"} {
		lines := options(files[name].Body)
		if len(lines) != 1 || len(lines[0]) != 4 || lines[0][0] != shaped.p.User || lines[0][1] != "*" ||
			lines[0][2] != shaped.p.Password || lines[0][3] != "*" {
			t.Errorf("%s reads as %q, want the one line [user * password *]", name, lines)
		}
	}

	nft := files["nftables.nft"].Body
	for _, l := range []string{
		"table ip pppfwd_ab_nat {\n", "type nat hook postrouting priority srcnat; policy accept;\n",
		"\t\toifname \"ppp0\" ip saddr 192.168.77.0/24 masquerade\n",
		"type filter hook forward priority filter; policy drop;\n",
		"\t\toifname \"ppp0\" tcp flags syn tcp option maxseg size set rt mtu\n",
		"\t\tiifname \"ppp0\" tcp flags syn tcp option maxseg size > 1452 tcp option maxseg size set 1452\n",
		"\t\tct state established,related accept\n",
		"\t\tiifname \"lanx1\" oifname \"ppp0\" ip saddr 192.168.77.0/24 accept\n",
		"\t\tiifname \"ppp0\" counter drop\n",
	} {
		if !strings.Contains(nft, l) {
			t.Errorf("nftables.nft lacks %q", l)
		}
	}

	// Rates: exact bit/s with tc's bit suffix, upload on ppp0, download on the LAN.
	want := map[string]uint64{pppIface: shaped.p.Shape.Up, testLAN: shaped.p.Shape.Down}
	anyRate := regexp.MustCompile(`\b\d+(\.\d+)?[kmgt]?(bit|bps)\b|\b\d+[KMG]bit\b`)
	for _, c := range []struct {
		file string
		re   *regexp.Regexp
	}{
		{"tc-cake.sh", regexp.MustCompile(`(?m)^tc qdisc replace dev (\S+) root cake bandwidth (\d+)bit besteffort flows overhead 30 mpu 0 ptm$`)},
		{"tc-fq_codel.sh", regexp.MustCompile(`(?m)^tc class replace dev (\S+) parent 1: classid 1:1 htb rate (\d+)bit ceil (\d+)bit `)},
	} {
		body := files[c.file].Body
		ms := c.re.FindAllStringSubmatch(body, -1)
		if len(ms) != 2 {
			t.Fatalf("%s: %d shaped devices:\n%s", c.file, len(ms), body)
		}
		for _, m := range ms {
			for _, r := range m[2:] {
				if n, _ := strconv.ParseUint(r, 10, 64); n != want[m[1]] {
					t.Errorf("%s: %s at %s bit/s, want %d", c.file, m[1], r, want[m[1]])
				}
			}
		}
		for _, r := range anyRate.FindAllString(body, -1) {
			if !regexp.MustCompile(`^\d+bit$`).MatchString(r) {
				t.Errorf("%s: rate %q is not in exact bit/s", c.file, r)
			}
		}
	}
	fq := files["tc-fq_codel.sh"].Body
	for _, l := range []string{
		"tc qdisc replace dev ppp0 root handle 1: stab overhead 30 mpu 0 linklayer ethernet htb default 1\n",
		"tc qdisc replace dev lanx1 root handle 1: stab overhead 16 mpu 0 linklayer ethernet htb default 1\n",
		"parent 1:1 handle 10: fq_codel limit 10240 flows 1024 quantum 1514 target 5ms interval 100ms ecn\n",
		"PTM framing (64/65 encoding) has no tc-stab equivalent",
	} {
		if !strings.Contains(fq, l) {
			t.Errorf("tc-fq_codel.sh lacks %q", l)
		}
	}
	run := files["run-ab.sh"].Body
	for _, l := range []string{"pppd file \"$here/pppd.peer\"", "nft -f \"$here/nftables.nft\"", "sh \"$here/tc-cake.sh\"",
		"sh \"$here/tc-fq_codel.sh\"", "install_secret \"$here/chap-secrets\" /etc/ppp/chap-secrets",
		"\nshaping=on\n", "\npidfile=/run/ppp-pppfwd-ab.pid\n", "run -c \"$here/pppfwd.conf\""} {
		if !strings.Contains(run, l) {
			t.Errorf("run-ab.sh lacks %q", l)
		}
	}
	if !strings.Contains(files["pppfwd.conf"].Body, "\nbackend afpacket\n") {
		t.Error("the Linux pppfwd side is not on afpacket")
	}

	// Unshaped, RFC 4638, a Service-Name, a /16.
	files = byPath(generate(t, plain))
	for _, f := range []string{"tc-cake.sh", "tc-fq_codel.sh"} {
		if _, ok := files[f]; ok {
			t.Errorf("%s without shaping", f)
		}
	}
	have = map[string]string{}
	for _, w := range options(files["pppd.peer"].Body) {
		have[w[0]] = strings.Join(w[1:], " ")
	}
	if have["rp_pppoe_service"] != "svc-B" || have["mtu"] != "1500" || have["mru"] != "1500" {
		t.Errorf("pppd.peer: service %q mtu %q mru %q", have["rp_pppoe_service"], have["mtu"], have["mru"])
	}
	for _, l := range []string{"size > 1460 tcp option maxseg size set 1460\n", "ip saddr 10.20.0.0/16 masquerade\n"} {
		if !strings.Contains(files["nftables.nft"].Body, l) {
			t.Errorf("nftables.nft lacks %q", l)
		}
	}
	for _, l := range []string{"\nshaping=off\n", "\nwan_up=\"up mtu 1508\"\n", "\nlan_addr=10.20.30.40/16\n"} {
		if !strings.Contains(files["run-ab.sh"].Body, l) {
			t.Errorf("run-ab.sh lacks %q", l)
		}
	}

	// ATM framing: tc-stab can do it.
	p := shaped.p
	p.Shape = mustShape(t, "download 20mbit upload 1mbit pppoe-llcsnap")
	fl, err := LinuxKernel(p)
	if err != nil {
		t.Fatal(err)
	}
	files = byPath(fl)
	if !strings.Contains(files["tc-fq_codel.sh"].Body, "stab overhead 40 mpu 0 linklayer atm htb") ||
		!strings.Contains(files["tc-cake.sh"].Body, "overhead 40 mpu 0 atm\n") || strings.Contains(files["tc-fq_codel.sh"].Body, "PTM") {
		t.Errorf("ATM:\n%s\n%s", files["tc-cake.sh"].Body, files["tc-fq_codel.sh"].Body)
	}
}

func TestPppdWords(t *testing.T) {
	for in, want := range map[string][]string{
		`"a b"	*	"p\"w\\x#y"	*`:   {"a b", "*", `p"w\x#y`, "*"},
		`user "0021#0001@t"  # c`: {"user", "0021#0001@t"},
		`# comment`:               nil,
		`nic-eth0`:                {"nic-eth0"},
	} {
		if got := pppdWords(in); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("pppdWords(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNftCheck: nft -c accepts each generated ruleset and rejects a
// broken one. It checks against the kernel without committing: root
// and nft only.
func TestNftCheck(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("nft -c needs root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft")
	}
	check := func(body string) error {
		path := filepath.Join(t.TempDir(), "r.nft")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("nft", "-c", "-f", path).CombinedOutput()
		if err != nil {
			return &nftError{err, string(out)}
		}
		return nil
	}
	good := byPath(generate(t, scenarios(t)[2]))["nftables.nft"].Body
	if err := check(strings.Replace(good, "masquerade", "masquerade to", 1)); err == nil {
		t.Fatal("nft -c accepted a broken ruleset")
	}
	for _, sc := range scenarios(t) {
		if sc.goos != "linux" {
			continue
		}
		if err := check(byPath(generate(t, sc))["nftables.nft"].Body); err != nil {
			t.Errorf("%s: %v", sc.name, err)
		}
	}
}

type nftError struct {
	err error
	out string
}

func (e *nftError) Error() string { return "nft -c: " + e.err.Error() + ": " + e.out }

// TestIntegrationLinuxKernelRules loads the ruleset and runs the tc
// scripts in a namespace of their own, on a veth pair named ppp0 and the
// LAN port: nft takes the ruleset (twice: it replaces its own tables),
// and each shaper script the kernel has the qdiscs for leaves them on
// both devices at the configured rates.
func TestIntegrationLinuxKernelRules(t *testing.T) {
	lab := nettest.NewLab(t)
	nettest.RequireCmd(t, "nft")
	nettest.RequireCmd(t, "tc")
	ns, err := lab.NewNS("ab")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth(pppIface, ns, testLAN, ns, 1); err != nil {
		t.Fatal(err)
	}
	sc := scenarios(t)[2]
	files := byPath(generate(t, sc))
	for i := 0; i < 2; i++ {
		if err := ns.LoadNft(files["nftables.nft"].Body); err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	out, err := ns.Exec("nft", "list", "ruleset")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"masquerade", "maxseg size set rt mtu", "iifname \"lanx1\" oifname \"ppp0\" ip saddr 192.168.77.0/24 accept"} {
		if strings.Count(out, l) != 1 {
			t.Errorf("ruleset has %q %d times:\n%s", l, strings.Count(out, l), out)
		}
	}
	dir := t.TempDir()
	has := func(qdisc string) bool {
		_, err := ns.Exec("tc", "qdisc", "replace", "dev", pppIface, "root", qdisc)
		_, _ = ns.Exec("tc", "qdisc", "del", "dev", pppIface, "root")
		return err == nil
	}
	for _, c := range []struct {
		script, qdisc string
		rate          *regexp.Regexp
	}{
		{"tc-cake.sh", "cake", regexp.MustCompile(`bandwidth (\d+)([KMG]?)bit`)},
		{"tc-fq_codel.sh", "fq_codel", regexp.MustCompile(`rate (\d+)([KMG]?)bit`)},
	} {
		t.Run(c.script, func(t *testing.T) {
			if !has(c.qdisc) {
				t.Skipf("this kernel has no %s qdisc", c.qdisc)
			}
			path := filepath.Join(dir, c.script)
			if err := os.WriteFile(path, []byte(files[c.script].Body), 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := ns.Exec("sh", path); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for dev, want := range map[string]uint64{pppIface: sc.p.Shape.Up, testLAN: sc.p.Shape.Down} {
				show, err := ns.Exec("tc", "-d", "qdisc", "show", "dev", dev)
				if err != nil {
					t.Fatal(err)
				}
				if c.qdisc == "fq_codel" {
					if !strings.Contains(show, "fq_codel") {
						t.Errorf("%s: no fq_codel: %s", dev, show)
					}
					if show, err = ns.Exec("tc", "class", "show", "dev", dev); err != nil {
						t.Fatal(err)
					}
				}
				m := c.rate.FindStringSubmatch(show)
				if m == nil {
					t.Fatalf("%s: no rate in %s", dev, show)
				}
				n, _ := strconv.ParseUint(m[1], 10, 64)
				n *= map[string]uint64{"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m[2]]
				if n != want {
					t.Errorf("%s: %s shapes at %d bit/s, want %d: %s", dev, c.qdisc, n, want, show)
				}
			}
		})
	}
}
