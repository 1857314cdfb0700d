// Package nat is pppfwd's NAT44: one Table per worker, each owning a
// disjoint slice of the external port (and ICMP id) space, touched by no
// other thread.
//
// STAND-IN: this file fixes the API the worker uses; the full conntrack
// (issue 4) replaces the implementation behind it.
package nat

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/dataplane/hdr"
)

// Verdict is what the worker does with a packet after translation.
type Verdict uint8

const (
	// Pass: translated in place, continue in the same direction.
	Pass Verdict = iota
	// Drop: discard; the reason is counted in the table's Stats.
	Drop
	// Hairpin: a LAN packet to the public address, translated in place
	// into a LAN-to-LAN packet; deliver it to the LAN.
	Hairpin
	// Reject: the flow cannot be created (table or host limit); the worker
	// answers with ICMP administratively prohibited and drops the packet.
	Reject
	// Redirect: the packet belongs to another worker's state; the worker
	// hands it to RedirectTarget() unchanged.
	Redirect
	// Local: addressed to the router itself; goes to the host stack.
	Local
)

// Range is a half-open range of external ports/ICMP ids [Lo, Hi).
type Range struct{ Lo, Hi uint16 }

// Partition splits [lo, hi) into n contiguous ranges, one per worker.
func Partition(n int, lo, hi uint16) []Range {
	out := make([]Range, n)
	span := (int(hi) - int(lo)) / n
	for i := range out {
		out[i].Lo = lo + uint16(i*span)
		out[i].Hi = lo + uint16((i+1)*span)
	}
	out[n-1].Hi = hi
	return out
}

// Config configures one worker's table.
type Config struct {
	PublicAddr uint32 // the PPPoE session's address (big-endian uint32)
	LANAddr    uint32 // LAN network
	LANBits    int    // LAN prefix length
	Ports      Range  // this worker's external ports / ICMP ids
	Capacity   int    // max entries
	Worker     int    // this worker's index
}

// Stats are per-table counters.
type Stats struct {
	Entries     uint64
	Allocations uint64
	Drops       uint64
}

// Table is one worker's NAT state.
type Table struct {
	cfg      Config
	stats    Stats
	redirect int
}

// New returns a table.
func New(cfg Config) (*Table, error) { return &Table{cfg: cfg}, nil }

// SetPublicAddr changes the public address and flushes every mapping.
func (t *Table) SetPublicAddr(a uint32) { t.cfg.PublicAddr = a }

// RedirectTarget is the worker the last Redirect verdict named.
func (t *Table) RedirectTarget() int { return t.redirect }

// Stats returns the counters.
func (t *Table) Stats() Stats { return t.stats }

// Expire runs an incremental expiry step visiting at most budget entries.
func (t *Table) Expire(now int64, budget int) int { return 0 }

// mapPort is the stand-in's stateless mapping into the worker's range.
func (t *Table) mapPort(p uint16) uint16 {
	span := t.cfg.Ports.Hi - t.cfg.Ports.Lo
	return t.cfg.Ports.Lo + p%span
}

// Outbound translates a LAN->WAN IPv4 packet (ip[0] is the IP header) in place.
func (t *Table) Outbound(ip []byte, now int64) Verdict {
	v := hdr.IPv4(ip)
	l4 := ip[v.HeaderLen():v.TotalLen()]
	old := v.Src()
	switch v.Protocol() {
	case hdr.ProtoTCP:
		tc := hdr.TCP(l4)
		tc.UpdateAddr(old, t.cfg.PublicAddr)
		tc.SetSrcPort(t.mapPort(tc.SrcPort()))
	case hdr.ProtoUDP:
		u := hdr.UDP(l4)
		u.UpdateAddr(old, t.cfg.PublicAddr)
		u.SetSrcPort(t.mapPort(u.SrcPort()))
	case hdr.ProtoICMP:
		ic := hdr.ICMP(l4)
		if !ic.IsQuery() {
			t.stats.Drops++
			return Drop
		}
		ic.SetID(t.mapPort(ic.ID()))
	default:
		t.stats.Drops++
		return Drop
	}
	v.SetSrc(t.cfg.PublicAddr)
	return Pass
}

// Inbound translates a WAN->LAN IPv4 packet in place. The stand-in maps
// every packet to LAN host .2 keeping the port.
func (t *Table) Inbound(ip []byte, now int64) Verdict {
	v := hdr.IPv4(ip)
	host := t.cfg.LANAddr | 2
	l4 := ip[v.HeaderLen():v.TotalLen()]
	switch v.Protocol() {
	case hdr.ProtoTCP:
		hdr.TCP(l4).UpdateAddr(v.Dst(), host)
	case hdr.ProtoUDP:
		hdr.UDP(l4).UpdateAddr(v.Dst(), host)
	case hdr.ProtoICMP:
	default:
		t.stats.Drops++
		return Drop
	}
	v.SetDst(host)
	_ = binary.BigEndian
	return Pass
}
