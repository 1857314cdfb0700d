package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"reflect"
	"sync"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/control"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/afxdp"
	"github.com/pppfwd/pppfwd/nic/tap"
	"github.com/pppfwd/pppfwd/pppoe"
	"github.com/pppfwd/pppfwd/shaper"
)

// Router is a running pppfwd: ports, engine, control plane, PPPoE client.
type Router struct {
	cfg      *Config
	lan, wan nic.Port
	host     nic.Port
	lanMAC   [6]byte
	wanMAC   [6]byte
	e        *dataplane.Engine
	// steer is the engine's steering mode: SteerLocal when the WAN port
	// delivers frames to their owner's queue, SteerInline when it opened
	// without that, SteerAuto for ports given to Open.
	steer    dataplane.SteerMode
	ctl      *control.Control
	cli      *pppoe.Client
	hooks    *hooks // nil without session hooks
	pd       *pd    // nil without pppoe.dhcpv6_pd
	reloadMu sync.Mutex
	logf     func(format string, args ...any)
	undo     []func() // NIC settings OpenPort made, undone after the ports close
	obsState          // status, control socket, metrics, logs (status.go, ctlsock.go, metrics.go, logging.go)
}

// Ports are already-open LAN and WAN ports (for labs and tests that open
// them inside a namespace or on a simulated kernel side); nil fields are
// opened from the config. Host, if set, is the host stack's port in place
// of the one the config names (host.tap, or the LAN interface's netmap
// host rings).
type Ports struct {
	LAN, WAN       nic.Port
	Host           nic.Port
	LANMAC, WANMAC [6]byte
}

// Open opens the ports (unless given) and builds the router.
func Open(cfg *Config, ports Ports, logf func(string, ...any)) (*Router, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	own := *cfg // the router's own copy: Reload changes it
	cfg = &own
	r := &Router{cfg: cfg, logf: logf, lan: ports.LAN, wan: ports.WAN, host: ports.Host, lanMAC: ports.LANMAC, wanMAC: ports.WANMAC}
	var err error
	if cfg.Backend == "afxdp" && ports.LAN == nil && ports.WAN == nil {
		// An AF_XDP socket binds to one RX queue: more workers than an
		// interface has queues cannot all get one (a single-queue NIC,
		// veth).
		if q := min(afxdp.InterfaceQueues(cfg.LANInterface), afxdp.InterfaceQueues(cfg.WANInterface)); cfg.Workers > q {
			logf("pppfwd: afxdp: %s and %s have %d queue(s) between them: %d worker(s) instead of %d (raise the queues with ethtool -L, or set workers)",
				cfg.LANInterface, cfg.WANInterface, q, q, cfg.Workers)
			cfg.Workers = q
		}
	}
	if r.lan == nil && r.host == nil && cfg.HostRings() {
		HostOffloadsOff(cfg.LANInterface, logf)
	}
	// RFC 4638: the WAN interface's MTU must take the larger frames
	// before the client asks for them, and before the ports open (see
	// raiseWANMTU). The configuration keeps pppoe.mtu as the file says
	// (a reload must not see it changed); the client gets 1492 when the
	// interface cannot carry more.
	pppoeMTU := cfg.PPPoE.MTU
	if r.wan == nil {
		msg, ok := cfg.raiseWANMTU(sysMTU)
		if msg != "" {
			logf("pppfwd: %s", msg)
		}
		if !ok {
			pppoeMTU = pppoeStdMTU
		}
	}
	if r.lan == nil {
		if r.lanMAC, err = ifaceMAC(cfg.LANInterface); err != nil {
			return nil, err
		}
		et := []uint16{hdr.EtherTypeIPv4, hdr.EtherTypeARP}
		if cfg.IPv6() {
			et = append(et, hdr.EtherTypeIPv6)
		}
		var info PortInfo
		if r.lan, info, err = OpenPort(cfg.portSpec(cfg.LANInterface, et)); err != nil {
			return nil, fmt.Errorf("LAN %s: %w", cfg.LANInterface, err)
		}
		r.undo = append(r.undo, info.Undo)
		logRing(logf, "LAN", cfg.LANInterface, info, cfg.Backend == "afxdp" && cfg.BusyPoll)
		if info.OwnerErr != nil {
			logf("pppfwd: LAN %s: %v; frames arrive by the NIC's or kernel's flow hash and workers hand over other workers' flows (counted as redirected)", cfg.LANInterface, info.OwnerErr)
		}
		if info.CsumUnknown {
			logf("pppfwd: LAN %s: afxdp in copy mode: frames carry no checksum state; workers check each TCP and UDP checksum against its pseudo-header sum and finish those a sender left to an offload (counted as csum_completed)", cfg.LANInterface)
		}
	}
	if r.wan == nil {
		if r.wanMAC, err = ifaceMAC(cfg.WANInterface); err != nil {
			r.Close()
			return nil, err
		}
		et := []uint16{hdr.EtherTypePPPoEDisc, hdr.EtherTypePPPoESess}
		if cfg.PPPoE.VLAN != 0 {
			et = []uint16{hdr.EtherTypeVLAN}
		}
		// With netmap, the WAN interface's host rings stay closed: the
		// box's stack has nothing to say on the WAN port (its own traffic
		// to the Internet leaves through the LAN host rings, the NAT and
		// the session), and what it sends there netmap drops.
		var info PortInfo
		if r.wan, info, err = OpenPort(cfg.portSpec(cfg.WANInterface, et)); err != nil {
			r.Close()
			return nil, fmt.Errorf("WAN %s: %w", cfg.WANInterface, err)
		}
		r.undo = append(r.undo, info.Undo)
		logRing(logf, "WAN", cfg.WANInterface, info, cfg.Backend == "afxdp" && cfg.BusyPoll)
		// Each worker steers its own WAN queue where the port delivers
		// frames to their owner; otherwise worker 0 steers them all.
		if cfg.Workers > 1 {
			r.steer = dataplane.SteerInline
			if info.Owner == "fanout-ebpf" {
				r.steer = dataplane.SteerLocal
			} else {
				logf("pppfwd: WAN %s: %v; worker 0 steers every WAN frame to its owner", cfg.WANInterface, info.OwnerErr)
			}
		}
	}
	switch {
	case r.host != nil:
	case cfg.HostRings():
		if r.host, err = OpenHostRings(cfg.LANInterface); err != nil {
			r.Close()
			return nil, fmt.Errorf("LAN %s: host rings: %w (host.netmap off to run without them)", cfg.LANInterface, err)
		}
		logf("pppfwd: LAN %s: the box's own stack keeps the interface and reaches pppfwd through its host rings (%s)", cfg.LANInterface, r.host.Name())
	case cfg.HostTap != "":
		if r.host, err = tap.Open(cfg.HostTap, tap.Config{Up: true}); err != nil {
			r.Close()
			return nil, fmt.Errorf("host tap %s: %w", cfg.HostTap, err)
		}
		// The host stack answers ARP for the router: with any other MAC
		// than the LAN port's, LAN hosts would send to a MAC the workers
		// drop.
		mac := net.HardwareAddr(r.lanMAC[:]).String()
		if out, err := exec.Command("ip", "link", "set", "dev", cfg.HostTap, "address", mac).CombinedOutput(); err != nil {
			r.Close()
			return nil, fmt.Errorf("host tap %s: set MAC %s: %v: %s", cfg.HostTap, mac, err, out)
		}
	}
	dc := dataplane.Config{
		Workers: cfg.Workers, LAN: r.lan, WAN: r.wan,
		RouterMAC: r.lanMAC, RouterAddr: cfg.RouterAddr(), LANNet: cfg.LANNet(), LANBits: cfg.LANAddr.Bits(),
		PortLo: cfg.PortLo, PortHi: cfg.PortHi, NAT: cfg.NAT, Up: cfg.Up, Down: cfg.Down,
		NoFirewall6: cfg.NoFirewall6, Allow6: cfg.Firewall6Allow(),
		Pin: pin.PinNth, ThreadCPU: pin.ThreadCPUNanos, Poll: cfg.Poll, Steer: r.steer,
		Slice: cfg.WorkerSlice(), RTPrio: cfg.WorkerRTPrio(),
	}
	if cpus := cfg.CPUs; len(cpus) > 0 {
		dc.Pin = func(n int) error { return pin.Pin(cpus[n%len(cpus)]) }
	}
	checkClock(logf)
	if cfg.WorkersAuto {
		logf("pppfwd: workers auto: %d on %d CPUs (set workers to choose)", cfg.Workers, len(pin.Allowed()))
	}
	if r.e, err = dataplane.New(dc); err != nil {
		r.Close()
		return nil, err
	}
	cc := control.Config{WANMAC: r.wanMAC, Host: r.host, RA: control.RAConfig{DNS: cfg.dns6()}}
	if cfg.HostRings() {
		// The host stack owns the LAN port's MAC: the proxy answers must
		// give it another (control.Config.HostGateway).
		cc.HostGateway = HostGatewayMAC(r.lanMAC)
	}
	if cfg.PD {
		r.pd = newPD(r)
		cc.WAN6 = r.pd.input
	}
	r.ctl = control.New(r.e, cc)
	if cfg.LAN6Prefix.IsValid() {
		l6, err := dataplane.NewLAN6(cfg.LAN6Prefix.Addr().As16(), cfg.LAN6Prefix.Bits(), r.lanMAC)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("lan.ipv6_prefix: %w", err)
		}
		r.e.SetLAN6(l6)
	}
	pc := cfg.PPPoE
	pc.MTU = pppoeMTU
	pc.IPv6 = pc.IPv6 || cfg.IPv6()
	pc.Logf = logf
	r.cli = pppoe.NewClient(pc, r.traceConn(r.ctl.WANConn()), r.publish)
	r.hooks = newHooks(cfg, logf)
	return r, nil
}

func (r *Router) publish(s *hdr.Session) {
	if s == nil {
		r.logf("pppfwd: session down")
	} else {
		r.logf("pppfwd: session %d up: %s peer %s mtu %d ipv6 %v", s.ID, addrString(s.LocalAddr), addrString(s.PeerAddr), s.MTU, s.IPv6)
	}
	r.e.SetSession(s)
	if r.pd != nil {
		r.pd.session(s != nil && s.IPv6)
	}
	r.hooks.publish(s)
}

// Engine returns the dataplane engine.
func (r *Router) Engine() *dataplane.Engine { return r.e }

// Client returns the PPPoE client.
func (r *Router) Client() *pppoe.Client { return r.cli }

// Control returns the control plane.
func (r *Router) Control() *control.Control { return r.ctl }

// The control plane's WAN side is the PPPoE client's Conn.
var _ pppoe.Conn = control.WANConn{}

// Run forwards until ctx is done, then ends the session cleanly (LCP
// Terminate, PADT), stops the workers and closes the ports.
func (r *Router) Run(ctx context.Context) error {
	if err := r.ListenObs(); err != nil {
		r.Close()
		return err
	}
	r.e.PublishDetail() // NAT and shaper figures for the snapshot (status.go)
	r.e.Start()
	if l6 := r.e.LAN6(); l6 != nil && !r.cfg.PD {
		r.hooks.publish6(lan6Hook(l6, "", r.cfg.dns6())) // a static prefix: up from the start
	}
	ctlCtx, stopCtl := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = r.ctl.Run(ctlCtx) }()
	if r.pd != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.pd.run(ctlCtx) }()
	}
	r.runObs(ctlCtx, &wg)
	if r.cfg.StatsInterval > 0 || r.cfg.StatsFile != "" || r.obs.MetricsTextfile != "" {
		wg.Add(1)
		go func() { defer wg.Done(); r.statsLoop(ctlCtx) }()
	}
	// The client ends with LCP Terminate + PADT when ctx is done.
	if perr := r.e.PinErr(); perr != nil {
		r.logf("pppfwd: %v", perr)
	}
	// A port that fails for good (its interface removed) ends the run
	// with an error naming it; transient port errors do not.
	cliCtx, stopCli := context.WithCancel(ctx)
	defer stopCli()
	go func() {
		select {
		case <-r.e.Failed():
			stopCli()
		case <-cliCtx.Done():
		}
	}()
	err := r.cli.Run(cliCtx)
	if ferr := r.e.Err(); ferr != nil {
		err = ferr
	}
	if !r.e.Flush(time.Second) { // the PADT is queued: let a worker send it
		r.logf("pppfwd: control frames still queued at shutdown")
	}
	stopCtl()
	wg.Wait()
	if serr := r.e.Stop(); serr != nil && err == nil {
		err = serr
	}
	r.Close()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Reload applies what of a new configuration can change while the
// session stays up: the shaper rates (shaper.up and shaper.down
// bandwidth). It returns what it applied, and the keys whose new values
// need a restart (left as they were). A direction that was not shaped at
// start cannot be shaped by a reload.
func (r *Router) Reload(cfg *Config) (applied, restart []string, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	old := *r.cfg
	for _, k := range []struct {
		name     string
		old, new shaper.Spec
	}{{"shaper.up", old.Up, cfg.Up}, {"shaper.down", old.Down, cfg.Down}} {
		if (k.old.Rate == 0) != (k.new.Rate == 0) {
			return nil, nil, fmt.Errorf("%s: shaping cannot be switched on or off while running: restart", k.name)
		}
		o, n := k.old, k.new
		o.Rate, n.Rate = 0, 0
		if !reflect.DeepEqual(o, n) {
			restart = append(restart, k.name+" (other than bandwidth)")
		}
	}
	if cfg.Up.Rate != old.Up.Rate || cfg.Down.Rate != old.Down.Rate {
		if err := r.e.SetRates(cfg.Up.Rate, cfg.Down.Rate); err != nil {
			return nil, nil, err
		}
		if cfg.Up.Rate != old.Up.Rate {
			applied = append(applied, fmt.Sprintf("shaper.up %d bit/s", cfg.Up.Rate))
		}
		if cfg.Down.Rate != old.Down.Rate {
			applied = append(applied, fmt.Sprintf("shaper.down %d bit/s", cfg.Down.Rate))
		}
		r.cfg.Up.Rate, r.cfg.Down.Rate = cfg.Up.Rate, cfg.Down.Rate
	}
	// Everything else needs a restart: name the keys whose values differ
	// (the key table's diff); the reloadable ones were handled above.
	for _, key := range ChangedKeys(&old, cfg) {
		if !KeyReloadable(key) {
			restart = append(restart, key)
		}
	}
	return applied, restart, nil
}

func (r *Router) statsLoop(ctx context.Context) {
	every := r.cfg.StatsInterval
	if every <= 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var lastErr, lastMetricsErr string
	writeFile := func() {
		if r.obs.MetricsTextfile != "" {
			err := r.WriteMetricsFile(r.obs.MetricsTextfile)
			if msg := fmt.Sprint(err); err != nil && msg != lastMetricsErr {
				r.logf("pppfwd: %v", err)
			}
			lastMetricsErr = fmt.Sprint(err)
		}
		if r.cfg.StatsFile == "" {
			return
		}
		err := r.WriteStats(r.cfg.StatsFile)
		if msg := fmt.Sprint(err); err != nil && msg != lastErr {
			r.logf("pppfwd: %v", err) // once per distinct error, not every tick
		}
		lastErr = fmt.Sprint(err)
	}
	writeFile() // at start, and at exit: the file never shows a state long gone
	defer writeFile()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if r.cfg.StatsInterval > 0 {
				c := r.e.Totals()
				st := r.cli.Status()
				r.logf("pppfwd: state %s rtt %v lan rx %d tx %d, wan rx %d tx %d, exceptions %d, no-buffer polls %d, drops %v",
					st.State, st.EchoRTT, c.RxLAN, c.TxLAN, c.RxWAN, c.TxWAN, c.Exception, c.NoBufferPolls, c.DropMap())
			}
			writeFile()
		}
	}
}

// Stats is what WriteStats writes: the session, the dataplane's counters
// and drops by reason, the control plane's and the shaper rates.
type Stats struct {
	Time      time.Time `json:"time"`
	State     string    `json:"state"`
	SessionID uint16    `json:"session_id,omitempty"`
	// The session's figures, while it is up.
	Local      string    `json:"local,omitempty"`
	Peer       string    `json:"peer,omitempty"`
	MTU        int       `json:"mtu,omitempty"`
	UpSince    time.Time `json:"up_since,omitzero"`
	EchoRTTMs  float64   `json:"lcp_echo_rtt_ms,omitempty"`
	LastError  string    `json:"last_error,omitempty"`
	SessionsUp uint64    `json:"sessions_up"` // sessions brought up since start
	// The access concentrator of the session (or of the last offer
	// chosen) and the authentication protocol in use.
	ACName    string `json:"ac_name,omitempty"`
	ACMAC     string `json:"ac_mac,omitempty"`
	AuthProto string `json:"auth,omitempty"`
	// Workers are the per-worker figures; their rates are over the last
	// SampleSeconds (0 in a snapshot taken without a previous one).
	Workers       []WorkerStats `json:"workers"`
	SampleSeconds float64       `json:"sample_seconds"`
	// ControlRefused counts control socket connections refused for
	// coming from another user.
	ControlRefused uint64            `json:"control_refused"`
	Counters       StatsCounters     `json:"counters"`
	Drops          map[string]uint64 `json:"drops"`
	Control        control.Stats     `json:"control"`
	ShaperUpBps    uint64            `json:"shaper_up_bps"`
	ShaperDownBps  uint64            `json:"shaper_down_bps"`
	LAN6           string            `json:"lan6_prefix,omitempty"` // the LAN's IPv6 prefix, while there is one
	PD             *PDStats          `json:"dhcpv6_pd,omitempty"`
	// PPPoE is the client's counters (discovery, echo, write errors,
	// refused offers, addresses and PAP).
	PPPoE pppoe.ClientCounters `json:"pppoe"`
	// NATEntries: live NAT flows over all workers; RingFull: WAN frames
	// steering dropped per worker because that worker fell behind.
	NATEntries int      `json:"nat_entries"`
	RingFull   []uint64 `json:"ring_full_per_worker"`
}

// StatsCounters are the dataplane's totals over all workers.
type StatsCounters struct {
	RxLAN      uint64 `json:"rx_lan"`
	RxWAN      uint64 `json:"rx_wan"`
	TxLAN      uint64 `json:"tx_lan"`
	TxWAN      uint64 `json:"tx_wan"`
	Exception  uint64 `json:"exception"`
	ICMPSent   uint64 `json:"icmp_sent"`
	Clamped    uint64 `json:"mss_clamped"`
	Redirected uint64 `json:"redirected"`
	// WANRedirected: WAN frames a worker's own steering handed to their
	// owner (local steering: frames the WAN port did not deliver there).
	WANRedirected uint64 `json:"wan_redirected"`
	Unresolved    uint64 `json:"unresolved"`
	Fragments     uint64 `json:"fragments_made"`
	NoBufferPolls uint64 `json:"no_buffer_polls"`
	IPv6Up        uint64 `json:"ipv6_up"`
	IPv6Down      uint64 `json:"ipv6_down"`
	Drops         uint64 `json:"drops"`
	BytesUp       uint64 `json:"bytes_up"`   // IP bytes forwarded to the session
	BytesDown     uint64 `json:"bytes_down"` // ... and to the LAN
	// FromHost: frames of the router's own host stack (host.tap or the
	// netmap host rings) routed
	// towards the session; ToHost: frames from the session handed to it.
	FromHost uint64 `json:"from_host"`
	ToHost   uint64 `json:"to_host"`
	// CsumCompleted: LAN frames whose TCP or UDP checksum the sender
	// left unfinished (a VM's or container's checksum offload) and a
	// worker finished.
	CsumCompleted uint64 `json:"csum_completed"`
}

// Stats returns the router's figures: while Run runs, the snapshot it
// takes every second (the one the control socket, the metrics and
// stats.file all show; its maps and slices are shared and must not be
// changed); otherwise figures collected now.
func (r *Router) Stats() Stats {
	if p := r.snap.Load(); p != nil {
		return *p
	}
	s, _ := r.snapshot(nil)
	return s
}

// freshStats collects the router-wide figures now (snapshot adds the
// workers').
func (r *Router) freshStats() Stats {
	st := r.cli.Status()
	c := r.e.Totals()
	up, down := r.e.Rates()
	s := Stats{Time: time.Now(), State: st.State.String(), LastError: st.LastError,
		SessionsUp: st.Counters.SessionsUp, Drops: c.DropMap(), Control: r.ctl.Stats(),
		Counters: StatsCounters{RxLAN: c.RxLAN, RxWAN: c.RxWAN, TxLAN: c.TxLAN, TxWAN: c.TxWAN,
			Exception: c.Exception, ICMPSent: c.ICMPSent, Clamped: c.Clamped, Redirected: c.Redirected,
			WANRedirected: c.SteerRedirected, Unresolved: c.Unresolved, Fragments: c.Fragments, NoBufferPolls: c.NoBufferPolls,
			IPv6Up: c.IPv6Up, IPv6Down: c.IPv6Down, Drops: c.TotalDrops(),
			BytesUp: c.BytesUp, BytesDown: c.BytesDown, FromHost: c.FromHost, ToHost: c.ToHost,
			CsumCompleted: c.CsumCompleted},
		ShaperUpBps: up, ShaperDownBps: down, PPPoE: st.Counters, ControlRefused: r.refused.Load(),
		ACName: st.ACName, ACMAC: macString(st.ACMAC),
		NATEntries: r.e.NATEntries(), RingFull: r.e.RingFullDrops()}
	if l6 := r.e.LAN6(); l6 != nil {
		s.LAN6 = addr6String(l6.Prefix) + "/64"
	}
	if r.pd != nil {
		s.PD = r.pd.stats()
	}
	if st.State == pppoe.StateUp {
		s.SessionID, s.MTU, s.UpSince = st.SessionID, st.MTU, st.UpSince
		s.Local, s.Peer = addrString(st.LocalAddr), addrString(st.PeerAddr)
		s.EchoRTTMs = float64(st.EchoRTT.Microseconds()) / 1000
		s.AuthProto = st.AuthProto.String()
	}
	return s
}

// WriteStats replaces file with the router's figures as JSON (for a
// monitoring agent to read).
func (r *Router) WriteStats(file string) error {
	b, err := json.MarshalIndent(r.Stats(), "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(file, append(b, '\n')); err != nil {
		return fmt.Errorf("stats file: %w", err)
	}
	return nil
}

// Close releases the ports.
func (r *Router) Close() {
	r.hooks.close() // the down script of a session that just ended still runs
	for _, p := range []nic.Port{r.lan, r.wan, r.host} {
		if p != nil {
			p.Close()
		}
	}
	for _, u := range r.undo {
		u()
	}
	r.undo = nil
}

func ifaceMAC(name string) ([6]byte, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return [6]byte{}, err
	}
	if len(ifi.HardwareAddr) != 6 {
		return [6]byte{}, fmt.Errorf("%s has no Ethernet address", name)
	}
	return [6]byte(ifi.HardwareAddr), nil
}

// logRing logs why a port's afpacket ring is not the adaptive one, and
// whether an afxdp port asked to busy-poll does.
func logRing(logf func(string, ...any), side, ifname string, info PortInfo, busyPoll bool) {
	if info.RingErr != nil {
		logf("pppfwd: %s %s: %v; receiving on TPACKET_V2 frames only (higher kernel cost per frame at full load)", side, ifname, info.RingErr)
	}
	switch {
	case !busyPoll:
	case info.BusyPoll:
		logf("pppfwd: %s %s: busy polling (afxdp.busy_poll)", side, ifname)
	case info.BusyPollErr != nil:
		logf("pppfwd: %s %s: no busy polling: %v", side, ifname, info.BusyPollErr)
	default:
		logf("pppfwd: %s %s: no busy polling in %s XDP mode (no NAPI context to poll)", side, ifname, info.Mode)
	}
}
