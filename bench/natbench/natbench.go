package natbench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
)

// Result is one measurement. The *_ns figures are wall-clock ns per
// operation on one core; lookup, outbound and inbound are the fastest of
// several passes over every flow.
type Result struct {
	Entries       int     `json:"entries"`         // table capacity in slots (the N asked for)
	Flows         int     `json:"flows"`           // flows created (conntrack entries)
	LookupNs      float64 `json:"lookup_ns"`       // flow lookup (hash probe), random order, table full
	OutboundNs    float64 `json:"outbound_ns"`     // Outbound on an existing flow: lookup + in-place rewrite
	InboundNs     float64 `json:"inbound_ns"`      // Inbound (the reply) on an existing flow: lookup + in-place rewrite
	InsertNs      float64 `json:"insert_ns"`       // Outbound creating a flow (and 1/16 of the time a mapping)
	ExpireNs      float64 `json:"expire_ns"`       // incremental Expire, per flow removed (with its mapping/host refs)
	BytesPerEntry float64 `json:"bytes_per_entry"` // table memory / entries
	TableBytes    int     `json:"table_bytes"`     // all memory of the table
	FixedBytes    int     `json:"fixed_bytes"`     // per-port arrays (independent of entries)
}

const (
	hosts   = 256
	fanout  = 16
	pubAddr = 0xcb007107 // 203.0.113.7
	lanNet  = 0x0a000000 // 10.0.0.0/16
)

// flow i: mapping j = i / fanout on host j % hosts, LAN port a bijection
// of j, remote 198.18.(i % fanout).1:443.
func tupleOf(i int) (lan uint32, lport uint16, rem uint32, rport uint16) {
	j := i / fanout
	lan = lanNet | uint32(j%hosts)
	lport = uint16(1024 + (j*40503)%64511)
	rem = 0xc6120001 | uint32(i%fanout)<<8
	return lan, lport, rem, 443
}

// udpPacket writes an IPv4/UDP header (no checksum) from src:sport to
// dst:dport into b.
func udpPacket(b []byte, src uint32, sport uint16, dst uint32, dport uint16) {
	clear(b[:28])
	b[0], b[2], b[3], b[8], b[9] = 0x45, 0, 28, 64, hdr.ProtoUDP
	binary.BigEndian.PutUint32(b[12:], src)
	binary.BigEndian.PutUint32(b[16:], dst)
	hdr.IPv4(b).ComputeChecksum()
	binary.BigEndian.PutUint16(b[20:], sport)
	binary.BigEndian.PutUint16(b[22:], dport)
	b[25] = 8
}

// Run fills a table of entries slots and measures it.
func Run(entries int) (Result, error) {
	if entries < 64 || entries > 1<<26 {
		return Result{}, fmt.Errorf("natbench: entries %d out of [64, 2^26]", entries)
	}
	maps := entries * 9 / 10 / (fanout + 1)
	if maps > 64511 {
		maps = 64511
	}
	flows := maps * fanout
	tab, err := nat.New(nat.Config{PublicAddr: pubAddr, LANAddr: lanNet, LANBits: 16,
		Ports: nat.Range{Lo: 1024, Hi: 65535}, Capacity: entries, HashSeed: 0x5eed})
	if err != nil {
		return Result{}, err
	}
	res := Result{Entries: entries, Flows: flows, TableBytes: tab.MemoryBytes(), FixedBytes: tab.FixedBytes()}
	res.BytesPerEntry = float64(res.TableBytes) / float64(entries)
	var pkt [64]byte
	now := int64(time.Second)

	// Insert, in a shuffled order so that neither the hash table nor the
	// port allocator sees a sequential pattern.
	order := make([]uint32, flows)
	for i := range order {
		order[i] = uint32(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	start := time.Now()
	for _, i := range order {
		lan, lport, rem, rport := tupleOf(int(i))
		udpPacket(pkt[:], lan, lport, rem, rport)
		if v := tab.Outbound(pkt[:28], now); v != nat.Pass {
			return res, fmt.Errorf("natbench: insert of flow %d: %v (stats %+v)", i, v, tab.Stats())
		}
	}
	res.InsertNs = perOp(time.Since(start), flows)

	// Lookups in another random order, at least 2^20 of them.
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	var err2 error
	res.LookupNs = best(max(passes, (1<<20)/flows), flows, func() {
		for _, i := range order {
			lan, lport, rem, rport := tupleOf(int(i))
			if _, ok := tab.Lookup(hdr.ProtoUDP, lan, lport, rem, rport, now); !ok && err2 == nil {
				err2 = fmt.Errorf("natbench: lookup of flow %d missed", i)
			}
		}
	})
	if err2 != nil {
		return res, err2
	}

	res.OutboundNs = best(passes, flows, func() {
		for _, i := range order {
			lan, lport, rem, rport := tupleOf(int(i))
			udpPacket(pkt[:], lan, lport, rem, rport)
			if v := tab.Outbound(pkt[:28], now); v != nat.Pass && err2 == nil {
				err2 = fmt.Errorf("natbench: outbound: %v", v)
			}
		}
	})
	if err2 != nil {
		return res, err2
	}

	// Replies: remote -> public address : the flow's external port.
	exts := make([]uint16, flows)
	for _, i := range order {
		lan, lport, rem, rport := tupleOf(int(i))
		ext, ok := tab.Lookup(hdr.ProtoUDP, lan, lport, rem, rport, now)
		if !ok {
			return res, fmt.Errorf("natbench: flow %d gone", i)
		}
		exts[i] = ext
	}
	res.InboundNs = best(passes, flows, func() {
		for _, i := range order {
			_, _, rem, rport := tupleOf(int(i))
			udpPacket(pkt[:], rem, rport, pubAddr, exts[i])
			if v := tab.Inbound(pkt[:28], now); v != nat.Pass && err2 == nil {
				err2 = fmt.Errorf("natbench: inbound: %v", v)
			}
		}
	})
	if err2 != nil {
		return res, err2
	}

	// Everything times out; the worker's Expire steps clean up.
	now += int64(24 * time.Hour)
	removed := 0
	start = time.Now()
	for steps := 0; tab.Stats().Entries > 0; steps++ {
		removed += tab.Expire(now, 256)
		if steps > 64*entries {
			return res, fmt.Errorf("natbench: expiry stalled at %d entries", tab.Stats().Entries)
		}
	}
	res.ExpireNs = perOp(time.Since(start), removed)
	if s := tab.Stats(); s.Slots != 0 {
		return res, fmt.Errorf("natbench: %d slots left after expiry", s.Slots)
	}
	return res, nil
}

// passes is how often the repeatable measurements (lookup, outbound,
// inbound: no state changes) run; they report their fastest pass, the
// one the fewest other processes of a shared machine disturbed.
const passes = 15

// best runs pass n times and returns the fastest pass's ns per op, ops
// operations a pass.
func best(n, ops int, pass func()) float64 {
	min := 0.0
	for k := range n {
		start := time.Now()
		pass()
		if ns := perOp(time.Since(start), ops); k == 0 || ns < min {
			min = ns
		}
	}
	return min
}

func perOp(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / float64(n)
}
