package lab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/dataplane/router"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/internal/rawsock"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/pppoe"
)

// Addresses of the lab.
var (
	LANPrefix  = netip.MustParsePrefix("192.168.77.1/24") // the router's LAN address
	HostAddr   = netip.MustParsePrefix("192.168.77.2/24")
	ACAddr     = netip.MustParseAddr("100.64.0.1")
	PoolFirst  = netip.MustParseAddr("100.64.0.10")
	PoolLast   = netip.MustParseAddr("100.64.0.20")
	DNSAddr    = netip.MustParseAddr("100.64.0.53")
	RemoteAddr = netip.MustParseAddr("203.0.113.7") // a host on "the Internet" behind the ISP
	ISPInet    = netip.MustParsePrefix("203.0.113.1/24")
	RemoteNet  = netip.MustParsePrefix("203.0.113.7/24")
)

// Options configure the lab.
type Options struct {
	Backend string // afpacket (default) or afxdp
	Workers int    // default 1
	// Poll is the router's workers.poll (default adaptive).
	Poll dataplane.PollMode
	Auth string // the AC's: chap (default), pap or mschapv2
	// Shape is the downlink shaper in tc-cake words ("" = none).
	ShapeDown string
	// HostTap gives the router a TAP for its own traffic, carrying the LAN
	// address: the router namespace's kernel then answers ARP and ping.
	HostTap bool
	// Forwards are the router's nat.forward entries (a LANAddr of the
	// router's own, LANPrefix's address, forwards to the host TAP).
	Forwards []nat.Forward
	// ResolvFile, if set, is the router's pppoe.resolv: the session's DNS
	// servers are written there.
	ResolvFile string
	// EchoInterval and EchoFailures are the router's LCP keepalive
	// (pppoe.echo_interval, pppoe.echo_failures; defaults 1 s and the
	// client's default of 3).
	EchoInterval time.Duration
	EchoFailures int
	// LANTxChecksum leaves tx checksumming on on the LAN host's veth
	// (lan0), as a VM's or container's is by default: its kernel hands
	// TCP and UDP over with the checksum unfinished (only the
	// pseudo-header sum) for pppfwd to finish. Off by default, as the
	// lab's other links: the ISP's side finishes checksums itself.
	LANTxChecksum bool
	// Obs is the router's control socket, metrics and log settings (off
	// unless set).
	Obs router.ObsConfig
	// VLAN is the WAN link's 802.1Q VLAN: the router's wan.vlan and the
	// one the AC serves (0: untagged).
	VLAN uint16
	// MTU is the router's pppoe.mtu and the largest the AC allows (0:
	// 1492). Above 1492 (RFC 4638) the ISP's end of the WAN link and its
	// upstream take the larger frames; the router raises its own end.
	MTU int
	// User and Password are the login the AC accepts and, without
	// Config, the router's pppoe.user and pppoe.password (default "lab"
	// and "secret").
	User, Password string
	// Config, if not empty, is the router's configuration file, read by
	// router.ParseConfig as `pppfwd run` reads it, instead of the one the
	// other Options make: it names the lab's interfaces (LANInterface,
	// WANInterface) and lan.address (LANPrefix) itself. Of the Options
	// above, only VLAN, MTU, User, Password and Auth apply then, to the
	// ISP's side.
	Config string
	// Router, if set, is a configuration read from a user's file and
	// pointed at the lab by AdaptConfig; it takes Config's place.
	Router *router.Config
	// NoAC starts the lab without the access concentrator: nothing
	// answers the router's PADIs (l.AC is nil).
	NoAC bool
	Logf func(format string, args ...any)
}

// Interface names of the lab: the router's WAN and LAN veth ends (in the
// router namespace) and the ISP's end of the WAN link.
const (
	WANInterface = "rwan"
	LANInterface = "rlan"
	ISPInterface = "isp0"
)

// Lab is a running lab.
type Lab struct {
	lab              *nettest.Lab
	LAN, Router, ISP *nettest.NS
	R                *router.Router
	AC               *pppoe.Server
	cancel           context.CancelFunc
	stopRouter       context.CancelFunc
	routerDone       chan struct{}
	wg               sync.WaitGroup
	routerErr        error
	ctx              context.Context
	acCancel         context.CancelFunc
	acDone           chan struct{}
	acp              atomic.Pointer[pppoe.Server] // the AC the upstream path delivers to (ReplugWAN replaces it)
	acAuth           pppoe.AuthProto
	acConn           *rawsock.Conn
	opt              Options
	upstream         chan []byte
	Inet             *nettest.NS
	up               nic.Port // the ISP's upstream TAP (owned by forwardUpstream)
	upMAC            [6]byte
	echo, echo6      *net.UDPConn
	tcpEcho          net.Listener
	v6               lab6
	closeOnce        sync.Once
}

func u32(a netip.Addr) uint32 { return binary.BigEndian.Uint32(a.AsSlice()) }

// Start builds the namespaces and starts the AC and the router.
func Start(o Options) (_ *Lab, err error) {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Backend == "" {
		o.Backend = "afpacket"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.User == "" && o.Password == "" {
		o.User, o.Password = "lab", "secret"
	}
	var fileCfg *router.Config
	if o.Config != "" {
		if fileCfg, err = router.ParseConfig(strings.NewReader(o.Config)); err != nil {
			return nil, fmt.Errorf("router configuration: %w", err)
		}
		o.Backend, o.Workers = fileCfg.Backend, fileCfg.Workers
	} else if o.Router != nil {
		fileCfg = o.Router
		o.Backend, o.Workers = fileCfg.Backend, fileCfg.Workers
	}
	l := &Lab{lab: nettest.New(), upstream: make(chan []byte, 1024), opt: o}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	if l.LAN, err = l.lab.NewNS("lan"); err != nil {
		return nil, err
	}
	if l.Router, err = l.lab.NewNS("rtr"); err != nil {
		return nil, err
	}
	if l.ISP, err = l.lab.NewNS("isp"); err != nil {
		return nil, err
	}
	if l.Inet, err = l.lab.NewNS("inet"); err != nil {
		return nil, err
	}
	// IPv6 everywhere but in the router's namespace, whose interfaces
	// belong to pppfwd; no duplicate address detection (its delay only).
	for _, ns := range []*nettest.NS{l.LAN, l.Router, l.ISP, l.Inet} {
		off := map[bool]string{true: "1", false: "0"}[ns == l.Router]
		for _, k := range []string{"all.disable_ipv6", "default.disable_ipv6"} {
			if err = ns.Sysctl("net.ipv6.conf."+k, off); err != nil {
				return nil, err
			}
		}
		for _, k := range []string{"all.accept_dad", "default.accept_dad"} {
			if err = ns.Sysctl("net.ipv6.conf."+k, "0"); err != nil {
				return nil, err
			}
		}
	}
	if err = l.lab.Veth("lan0", l.LAN, "rlan", l.Router, o.Workers); err != nil {
		return nil, err
	}
	if err = l.lab.Veth(WANInterface, l.Router, ISPInterface, l.ISP, o.Workers); err != nil {
		return nil, err
	}
	if err = l.setISPMTU(); err != nil {
		return nil, err
	}
	for _, e := range []struct {
		ns  *nettest.NS
		ifn string
	}{{l.LAN, "lan0"}, {l.Router, "rlan"}, {l.Router, "rwan"}, {l.ISP, "isp0"}} {
		if err = e.ns.DisableOffloads(e.ifn); err != nil {
			return nil, err
		}
		if e.ifn == "lan0" && o.LANTxChecksum {
			continue
		}
		if err = e.ns.SetFeature(e.ifn, "tx", false); err != nil {
			return nil, err
		}
	}
	if err = l.LAN.AddAddr("lan0", HostAddr); err != nil {
		return nil, err
	}
	if err = l.setupInternet(); err != nil {
		return nil, err
	}
	if err = l.setupIPv6(); err != nil {
		return nil, err
	}
	if err = l.LAN.AddRoute("default", LANPrefix.Addr()); err != nil {
		return nil, err
	}

	// The ISP: pppfwd's access concentrator on a raw socket.
	l.acAuth = pppoe.AuthCHAPMD5
	switch o.Auth {
	case "pap":
		l.acAuth = pppoe.AuthPAP
	case "mschapv2":
		l.acAuth = pppoe.AuthMSCHAPv2
	}
	if !o.NoAC {
		if err = l.newAC(); err != nil {
			return nil, err
		}
	}

	// The router: pppfwd on afpacket/afxdp ports opened inside its
	// namespace, configured by the file or by the Options.
	cfg := fileCfg
	if cfg == nil {
		if cfg, err = l.config(); err != nil {
			return nil, err
		}
	}
	// Open inside the router's namespace: the ports' sockets stay there.
	if err = l.Router.Do(func() (e error) {
		l.R, e = router.Open(cfg, router.Ports{}, o.Logf)
		return e
	}); err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	if cfg.HostTap != "" {
		if err = l.Router.AddAddr(cfg.HostTap, LANPrefix); err != nil {
			l.R.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	rctx, rcancel := context.WithCancel(ctx)
	l.ctx, l.cancel, l.stopRouter = ctx, cancel, rcancel
	l.routerDone = make(chan struct{})
	if l.AC != nil {
		l.runAC()
	}
	l.wg.Add(1)
	go func() { defer l.wg.Done(); l.forwardUpstream(ctx) }()
	go func() { defer close(l.routerDone); l.routerErr = l.R.Run(rctx) }()
	return l, nil
}

// config is the router's configuration the Options make.
func (l *Lab) config() (*router.Config, error) {
	o := &l.opt
	cfg := &router.Config{Backend: o.Backend, Workers: o.Workers, Poll: o.Poll, LANInterface: "rlan", WANInterface: "rwan",
		LANAddr: LANPrefix, PortLo: 1024, PortHi: 65535, StatsInterval: 0, PD: true}
	if o.EchoInterval == 0 {
		o.EchoInterval = time.Second
	}
	cfg.PPPoE = pppoe.ClientConfig{Username: o.User, Password: o.Password, PADOWait: -1,
		EchoInterval: o.EchoInterval, EchoFailures: o.EchoFailures, VLAN: o.VLAN, MTU: o.MTU, Interface: WANInterface}
	if o.ShapeDown != "" {
		if err := parseShape(cfg, o.ShapeDown); err != nil {
			return nil, err
		}
	}
	if o.HostTap {
		cfg.HostTap = "pppfwd0"
	}
	cfg.NAT.Forwards = o.Forwards
	cfg.ResolvFile = o.ResolvFile
	cfg.Obs = o.Obs
	return cfg, nil
}

// setISPMTU gives the ISP's end of the WAN link the MTU of the router's
// pppoe.mtu (RFC 4638 above 1492: the BRAS takes baby jumbo frames).
func (l *Lab) setISPMTU() error {
	if need := router.WANMTU(l.opt.MTU, l.opt.VLAN); need > 0 {
		return l.ISP.SetMTU(ISPInterface, need)
	}
	return nil
}

// newAC opens the access concentrator's raw socket on the ISP's end of
// the WAN link and builds the server (l.AC); runAC starts it.
func (l *Lab) newAC() error {
	var acConn *rawsock.Conn
	if err := l.ISP.Do(func() (e error) {
		acConn, e = rawsock.Open(ISPInterface, hdr.EtherTypePPPoEDisc, hdr.EtherTypePPPoESess)
		return e
	}); err != nil {
		return fmt.Errorf("AC socket: %w", err)
	}
	l.acConn = acConn
	l.AC = pppoe.NewServer(pppoe.ServerConfig{ACName: "pppfwd-lab", Auth: l.acAuth,
		Users: map[string]string{l.opt.User: l.opt.Password}, VLAN: l.opt.VLAN, MTU: l.opt.MTU,
		LocalAddr: u32(ACAddr), PoolFirst: u32(PoolFirst), PoolLast: u32(PoolLast),
		DNS: [2]uint32{u32(DNSAddr)}, IPv6: true, Deliver: l.toUpstream}, acConn)
	l.acp.Store(l.AC)
	return nil
}

// runAC runs l.AC until the lab closes or stopAC.
func (l *Lab) runAC() {
	ctx, cancel := context.WithCancel(l.ctx)
	done := make(chan struct{})
	l.acCancel, l.acDone = cancel, done
	ac := l.AC
	l.wg.Add(1)
	go func() { defer l.wg.Done(); defer close(done); _ = ac.Run(ctx) }()
}

// RouterDone is closed when the router's Run has returned; RouterErr is
// its error then (nil before).
func (l *Lab) RouterDone() <-chan struct{} { return l.routerDone }

// RouterErr returns the error the router's Run ended with, once
// RouterDone is closed.
func (l *Lab) RouterErr() error {
	select {
	case <-l.routerDone:
		return l.routerErr
	default:
		return nil
	}
}

// WaitUp waits for the PPPoE session.
func (l *Lab) WaitUp(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for l.R.Engine().Session() == nil {
		if time.Now().After(deadline) {
			st := l.R.Client().Status()
			return fmt.Errorf("session not up after %v (state %s, last error %q)", timeout, st.State, st.LastError)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Close stops everything (the router ends its session with PADT first)
// and removes the namespaces.
func (l *Lab) Close() error {
	var err error
	l.closeOnce.Do(func() {
		if l.cancel != nil {
			// The router first, so its PADT reaches a running AC.
			l.stopRouter()
			<-l.routerDone
			err = l.routerErr
			l.cancel()
			l.wg.Wait()
		}
		for _, c := range []*net.UDPConn{l.echo, l.echo6} {
			if c != nil {
				c.Close()
			}
		}
		if l.tcpEcho != nil {
			l.tcpEcho.Close()
		}
		if l.acConn != nil {
			l.acConn.Close()
		}
		if l.up != nil {
			l.up.Close()
		}
		if cerr := l.lab.Close(); cerr != nil && err == nil {
			err = cerr
		}
	})
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
