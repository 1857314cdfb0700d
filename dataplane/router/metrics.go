package router

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// The Prometheus metrics are read from the router's snapshot (Stats) at
// each scrape by a custom collector: nothing is instrumented per packet.
// Names follow Prometheus conventions (base units, _total for counters);
// labels are worker, direction (up: to the session, down: to the LAN),
// port (lan, wan) and reason.

type desc struct {
	d *prometheus.Desc
	t prometheus.ValueType
}

// allDescs lists every descriptor newDesc made.
var allDescs []desc

func newDesc(name, help string, t prometheus.ValueType, labels ...string) desc {
	d := desc{prometheus.NewDesc("pppfwd_"+name, help, labels, nil), t}
	allDescs = append(allDescs, d)
	return d
}

var metricDescs = struct {
	sessionUp, sessionInfo, sessionUpSince, echoRTT, mtu            desc
	sessionsUp, reconnects, authFailures, echoTimeouts, padtRecv    desc
	rxFrames, txFrames, bytes, packetsRate, cpu, drops, hostFrames  desc
	natEntries, natMappings, natSlots, natCapacity, natAllocs       desc
	natExpired, natDrops                                            desc
	shaperBacklog, shaperBacklogBytes, shaperDrops, shaperMarks     desc
	shaperRate, ctlWAN, ctlWANDropped, ctlHeldWaiting, ctlQueueFull desc
	ctlRefused, csumCompleted, wanRedirected                        desc
	redirected, unresolved, exceptions, icmpSent, icmpRateLimited   desc
	clamped, fragments, ipv6, noBufferPolls                         desc
	sleeps, realtime, realtimeExits                                 desc
}{
	sessionUp:          newDesc("session_up", "1 while the PPPoE session is up.", prometheus.GaugeValue),
	sessionInfo:        newDesc("session_info", "The PPPoE session (value 1; its figures are labels).", prometheus.GaugeValue, "state", "ac_name", "ac_mac", "session_id", "local", "peer", "ipv6_prefix", "auth"),
	sessionUpSince:     newDesc("session_up_since_seconds", "When the session came up (Unix time).", prometheus.GaugeValue),
	echoRTT:            newDesc("lcp_echo_rtt_seconds", "Round trip of the last LCP echo.", prometheus.GaugeValue),
	mtu:                newDesc("session_mtu_bytes", "The session's negotiated MTU.", prometheus.GaugeValue),
	sessionsUp:         newDesc("pppoe_sessions_up_total", "Sessions brought up since start.", prometheus.CounterValue),
	reconnects:         newDesc("pppoe_reconnects_total", "Discovery restarts after a session or an attempt ended.", prometheus.CounterValue),
	authFailures:       newDesc("pppoe_auth_failures_total", "Failed authentications.", prometheus.CounterValue),
	echoTimeouts:       newDesc("pppoe_echo_timeouts_total", "Sessions ended for missed LCP echoes.", prometheus.CounterValue),
	padtRecv:           newDesc("pppoe_padt_received_total", "PADTs received from the access concentrator.", prometheus.CounterValue),
	rxFrames:           newDesc("rx_frames_total", "Frames a worker took from a port (wan: steered to it).", prometheus.CounterValue, "worker", "port"),
	txFrames:           newDesc("tx_frames_total", "Frames a worker handed to a port.", prometheus.CounterValue, "worker", "port"),
	bytes:              newDesc("forwarded_bytes_total", "IP bytes a worker forwarded (up: to the session, down: to the LAN).", prometheus.CounterValue, "worker", "direction"),
	packetsRate:        newDesc("forwarded_packets_per_second", "Frames a second a worker handed to the WAN (up) or LAN (down), over the last sample.", prometheus.GaugeValue, "worker", "direction"),
	cpu:                newDesc("worker_cpu_seconds_total", "CPU time of a worker's thread.", prometheus.CounterValue, "worker"),
	drops:              newDesc("drops_total", "Frames a worker dropped, by reason.", prometheus.CounterValue, "worker", "reason"),
	hostFrames:         newDesc("host_frames_total", "Frames of the router's own host stack a worker routed (up: from it towards the session, down: to it).", prometheus.CounterValue, "worker", "direction"),
	natEntries:         newDesc("nat_entries", "Live NAT flows in a worker's table.", prometheus.GaugeValue, "worker"),
	natMappings:        newDesc("nat_mappings", "External ports in use in a worker's table.", prometheus.GaugeValue, "worker"),
	natSlots:           newDesc("nat_slots", "Used slots of a worker's NAT table.", prometheus.GaugeValue, "worker"),
	natCapacity:        newDesc("nat_capacity_slots", "Slot capacity of a worker's NAT table.", prometheus.GaugeValue, "worker"),
	natAllocs:          newDesc("nat_allocations_total", "NAT flows created.", prometheus.CounterValue, "worker"),
	natExpired:         newDesc("nat_expired_total", "NAT flows removed by timeout.", prometheus.CounterValue, "worker"),
	natDrops:           newDesc("nat_drops_total", "Packets the NAT refused, by reason.", prometheus.CounterValue, "worker", "reason"),
	shaperBacklog:      newDesc("shaper_backlog_packets", "Packets queued in a worker's shaper.", prometheus.GaugeValue, "worker", "direction"),
	shaperBacklogBytes: newDesc("shaper_backlog_bytes", "Bytes queued in a worker's shaper.", prometheus.GaugeValue, "worker", "direction"),
	shaperDrops:        newDesc("shaper_drops_total", "Packets a worker's shaper dropped, by reason.", prometheus.CounterValue, "worker", "direction", "reason"),
	shaperMarks:        newDesc("shaper_ecn_marks_total", "Packets a worker's shaper marked CE instead of dropping.", prometheus.CounterValue, "worker", "direction"),
	shaperRate:         newDesc("shaper_rate_bytes_per_second", "The shaped rate (0: not shaped).", prometheus.GaugeValue, "direction"),
	ctlWAN:             newDesc("control_wan_frames_total", "Control frames for the PPPoE client.", prometheus.CounterValue),
	ctlWANDropped:      newDesc("control_wan_dropped_total", "Control frames for the PPPoE client dropped (queue full).", prometheus.CounterValue),
	ctlHeldWaiting:     newDesc("control_held_frames", "Frames held for LAN hosts being resolved.", prometheus.GaugeValue),
	ctlQueueFull:       newDesc("control_queue_full_total", "Exceptions dropped with the control queue full.", prometheus.CounterValue),
	ctlRefused:         newDesc("control_refused_total", "Control socket connections refused (another user).", prometheus.CounterValue),
	csumCompleted:      newDesc("csum_completed_total", "LAN frames whose TCP or UDP checksum the sender left unfinished (checksum offload of a VM or container) and a worker finished.", prometheus.CounterValue, "worker"),
	sleeps:             newDesc("worker_sleeps_total", "Times a worker's thread slept in the kernel with nothing to do (its wakeups).", prometheus.CounterValue, "worker"),
	realtime:           newDesc("worker_realtime", "1 while a worker's thread waits in the realtime scheduling class (workers.rtprio).", prometheus.GaugeValue, "worker"),
	realtimeExits:      newDesc("worker_realtime_exits_total", "Times a load made a worker's thread leave the realtime class (busy without sleeping, or woken frame by frame).", prometheus.CounterValue, "worker"),
	redirected:         newDesc("redirected_total", "Frames a worker handed to another worker (the NAT flow's owner, or a hairpin's second hop).", prometheus.CounterValue, "worker"),
	unresolved:         newDesc("unresolved_total", "LAN frames whose next hop a worker did not know, held by the control plane while ARP or NDP resolves it.", prometheus.CounterValue, "worker"),
	exceptions:         newDesc("exceptions_total", "Frames a worker sent to the control or host path.", prometheus.CounterValue, "worker"),
	icmpSent:           newDesc("icmp_errors_sent_total", "ICMP errors a worker sent (TTL exceeded, fragmentation needed, unreachable).", prometheus.CounterValue, "worker"),
	icmpRateLimited:    newDesc("icmp_errors_rate_limited_total", "ICMP errors a worker's rate limit suppressed.", prometheus.CounterValue, "worker"),
	clamped:            newDesc("mss_clamped_total", "TCP SYNs whose MSS a worker clamped to the session's MTU.", prometheus.CounterValue, "worker"),
	fragments:          newDesc("fragments_made_total", "IPv4 fragments a worker made for the session's MTU (DF clear).", prometheus.CounterValue, "worker"),
	ipv6:               newDesc("ipv6_packets_total", "IPv6 packets a worker routed (up: to the session, down: to the LAN).", prometheus.CounterValue, "worker", "direction"),
	noBufferPolls:      newDesc("no_buffer_polls_total", "Receives a worker skipped for want of a free frame (the frames wait in the port).", prometheus.CounterValue, "worker"),
	wanRedirected:      newDesc("wan_redirected_total", "WAN frames a worker's own steering handed to the worker that owns them (the WAN port delivered them to the wrong worker's queue).", prometheus.CounterValue, "worker"),
}

// collector is the router's prometheus.Collector.
type collector struct{ r *Router }

// Describe sends every descriptor (a metric family that has no series
// yet, a shaper's without shaping, is described all the same).
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d.d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.r.Stats()
	m := &metricDescs
	emit := func(d desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d.d, d.t, v, labels...)
	}
	up := 0.0
	if s.State == "up" {
		up = 1
		emit(m.sessionUpSince, float64(s.UpSince.UnixNano())/1e9)
		emit(m.echoRTT, s.EchoRTTMs/1000)
		emit(m.mtu, float64(s.MTU))
	}
	emit(m.sessionUp, up)
	sid := ""
	if s.SessionID != 0 {
		sid = fmt.Sprintf("%#04x", s.SessionID)
	}
	emit(m.sessionInfo, 1, s.State, s.ACName, s.ACMAC, sid, s.Local, s.Peer, s.LAN6, s.AuthProto)
	emit(m.sessionsUp, float64(s.SessionsUp))
	emit(m.reconnects, float64(s.PPPoE.Reconnects))
	emit(m.authFailures, float64(s.PPPoE.AuthFailures))
	emit(m.echoTimeouts, float64(s.PPPoE.EchoTimeouts))
	emit(m.padtRecv, float64(s.PPPoE.PADTReceived))
	for _, w := range s.Workers {
		id := strconv.Itoa(w.Worker)
		emit(m.rxFrames, float64(w.RxLAN), id, "lan")
		emit(m.rxFrames, float64(w.RxWAN), id, "wan")
		emit(m.txFrames, float64(w.TxLAN), id, "lan")
		emit(m.txFrames, float64(w.TxWAN), id, "wan")
		emit(m.bytes, float64(w.BytesUp), id, "up")
		emit(m.bytes, float64(w.BytesDown), id, "down")
		emit(m.packetsRate, w.PPSUp, id, "up")
		emit(m.packetsRate, w.PPSDown, id, "down")
		emit(m.cpu, w.CPUSeconds, id)
		emit(m.sleeps, float64(w.Sleeps), id)
		emit(m.realtimeExits, float64(w.RealtimeExits), id)
		rt := 0.0
		if w.Realtime {
			rt = 1
		}
		emit(m.realtime, rt, id)
		emit(m.hostFrames, float64(w.FromHost), id, "up")
		emit(m.hostFrames, float64(w.ToHost), id, "down")
		emit(m.csumCompleted, float64(w.CsumCompleted), id)
		emit(m.wanRedirected, float64(w.WANRedirected), id)
		emit(m.redirected, float64(w.Redirected), id)
		emit(m.unresolved, float64(w.Unresolved), id)
		emit(m.exceptions, float64(w.Exceptions), id)
		emit(m.icmpSent, float64(w.ICMPSent), id)
		emit(m.icmpRateLimited, float64(w.ICMPRateLimited), id)
		emit(m.clamped, float64(w.Clamped), id)
		emit(m.fragments, float64(w.Fragments), id)
		emit(m.ipv6, float64(w.IPv6Up), id, "up")
		emit(m.ipv6, float64(w.IPv6Down), id, "down")
		emit(m.noBufferPolls, float64(w.NoBufferPolls), id)
		for reason, v := range w.Drops {
			emit(m.drops, float64(v), id, reason)
		}
		emit(m.natEntries, float64(w.NAT.Entries), id)
		emit(m.natMappings, float64(w.NAT.Mappings), id)
		emit(m.natSlots, float64(w.NAT.Slots), id)
		emit(m.natCapacity, float64(w.NAT.Capacity), id)
		emit(m.natAllocs, float64(w.NAT.Allocations), id)
		emit(m.natExpired, float64(w.NAT.Expired), id)
		for reason, v := range w.NAT.Drops {
			emit(m.natDrops, float64(v), id, reason)
		}
		for _, q := range []struct {
			dir string
			s   *ShaperStats
		}{{"up", w.ShaperUp}, {"down", w.ShaperDown}} {
			if q.s == nil {
				continue
			}
			emit(m.shaperBacklog, float64(q.s.Backlog), id, q.dir)
			emit(m.shaperBacklogBytes, float64(q.s.BacklogBytes), id, q.dir)
			emit(m.shaperMarks, float64(q.s.ECNMarks), id, q.dir)
			for reason, v := range q.s.Drops {
				emit(m.shaperDrops, float64(v), id, q.dir, reason)
			}
		}
	}
	emit(m.shaperRate, float64(s.ShaperUpBps)/8, "up")
	emit(m.shaperRate, float64(s.ShaperDownBps)/8, "down")
	emit(m.ctlWAN, float64(s.Control.WANFrames))
	emit(m.ctlWANDropped, float64(s.Control.WANDropped))
	emit(m.ctlHeldWaiting, float64(s.Control.HeldWaiting))
	emit(m.ctlQueueFull, float64(s.Control.QueueFull))
	emit(m.ctlRefused, float64(s.ControlRefused))
}

// registry returns a registry holding the router's collector (and
// nothing else: the Go runtime's metrics are not the router's).
func (r *Router) registry() *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{r})
	return reg
}

// metricsHandler serves /metrics (and a pointer to it at /).
func (r *Router) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.registry(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/" {
			http.NotFound(w, req)
			return
		}
		fmt.Fprintln(w, `<html><body><a href="/metrics">pppfwd metrics</a></body></html>`)
	})
	return mux
}

// WriteMetricsText returns the metrics in the Prometheus text format
// (node_exporter's textfile format).
func (r *Router) WriteMetricsText() ([]byte, error) {
	mfs, err := r.registry().Gather()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// WriteMetricsFile replaces file with the metrics in node_exporter's
// textfile format (whole, as stats.file is written).
func (r *Router) WriteMetricsFile(file string) error {
	b, err := r.WriteMetricsText()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(file, b); err != nil {
		return fmt.Errorf("metrics textfile: %w", err)
	}
	return nil
}
