package router

import (
	"fmt"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/afpacket"
	"github.com/pppfwd/pppfwd/nic/afxdp"
	"github.com/pppfwd/pppfwd/nic/ethtool"
	"github.com/pppfwd/pppfwd/nic/netmap"
)

// PortSpec says how to open one of a router's two ports. The router and
// `bench io` both open their ports with OpenPort, so a benchmark measures
// the ports the router runs on.
type PortSpec struct {
	Backend   string // afpacket (the default), afxdp or netmap
	Interface string
	Queues    int // one per worker
	// LAN asks for the LAN port's owner delivery: each frame goes to the
	// queue of the worker owning its flow (nat.PortOwner of its source
	// port, Forwards at their Worker). Afpacket does it with its fanout
	// program; afxdp and netmap with NIC flow-steering rules where the
	// driver has them and a power-of-two worker count lets masks express
	// the owner. Otherwise frames arrive by the NIC's RSS hash and the
	// workers hand the others' flows over (Engine counts them as
	// redirected).
	LAN bool
	// WAN asks for the WAN port's owner delivery: each PPPoE frame goes
	// to the queue of the worker owning its flow (the owner of its
	// destination port, Forwards at their Worker; IPv6 by the address
	// pair), so that every worker steers and handles its own frames
	// (dataplane.SteerLocal). Afpacket does it with its WAN fanout
	// program; elsewhere NICs cannot hash PPPoE and frames arrive
	// unsorted (PortInfo.Owner "hand-over").
	WAN      bool
	Forwards []nat.Forward // with Worker set (nat.AssignForwards)
	// EtherTypes the afxdp program hands to pppfwd (the rest go to the
	// kernel); nil: all.
	EtherTypes []uint16
	XDPMode    afxdp.Mode // afxdp
	// BusyPoll asks an afxdp port for NAPI busy polling
	// (afxdp.Options.BusyPoll).
	BusyPoll bool
	TxMode   afpacket.TxMode // afpacket
	RxRing   afpacket.RxRing // afpacket
	// Promisc, RxBlockSize and RxBlocks: afpacket (0: its defaults).
	Promisc               bool
	RxBlockSize, RxBlocks int
}

// PortInfo describes an opened port.
type PortInfo struct {
	// Mode is the XDP attach mode (afxdp) or the TX mode (afpacket).
	Mode string
	// Owner says how LAN (or, with PortSpec.WAN, WAN) frames reach their
	// owner worker: "fanout-ebpf" (afpacket's program), "nic-rules"
	// (flow-steering rules), or "hand-over" with the reason in OwnerErr.
	Owner    string
	OwnerErr error
	// RingErr says why an afpacket port asked for afpacket.RxAuto uses
	// RxFrames instead (nil when it does not).
	RingErr error
	// CsumUnknown: the port cannot tell a checksum a sender left
	// unfinished (afxdp in copy mode: afxdp.Port.ChecksumsUnknown).
	CsumUnknown bool
	// BusyPoll: the afxdp port busy-polls (PortSpec.BusyPoll in native
	// mode); BusyPollErr why not although asked to.
	BusyPoll    bool
	BusyPollErr error
	// Undo removes what OpenPort configured on the NIC beyond the port
	// (flow-steering rules); call it after closing the port. Never nil.
	Undo func()
}

// OpenPort opens s.Backend on s.Interface.
func OpenPort(s PortSpec) (nic.Port, PortInfo, error) {
	info := PortInfo{Undo: func() {}}
	owned := s.LAN && s.Queues > 1
	switch s.Backend {
	case "afxdp", "netmap":
		var p nic.Port
		var err error
		if s.Backend == "afxdp" {
			var xp *afxdp.Port
			xp, err = afxdp.Open(s.Interface, afxdp.Options{Queues: s.Queues, Mode: s.XDPMode, EtherTypes: s.EtherTypes, BusyPoll: s.BusyPoll})
			if err == nil {
				p, info.Mode, info.CsumUnknown = xp, xp.Mode().String(), xp.ChecksumsUnknown()
				info.BusyPoll, info.BusyPollErr = xp.BusyPoll()
			}
		} else {
			p, err = netmap.Open(s.Interface, netmap.Config{Queues: s.Queues})
		}
		if err != nil {
			return nil, info, err
		}
		if s.WAN && s.Queues > 1 {
			info.Owner, info.OwnerErr = "hand-over", fmt.Errorf("%s cannot steer PPPoE frames by owner", s.Backend)
		}
		if owned {
			info.Owner = "nic-rules"
			rules, err := ethtool.PortPairRules(s.Queues, ownerRules(s.Forwards))
			var st *ethtool.Steering
			if err == nil {
				st, err = ethtool.SteerPorts(s.Interface, rules)
			}
			if err != nil {
				info.Owner, info.OwnerErr = "hand-over", err
			} else {
				info.Undo = func() { st.Remove() }
			}
		}
		return p, info, nil
	case "", "afpacket":
		c := afpacket.Config{Queues: s.Queues, Promisc: s.Promisc, BlockSize: s.RxBlockSize, Blocks: s.RxBlocks, TxMode: s.TxMode, RxRing: s.RxRing}
		if owned {
			c.FanoutOwner = &afpacket.OwnerSpec{Workers: s.Queues}
			for _, f := range s.Forwards {
				c.FanoutOwner.Forwards = append(c.FanoutOwner.Forwards,
					afpacket.OwnerForward{Proto: f.Proto, Addr: f.LANAddr, Port: f.LANPort, Queue: f.Worker})
			}
		}
		wanOwned := s.WAN && !s.LAN && s.Queues > 1
		if wanOwned {
			c.FanoutWAN = wanSpec(s.Queues, s.Forwards)
		}
		p, err := afpacket.Open(s.Interface, c)
		if err != nil {
			return nil, info, err
		}
		info.Mode = p.TxMode().String()
		if s.RxRing == afpacket.RxAuto {
			_, info.RingErr = p.RxRing()
		}
		if owned || wanOwned {
			info.Owner = "fanout-ebpf"
			if _, err := p.FanoutOwner(); err != nil {
				info.Owner, info.OwnerErr = "hand-over", err
			}
		}
		return p, info, nil
	}
	return nil, info, fmt.Errorf("backend %q: want afpacket, afxdp or netmap", s.Backend)
}

// wanSpec is the WAN fanout function for the engine's owners: PortQueue
// of the external port (nat.PortOwner), except for forwards the engine
// assigned elsewhere (fwds with Worker set).
func wanSpec(workers int, fwds []nat.Forward) *afpacket.WANSpec {
	s := &afpacket.WANSpec{Workers: workers}
	for _, f := range fwds {
		if f.Worker != afpacket.PortQueue(f.ExtPort, workers) {
			s.Ports = append(s.Ports, afpacket.WANPort{Port: f.ExtPort, Queue: f.Worker})
		}
	}
	return s
}

// ownerRules are the flow-steering rules of port forwards: a forward's
// LAN endpoint belongs to the worker owning its external port.
func ownerRules(fwds []nat.Forward) []ethtool.PortRule {
	var r []ethtool.PortRule
	for _, f := range fwds {
		r = append(r, ethtool.PortRule{Proto: f.Proto, Addr: f.LANAddr, Port: f.LANPort, Mask: 0xffff, Queue: f.Worker})
	}
	return r
}

// portSpec is the spec of the router's port on ifname.
func (c *Config) portSpec(ifname string, ethertypes []uint16) PortSpec {
	s := PortSpec{Backend: c.Backend, Interface: ifname, Queues: c.Workers, EtherTypes: ethertypes, BusyPoll: c.BusyPoll}
	if c.Workers > 1 {
		// The engine's owners: the same ranges and forward assignment
		// as dataplane.New makes.
		lo, hi := c.PortLo, c.PortHi
		if lo == 0 && hi == 0 {
			lo, hi = 1024, 65535
		}
		s.LAN, s.WAN = ifname == c.LANInterface, ifname == c.WANInterface
		s.Forwards = append([]nat.Forward(nil), c.NAT.Forwards...)
		nat.AssignForwards(nat.Partition(c.Workers, lo, hi), s.Forwards)
	}
	return s
}

// OpenHostRings opens the host rings of the LAN interface ifname (netmap,
// NR_REG_SW): the port of the box's own stack, which keeps the interface
// and its addresses, as a host TAP is on Linux. Recv returns what the
// stack sends on the interface; Send delivers to it. The interface's
// offloads whose frames netmap drops on the way from the stack must be
// off (HostOffloadsOff).
func OpenHostRings(ifname string) (nic.Port, error) { return netmap.OpenHost(ifname) }

// HostOffloadsOff switches off the offloads of the LAN interface ifname
// that would keep the box's own TCP and UDP from the host rings
// (netmap.DisableHostOffloads); when that fails it logs why and goes on.
// Call it before the interface's rings are opened: a driver may reset
// the NIC for a capability change.
func HostOffloadsOff(ifname string, logf func(string, ...any)) {
	if err := netmap.DisableHostOffloads(ifname); err != nil {
		logf("pppfwd: LAN %s: %v; the box's own TCP and UDP may not get out (netmap drops frames the NIC is to finish)", ifname, err)
	}
}

// HostGatewayMAC is the MAC pppfwd gives the box's own stack, on the
// netmap host rings, for the addresses beyond the LAN: the LAN port's
// MAC made locally administered, its last bit flipped, so that it is
// never the stack's own (control.Config.HostGateway). It is never sent
// on the LAN.
func HostGatewayMAC(lan [6]byte) [6]byte {
	gw := lan
	gw[0] |= 0x02
	gw[5] ^= 0x01
	return gw
}
