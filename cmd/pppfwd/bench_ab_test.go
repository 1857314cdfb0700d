package main

import (
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/bench/ab"
	"github.com/pppfwd/pppfwd/shaper"
)

func TestBenchABParseFlags(t *testing.T) {
	f, err := parseABFlags([]string{"--dry-run", "--os", "freebsd", "--user", "u@isp", "--lan-address", "10.1.2.3/16",
		"--shape", "download 300000000 upload 50000000 overhead 34", "--workers", "2", "--cpus", "4", "--mtu", "1500",
		"--service", "svc", "--out", "/tmp/x", "--password-file", "/tmp/pw", "--where", "vm"})
	if err != nil {
		t.Fatal(err)
	}
	p := f.Params
	want := ab.Params{WAN: "igb0", LAN: "igb1", User: "u@isp", Service: "svc", MTU: 1500,
		LANNet: netip.MustParsePrefix("10.1.0.0/16"), Router: netip.MustParseAddr("10.1.2.3"),
		Shape: ab.Shape{Down: 300_000_000, Up: 50_000_000, Overhead: shaper.Overhead{Bytes: 34}}, Workers: 2, CPUs: 4}
	if p != want {
		t.Errorf("Params %+v\nwant   %+v", p, want)
	}
	if !f.DryRun || f.OS != "freebsd" || f.Backend != "netmap" || f.Out != "/tmp/x" || f.PasswordFile != "/tmp/pw" || f.Where != "vm" {
		t.Errorf("flags %+v", f)
	}
	f, err = parseABFlags([]string{"--os", "linux", "--user", "u", "--wan", "enp1s0", "--backend", "afxdp"})
	if err != nil {
		t.Fatal(err)
	}
	if f.DryRun || f.Params.WAN != "enp1s0" || f.Params.LAN != "eth1" || f.Backend != "afxdp" || f.Params.Shape.On() ||
		f.Params.MTU != ab.DefaultMTU || f.Params.Router != netip.MustParseAddr("192.168.1.1") {
		t.Errorf("linux defaults %+v", f)
	}
	if _, err := parseABFlags([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	for _, bad := range [][]string{
		{"--user", "u", "--os", "windows"},
		{"--dry-run"}, // no --user
		{"--user", "u", "--shape", "download 300mbps upload 50mbit"},
		{"--user", "u", "--shape", "300mbit"},
		{"--user", "u", "--lan-address", "192.168.1.1"},
		{"--user", "u", "--lan-address", "fd00::1/64"},
		{"--user", "u", "--where", "cloud"},
		{"--user", "u", "--mtu", "x"},
		{"--user", "u", "--nosuch"},
		{"--user", "u", "extra"},
	} {
		if _, err := parseABFlags(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestBenchABDryRun(t *testing.T) {
	code, out, errOut := runArgs("bench", "ab", "--dry-run", "--os", "linux", "--user", "u@isp", "--wan", "wanq0", "--lan", "lanq1",
		"--shape", "download 300mbit upload 50mbit pppoe-ptm", "--cpus", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{"==> pppd.peer (0644) <==\n", "==> chap-secrets (0600) <==\n", "==> nftables.nft (0644) <==\n",
		"==> tc-cake.sh (0755) <==\n", "==> tc-fq_codel.sh (0755) <==\n", "==> run-ab.sh (0755) <==\n", "==> pppfwd.conf (0600) <==\n",
		"\nnic-wanq0\n", "tc qdisc replace dev lanq1 root cake bandwidth 300000000bit", "\nbackend afpacket\n", "\nworkers 3\n",
		"shaper.up bandwidth 50000000bit ecn flows overhead 30 mpu 0 ptm\n", "\"" + abPlaceholderPassword + "\""} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	if !strings.Contains(errOut, "placeholder "+abPlaceholderPassword) {
		t.Errorf("no note about the placeholder: %q", errOut)
	}
	code, out, _ = runArgs("bench", "ab", "--dry-run", "--os", "freebsd", "--user", "u", "--cpus", "2")
	for _, s := range []string{"==> mpd.conf (0600) <==\n", "\tset pppoe iface igb0\n", "net.isr.maxthreads=\"2\"\n", "\nbackend netmap\n"} {
		if code != 0 || !strings.Contains(out, s) {
			t.Errorf("freebsd: exit %d, output lacks %q", code, s)
		}
	}
	if strings.Contains(out, "==> dummynet.sh") {
		t.Error("freebsd unshaped: dummynet.sh")
	}
}

// TestBenchABOut: --out writes each file with its mode and the password
// read from --password-file; a readable password file is refused.
func TestBenchABOut(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("Pa55 \"w\\rd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ab")
	args := []string{"bench", "ab", "--dry-run", "--os", "freebsd", "--user", "u", "--password-file", pw, "--out", out,
		"--shape", "download 100mbit upload 20mbit", "--cpus", "4"}
	if code, _, errOut := runArgs(args...); code != 2 || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("password file mode 0644: exit %d %q", code, errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("files written with a refused password file: %v", err)
	}
	if err := os.Chmod(pw, 0o600); err != nil {
		t.Fatal(err)
	}
	// An older, wider file is narrowed.
	if err := os.MkdirAll(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "mpd.conf"), []byte("old"), 0o666); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut := runArgs(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := map[string]os.FileMode{"mpd.conf": 0o600, "pf.conf": 0o644, "dummynet.sh": 0o755, "sysctl.conf": 0o644,
		"loader.conf": 0o644, "run-ab.sh": 0o755, "pppfwd.conf": 0o600}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Errorf("%d files, want %d", len(ents), len(want))
	}
	for name, mode := range want {
		fi, err := os.Stat(filepath.Join(out, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %04o, want %04o", name, fi.Mode().Perm(), mode)
		}
		if !strings.Contains(stdout, filepath.Join(out, name)) {
			t.Errorf("stdout does not list %s", name)
		}
		b, _ := os.ReadFile(filepath.Join(out, name))
		if has := strings.Contains(string(b), `"Pa55 \"w\\rd"`); has != (mode == 0o600) {
			t.Errorf("%s (mode %04o): holds the password: %v", name, mode, has)
		}
	}
	if !strings.Contains(stdout, "run-ab.sh kernel") {
		t.Errorf("no next step: %q", stdout)
	}
}

// TestBenchABLiveArgs: without --dry-run or --where the command says
// where the live A/B runs and exits 2, as it does for bad live flags
// (before any VM boots or namespace is made); -h exits 0 with the flags.
func TestBenchABLiveArgs(t *testing.T) {
	code, out, errOut := runArgs("bench", "ab")
	if code != 2 || out != "" || !strings.Contains(errOut, "--where vm") || !strings.Contains(errOut, "--where host") || !strings.Contains(errOut, "--dry-run") {
		t.Errorf("no mode: exit %d, stderr %q", code, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--where", "host", "--paths", "kernel,bsd"}, "--paths"},
		{[]string{"--where", "vm", "--paths", "pppfwd,pppfwd"}, "--paths"},
		{[]string{"--where", "host", "--host-cpus", "3-1"}, "--host-cpus"},
		{[]string{"--where", "host", "--vcpus", "4"}, "--vcpus is the VM's"},
		{[]string{"--where", "vm", "--host-cpus", "1"}, "--host-cpus is for --where host"},
		{[]string{"--where", "host", "--rates", "x"}, "--rates"},
	} {
		code, out, errOut := runArgs(append([]string{"bench", "ab"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
		}
	}
	code, _, errOut = runArgs("bench", "ab", "--where", "vm", "--rates", "100,x")
	if code != 2 || !strings.Contains(errOut, "--rates") {
		t.Errorf("bad --rates: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runArgs("bench", "ab", "--where", "vm", "--vcpus", "0")
	if code != 2 || !strings.Contains(errOut, "--vcpus") {
		t.Errorf("--vcpus 0: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runArgs("bench", "ab", "--where", "vm", "--tcp-streams", "1,0")
	if code != 2 || !strings.Contains(errOut, "--tcp-streams") {
		t.Errorf("--tcp-streams 1,0: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runArgs("bench", "ab", "--where", "vm", "--tcp-duration", "1500ms")
	if code != 2 || !strings.Contains(errOut, "--tcp-duration") {
		t.Errorf("--tcp-duration 1500ms: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut = runArgs("bench", "ab", "-h")
	if code != 0 || errOut != "" || !strings.Contains(out, "-password-file") || !strings.Contains(out, "Usage: pppfwd bench ab --where vm") ||
		!strings.Contains(out, "pppfwd bench ab --dry-run") || !strings.Contains(out, "-vcpus") ||
		!strings.Contains(out, "-tcp-duration") || !strings.Contains(out, "iperf3") ||
		!strings.Contains(out, "pppfwd bench ab --where host") || !strings.Contains(out, "-host-cpus") || !strings.Contains(out, "-paths") ||
		strings.Contains(out, "not implemented") {
		t.Errorf("-h: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runArgs("bench", "ab", "--dry-run", "--user", "u", "--workers", "9", "--cpus", "4")
	if code != 2 || !strings.Contains(errOut, "workers 9") {
		t.Errorf("workers > cpus: exit %d %q", code, errOut)
	}
	code, out, _ = runArgs("bench", "-h")
	if code != 0 || !strings.Contains(out, "\n  ab ") {
		t.Errorf("bench -h does not list ab: %q", out)
	}
}

// TestBenchABLiveOptions: the live flags as abvm gets them.
func TestBenchABLiveOptions(t *testing.T) {
	f, err := parseABFlags([]string{"--where", "host", "--paths", "pppfwd", "--host-cpus", "2-3,0", "--rates", "1000,4000", "--runs", "1",
		"--duration", "1s", "--shaped=false", "--tcp=false", "--workers", "2"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := abLiveOptions(f)
	if err != nil {
		t.Fatal(err)
	}
	if o.Where != "host" || !slices.Equal(o.Paths, []string{"pppfwd"}) || !slices.Equal(o.HostCPUs, []int{2, 3, 0}) || o.VCPUs != 0 ||
		!slices.Equal(o.Rates, []float64{1000, 4000}) || o.Runs != 1 || o.StepDuration != time.Second || o.Shape || o.TCP || o.Workers != 2 {
		t.Errorf("host options %+v", o)
	}
	f, err = parseABFlags([]string{"--where", "vm", "--vcpus", "4"})
	if err != nil {
		t.Fatal(err)
	}
	if o, err = abLiveOptions(f); err != nil || o.Where != "vm" || o.VCPUs != 4 || !slices.Equal(o.Paths, []string{"kernel", "pppfwd"}) ||
		o.HostCPUs != nil || !o.Shape || !o.TCP {
		t.Errorf("vm defaults %+v, %v", o, err)
	}
}

func TestParsePaths(t *testing.T) {
	for in, want := range map[string][]string{"kernel,pppfwd": {"kernel", "pppfwd"}, " pppfwd ": {"pppfwd"}, "pppfwd,kernel": {"pppfwd", "kernel"}} {
		if got, err := parsePaths(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("parsePaths(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "kernel,", "ppp", "pppfwd,pppfwd", "kernel;pppfwd"} {
		if _, err := parsePaths(bad); err == nil {
			t.Errorf("parsePaths(%q) accepted", bad)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "1-3": {1, 2, 3}, "0,2": {0, 2}, " 4-5 , 1": {4, 5, 1}, "4095": {4095}} {
		if got, err := parseCPUList(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("parseCPUList(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "x", "-1", "3-1", "1,1", "0-2,2", "4096", "1-", "1,,2"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q) accepted", bad)
		}
	}
}

func TestParseRates(t *testing.T) {
	r, err := parseRates(" 1000, 2000.5 ,4e3")
	if err != nil || len(r) != 3 || r[0] != 1000 || r[1] != 2000.5 || r[2] != 4000 {
		t.Fatalf("parseRates = %v, %v", r, err)
	}
	if r, err := parseRates(""); err != nil || r != nil {
		t.Fatalf("empty: %v %v", r, err)
	}
	for _, bad := range []string{"0", "-5", "1,,2", "1e9", "abc"} {
		if _, err := parseRates(bad); err == nil {
			t.Errorf("parseRates(%q) accepted", bad)
		}
	}
}

func TestParseStreams(t *testing.T) {
	if r, err := parseStreams(" 1, 4,16"); err != nil || !slices.Equal(r, []int{1, 4, 16}) {
		t.Fatalf("parseStreams = %v, %v", r, err)
	}
	for _, bad := range []string{"", "0", "1,,4", "129", "x", "2.5"} {
		if _, err := parseStreams(bad); err == nil {
			t.Errorf("parseStreams(%q) accepted", bad)
		}
	}
}

func FuzzParseRates(f *testing.F) {
	f.Add("1000,2000")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRates(s)
		if err != nil {
			return
		}
		for _, v := range r {
			if !(v > 0 && v <= 1e8) {
				t.Fatalf("parseRates(%q) gave %v", s, v)
			}
		}
	})
}
