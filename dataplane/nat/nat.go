package nat

import (
	"errors"
	"fmt"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
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
	// Reject: the flow cannot be created (table or host limit, no free
	// port); the worker answers with ICMP administratively prohibited and
	// drops the packet. The packet is unchanged.
	Reject
	// Redirect: the packet belongs to another worker's state; the worker
	// hands it, as it is now, to RedirectTarget(), which calls Outbound on
	// it (Redirect only comes from Outbound). A hairpinned packet may
	// already carry its translated source (src = public address) at that
	// point; the target finishes it and answers Hairpin.
	Redirect
	// Local: addressed to the router itself (ICMP echo request from the
	// WAN, LocalPorts, a LAN host using the public address for a port no
	// NAT range covers); goes to the host stack. The packet is unchanged.
	Local
)

var verdictNames = [...]string{"pass", "drop", "hairpin", "reject", "redirect", "local"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Range is a worker's share of the external ports / ICMP ids: the ports
// p of [Lo, Hi) with PortOwner(p, Of) == Slot, or every port of [Lo, Hi)
// when Of <= 1. The same worker also owns the low ports of [1, LowHi())
// with PortOwner(p, Of) == Slot (its low share, see Table): those only
// map LAN ports and ids below 1024 (RFC 4787 REQ-3a).
type Range struct {
	Lo, Hi   uint16
	Slot, Of uint16
}

// Contains reports whether p is in the range.
func (r Range) Contains(p uint16) bool {
	return p >= r.Lo && p < r.Hi && r.owns(p)
}

// ContainsLow reports whether p is in the range's low share.
func (r Range) ContainsLow(p uint16) bool {
	return p != 0 && p < r.LowHi() && r.owns(p)
}

// LowHi is the end of the low share's span [1, LowHi): below both 1024
// and Lo, so that the two never overlap.
func (r Range) LowHi() uint16 { return min(r.Lo, lowPorts) }

func (r Range) owns(p uint16) bool { return r.Of <= 1 || PortOwner(p, int(r.Of)) == int(r.Slot) }

// Len returns the number of ports in the range (the low share excluded).
func (r Range) Len() int {
	n := 0
	for p := int(r.Lo); p < int(r.Hi); p++ {
		if r.owns(uint16(p)) {
			n++
		}
	}
	return n
}

// lowPorts: LAN ports and ICMP ids below it map to external ports below
// it (RFC 4787 REQ-3a), from the low shares.
const lowPorts = 1024

// Partition splits [lo, hi) among n workers, interleaved by pairs of
// ports: worker i's range holds the ports p with PortOwner(p, n) == i.
// The owner of a LAN endpoint (EndpointOwner) is the worker whose range
// holds its port, so the port can be kept when free; both ports of a
// pair (2k, 2k+1) belong to one worker, so a range holding a port also
// holds ports of the other parity (a fallback can keep the parity).
// Interleaving spreads every LAN port range (ephemeral ranges included)
// evenly over the workers.
func Partition(n int, lo, hi uint16) []Range {
	out := make([]Range, n)
	for i := range out {
		out[i] = Range{Lo: lo, Hi: hi}
		if n > 1 {
			out[i].Slot, out[i].Of = uint16(i), uint16(n)
		}
	}
	return out
}

// Filtering selects the inbound filtering behaviour (RFC 4787 section 5).
type Filtering uint8

const (
	// EndpointIndependent filtering (default): any remote may reach a
	// mapped port.
	EndpointIndependent Filtering = iota
	// AddressDependent filtering: only remote addresses the LAN endpoint
	// has sent to may reach it (any remote port).
	AddressDependent
)

// Timeouts are the idle timers. Zero fields take the defaults.
type Timeouts struct {
	UDP            time.Duration // default 5 min, minimum 2 min (RFC 4787 REQ-5)
	TCPEstablished time.Duration // default and minimum 2 h 4 min (RFC 5382 REQ-5)
	TCPTransitory  time.Duration // default and minimum 4 min (RFC 5382 REQ-5)
	ICMP           time.Duration // default and minimum 60 s (RFC 5508 REQ-1)
}

// DefaultTimeouts are the RFC recommended values.
var DefaultTimeouts = Timeouts{
	UDP:            5 * time.Minute,
	TCPEstablished: 2*time.Hour + 4*time.Minute,
	TCPTransitory:  4 * time.Minute,
	ICMP:           60 * time.Second,
}

var minTimeouts = Timeouts{
	UDP:            2 * time.Minute,
	TCPEstablished: 2*time.Hour + 4*time.Minute,
	TCPTransitory:  4 * time.Minute,
	ICMP:           60 * time.Second,
}

// Forward is a static port forward (DNAT): Proto (TCP or UDP) ExtPort on
// the public address goes to LANAddr:LANPort, and that LAN endpoint always
// leaves with ExtPort. Worker owns it: the WAN steering (OwnerTable) sends
// ExtPort there and only that worker translates it; AssignForwards fills it.
type Forward struct {
	Proto   uint8
	ExtPort uint16
	LANAddr uint32
	LANPort uint16
	Worker  int
}

// Config configures one worker's table. All tables of a router get the
// same Ranges, Forwards, LocalPorts and LAN prefix.
type Config struct {
	PublicAddr uint32 // the PPPoE session's address (big-endian uint32); 0 = none yet
	LANAddr    uint32 // LAN network
	LANBits    int    // LAN prefix length; sources outside it are dropped (0 = any)
	Ports      Range  // this worker's external ports / ICMP ids
	Capacity   int    // max table slots (flows + mappings + ...); 0 = 65536
	Worker     int    // this worker's index

	// Ranges are every worker's port ranges (Ranges[Worker] == Ports);
	// nil means a single worker. len(Ranges) is the worker count used by
	// EndpointOwner.
	Ranges []Range
	// Forwards are the static port forwards, with Worker set.
	Forwards []Forward
	// LocalPorts are external ports for the router's own sockets: never
	// allocated, and WAN traffic to them is Local.
	LocalPorts Range
	// Filtering is EIF (default) or ADF.
	Filtering Filtering
	// Timeouts; zero fields take DefaultTimeouts.
	Timeouts Timeouts
	// MaxPerHost limits the flows of one LAN address in this table (so
	// per worker); 0 = no limit.
	MaxPerHost int
	// MaxBytes bounds the table's memory; Capacity is lowered to fit.
	// 0 = no bound.
	MaxBytes int
	// HashSeed seeds the flow hash; 0 picks one from the clock.
	HashSeed uint64
}

// Reason is why a packet was dropped or rejected.
type Reason uint8

// Drop and reject reasons.
const (
	ReasonMalformed      Reason = iota // header too short / inconsistent
	ReasonFragment                     // IPv4 fragment
	ReasonProto                        // transport protocol not translated
	ReasonICMPType                     // ICMP type not translated in this direction
	ReasonNoAddr                       // no public address yet
	ReasonNotLAN                       // LAN packet with a source outside the LAN prefix
	ReasonNotPublic                    // WAN packet not addressed to the public address
	ReasonNoMapping                    // unsolicited: no mapping and no forward
	ReasonFiltered                     // mapping exists, ADF filter refused the remote
	ReasonNoState                      // needs a flow that does not exist (echo reply, ICMP error, lone RST)
	ReasonNotOwner                     // port owned by another worker (steering error)
	ReasonHairpinICMP                  // ICMP error to/about the public address from the LAN
	ReasonTableFull                    // reject: capacity reached
	ReasonHostLimit                    // reject: MaxPerHost reached
	ReasonPortsExhausted               // reject: no free port in the worker's range
	NumReasons
)

var reasonNames = [NumReasons]string{
	"malformed", "fragment", "proto", "icmp_type", "no_addr", "not_lan",
	"not_public", "no_mapping", "filtered", "no_state", "not_owner",
	"hairpin_icmp", "table_full", "host_limit", "ports_exhausted",
}

func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Stats are per-table counters.
type Stats struct {
	Entries       uint64 // live flows (conntrack entries), forward states included
	Forwards      uint64 // live forward states (per remote of a port forward)
	Mappings      uint64 // live dynamic mappings (external ports in use)
	Slots         uint64 // used table slots (flows, mappings, permissions, host counters, forward states)
	Capacity      uint64 // slot capacity
	Allocations   uint64 // flows and forward states created
	MappingAllocs uint64 // mappings (external ports) allocated
	Expired       uint64 // flows and forward states removed by timeout
	Flushes       uint64 // public address changes that flushed the table
	Drops         uint64 // packets answered Drop (sum of drop reasons)
	Rejects       uint64 // packets answered Reject
	Redirects     uint64
	Hairpins      uint64
	Locals        uint64
	Reasons       [NumReasons]uint64 // drops and rejects by reason
	// ForwardUntracked counts forward packets to a new remote that got no
	// forward state (forward share or table full). They pass; ICMP errors
	// quoting them are dropped.
	ForwardUntracked uint64
}

// New returns a table.
func New(cfg Config) (*Table, error) {
	if cfg.Ports.Len() == 0 {
		if cfg.Ports.Of > 1 {
			return nil, fmt.Errorf("nat: worker %d of %d has no port in %d-%d (%d workers need %d ports or more)",
				cfg.Ports.Slot, cfg.Ports.Of, cfg.Ports.Lo, cfg.Ports.Hi, cfg.Ports.Of, 2*int(cfg.Ports.Of)-1)
		}
		return nil, errors.New("nat: empty port range")
	}
	if cfg.LANBits < 0 || cfg.LANBits > 32 {
		return nil, fmt.Errorf("nat: LAN prefix length %d", cfg.LANBits)
	}
	if cfg.Capacity < 0 || cfg.MaxPerHost < 0 || cfg.MaxBytes < 0 {
		return nil, errors.New("nat: negative limit")
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = 1 << 16
	}
	if cfg.Capacity > 1<<30 {
		return nil, errors.New("nat: capacity above 2^30")
	}
	if cfg.Filtering > AddressDependent {
		return nil, fmt.Errorf("nat: filtering %d", cfg.Filtering)
	}
	if cfg.Ranges == nil {
		if cfg.Worker != 0 {
			return nil, errors.New("nat: Worker != 0 needs Ranges")
		}
		cfg.Ranges = []Range{cfg.Ports}
	}
	if cfg.Worker < 0 || cfg.Worker >= len(cfg.Ranges) || cfg.Ranges[cfg.Worker] != cfg.Ports {
		return nil, errors.New("nat: Ranges[Worker] must equal Ports")
	}
	if len(cfg.Ranges) > 256 {
		return nil, errors.New("nat: more than 256 workers")
	}
	to, err := cfg.Timeouts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Timeouts = to
	if err := checkForwards(cfg.Ranges, cfg.Forwards); err != nil {
		return nil, err
	}
	t := &Table{cfg: cfg}
	t.init()
	if cfg.MaxBytes > 0 {
		fixed := t.fixedBytes()
		if fixed+minSlots*entrySize > cfg.MaxBytes {
			return nil, fmt.Errorf("nat: MaxBytes %d below the fixed %d bytes", cfg.MaxBytes, fixed+minSlots*entrySize)
		}
		slots := minSlots
		for slots*2*entrySize <= cfg.MaxBytes-fixed {
			slots *= 2
		}
		if c := slots / 4 * 3; c < cfg.Capacity {
			cfg.Capacity = c
			t.cfg.Capacity = c
		}
	}
	t.alloc()
	return t, nil
}

func (to Timeouts) withDefaults() (Timeouts, error) {
	pick := func(v, def, min time.Duration, name string) (time.Duration, error) {
		if v == 0 {
			return def, nil
		}
		if v < min {
			return 0, fmt.Errorf("nat: %s timeout %v below the RFC minimum %v", name, v, min)
		}
		if v > 1<<30*time.Second {
			return 0, fmt.Errorf("nat: %s timeout %v too long", name, v)
		}
		return v, nil
	}
	var out Timeouts
	var err error
	if out.UDP, err = pick(to.UDP, DefaultTimeouts.UDP, minTimeouts.UDP, "UDP"); err != nil {
		return out, err
	}
	if out.TCPEstablished, err = pick(to.TCPEstablished, DefaultTimeouts.TCPEstablished, minTimeouts.TCPEstablished, "TCP established"); err != nil {
		return out, err
	}
	if out.TCPTransitory, err = pick(to.TCPTransitory, DefaultTimeouts.TCPTransitory, minTimeouts.TCPTransitory, "TCP transitory"); err != nil {
		return out, err
	}
	if out.ICMP, err = pick(to.ICMP, DefaultTimeouts.ICMP, minTimeouts.ICMP, "ICMP"); err != nil {
		return out, err
	}
	return out, nil
}

func checkForwards(ranges []Range, fwds []Forward) error {
	for i, f := range fwds {
		if f.Proto != hdr.ProtoTCP && f.Proto != hdr.ProtoUDP {
			return fmt.Errorf("nat: forward %d: protocol %d (TCP or UDP only)", i, f.Proto)
		}
		if f.ExtPort == 0 || f.LANPort == 0 || f.LANAddr == 0 {
			return fmt.Errorf("nat: forward %d: zero port or address", i)
		}
		if f.Worker < 0 || f.Worker >= len(ranges) {
			return fmt.Errorf("nat: forward %d: worker %d of %d", i, f.Worker, len(ranges))
		}
		for j, r := range ranges {
			if (r.Contains(f.ExtPort) || r.ContainsLow(f.ExtPort)) && j != f.Worker {
				return fmt.Errorf("nat: forward %d: port %d is in worker %d's range, not %d's", i, f.ExtPort, j, f.Worker)
			}
		}
		for _, g := range fwds[:i] {
			if g.ExtPort == f.ExtPort && g.Worker != f.Worker {
				return fmt.Errorf("nat: forward %d: port %d forwarded by two workers", i, f.ExtPort)
			}
			if g.Proto == f.Proto && g.ExtPort == f.ExtPort {
				return fmt.Errorf("nat: forward %d: duplicate external port %d", i, f.ExtPort)
			}
			if g.Proto == f.Proto && g.LANAddr == f.LANAddr && g.LANPort == f.LANPort {
				return fmt.Errorf("nat: forward %d: LAN endpoint forwarded twice", i)
			}
		}
	}
	return nil
}
