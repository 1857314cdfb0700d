// The router's own traffic: the host stack (the control plane's host
// port, a TAP carrying the router's LAN address) reaches the session as a
// LAN host does, and what comes back for the router's own addresses goes
// to it, not out of the LAN port.
//
// Up: the control plane hands the worker a frame the host sent to a
// destination beyond the LAN (Send FromHost). The worker copies it into a
// frame of its own pool, marks it flagFromHost and runs it through the
// LAN receive path (fromLAN, fromLAN6): the one difference is that its
// source must be the router's LAN address (IPv4) or LAN prefix address
// (IPv6), which a frame from the LAN port never may be. Ownership hand-over,
// the NAT (the router's address is translated to the public address and
// a port of the owner's range like any LAN host's), the IPv6 firewall's
// state, TTL, MSS clamping, fragmenting, shaping and counters are the
// LAN path's. A frame of the host's that the fast path would hand to the
// control plane (for the LAN, the router itself, not IP) is dropped
// (DropHostLocal): the control plane would give it back to the host.
//
// Down: a packet whose destination after the NAT is the router's LAN
// address, or an IPv6 packet to the LAN prefix's router address that the
// firewall admits, leaves (after the downlink shaper, when there is one)
// as an Ethernet frame to RouterMAC on the control plane's exception
// link (ToHost), which writes it to the host port. ICMP errors about a
// host frame go the same way.

package dataplane

import (
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// fromHost routes the injected frame in (the engine's, given back to
// Send's pool after drainInject) through the LAN receive path as a copy
// in a frame of the worker's own pool.
func (w *Worker) fromHost(in *nic.Frame) {
	f := w.pool.Get()
	if f == nil {
		w.c.Drops[DropNoBuffer]++
		return
	}
	if !f.SetData(in.Data()) {
		w.drop(f, DropBadEthernet)
		return
	}
	f.Flags = flagFromHost
	w.c.FromHost++
	w.fromLAN(f)
}

// lanSource reports whether an IPv4 frame from the LAN side may come
// from src: a LAN host's address from the LAN port, the router's own (and
// only that) from the host stack.
func (w *Worker) lanSource(f *nic.Frame, src uint32) bool {
	if f.Flags&flagFromHost != 0 {
		return src == w.cfg.RouterAddr
	}
	return src&w.lanMask == w.cfg.LANNet && src != w.cfg.RouterAddr
}

// lanException hands a LAN frame the fast path does not route to the
// control plane, or drops one the host stack sent (see the file comment).
func (w *Worker) lanException(f *nic.Frame) {
	if f.Flags&flagFromHost != 0 {
		w.drop(f, DropHostLocal)
		return
	}
	w.toException(f, FromLAN)
}

// toHost addresses the IP packet behind f's Ethernet header to the host
// stack (RouterMAC both ways, type et) and hands it over.
func (w *Worker) toHost(f *nic.Frame, et uint16) {
	eth := hdr.Ethernet(f.Data())
	eth.SetAddrs(w.cfg.RouterMAC, w.cfg.RouterMAC)
	eth.SetType(et)
	w.handToHost(f)
}

// handToHost queues the Ethernet frame f for the host stack.
func (w *Worker) handToHost(f *nic.Frame) {
	w.c.ToHost++
	w.toException(f, ToHost)
}
