package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/router"
	"github.com/pppfwd/pppfwd/internal/nettest"
)

// inCI reports whether the tests run in CI (.ci/run sets CI; so do
// hosted CI services), where a missing tool is a failure, not a skip.
func inCI() bool { return os.Getenv("CI") != "" }

// buildPppfwd builds the pppfwd command into a directory every user may
// read (the refusal test runs it as another user).
func buildPppfwd(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go") // go test puts its own first in PATH
	if err != nil {
		t.Fatalf("no go command to build pppfwd with: %v", err)
	}
	dir, err := os.MkdirTemp("", "pppfwd-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "pppfwd")
	if out, err := exec.Command(goCmd, "build", "-o", bin, "../../cmd/pppfwd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a loopback TCP port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// udpStream sends size-byte datagrams from flows sockets in the LAN
// namespace to the Internet host's echo service, each flow pps a second,
// until stop is closed; sent and echoed count them.
type udpStream struct {
	sent, echoed atomic.Uint64
	stop         chan struct{}
	wg           sync.WaitGroup
	conns        []net.Conn
}

func (l *Lab) startStream(flows, pps, size int) (*udpStream, error) {
	s := &udpStream{stop: make(chan struct{})}
	err := l.LAN.Do(func() error {
		for i := 0; i < flows; i++ {
			c, err := net.Dial("udp4", netip.AddrPortFrom(RemoteAddr, 7).String())
			if err != nil {
				return err
			}
			s.conns = append(s.conns, c)
		}
		return nil
	})
	if err != nil {
		for _, c := range s.conns {
			c.Close()
		}
		return nil, err
	}
	for _, c := range s.conns {
		s.wg.Add(2)
		go func(c net.Conn) { // reader
			defer s.wg.Done()
			buf := make([]byte, 2048)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				if n == size {
					s.echoed.Add(1)
				}
			}
		}(c)
		go func(c net.Conn) { // paced writer
			defer s.wg.Done()
			msg := make([]byte, size)
			start := time.Now()
			for i := 0; ; i++ {
				if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(pps))); d > 0 {
					select {
					case <-s.stop:
						return
					case <-time.After(d):
					}
				}
				select {
				case <-s.stop:
					return
				default:
				}
				if _, err := c.Write(msg); err == nil {
					s.sent.Add(1)
				}
			}
		}(c)
	}
	return s, nil
}

// Stop ends the stream, waiting a moment for the last echoes.
func (s *udpStream) Stop() {
	close(s.stop)
	time.Sleep(300 * time.Millisecond)
	for _, c := range s.conns {
		c.Close()
	}
	s.wg.Wait()
}

// within reports whether got is within frac of want.
func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

// TestIntegrationObserve runs the lab with the control socket and
// /metrics on, sends a known UDP stream through it, and checks what a
// user sees: pppfwd status and status -json while the traffic flows,
// with pps, Mbit/s and the byte counters matching what was sent; two
// frames of status -watch; a real Prometheus server scraping pppfwd whose
// rate() of the byte counters matches the traffic, and promtool's check
// of the exposition; pppfwd reconnect seen by the access concentrator as
// PADT and a new session; and the socket refusing another user.
func TestIntegrationObserve(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ip")
	promBin, promErr := exec.LookPath("prometheus")
	if promErr != nil && inCI() {
		t.Fatal("prometheus is not installed (scripts/deps.sh installs it)")
	}
	bin := buildPppfwd(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "pppfwd.sock")
	mport := freePort(t)
	l, err := Start(Options{Workers: 2, Logf: t.Logf,
		Obs: router.ObsConfig{Socket: sock, MetricsListen: fmt.Sprintf("127.0.0.1:%d", mport)}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.WaitUp(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	pppfwd := func(args ...string) (string, error) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}
	statusJSON := func() router.Stats {
		t.Helper()
		out, err := exec.Command(bin, "status", "-json", "-s", sock).Output()
		if err != nil {
			t.Fatalf("pppfwd status -json: %v\n%s", err, out)
		}
		var s router.Stats
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("status -json is not a Stats: %v\n%s", err, out)
		}
		return s
	}
	// Prometheus scrapes every second from the start.
	var promURL string
	if promErr == nil {
		pport := freePort(t)
		cfg := filepath.Join(dir, "prometheus.yml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: pppfwd\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n", mport)), 0o644); err != nil {
			t.Fatal(err)
		}
		var plog bytes.Buffer
		prom := exec.Command(promBin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", pport))
		prom.Stdout, prom.Stderr = &plog, &plog
		if err := prom.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			prom.Process.Signal(syscall.SIGTERM)
			prom.Wait()
			if t.Failed() {
				t.Logf("prometheus log:\n%s", plog.String())
			}
		}()
		promURL = fmt.Sprintf("http://127.0.0.1:%d", pport)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if resp, err := http.Get(promURL + "/-/ready"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("prometheus not ready:\n%s", plog.String())
			}
		}
	} else {
		t.Logf("prometheus not installed and not in CI: the Prometheus part is skipped (%v)", promErr)
	}

	// The stream: 2 flows x 400 datagrams/s of 1000 bytes of payload
	// (1028 IP bytes), each echoed: about 6.6 Mbit/s each way.
	const flows, pps, payload = 2, 400, 1000
	const ipLen = payload + 28
	before := statusJSON()
	st, err := l.startStream(flows, pps, payload)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(5 * time.Second)
	mid := statusJSON()
	text, err := pppfwd("status", "-s", sock)
	if err != nil {
		t.Fatalf("pppfwd status: %v\n%s", err, text)
	}
	t.Logf("pppfwd status:\n%s", text)
	cmd := exec.Command(bin, "status", "-watch", "-n", "2", "-i", "500ms", "-s", sock)
	cmd.Env = append(os.Environ(), "TERM=xterm", "COLUMNS=100")
	watch, err := cmd.Output()
	if err != nil {
		t.Fatalf("pppfwd status -watch: %v\n%s", err, watch)
	}
	t.Logf("pppfwd status -watch, two frames:\n%q", watch)
	time.Sleep(4 * time.Second)
	var promRate, promPPS float64
	if promURL != "" {
		promRate = promQuery(t, promURL, `sum(rate(pppfwd_forwarded_bytes_total{direction="up"}[4s]))`)
		promPPS = promQuery(t, promURL, `sum(pppfwd_forwarded_packets_per_second{direction="down"})`)
	}
	st.Stop()
	elapsed := time.Since(start).Seconds()
	time.Sleep(2 * sampleWait)
	after := statusJSON()
	sent, echoed := st.sent.Load(), st.echoed.Load()
	t.Logf("sent %d, echoed %d datagrams in %.1f s", sent, echoed, elapsed)
	if echoed < sent*9/10 {
		t.Fatalf("only %d of %d datagrams echoed", echoed, sent)
	}

	// The status text: the session block and a line per worker.
	for _, want := range []string{"session     up", "pppfwd-lab", "address     100.64.0.", "mtu 1492", "worker", "all "} {
		if !strings.Contains(text, want) {
			t.Errorf("pppfwd status lacks %q", want)
		}
	}
	// -json while traffic flows: the rates of the stream.
	var upMbps, downPPS float64
	for _, w := range mid.Workers {
		upMbps += w.MbpsUp
		downPPS += w.PPSDown
	}
	wantMbps := float64(flows*pps*ipLen) * 8 / 1e6
	if mid.State != "up" || mid.ACName != "pppfwd-lab" || mid.SessionID == 0 || len(mid.Workers) != 2 ||
		!within(upMbps, wantMbps, 0.25) || !within(downPPS, flows*pps, 0.25) {
		t.Errorf("status -json mid-stream: state %s, AC %q, session %#x, %d workers, up %.2f Mbit/s (want %.2f), down %.0f pps (want %d)",
			mid.State, mid.ACName, mid.SessionID, len(mid.Workers), upMbps, wantMbps, downPPS, flows*pps)
	}
	// The byte counters: every datagram's IP bytes each way, and little
	// else (pings, LCP and DHCPv6 are not forwarded traffic).
	upBytes := after.Counters.BytesUp - before.Counters.BytesUp
	downBytes := after.Counters.BytesDown - before.Counters.BytesDown
	if upBytes < sent*ipLen || upBytes > sent*ipLen*102/100 || downBytes < echoed*ipLen || downBytes > echoed*ipLen*102/100 {
		t.Errorf("bytes up %d (sent %d x %d = %d), down %d (echoed %d x %d = %d)", upBytes, sent, ipLen, sent*ipLen, downBytes, echoed, ipLen, echoed*ipLen)
	}
	// -watch: two frames, each cleared and with a CPU bar per worker.
	if n := bytes.Count(watch, []byte("\x1b[H\x1b[2J")); n != 2 || !bytes.Contains(watch, []byte("w0   [")) || !bytes.Contains(watch, []byte("w1   [")) {
		t.Errorf("-watch: %d frames, output %q", n, watch)
	}
	if promURL != "" {
		want := float64(flows * pps * ipLen)
		t.Logf("prometheus: rate(pppfwd_forwarded_bytes_total{direction=up}) %.0f B/s (sent %.0f B/s), down pps %.0f", promRate, want, promPPS)
		if !within(promRate, want, 0.2) {
			t.Errorf("prometheus rate() of the up bytes %.0f B/s, want %.0f +-20%%", promRate, want)
		}
		if !within(promPPS, flows*pps, 0.25) {
			t.Errorf("prometheus down pps %.0f, want %d", promPPS, flows*pps)
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		check := exec.Command("promtool", "check", "metrics")
		check.Stdin = bytes.NewReader(body)
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}

	// pppfwd reconnect: PADT at the AC, and a new session.
	ac0 := l.AC.Counters()
	sid0 := after.SessionID
	if out, err := pppfwd("reconnect", "-s", sock); err != nil {
		t.Fatalf("pppfwd reconnect: %v\n%s", err, out)
	}
	var s router.Stats
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ac := l.AC.Counters()
		s = l.R.Stats()
		if ac.PADTReceived > ac0.PADTReceived && ac.SessionsUp > ac0.SessionsUp && s.State == "up" && s.SessionID != sid0 {
			t.Logf("reconnect: AC saw PADT (%d -> %d) and session %d (%#x -> %#x)", ac0.PADTReceived, ac.PADTReceived, ac.SessionsUp, sid0, s.SessionID)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after pppfwd reconnect: AC PADT received %d -> %d, sessions %d -> %d; router %s session %#x (was %#x)",
				ac0.PADTReceived, ac.PADTReceived, ac0.SessionsUp, ac.SessionsUp, s.State, s.SessionID, sid0)
		}
	}
	if !strings.Contains(s.LastError, "reconnect requested") {
		t.Errorf("last reason %q, want the requested reconnect", s.LastError)
	}
	if got, err := l.UDPEcho(4, 3); err != nil || got != 12 {
		t.Fatalf("after reconnect %d of 12 echoes (%v)", got, err)
	}

	// Another user: the socket's mode keeps it out; with the mode opened,
	// the peer check still refuses it (and counts it).
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	as := func() (string, error) {
		c := exec.Command(bin, "status", "-s", sock)
		c.SysProcAttr = nobody
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := as()
	if err == nil || !strings.Contains(out, "permission denied") {
		t.Fatalf("uid 65534 on the 0600 socket: %v\n%s", err, out)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	refused := l.R.Stats().ControlRefused
	out, err = as()
	if err == nil || !strings.Contains(out, "uid 65534 does not own this pppfwd") {
		t.Fatalf("uid 65534 through an open socket: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(3 * time.Second); l.R.Stats().ControlRefused == refused && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if l.R.Stats().ControlRefused != refused+1 {
		t.Fatalf("refusals %d, want %d", l.R.Stats().ControlRefused, refused+1)
	}
	t.Logf("another user: %s", strings.TrimSpace(out))
}

// sampleWait is how long the router's snapshot may lag its counters.
const sampleWait = 1100 * time.Millisecond

// promQuery evaluates an instant query and returns its single value.
func promQuery(t *testing.T, base, q string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "success" || len(r.Data.Result) != 1 {
		t.Fatalf("query %s: %+v", q, r)
	}
	var v float64
	if s, ok := r.Data.Result[0].Value[1].(string); ok {
		fmt.Sscan(s, &v)
	}
	return v
}
