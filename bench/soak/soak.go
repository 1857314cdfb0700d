package soak

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/bench/lab"
	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/pppoe"
)

// Options configure a soak.
type Options struct {
	Duration time.Duration // the paced run after the capacity probe (default 2 min)
	Workers  int           // router workers (default 2)
	Backend  string        // afpacket (default) or afxdp
	// Interval between samples (default 5 s); Probe is how long the
	// capacity probe runs (default 3 s); Load the share of the measured
	// capacity the run offers (default 0.8).
	Interval time.Duration
	Probe    time.Duration
	Load     float64
	// Senders is the number of concurrent UDP senders (default 32), each
	// cycling through PortsPerSender local ports: a flow sends
	// PerFlow datagrams (default 50) and closes, the next one opens a
	// new socket on the sender's next port, so the NAT table sees new
	// sockets all the time but at most Senders*PortsPerSender UDP flows.
	Senders        int
	PortsPerSender int
	PerFlow        int
	// TCPEvery opens (and closes) a TCP connection to the Internet
	// host's echo service this often (default 200 ms; < 0 none).
	TCPEvery time.Duration
	// OnSample, if set, gets every sample as it is taken.
	OnSample func(Sample)
	Logf     func(format string, args ...any)
}

func (o *Options) defaults() {
	if o.Duration <= 0 {
		o.Duration = 2 * time.Minute
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	if o.Probe <= 0 {
		o.Probe = 3 * time.Second
	}
	if o.Load <= 0 || o.Load > 1 {
		o.Load = 0.8
	}
	if o.Senders <= 0 {
		o.Senders = 32
	}
	if o.PortsPerSender <= 0 {
		o.PortsPerSender = 8
	}
	if o.PerFlow <= 0 {
		o.PerFlow = 50
	}
	if o.TCPEvery == 0 {
		o.TCPEvery = 200 * time.Millisecond
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// firstPort is the first local UDP port of the senders: below the LAN
// host's ephemeral range, so the kernel never hands one to a TCP socket.
const firstPort = 20000

// Sample is one look at the running soak.
type Sample struct {
	Type       string            `json:"type"` // "sample"
	T          float64           `json:"t_s"`  // since the paced run began
	RSSBytes   int64             `json:"rss_bytes"`
	Goroutines int               `json:"goroutines"`
	FDs        int               `json:"fds"`
	NATEntries int64             `json:"nat_entries"` // -1: the engine does not report it
	Sent       uint64            `json:"sent"`        // UDP datagrams sent since start
	Delivered  uint64            `json:"delivered"`   // their echoes received
	Lost       uint64            `json:"lost"`        // sent and not echoed within the timeout
	Late       uint64            `json:"late"`        // of those, echoed after it (slow, not dropped)
	RatePPS    float64           `json:"rate_pps"`    // echoes per second since the last sample
	FlowsOpen  uint64            `json:"udp_flows_opened"`
	TCPConns   uint64            `json:"tcp_conns"` // TCP connections completed (echo checked)
	TCPFailed  uint64            `json:"tcp_failed"`
	Drops      map[string]uint64 `json:"drops"`
	State      string            `json:"state"`
	SessionID  uint16            `json:"session_id"`
	SessionsUp uint64            `json:"sessions_up"`
}

// Summary is the soak's last line.
type Summary struct {
	Type          string  `json:"type"` // "summary"
	Backend       string  `json:"backend"`
	Workers       int     `json:"workers"`
	DurationS     float64 `json:"duration_s"`
	CapacityPPS   float64 `json:"capacity_pps"` // echoes per second, unpaced probe
	TargetPPS     float64 `json:"target_pps"`
	AchievedPPS   float64 `json:"achieved_pps"`
	Sent          uint64  `json:"sent"`
	Delivered     uint64  `json:"delivered"`
	Lost          uint64  `json:"lost"`
	Late          uint64  `json:"late"`
	LossRatio     float64 `json:"loss_ratio"` // (lost - late) / sent
	FlowsOpened   uint64  `json:"udp_flows_opened"`
	TCPConns      uint64  `json:"tcp_conns"`
	TCPFailed     uint64  `json:"tcp_failed"`
	SessionStable bool    `json:"session_stable"` // one session id, no reconnect
	Samples       int     `json:"samples"`
	Trends        []Trend `json:"trends"`
	// Verdict is "flat" when every gauge is flat (and the session
	// stayed), else "growing: <gauges>".
	Verdict string            `json:"verdict"`
	Flat    bool              `json:"flat"`
	Drops   map[string]uint64 `json:"drops"`
}

// Result is the whole soak.
type Result struct {
	Samples []Sample
	Summary Summary
}

// gen is the traffic: UDP senders and the TCP loop, with their counters.
type gen struct {
	l                     *lab.Lab
	o                     *Options
	sent, delivered, lost atomic.Uint64
	late                  atomic.Uint64 // echoes that came after their timeout (counted lost too)
	flows, tcpOK, tcpFail atomic.Uint64
	interval              atomic.Int64 // ns between a sender's datagrams; 0 = unpaced
	stop                  chan struct{}
	wg                    sync.WaitGroup
	errMu                 sync.Mutex
	err                   error
}

func (g *gen) fail(err error) {
	g.errMu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.errMu.Unlock()
}

func (g *gen) error() error {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	return g.err
}

func (g *gen) stopped() bool {
	select {
	case <-g.stop:
		return true
	default:
		return false
	}
}

// dial opens a UDP socket from local port to the echo service, inside
// the LAN namespace. A port still held (a close racing) is retried.
func (g *gen) dial(port int) (*net.UDPConn, error) {
	var c *net.UDPConn
	var err error
	for try := 0; try < 50; try++ {
		err = g.l.LAN.Do(func() (e error) {
			c, e = net.DialUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(lab.HostAddr.Addr(), uint16(port))),
				net.UDPAddrFromAddrPort(netip.AddrPortFrom(lab.RemoteAddr, 7)))
			return e
		})
		if err == nil || !errors.Is(err, os.ErrExist) && !strings.Contains(err.Error(), "address already in use") {
			return c, err
		}
		time.Sleep(time.Millisecond)
	}
	return nil, err
}

func (g *gen) sender(k int) {
	defer g.wg.Done()
	buf := make([]byte, 512)
	msg := make([]byte, 0, 64)
	next := time.Now()
	for f := 0; !g.stopped(); f++ {
		port := firstPort + k*g.o.PortsPerSender + f%g.o.PortsPerSender
		c, err := g.dial(port)
		if err != nil {
			g.fail(fmt.Errorf("soak: UDP socket on port %d: %w", port, err))
			return
		}
		g.flows.Add(1)
		for i := 0; i < g.o.PerFlow && !g.stopped(); i++ {
			msg = append(msg[:0], "soak "...)
			msg = strconv.AppendInt(msg, int64(port), 10)
			msg = append(msg, ' ')
			msg = strconv.AppendInt(msg, int64(f*g.o.PerFlow+i), 10)
			if _, err := c.Write(msg); err != nil {
				g.lost.Add(1)
				g.sent.Add(1)
				time.Sleep(time.Millisecond)
				continue
			}
			g.sent.Add(1)
			ok := false
			deadline := time.Now().Add(200 * time.Millisecond)
			for !ok {
				_ = c.SetReadDeadline(deadline)
				n, err := c.Read(buf)
				if err != nil {
					break
				}
				if ok = bytes.Equal(buf[:n], msg); !ok {
					g.late.Add(1) // a late echo of an earlier datagram of this socket
				}
			}
			if ok {
				g.delivered.Add(1)
			} else {
				g.lost.Add(1)
			}
			if iv := time.Duration(g.interval.Load()); iv > 0 {
				next = next.Add(iv)
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				} else if d < -time.Second {
					next = time.Now() // far behind: do not burst to catch up
				}
			} else {
				next = time.Now()
			}
		}
		c.Close()
	}
}

func (g *gen) tcpLoop() {
	defer g.wg.Done()
	t := time.NewTicker(g.o.TCPEvery)
	defer t.Stop()
	msg := bytes.Repeat([]byte("pppfwd soak tcp "), 64) // 1 KiB
	buf := make([]byte, len(msg))
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		var c net.Conn
		err := g.l.LAN.Do(func() (e error) {
			c, e = net.DialTimeout("tcp4", netip.AddrPortFrom(lab.RemoteAddr, 7).String(), 2*time.Second)
			return e
		})
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			for i := 0; i < 4 && err == nil; i++ {
				if _, err = c.Write(msg); err == nil {
					_, err = readFull(c, buf)
				}
				if err == nil && !bytes.Equal(buf, msg) {
					err = errors.New("echo differs")
				}
			}
			c.Close()
		}
		if err != nil {
			g.tcpFail.Add(1)
		} else {
			g.tcpOK.Add(1)
		}
	}
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := c.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Run builds a lab, probes its capacity, runs the soak and judges it.
func Run(o Options) (*Result, error) {
	o.defaults()
	l, err := lab.Start(lab.Options{Backend: o.Backend, Workers: o.Workers, Logf: o.Logf})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if err := l.WaitUp(15 * time.Second); err != nil {
		return nil, err
	}
	g := &gen{l: l, o: &o, stop: make(chan struct{})}
	for k := 0; k < o.Senders; k++ {
		g.wg.Add(1)
		go g.sender(k)
	}
	stopGen := func() {
		select {
		case <-g.stop:
		default:
			close(g.stop)
		}
		g.wg.Wait()
	}
	defer stopGen()

	// Capacity: the senders unpaced, each waiting for its echo.
	time.Sleep(500 * time.Millisecond) // sockets open, ARP, NAT warm
	d0, t0 := g.delivered.Load(), time.Now()
	time.Sleep(o.Probe)
	capacity := float64(g.delivered.Load()-d0) / time.Since(t0).Seconds()
	if capacity <= 0 {
		return nil, fmt.Errorf("soak: no echo during the %v capacity probe; drops %v", o.Probe, l.R.Engine().Totals().DropMap())
	}
	target := o.Load * capacity
	g.interval.Store(int64(float64(o.Senders) / target * 1e9))
	o.Logf("soak: capacity %.0f echoes/s, running at %.0f for %v", capacity, target, o.Duration)
	if o.TCPEvery > 0 {
		g.wg.Add(1)
		go g.tcpLoop()
	}

	st0 := l.R.Client().Status()
	res := &Result{}
	start := time.Now()
	base := [4]uint64{g.sent.Load(), g.delivered.Load(), g.lost.Load(), g.late.Load()}
	lastD, lastT := base[1], start
	take := func() Sample {
		now := time.Now()
		d := g.delivered.Load()
		st := l.R.Client().Status()
		s := Sample{Type: "sample", T: now.Sub(start).Seconds(), RSSBytes: rss(), Goroutines: runtime.NumGoroutine(),
			FDs: openFDs(), NATEntries: natEntries(l.R.Engine()),
			Sent: g.sent.Load() - base[0], Delivered: d - base[1], Lost: g.lost.Load() - base[2], Late: g.late.Load() - base[3],
			RatePPS: float64(d-lastD) / now.Sub(lastT).Seconds(), FlowsOpen: g.flows.Load(),
			TCPConns: g.tcpOK.Load(), TCPFailed: g.tcpFail.Load(), Drops: l.R.Engine().Totals().DropMap(),
			State: st.State.String(), SessionID: st.SessionID, SessionsUp: st.Counters.SessionsUp}
		lastD, lastT = d, now
		res.Samples = append(res.Samples, s)
		if o.OnSample != nil {
			o.OnSample(s)
		}
		return s
	}
	take()
	tick := time.NewTicker(o.Interval)
	for time.Since(start) < o.Duration {
		<-tick.C
		take()
		if g.error() != nil {
			break
		}
	}
	tick.Stop()
	stopGen()
	if err := g.error(); err != nil {
		return res, err
	}
	elapsed := time.Since(start)
	stEnd := l.R.Client().Status()
	last := res.Samples[len(res.Samples)-1]
	sum := Summary{Type: "summary", Backend: o.Backend, Workers: o.Workers, DurationS: elapsed.Seconds(),
		CapacityPPS: capacity, TargetPPS: target, AchievedPPS: float64(last.Delivered) / last.T,
		Sent: last.Sent, Delivered: last.Delivered, Lost: last.Lost, Late: last.Late, FlowsOpened: g.flows.Load(),
		TCPConns: g.tcpOK.Load(), TCPFailed: g.tcpFail.Load(), Samples: len(res.Samples), Drops: last.Drops,
		SessionStable: stEnd.State == pppoe.StateUp && stEnd.SessionID == st0.SessionID && stEnd.Counters.SessionsUp == st0.Counters.SessionsUp}
	if sum.Backend == "" {
		sum.Backend = "afpacket"
	}
	if sum.Sent > 0 {
		sum.LossRatio = float64(sum.Lost-min(sum.Late, sum.Lost)) / float64(sum.Sent)
	}
	var rs, gs, fs, ns Series
	for _, s := range res.Samples {
		rs.T, rs.V = append(rs.T, s.T), append(rs.V, float64(s.RSSBytes))
		gs.T, gs.V = append(gs.T, s.T), append(gs.V, float64(s.Goroutines))
		fs.T, fs.V = append(fs.T, s.T), append(fs.V, float64(s.FDs))
		ns.T, ns.V = append(ns.T, s.T), append(ns.V, float64(s.NATEntries))
	}
	// At most one UDP flow per sender port, and every TCP connection's
	// entry may still be alive (its timers outlast a short soak).
	bound := float64(o.Senders*o.PortsPerSender) + float64(last.TCPConns+last.TCPFailed) + 64
	trs, flat := Judge(rs, gs, fs, ns, Limits{NATBound: bound})
	sum.Trends, sum.Flat = trs, flat && sum.SessionStable
	sum.Verdict = "flat"
	var bad []string
	for _, tr := range trs {
		if !tr.Flat {
			bad = append(bad, tr.Name)
		}
	}
	if !sum.SessionStable {
		bad = append(bad, "session")
	}
	if len(bad) > 0 {
		sum.Verdict = "growing: " + strings.Join(bad, ", ")
	}
	res.Summary = sum
	return res, nil
}

// natEntries asks the engine for its live NAT entries over all workers,
// if it reports them (-1 otherwise).
func natEntries(e *dataplane.Engine) int64 {
	if n, ok := any(e).(interface{ NATEntries() int }); ok {
		return int64(n.NATEntries())
	}
	return -1
}

// rss returns the process's resident set (VmRSS) in bytes, -1 if unknown.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return -1
}

// openFDs counts the process's open file descriptors, -1 if unknown.
func openFDs() int {
	d, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(d) - 1 // the directory's own descriptor while reading it
}
