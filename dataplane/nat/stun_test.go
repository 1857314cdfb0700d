package nat

import (
	"fmt"
	"testing"

	"github.com/pppfwd/pppfwd/hdr"
)

// Table-level version of the RFC 5780 NAT behaviour discovery (section 4.3
// mapping, 4.4 filtering): a STUN-like server with two addresses and two
// ports sees the mapped address of each probe and answers from the
// address/port the test asks for. The lead's version runs the same
// classification through the real pipeline.

type stunClient struct {
	tb    testing.TB
	w     *workers
	lan   uint32
	lport uint16
	k     int // LAN RX worker the client's packets arrive on
	now   int64
}

// probe sends a binding request to (dst, dport) and returns the mapped
// address the server sees.
func (c *stunClient) probe(dst uint32, dport uint16) (uint32, uint16) {
	b := build(c.tb, tuple{proto: hdr.ProtoUDP, src: c.lan, sport: c.lport, dst: dst, dport: dport})
	v, _ := c.w.lan(b, c.k, c.now)
	mustVerdict(c.tb, v, Pass, c.w.tabs[0])
	c.k = (c.k + 1) % len(c.w.tabs) // RSS spreads the 5-tuples
	d := decode(c.tb, b)
	return d.src, d.sport
}

// respond sends the server's answer from (src, sport) to the mapped
// address and reports whether the client received it.
func (c *stunClient) respond(src uint32, sport uint16, mapped uint32, mport uint16) bool {
	b := build(c.tb, tuple{proto: hdr.ProtoUDP, src: src, sport: sport, dst: mapped, dport: mport})
	v, _ := c.w.wan(b, c.now)
	if v != Pass {
		return false
	}
	d := decode(c.tb, b)
	return d.dst == c.lan && d.dport == c.lport
}

const (
	behEI  = "endpoint-independent"
	behAD  = "address-dependent"
	behAPD = "address-and-port-dependent"
)

// classify runs RFC 5780 tests I-III against servers (ip1, p1), (ip2, p2).
func (c *stunClient) classify(ip1, ip2 uint32, p1, p2 uint16) (mapping, filtering string) {
	// Mapping: test I to the primary, test II to the alternate address
	// (same port), test III to the alternate address and port.
	a1, x1 := c.probe(ip1, p1)
	a2, x2 := c.probe(ip2, p1)
	switch {
	case a1 == a2 && x1 == x2:
		mapping = behEI
	default:
		if a3, x3 := c.probe(ip2, p2); a3 == a2 && x3 == x2 {
			mapping = behAD
		} else {
			mapping = behAPD
		}
	}
	// Filtering: fresh socket, one request to the primary; test II asks
	// for a response from the alternate address and port, test III from
	// the primary address with the alternate port.
	c.lport++
	a, x := c.probe(ip1, p1)
	switch {
	case c.respond(ip2, p2, a, x):
		filtering = behEI
	case c.respond(ip1, p2, a, x):
		filtering = behAD
	default:
		filtering = behAPD
	}
	// Sanity: the primary's own answer always comes through.
	if !c.respond(ip1, p1, a, x) {
		c.tb.Fatal("the contacted server's response was filtered")
	}
	return mapping, filtering
}

func TestSTUNClassification(t *testing.T) {
	for _, tc := range []struct {
		workers   int
		filtering Filtering
		want      string
	}{
		{1, EndpointIndependent, behEI},
		{4, EndpointIndependent, behEI},
		{1, AddressDependent, behAD},
		{3, AddressDependent, behAD},
	} {
		t.Run(fmt.Sprintf("workers%d-%s", tc.workers, tc.want), func(t *testing.T) {
			cfg := baseConfig()
			cfg.Filtering = tc.filtering
			w := newWorkers(t, tc.workers, cfg)
			for _, lport := range []uint16{40000, 1025, 61000} {
				c := &stunClient{tb: t, w: w, lan: hostA, lport: lport, now: 5 * sec}
				mapping, filtering := c.classify(srv1, srv2, 3478, 3479)
				if mapping != behEI || filtering != tc.want {
					t.Fatalf("port %d: mapping %s, filtering %s; want %s, %s", lport, mapping, filtering, behEI, tc.want)
				}
			}
		})
	}
}
