package router

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/memport"
	"github.com/pppfwd/pppfwd/pppoe"
	"github.com/pppfwd/pppfwd/pppoe/dhcp6"
)

// runObsRouter runs a router over memports (no AC: the client keeps
// discovering) with the given observation settings.
func runObsRouter(t *testing.T, extra string, o ObsConfig) (*Router, *memport.Port, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "pppfwd.conf")
	conf := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\nshaper.up bandwidth 40mbit\n" + extra
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Obs = o
	// A queue per worker on each port: with more than one worker, each
	// steers its own WAN queue.
	lan := memport.New("lan", cfg.Workers, 64)
	r, err := Open(cfg, Ports{LAN: lan, WAN: memport.New("wan", cfg.Workers, 64), LANMAC: [6]byte{2, 0, 0, 0, 0, 1}}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	r.SetConfigFile(file)
	if err := r.ListenObs(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r, lan, file
}

// TestControlSocket: status (JSON, with the snapshot's figures), reload
// (what was applied, what needs a restart), an unknown command, and a
// connection from a user other than the admitted one is refused and
// counted. The socket is owner-only and gone after Run.
func TestControlSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	r, lan, file := runObsRouter(t, "", ObsConfig{Socket: sock})
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("socket %v (%v), want a socket with mode 0600", fi, err)
	}
	lan.Inject(0, make([]byte, 60))                  // to another MAC: dropped, counted
	lan.InjectRx(0, partialUDP(), nic.RxCsumPartial) // finished, then dropped: no session
	var resp *CtlResponse
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err = ControlRequest(sock, "status"); err != nil {
			t.Fatal(err)
		}
		// The client leaves idle for discovery on its own goroutine: wait
		// for it as for the drop.
		if len(resp.Status.Workers) == 1 && resp.Status.Workers[0].Drops["not_our_mac"] == 1 && resp.Status.State == "discovery" &&
			resp.Status.Counters.CsumCompleted == 1 && resp.Status.Workers[0].Sleeps > 0 || time.Now().After(deadline) {
			break
		}
	}
	st := resp.Status
	if st.State != "discovery" || len(st.Workers) != 1 || st.Workers[0].Drops["not_our_mac"] != 1 ||
		st.Workers[0].ShaperUp == nil || st.Workers[0].ShaperDown != nil || st.Workers[0].NAT.Capacity == 0 ||
		st.Counters.CsumCompleted != 1 || st.Workers[0].CsumCompleted != 1 || st.Workers[0].Sleeps == 0 {
		t.Fatalf("status %+v, workers %+v", st, st.Workers)
	}
	var text bytes.Buffer
	WriteStatus(&text, st)
	for _, want := range []string{"session     discovery", "worker", "not_our_mac=1", "shaper 0 up", "checksums   1 finished", "sleeps      w0 "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, text.String())
		}
	}
	if err := os.WriteFile(file, []byte("lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\nshaper.up bandwidth 30mbit\nworkers 2\ncontrol.socket "+sock+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resp, err = ControlRequest(sock, "reload")
	if err != nil || len(resp.Applied) != 1 || !strings.HasPrefix(resp.Applied[0], "shaper.up 30000000") ||
		len(resp.Restart) != 1 || resp.Restart[0] != "workers" {
		t.Fatalf("reload: %+v, %v", resp, err)
	}
	if up, _ := r.Engine().Rates(); up != 30e6 {
		t.Fatalf("after reload the uplink rate is %d", up)
	}
	if _, err := ControlRequest(sock, "bogus"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("unknown command: %v", err)
	}
	// Another user: only uid 4242 is admitted now, and we are not it.
	other := uint32(4242)
	r.allowUID.Store(&other)
	resp, err = ControlRequest(sock, "status")
	if err == nil || !strings.Contains(err.Error(), "permission denied") || resp.Status != nil {
		t.Fatalf("a stranger got %+v, %v", resp, err)
	}
	if n := r.refused.Load(); n != 1 {
		t.Fatalf("%d refusals counted, want 1", n)
	}
}

// TestMetrics: /metrics serves the snapshot with Prometheus names, passes
// promtool check metrics, and the textfile holds the same families.
func TestMetrics(t *testing.T) {
	textfile := filepath.Join(t.TempDir(), "prom", "pppfwd.prom")
	r, lan, _ := runObsRouter(t, "stats.interval 100ms\n", ObsConfig{MetricsListen: "127.0.0.1:0", MetricsTextfile: textfile})
	lan.Inject(0, make([]byte, 60))
	lan.InjectRx(0, partialUDP(), nic.RxCsumPartial) // finished, then dropped: no session
	bcast := make([]byte, 60)                        // a broadcast ARP frame: for the control plane
	copy(bcast, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 2, 0x08, 0x06})
	lan.Inject(0, bcast)
	url := "http://" + r.MetricsAddr().String() + "/metrics"
	var body string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if strings.Contains(body, `pppfwd_drops_total{reason="not_our_mac",worker="0"} 1`) && strings.Contains(body, `state="discovery"`) &&
			strings.Contains(body, `pppfwd_csum_completed_total{worker="0"} 1`) &&
			strings.Contains(body, `pppfwd_exceptions_total{worker="0"} 1`) ||
			time.Now().After(deadline) {
			break
		}
	}
	for _, want := range []string{
		`pppfwd_drops_total{reason="not_our_mac",worker="0"} 1`,
		`pppfwd_session_info{ac_mac="",ac_name="",auth="",ipv6_prefix="",local="",peer="",session_id="",state="discovery"} 1`,
		`pppfwd_session_up 0`,
		`pppfwd_forwarded_bytes_total{direction="up",worker="0"} 0`,
		`pppfwd_host_frames_total{direction="down",worker="0"} 0`,
		`pppfwd_csum_completed_total{worker="0"} 1`,
		`pppfwd_wan_redirected_total{worker="0"} 0`,
		`# HELP pppfwd_wan_redirected_total `,
		`pppfwd_exceptions_total{worker="0"} 1`,
		`pppfwd_redirected_total{worker="0"} 0`,
		`pppfwd_unresolved_total{worker="0"} 0`,
		`# TYPE pppfwd_icmp_errors_sent_total counter`,
		`# TYPE pppfwd_icmp_errors_rate_limited_total counter`,
		`pppfwd_mss_clamped_total{worker="0"} 0`,
		`pppfwd_fragments_made_total{worker="0"} 0`,
		`pppfwd_ipv6_packets_total{direction="down",worker="0"} 0`,
		`# TYPE pppfwd_no_buffer_polls_total counter`,
		`pppfwd_drops_total{reason="no_session",worker="0"} 1`,
		`pppfwd_shaper_rate_bytes_per_second{direction="up"} 5e+06`,
		`pppfwd_shaper_backlog_packets{direction="up",worker="0"} 0`,
		`# TYPE pppfwd_worker_cpu_seconds_total counter`,
		`# TYPE pppfwd_worker_sleeps_total counter`,
		`# TYPE pppfwd_worker_realtime gauge`,
		`# TYPE pppfwd_worker_realtime_exits_total counter`,
		`pppfwd_worker_realtime_exits_total{worker="0"} `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if _, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command("promtool", "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	} else if os.Getenv("CI") != "" {
		t.Error("promtool not installed (scripts/deps.sh installs prometheus)")
	}
	var tf []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if tf, _ = os.ReadFile(textfile); bytes.Contains(tf, []byte(`pppfwd_drops_total{reason="not_our_mac",worker="0"} 1`)) {
			break
		}
	}
	if !bytes.Contains(tf, []byte(`pppfwd_drops_total{reason="not_our_mac",worker="0"} 1`)) || !bytes.Contains(tf, []byte("# TYPE pppfwd_session_info gauge")) {
		t.Fatalf("textfile:\n%s", tf)
	}
}

// TestWANRedirectedExported: a WAN frame that arrives on another
// worker's queue than its owner's is handed over by the worker it reached
// and counted there as wan_redirected, which the JSON status (per worker
// and in total), the text status and the metrics all show.
func TestWANRedirectedExported(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	r, _, _ := runObsRouter(t, "workers 2\n", ObsConfig{Socket: sock, MetricsListen: "127.0.0.1:0"})
	port := 0
	for p := 1024; p < 65536 && port == 0; p++ {
		if r.Engine().Owner()[p] == 1 {
			port = p
		}
	}
	// A UDP datagram on a PPPoE session to a port worker 1 owns, on
	// worker 0's queue (worker 1 drops it: there is no session).
	b := make([]byte, hdr.EthernetLen+hdr.PPPoELen+hdr.PPPLen+hdr.IPv4MinLen+hdr.UDPLen+4)
	copy(b, []byte{2, 0, 0, 0, 0, 9, 2, 0, 0, 0, 0, 8, 0x88, 0x64, 0x11, 0, 0, 1})
	binary.BigEndian.PutUint16(b[18:], uint16(len(b)-hdr.EthernetLen-hdr.PPPoELen))
	binary.BigEndian.PutUint16(b[20:], 0x0021)
	ip := hdr.IPv4(b[22:])
	copy(ip, []byte{0x45, 0, 0, byte(len(ip)), 0, 1, 0, 0, 64, hdr.ProtoUDP, 0, 0, 8, 8, 8, 8, 192, 0, 2, 1})
	ip.ComputeChecksum()
	copy(ip[hdr.IPv4MinLen:], []byte{0, 53, byte(port >> 8), byte(port), 0, 12})
	r.wan.(*memport.Port).Inject(0, b)
	var st *Stats
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := ControlRequest(sock, "status")
		if err != nil {
			t.Fatal(err)
		}
		if st = resp.Status; st.Counters.WANRedirected == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(st.Workers) != 2 || st.Counters.WANRedirected != 1 || st.Workers[0].WANRedirected != 1 || st.Workers[1].WANRedirected != 0 {
		t.Fatalf("wan_redirected: total %d, workers %+v; want 1, by worker 0", st.Counters.WANRedirected, st.Workers)
	}
	var text bytes.Buffer
	WriteStatus(&text, st)
	if want := "steering    1 WAN frames handed over"; !strings.Contains(text.String(), want) {
		t.Errorf("status text lacks %q:\n%s", want, text.String())
	}
	resp, err := http.Get("http://" + r.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`pppfwd_wan_redirected_total{worker="0"} 1`, `pppfwd_wan_redirected_total{worker="1"} 0`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// partialUDP is a UDP datagram from a LAN host of runObsRouter's LAN to
// the Internet whose checksum field holds only the pseudo-header's sum
// (a sender's checksum offload left it unfinished).
func partialUDP() []byte {
	b := make([]byte, hdr.EthernetLen+hdr.IPv4MinLen+hdr.UDPLen+4)
	copy(b, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00})
	ip := hdr.IPv4(b[hdr.EthernetLen:])
	copy(ip, []byte{0x45, 0, 0, byte(len(ip)), 0, 1, 0, 0, 64, hdr.ProtoUDP, 0, 0, 10, 0, 0, 2, 8, 8, 8, 8})
	ip.ComputeChecksum()
	u := ip[hdr.IPv4MinLen:]
	copy(u, []byte{0x9c, 0x40, 0, 53, 0, byte(len(u)), 0, 0, 'p', 'i', 'n', 'g'})
	binary.BigEndian.PutUint16(u[6:], hdr.Fold(hdr.PseudoSum(ip[12:16], ip[16:20], hdr.ProtoUDP, len(u))))
	return b
}

// TestObsConfigKeys: every key parses its good values and names its bad
// ones.
func TestObsConfigKeys(t *testing.T) {
	for _, c := range []struct {
		key, val string
		ok       bool
	}{
		{"metrics.listen", "127.0.0.1:9121", true}, {"metrics.listen", "9121", false}, {"metrics.listen", "off", true},
		{"metrics.textfile", "/var/lib/node_exporter/pppfwd.prom", true},
		{"control.socket", "/run/x.sock", true}, {"control.socket", "x.sock", false}, {"control.socket", "off", true},
		{"log.level", "debug", true}, {"log.level", "verbose", false},
		{"log.format", "json", true}, {"log.format", "xml", false},
		{"pppoe.reconnect_at", "04:30", true}, {"pppoe.reconnect_at", "24:00", false}, {"pppoe.reconnect_at", "4", false},
	} {
		o := DefaultObsConfig()
		known, err := o.Set(c.key, c.val)
		if !known || (err == nil) != c.ok {
			t.Errorf("%s %q: known %v, err %v; want ok %v", c.key, c.val, known, err, c.ok)
		}
	}
	if known, _ := (&ObsConfig{}).Set("nat.ports", "1-2"); known {
		t.Error("nat.ports taken as an observation key")
	}
	loc := time.FixedZone("x", 3600)
	now := time.Date(2026, 3, 1, 5, 0, 0, 0, loc)
	if got := nextClock(now, 4, 30); !got.Equal(time.Date(2026, 3, 2, 4, 30, 0, 0, loc)) {
		t.Errorf("next 04:30 after 05:00 is %v", got)
	}
	if got := nextClock(now, 5, 1); !got.Equal(time.Date(2026, 3, 1, 5, 1, 0, 0, loc)) {
		t.Errorf("next 05:01 after 05:00 is %v", got)
	}
}

// TestLogging: the logf adapter turns prefixes into components and
// warnings into warnings; debug traces control frames without
// credentials; info leaves them out.
func TestLogging(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewLogger(&buf, ObsConfig{LogLevel: "debug", LogFormat: "json"}, false)
	if err != nil {
		t.Fatal(err)
	}
	Logf(l)("pppfwd: warning: %s", "disk full")
	Logf(l)("pppoe: session %d up", 7)
	var lines []map[string]any
	for _, ln := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("not JSON: %q", ln)
		}
		lines = append(lines, m)
	}
	if lines[0]["level"] != "WARN" || lines[0]["msg"] != "disk full" || lines[0]["component"] != "pppfwd" ||
		lines[1]["level"] != "INFO" || lines[1]["msg"] != "session 7 up" || lines[1]["component"] != "pppoe" {
		t.Fatalf("log lines %v", lines)
	}
	// The trace over a client/server pair: PADI..., LCP, CHAP, IPCP.
	buf.Reset()
	r := &Router{}
	r.SetLogger(l)
	cc, sc := pppoe.Pipe()
	srv := pppoe.NewServer(pppoe.ServerConfig{Users: map[string]string{"u": "sekrit"}, LocalAddr: 0x0a000001, PoolFirst: 0x0a00000a, PoolLast: 0x0a000014}, sc)
	cli := pppoe.NewClient(pppoe.ClientConfig{Username: "u", Password: "sekrit", PADOWait: -1}, r.traceConn(cc), nil)
	ctx, cancel := context.WithCancel(context.Background())
	sd, cd := make(chan error, 1), make(chan error, 1)
	go func() { sd <- srv.Run(ctx) }()
	go func() { cd <- cli.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); cli.Status().State != pppoe.StateUp && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-cd
	<-sd
	trace := buf.String()
	for _, want := range []string{"sent PADI", "rcvd PADO", "sent PADR", "rcvd PADS", "LCP ConfReq id=", "<mru 1492>", "<magic 0x",
		"rcvd CHAP Challenge", "sent CHAP Response", "rcvd CHAP Success", "IPCP ConfReq", "<addr 10.0.0.10>", "sent PADT"} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace lacks %q", want)
		}
	}
	if strings.Contains(trace, "sekrit") {
		t.Error("the trace shows the password")
	}
	// At info the trace is off.
	buf.Reset()
	info, _ := NewLogger(&buf, ObsConfig{LogLevel: "info"}, false)
	r.SetLogger(info)
	r.traceConn(cc).(traceConn).trace("sent", []byte{1, 2, 3})
	if buf.Len() != 0 {
		t.Fatalf("info level traced: %s", buf.String())
	}
}

// TestDescribeDHCP6: the trace line of a Reply names its type, id,
// prefix and DNS server.
func TestDescribeDHCP6(t *testing.T) {
	p := netip.MustParseAddr("2001:db8:100::").As16()
	dns := netip.MustParseAddr("2001:db8::53").As16()
	m := dhcp6.Message{Type: dhcp6.MsgReply, XID: 0x1a2b3c, DNS: []hdr.Addr6{dns},
		IAPD: []dhcp6.IAPD{{IAID: 1, T1: 3600, T2: 5400, Prefixes: []dhcp6.Prefix{{Prefix: p, Bits: 56, Preferred: 3600, Valid: 7200}}}}}
	got := DescribeDHCP6(m.Encode())
	if want := "DHCPv6 Reply xid=0x1a2b3c <ia_pd 1 t1 3600 t2 5400 2001:db8:100::/56 valid 7200s> <dns 2001:db8::53>"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := DescribeDHCP6([]byte{7}); !strings.HasPrefix(got, "DHCPv6 undecodable") {
		t.Fatalf("a short message: %q", got)
	}
}

// TestStatusSleeps: the status's sleeps line gives each worker's wakeups
// a second over the sample (its sleeps since start without one) and its
// scheduling class.
func TestStatusSleeps(t *testing.T) {
	s := &Stats{SampleSeconds: 1, Workers: []WorkerStats{
		{Worker: 0, Sleeps: 900, WakeupsPerSec: 34.4, Realtime: true},
		{Worker: 1, Sleeps: 500, WakeupsPerSec: 2, RealtimeExits: 7},
		{Worker: 2, Sleeps: 10},
	}}
	var text bytes.Buffer
	WriteStatus(&text, s)
	want := "sleeps      w0 34 wakeups/s (realtime), w1 2 wakeups/s (left realtime for load, 7 times), w2 0 wakeups/s\n"
	if !strings.Contains(text.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, text.String())
	}
	s.SampleSeconds = 0
	text.Reset()
	WriteStatus(&text, s)
	if want := "sleeps      w0 900 since start (realtime), w1 500 since start"; !strings.Contains(text.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, text.String())
	}
}

// TestStatusFrames: the status's frames line gives the totals of frames
// that took another way than straight through (handed over, held for
// ARP/NDP, to the control plane, ICMP errors, MSS clamps, fragments),
// and is left out while all are zero.
func TestStatusFrames(t *testing.T) {
	s := &Stats{}
	var text bytes.Buffer
	WriteStatus(&text, s)
	if strings.Contains(text.String(), "\nframes ") {
		t.Errorf("a frames line with nothing to say:\n%s", text.String())
	}
	s.Counters = StatsCounters{Redirected: 5, Unresolved: 4, Exception: 3, ICMPSent: 2, Clamped: 1, Fragments: 6}
	text.Reset()
	WriteStatus(&text, s)
	want := "frames      5 handed to another worker  4 held for ARP/NDP  3 to control/host  2 ICMP errors sent  1 MSS clamped  6 fragments made\n"
	if !strings.Contains(text.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, text.String())
	}
}

// TestLogBusyPoll: the router says whether an afxdp port asked to
// busy-poll does, and why not; nothing when it was not asked.
func TestLogBusyPoll(t *testing.T) {
	for _, c := range []struct {
		info  PortInfo
		asked bool
		want  string
	}{
		{PortInfo{Mode: "native", BusyPoll: true}, true, "pppfwd: WAN eth0: busy polling (afxdp.busy_poll)"},
		{PortInfo{Mode: "native", BusyPollErr: errors.New("afxdp: SO_PREFER_BUSY_POLL: protocol not available")}, true,
			"pppfwd: WAN eth0: no busy polling: afxdp: SO_PREFER_BUSY_POLL: protocol not available"},
		{PortInfo{Mode: "generic"}, true, "pppfwd: WAN eth0: no busy polling in generic XDP mode (no NAPI context to poll)"},
		{PortInfo{Mode: "native"}, false, ""},
	} {
		var got []string
		logRing(func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) }, "WAN", "eth0", c.info, c.asked)
		if strings.Join(got, "\n") != c.want {
			t.Errorf("%+v asked %v: logged %q, want %q", c.info, c.asked, got, c.want)
		}
	}
}
