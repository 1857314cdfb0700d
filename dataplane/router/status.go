package router

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/shaper"
)

// The router's figures are sampled once a second (sampleEvery) into one
// Stats snapshot, off the fast path: the workers only publish their
// counters (dataplane.Counters, dataplane.Detail) as they always do. The
// control socket's status, the Prometheus metrics, the node_exporter
// textfile and stats.file all read that one snapshot, so they cannot
// disagree; rates (pps, Mbit/s, CPU share) are over the interval between
// the last two samples.
const sampleEvery = time.Second

// WorkerStats are one worker's figures in a snapshot.
type WorkerStats struct {
	Worker int `json:"worker"`
	// Frames taken from and handed to the ports, and the IP bytes
	// forwarded up (to the session) and down (to the LAN).
	RxLAN     uint64 `json:"rx_lan"`
	RxWAN     uint64 `json:"rx_wan"`
	TxLAN     uint64 `json:"tx_lan"`
	TxWAN     uint64 `json:"tx_wan"`
	BytesUp   uint64 `json:"bytes_up"`
	BytesDown uint64 `json:"bytes_down"`
	// FromHost and ToHost: frames of the router's own host stack the
	// worker routed towards the session, and handed to it.
	FromHost uint64 `json:"from_host"`
	ToHost   uint64 `json:"to_host"`
	// CsumCompleted: LAN frames whose TCP or UDP checksum the sender
	// left unfinished (checksum offload) and the worker finished.
	CsumCompleted uint64 `json:"csum_completed"`
	// WANRedirected: WAN frames the worker's own steering (each worker
	// steering its WAN queue) handed to the worker that owns them: frames
	// the WAN port delivered to this worker's queue instead of their
	// owner's.
	WANRedirected uint64 `json:"wan_redirected"`
	// Redirected: frames the worker handed to another worker (the NAT
	// flow's owner, or a hairpin's second hop); Unresolved: LAN frames
	// whose next hop was unknown, held by the control plane while ARP or
	// NDP resolves it; Exceptions: frames sent to the control or host
	// path; ICMPSent and ICMPRateLimited: ICMP errors the worker sent and
	// those its rate limit suppressed; Clamped: TCP SYNs whose MSS it
	// clamped; Fragments: IPv4 fragments it made for the session's MTU;
	// IPv6Up and IPv6Down: IPv6 packets routed to the session and to the
	// LAN; NoBufferPolls: receives skipped for want of a free frame.
	Redirected      uint64 `json:"redirected"`
	Unresolved      uint64 `json:"unresolved"`
	Exceptions      uint64 `json:"exceptions"`
	ICMPSent        uint64 `json:"icmp_sent"`
	ICMPRateLimited uint64 `json:"icmp_rate_limited"`
	Clamped         uint64 `json:"mss_clamped"`
	Fragments       uint64 `json:"fragments_made"`
	IPv6Up          uint64 `json:"ipv6_up"`
	IPv6Down        uint64 `json:"ipv6_down"`
	NoBufferPolls   uint64 `json:"no_buffer_polls"`
	// CPUSeconds is the worker thread's CPU time (0 where the OS gives
	// no thread CPU clock).
	CPUSeconds float64 `json:"cpu_seconds"`
	// Rates over the last sample interval: frames handed to the WAN
	// (up) and to the LAN (down) a second, Mbit/s of IP bytes, and the
	// share of one core the thread used (0..1).
	PPSUp    float64 `json:"pps_up"`
	PPSDown  float64 `json:"pps_down"`
	MbpsUp   float64 `json:"mbps_up"`
	MbpsDown float64 `json:"mbps_down"`
	CPUShare float64 `json:"cpu_share"`
	// Sleeps are the thread's sleeps in the kernel with nothing to do
	// (its wakeups), WakeupsPerSec their rate over the last sample
	// interval; Realtime is whether it waits in the realtime class
	// (workers.rtprio) now, RealtimeExits how often a load made it
	// leave that class.
	Sleeps        uint64            `json:"sleeps"`
	WakeupsPerSec float64           `json:"wakeups_per_second"`
	Realtime      bool              `json:"realtime"`
	RealtimeExits uint64            `json:"realtime_exits"`
	Drops         map[string]uint64 `json:"drops"`
	NAT           NATStats          `json:"nat"`
	// ShaperUp and ShaperDown are nil for a direction that is not shaped.
	ShaperUp   *ShaperStats `json:"shaper_up,omitempty"`
	ShaperDown *ShaperStats `json:"shaper_down,omitempty"`
}

// NATStats are one worker's NAT table figures.
type NATStats struct {
	Entries     uint64  `json:"entries"`  // live flows
	Mappings    uint64  `json:"mappings"` // external ports in use
	Slots       uint64  `json:"slots"`    // used slots (flows, mappings, host counters...)
	Capacity    uint64  `json:"capacity"` // slot capacity
	Fill        float64 `json:"fill"`     // Slots / Capacity
	Allocations uint64  `json:"allocations"`
	Expired     uint64  `json:"expired"`
	// Drops are the packets the NAT refused, by its reason (no_mapping,
	// filtered, table_full, host_limit, ...): drops and rejects.
	Drops map[string]uint64 `json:"drops"`
}

// ShaperStats are one worker's FQ-CoDel figures for one direction.
type ShaperStats struct {
	Backlog      int               `json:"backlog_packets"`
	BacklogBytes int64             `json:"backlog_bytes"`
	Enqueued     uint64            `json:"enqueued"`
	Dequeued     uint64            `json:"dequeued"`
	Dropped      uint64            `json:"dropped"`
	ECNMarks     uint64            `json:"ecn_marks"`
	Drops        map[string]uint64 `json:"drops"` // by reason (overlimit, memlimit, codel)
}

// sample is what a rate is computed from: the last snapshot's raw
// per-worker counters and when they were read.
type sample struct {
	at time.Time
	w  []dataplane.Counters
}

// snapshot collects the router's figures now; with prev, the workers'
// rates over the time since prev. It returns the counters for the next
// call. Safe from any goroutine (it reads only published figures).
func (r *Router) snapshot(prev *sample) (Stats, *sample) {
	s := r.freshStats()
	now := s.Time
	next := &sample{at: now}
	for _, w := range r.e.Workers() {
		c := w.Counters()
		next.w = append(next.w, c)
		ws := WorkerStats{Worker: w.ID(), RxLAN: c.RxLAN, RxWAN: c.RxWAN, TxLAN: c.TxLAN, TxWAN: c.TxWAN,
			BytesUp: c.BytesUp, BytesDown: c.BytesDown, FromHost: c.FromHost, ToHost: c.ToHost,
			CsumCompleted: c.CsumCompleted, WANRedirected: c.SteerRedirected, CPUSeconds: float64(c.CPUNanos) / 1e9, Drops: c.DropMap(),
			Sleeps: c.Sleeps, Realtime: c.Realtime != 0, RealtimeExits: c.RealtimeExits,
			Redirected: c.Redirected, Unresolved: c.Unresolved, Exceptions: c.Exception, ICMPSent: c.ICMPSent,
			ICMPRateLimited: c.ICMPRateLimited, Clamped: c.Clamped, Fragments: c.Fragments,
			IPv6Up: c.IPv6Up, IPv6Down: c.IPv6Down, NoBufferPolls: c.NoBufferPolls}
		if prev != nil && w.ID() < len(prev.w) {
			if dt := now.Sub(prev.at).Seconds(); dt > 0 {
				p := prev.w[w.ID()]
				ws.PPSUp = float64(c.TxWAN-p.TxWAN) / dt
				ws.PPSDown = float64(c.TxLAN-p.TxLAN) / dt
				ws.MbpsUp = float64(c.BytesUp-p.BytesUp) * 8 / 1e6 / dt
				ws.MbpsDown = float64(c.BytesDown-p.BytesDown) * 8 / 1e6 / dt
				ws.CPUShare = min(float64(c.CPUNanos-p.CPUNanos)/1e9/dt, 1)
				ws.WakeupsPerSec = float64(c.Sleeps-p.Sleeps) / dt
			}
		}
		d := w.Detail()
		ws.NAT = natStats(d.NAT, c.NATEntries)
		if d.ShapedUp {
			ws.ShaperUp = shaperStats(d.Up)
		}
		if d.ShapedDown {
			ws.ShaperDown = shaperStats(d.Down)
		}
		s.Workers = append(s.Workers, ws)
	}
	s.SampleSeconds = 0
	if prev != nil {
		s.SampleSeconds = now.Sub(prev.at).Seconds()
	}
	return s, next
}

func natStats(n nat.Stats, entries uint64) NATStats {
	ns := NATStats{Entries: entries, Mappings: n.Mappings, Slots: n.Slots, Capacity: n.Capacity,
		Allocations: n.Allocations, Expired: n.Expired, Drops: map[string]uint64{}}
	if n.Capacity > 0 {
		ns.Fill = float64(n.Slots) / float64(n.Capacity)
	}
	for i, v := range n.Reasons {
		if v != 0 {
			ns.Drops[nat.Reason(i).String()] = v
		}
	}
	return ns
}

func shaperStats(q shaper.Stats) *ShaperStats {
	s := &ShaperStats{Backlog: q.Backlog, BacklogBytes: q.BacklogBytes, Enqueued: q.Enqueued, Dequeued: q.Dequeued,
		Dropped: q.Dropped, ECNMarks: q.Marked, Drops: map[string]uint64{}}
	for i, v := range q.Drops {
		if v != 0 {
			s.Drops[shaper.DropReason(i).String()] = v
		}
	}
	return s
}

// sampleLoop publishes a snapshot every sampleEvery until ctx is done
// (and one at once, so that the first reader does not wait).
func (r *Router) sampleLoop(ctx context.Context) {
	s, prev := r.snapshot(nil)
	r.snap.Store(&s)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			var s Stats
			s, prev = r.snapshot(prev)
			r.snap.Store(&s)
		}
	}
}

// WriteStatus writes s as the human-readable status: the session block,
// then one block per worker, then the totals.
func WriteStatus(w io.Writer, s *Stats) {
	fmt.Fprintf(w, "session     %s", s.State)
	if s.State == "up" {
		fmt.Fprintf(w, "  id %#04x  up %s (since %s)", s.SessionID, durationString(time.Since(s.UpSince)), s.UpSince.Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if s.ACName != "" || s.ACMAC != "" {
		fmt.Fprintf(w, "ac          %s  %s\n", s.ACName, s.ACMAC)
	}
	if s.Local != "" {
		fmt.Fprintf(w, "address     %s  peer %s  mtu %d\n", s.Local, s.Peer, s.MTU)
	}
	if s.LAN6 != "" {
		fmt.Fprintf(w, "ipv6        %s\n", s.LAN6)
	}
	if s.EchoRTTMs > 0 {
		fmt.Fprintf(w, "lcp echo    rtt %.2f ms\n", s.EchoRTTMs)
	}
	fmt.Fprintf(w, "reconnects  %d  (sessions up %d)", s.PPPoE.Reconnects, s.SessionsUp)
	if s.LastError != "" {
		fmt.Fprintf(w, "  last: %s", s.LastError)
	}
	fmt.Fprintln(w)
	if s.ShaperUpBps != 0 || s.ShaperDownBps != 0 {
		fmt.Fprintf(w, "shaper      up %s  down %s\n", rateString(s.ShaperUpBps), rateString(s.ShaperDownBps))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-6s %10s %10s %10s %10s %6s %9s %7s  %s\n", "worker", "up pps", "up Mbit/s", "down pps", "down Mbit/s", "cpu", "nat flows", "nat fill", "drops")
	var t WorkerStats
	for _, ws := range s.Workers {
		fmt.Fprintf(w, "%-6d %10.0f %10.2f %10.0f %10.2f %5.1f%% %9d %6.1f%%  %s\n", ws.Worker, ws.PPSUp, ws.MbpsUp, ws.PPSDown, ws.MbpsDown,
			100*ws.CPUShare, ws.NAT.Entries, 100*ws.NAT.Fill, mapString(ws.Drops))
		t.PPSUp += ws.PPSUp
		t.PPSDown += ws.PPSDown
		t.MbpsUp += ws.MbpsUp
		t.MbpsDown += ws.MbpsDown
		t.CPUShare += ws.CPUShare
		t.NAT.Entries += ws.NAT.Entries
	}
	fmt.Fprintf(w, "%-6s %10.0f %10.2f %10.0f %10.2f %5.1f%% %9d %7s  %s\n", "all", t.PPSUp, t.MbpsUp, t.PPSDown, t.MbpsDown,
		100*t.CPUShare, t.NAT.Entries, "", mapString(s.Drops))
	for _, ws := range s.Workers {
		if len(ws.NAT.Drops) > 0 {
			fmt.Fprintf(w, "nat %d drops  %s\n", ws.Worker, mapString(ws.NAT.Drops))
		}
	}
	for _, ws := range s.Workers {
		for _, d := range []struct {
			name string
			q    *ShaperStats
		}{{"up", ws.ShaperUp}, {"down", ws.ShaperDown}} {
			if d.q != nil {
				fmt.Fprintf(w, "shaper %d %-4s backlog %d pkts %d B  dropped %d  ecn marks %d  %s\n", ws.Worker, d.name,
					d.q.Backlog, d.q.BacklogBytes, d.q.Dropped, d.q.ECNMarks, mapString(d.q.Drops))
			}
		}
	}
	if n := s.Counters.CsumCompleted; n > 0 {
		fmt.Fprintf(w, "checksums   %d finished for LAN senders that left them to an offload\n", n)
	}
	if c := s.Counters; c.Redirected+c.Unresolved+c.Exception+c.ICMPSent+c.Clamped+c.Fragments > 0 {
		fmt.Fprintf(w, "frames      %d handed to another worker  %d held for ARP/NDP  %d to control/host  %d ICMP errors sent  %d MSS clamped  %d fragments made\n",
			c.Redirected, c.Unresolved, c.Exception, c.ICMPSent, c.Clamped, c.Fragments)
	}
	if n := s.Counters.WANRedirected; n > 0 {
		fmt.Fprintf(w, "steering    %d WAN frames handed over to their owner (the WAN port delivered them to another worker's queue)\n", n)
	}
	if len(s.Workers) > 0 {
		fmt.Fprintf(w, "sleeps      %s\n", sleepString(s))
	}
	c := s.Control
	fmt.Fprintf(w, "control     wan frames %d (dropped %d)  held waiting %d  queue full %d\n", c.WANFrames, c.WANDropped, c.HeldWaiting, c.QueueFull)
}

// WriteWatch writes one --watch frame of s: a bar per worker thread of
// its CPU share (so one busy core among idle ones shows at a glance;
// worker 0's includes the WAN steering it runs inline), then the status. width is the terminal's (at least 40 assumed).
func WriteWatch(w io.Writer, s *Stats, width int) {
	bar := max(width-40, 10)
	fmt.Fprintf(w, "pppfwd  %s  %s\n\n", s.Time.Format("15:04:05"), s.State)
	for _, ws := range s.Workers {
		n := int(ws.CPUShare*float64(bar) + 0.5)
		fmt.Fprintf(w, "w%-3d [%s%s] %5.1f%%  %7.1f Mbit/s\n", ws.Worker, strings.Repeat("|", n), strings.Repeat(" ", bar-n),
			100*ws.CPUShare, ws.MbpsUp+ws.MbpsDown)
	}
	fmt.Fprintln(w)
	WriteStatus(w, s)
}

// sleepString is each worker's sleeps: wakeups a second over the
// sample (or sleeps since start without one) and its scheduling class.
func sleepString(s *Stats) string {
	parts := make([]string, 0, len(s.Workers))
	for _, ws := range s.Workers {
		p := fmt.Sprintf("w%d %d since start", ws.Worker, ws.Sleeps)
		if s.SampleSeconds > 0 {
			p = fmt.Sprintf("w%d %.0f wakeups/s", ws.Worker, ws.WakeupsPerSec)
		}
		switch {
		case ws.Realtime:
			p += " (realtime)"
		case ws.RealtimeExits > 0:
			p += fmt.Sprintf(" (left realtime for load, %d times)", ws.RealtimeExits)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func mapString(m map[string]uint64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

func rateString(bps uint64) string {
	switch {
	case bps == 0:
		return "unlimited"
	case bps >= 1e9:
		return fmt.Sprintf("%.3g Gbit/s", float64(bps)/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.4g Mbit/s", float64(bps)/1e6)
	}
	return fmt.Sprintf("%.4g kbit/s", float64(bps)/1e3)
}

func durationString(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= 24*time.Hour {
		return fmt.Sprintf("%dd%s", d/(24*time.Hour), d%(24*time.Hour))
	}
	return d.String()
}

func macString(m [6]byte) string {
	if m == ([6]byte{}) {
		return ""
	}
	return net.HardwareAddr(m[:]).String()
}
