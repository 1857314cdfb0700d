package abvm

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseIperf3 reads reports iperf3 printed (testdata/README.md says
// how each was made) and refuses what is not a finished TCP test.
func TestParseIperf3(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		file string
		want iperfResult
	}{
		// Upload through pppfwd, 4 streams: the client sent.
		{"iperf3-up-4.json", iperfResult{Mbps: 66.89622398374408, Seconds: 2.013789, Retransmits: 145, Streams: 4}},
		// Download (-R) shaped at 2 Mbit/s: the server sent and its
		// retransmits came back in sum_sent.
		{"iperf3-down-4-shaped.json", iperfResult{Mbps: 0.368582132605181, Seconds: 2.000314, Retransmits: 61, Streams: 4, Reverse: true}},
	} {
		got, err := parseIperf3(read(c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if math.Abs(got.Mbps-c.want.Mbps) > 1e-9 || got.Seconds != c.want.Seconds || got.Retransmits != c.want.Retransmits ||
			got.Streams != c.want.Streams || got.Reverse != c.want.Reverse {
			t.Errorf("%s: %+v, want %+v", c.file, got, c.want)
		}
	}
	if _, err := parseIperf3(read("iperf3-refused.json")); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("refused: %v, want iperf3's error", err)
	}
	for name, b := range map[string]string{
		"not json":     "iperf3: error - unable to connect",
		"empty":        "",
		"udp":          `{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum_received":{"seconds":1,"bits_per_second":1e6}}}`,
		"no received":  `{"start":{"test_start":{"protocol":"TCP"}},"end":{"sum_sent":{"seconds":1,"retransmits":0}}}`,
		"no seconds":   `{"start":{"test_start":{"protocol":"TCP"}},"end":{"sum_received":{"seconds":0,"bits_per_second":0}}}`,
		"negative bps": `{"start":{"test_start":{"protocol":"TCP"}},"end":{"sum_received":{"seconds":1,"bits_per_second":-1}}}`,
	} {
		if r, err := parseIperf3([]byte(b)); err == nil {
			t.Errorf("%s: accepted: %+v", name, r)
		}
	}
	// No retransmits member (a sender without TCP_INFO): 0.
	r, err := parseIperf3([]byte(`{"start":{"test_start":{"protocol":"TCP","num_streams":1}},"end":{"sum_received":{"seconds":2,"bits_per_second":5e6}}}`))
	if err != nil || r.Mbps != 5 || r.Retransmits != 0 {
		t.Errorf("no retransmits: %+v %v", r, err)
	}
}

func FuzzParseIperf3(f *testing.F) {
	for _, n := range []string{"iperf3-up-4.json", "iperf3-down-4-shaped.json", "iperf3-refused.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseIperf3(b)
		if err == nil && (r.Mbps < 0 || r.Seconds <= 0 || math.IsNaN(r.Mbps)) {
			t.Fatalf("accepted %+v", r)
		}
	})
}

// TestSessionIPv4: the relay's encapsulation round trip, and what the
// decapsulation refuses.
func TestSessionIPv4(t *testing.T) {
	ip := []byte{0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 100, 64, 0, 2, 198, 51, 100, 7,
		0x9c, 0x40, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0}
	dst, src := [6]byte{0x52, 0x54, 0, 0x12, 0x34, 0x57}, [6]byte{2, 0xac, 0, 0, 0, 1}
	f := appendSessionIPv4(nil, dst, src, 0x1234, ip)
	// 0x8864, ver/type 0x11, code 0, session, length (PPP protocol and
	// the packet), protocol 0x0021.
	want := append([]byte{0x52, 0x54, 0, 0x12, 0x34, 0x57, 2, 0xac, 0, 0, 0, 1, 0x88, 0x64, 0x11, 0, 0x12, 0x34, 0, 42, 0, 0x21}, ip...)
	if !bytes.Equal(f, want) {
		t.Fatalf("frame % x\nwant  % x", f, want)
	}
	if got := sessionIPv4(f, 0x1234); !bytes.Equal(got, ip) {
		t.Fatalf("decap % x", got)
	}
	padded := append(slices.Clone(f), 0, 0, 0, 0)
	if got := sessionIPv4(padded, 0x1234); !bytes.Equal(got, ip) {
		t.Fatalf("padding kept: % x", got)
	}
	for name, b := range map[string][]byte{
		"other session": f,
		"truncated":     f[:len(f)-1],
		"short":         f[:20],
		"lcp":           func() []byte { b := slices.Clone(f); b[20], b[21] = 0xc0, 0x21; return b }(),
		"discovery":     func() []byte { b := slices.Clone(f); b[13] = 0x63; return b }(),
		"not ipv4":      func() []byte { b := slices.Clone(f); b[22] = 0x60; return b }(),
		"long length":   func() []byte { b := slices.Clone(f); b[19]++; return b }(),
	} {
		id := uint16(0x1234)
		if name == "other session" {
			id = 0x1235
		}
		if got := sessionIPv4(b, id); got != nil {
			t.Errorf("%s: decapsulated % x", name, got)
		}
	}
}

func FuzzSessionIPv4(f *testing.F) {
	ip := []byte{0x45, 0, 0, 20, 0, 1, 0x40, 0, 64, 6, 0, 0, 100, 64, 0, 2, 198, 51, 100, 7}
	f.Add(appendSessionIPv4(nil, [6]byte{1}, [6]byte{2}, 7, ip))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ip := sessionIPv4(b, 7)
		if ip == nil {
			return
		}
		// What comes out goes back in as the same frame, less padding.
		re := appendSessionIPv4(nil, [6]byte(b[0:6]), [6]byte(b[6:12]), 7, ip)
		if got := sessionIPv4(re, 7); !bytes.Equal(got, ip) || !bytes.Equal(re, b[:len(re)]) {
			t.Fatalf("round trip % x -> % x", b, re)
		}
	})
}

func TestTCPOptions(t *testing.T) {
	o := Options{Binary: "/bin/true", TCPDuration: 2400 * time.Millisecond}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	if o.TCPDuration != 2*time.Second || !slices.Equal(o.TCPStreams, []int{1, 4}) {
		t.Errorf("defaults: duration %v streams %v, want 2s [1 4]", o.TCPDuration, o.TCPStreams)
	}
	o = Options{Binary: "/bin/true", TCPDuration: 100 * time.Millisecond}
	if err := o.defaults(); err != nil || o.TCPDuration != time.Second {
		t.Errorf("short duration: %v %v, want 1s", o.TCPDuration, err)
	}
	for _, bad := range [][]int{{0}, {1, 129}, {-1}} {
		o := Options{Binary: "/bin/true", TCPStreams: bad}
		if err := o.defaults(); err == nil {
			t.Errorf("streams %v accepted", bad)
		}
	}
	for load, want := range map[string][]string{"both": {"up", "down"}, "down": {"down"}, "up": {"up"}} {
		if got := tcpDirections(load); !slices.Equal(got, want) {
			t.Errorf("tcpDirections(%q) = %v, want %v", load, got, want)
		}
	}
}

// tcpRuns are runs of a path's TCP step: goodput per run, the rest
// derived from it.
func tcpRuns(shaped bool, mbps ...float64) [][]TCPStep {
	var runs [][]TCPStep
	for _, m := range mbps {
		var r []TCPStep
		for _, dir := range []string{"up", "down"} {
			for _, n := range []int{1, 4} {
				r = append(r, TCPStep{Direction: dir, Streams: n, Shaped: shaped, Mbps: m * float64(n), Seconds: 2,
					Retransmits: int(m), LatencyP50Ms: m / 10, LatencyP99Ms: m, PerCoreBusy: []float64{m / 100, 0.1},
					PerCoreSoftirq: []float64{0.01, 0.02}, HostCoreBusy: []float64{0.5, 0.6}})
			}
		}
		runs = append(runs, r)
	}
	return runs
}

// TestTCPReport: the TCP step's medians, ratios, JSON fields and table.
func TestTCPReport(t *testing.T) {
	k := summarize([][]Step{steps(2000, 3000)}, nil)
	k.TCP = summarizeTCP(append(tcpRuns(false, 40, 50, 90), tcpRuns(true, 2)...))
	p := summarize([][]Step{steps(2000, 4000)}, nil)
	p.TCP = summarizeTCP(append(tcpRuns(false, 80, 100, 20), tcpRuns(true, 1)...))
	if len(k.TCP) != 8 {
		t.Fatalf("%d kernel TCP entries, want 8 (2 directions x 2 stream counts, unshaped and shaped)", len(k.TCP))
	}
	up1 := k.TCP[0]
	if up1.Direction != "up" || up1.Streams != 1 || up1.Shaped || up1.Mbps != 50 || up1.MbpsMin != 40 || up1.MbpsMax != 90 ||
		up1.Retransmits != 50 || up1.LatencyP99Ms != 50 || up1.LatencyP50Ms != 5 || len(up1.Runs) != 3 {
		t.Errorf("kernel up x1: %+v", up1)
	}
	if math.Abs(up1.PerCoreBusy[0]-0.5) > 1e-9 || up1.PerCoreBusy[1] != 0.1 || up1.HostCoreBusy[1] != 0.6 {
		t.Errorf("kernel up x1 cores %v host %v", up1.PerCoreBusy, up1.HostCoreBusy)
	}
	if f := summarizeTCP([][]TCPStep{{{Direction: "up", Streams: 1, Error: "killed"}}, {{Direction: "up", Streams: 1, Mbps: 3}}}); f[0].Failed != 1 || f[0].Mbps != 1.5 {
		t.Errorf("a failed run: %+v", f[0])
	}
	if k.TCP[1].Streams != 4 || k.TCP[1].Mbps != 200 || k.TCP[2].Direction != "down" || !k.TCP[4].Shaped {
		t.Errorf("order or medians: %+v", k.TCP[:5])
	}
	r := &Report{Kernel: k, PPPFWD: p, TCPSeconds: 10, Runs: 3, VCPUs: 2}
	r.finish()
	if len(r.TCPRatios) != 8 {
		t.Fatalf("%d ratios, want 8", len(r.TCPRatios))
	}
	// pppfwd's median 80 against the kernel's 50; p99 likewise inverted.
	x := r.TCPRatios[0]
	if x.Direction != "up" || x.Streams != 1 || math.Abs(x.RatioMbps-1.6) > 1e-9 || math.Abs(x.RatioLatencyP99-50.0/80) > 1e-9 {
		t.Errorf("ratio up x1: %+v", x)
	}
	if s := r.TCPRatios[4]; !s.Shaped || math.Abs(s.RatioMbps-0.5) > 1e-9 {
		t.Errorf("shaped ratio: %+v", s)
	}

	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["tcp_seconds"] != 10.0 || m["tcp_ratios"] == nil {
		t.Errorf("JSON lacks tcp_seconds or tcp_ratios: %s", b)
	}
	kt := m["kernel"].(map[string]any)["tcp"].([]any)[0].(map[string]any)
	for _, f := range []string{"direction", "streams", "shaped", "mbps", "mbps_min", "mbps_max", "retransmits",
		"latency_p50_ms", "latency_p99_ms", "per_core_busy", "per_core_softirq", "host_core_busy", "runs"} {
		if _, ok := kt[f]; !ok {
			t.Errorf("kernel.tcp[0] lacks %q", f)
		}
	}
	// Without the TCP step the report has none of it.
	plain := &Report{Kernel: summarize([][]Step{steps(2000)}, nil), PPPFWD: summarize([][]Step{steps(2000)}, nil)}
	plain.finish()
	pb, _ := json.Marshal(plain)
	if bytes.Contains(pb, []byte(`"tcp`)) {
		t.Errorf("TCP fields without a TCP step: %s", pb)
	}
	var pt strings.Builder
	plain.WriteTable(&pt)
	if strings.Contains(pt.String(), "TCP") {
		t.Errorf("TCP section without a TCP step:\n%s", pt.String())
	}

	var tb strings.Builder
	r.WriteTable(&tb)
	out := tb.String()
	for _, want := range []string{
		"\nTCP through the router (iperf3 from a LAN host to the Internet side, 10 s each;",
		"\n  unshaped up         1  kernel     50.0  (40.0-90.0)          50     5.00    50.00  50% 10%\n" +
			"                         pppfwd     80.0  (20.0-100.0)         80     8.00    80.00  80% 10%        1.60x Mbit/s, p99 0.62x\n",
		"\n  shaped   down       4  kernel      8.0  (8.0-8.0)             2     0.20     2.00  2% 10%\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestPlotTCPFiles(t *testing.T) {
	k := summarize([][]Step{steps(2000, 3000)}, nil)
	k.TCP = summarizeTCP(tcpRuns(false, 40))
	p := summarize([][]Step{steps(2000, 4000)}, nil)
	p.TCP = summarizeTCP(tcpRuns(false, 80))[:3] // pppfwd lacks a transfer: drawn as 0
	r := &Report{Kernel: k, PPPFWD: p, Size: 64, VCPUs: 2, Runs: 1, Emulated: true, TCPSeconds: 2}
	dir := t.TempDir()
	files, err := Plot(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 10 {
		t.Fatalf("files %v, want 5 figures in PNG and SVG", files)
	}
	for _, name := range []string{"ab-tcp", "ab-tcp-latency"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"pppfwd", "kernel", ">down<", ">x4<"} {
			if !bytes.Contains(s, []byte(want)) {
				t.Errorf("%s.svg lacks %q", name, want)
			}
		}
	}
	// Shaped transfers get a goodput figure of their own.
	k.TCP = summarizeTCP(append(tcpRuns(false, 40), tcpRuns(true, 2)...))
	r.Kernel, r.ShapeBps = k, 2_000_000
	files, err = Plot(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 12 || !slices.Contains(files, filepath.Join(dir, "ab-tcp-shaped.svg")) {
		t.Fatalf("shaped: files %v, want 6 figures with ab-tcp-shaped", files)
	}
	s, _ := os.ReadFile(filepath.Join(dir, "ab-tcp-shaped.svg"))
	if !bytes.Contains(s, []byte("shaped at 2.0 Mbit/s")) {
		t.Errorf("ab-tcp-shaped.svg does not name the rate")
	}
}
