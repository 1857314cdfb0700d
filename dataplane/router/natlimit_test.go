package router

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane/nat"
)

// udpFixture is an IPv4/UDP packet from a LAN host to a remote:
// 10.0.0.5.40000 > 198.18.0.1.53: UDP, length 8 (checksum 0: none). The
// test rewrites the source address and port and the remote address.
var udpFixture = []byte{
	0x45, 0x00, 0x00, 0x1c, // IPv4, IHL 5, total length 28
	0x00, 0x01, 0x00, 0x00, // id 1, no fragment bits
	0x40, 0x11, 0x00, 0x00, // TTL 64, UDP, header checksum (not checked by nat)
	0x0a, 0x00, 0x00, 0x05, // src 10.0.0.5
	0xc6, 0x12, 0x00, 0x01, // dst 198.18.0.1
	0x9c, 0x40, 0x00, 0x35, // sport 40000, dport 53
	0x00, 0x08, 0x00, 0x00, // UDP length 8, checksum 0
}

// workerTable builds worker 0's NAT table of a one-worker router as
// dataplane's newWorker does, from the parsed configuration.
func workerTable(t *testing.T, c *Config) *nat.Table {
	t.Helper()
	nc := c.NAT
	nc.LANAddr, nc.LANBits = c.LANNet(), c.LANAddr.Bits()
	nc.Ranges = nat.Partition(1, c.PortLo, c.PortHi)
	nc.Ports, nc.Worker = nc.Ranges[0], 0
	nc.PublicAddr = 0x64400007 // 100.64.0.7
	tab, err := nat.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// openFlow sends a host's first UDP packet of a flow through tab.
func openFlow(tab *nat.Table, host uint32, sport uint16, remote uint32) nat.Verdict {
	b := append([]byte(nil), udpFixture...)
	binary.BigEndian.PutUint32(b[12:], host)
	binary.BigEndian.PutUint32(b[16:], remote)
	binary.BigEndian.PutUint16(b[20:], sport)
	return tab.Outbound(b, 1e9)
}

// TestDefaultMaxPerHost: without nat.max_per_host a LAN host gets an
// eighth of a worker table's capacity in flows; "nat.max_per_host 0" is
// no limit; a value given is kept.
func TestDefaultMaxPerHost(t *testing.T) {
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	for _, c := range []struct {
		extra string
		want  int
	}{
		{"", 8192},
		{"nat.capacity 1048576\n", 131072},
		{"nat.capacity 4096\n", 512},
		{"nat.capacity 64\n", 8},
		{"nat.max_per_host 0\n", 0},
		{"nat.max_per_host 0\nnat.capacity 4096\n", 0},
		{"nat.max_per_host 100\n", 100},
		{"nat.max_per_host = 100000\n", 100000},
	} {
		cfg, err := ParseConfig(strings.NewReader(base + c.extra))
		if err != nil {
			t.Fatalf("%q: %v", c.extra, err)
		}
		if cfg.NAT.MaxPerHost != c.want {
			t.Errorf("%q: max per host %d, want %d", c.extra, cfg.NAT.MaxPerHost, c.want)
		}
	}
}

// TestMaxPerHostDefaultProtects: with the default limit, one LAN host
// opening flows until it is refused (from one socket to many remotes, or
// a socket per flow) holds at most the limit and a quarter of the table,
// and another host can still open flows. With "nat.max_per_host 0" the
// same host fills the table and the other is refused.
func TestMaxPerHostDefaultProtects(t *testing.T) {
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	const hostA, hostB = 0x0a000005, 0x0a000006 // 10.0.0.5, 10.0.0.6
	for _, c := range []struct {
		name      string
		extra     string
		newSocket bool // each flow from a new source port (a mapping each)
		limited   bool
	}{
		{"default, one socket", "", false, true},
		{"default, a socket per flow", "", true, true},
		{"default, ADF, a socket per flow", "nat.filtering adf\n", true, true},
		{"no limit", "nat.max_per_host 0\n", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig(strings.NewReader(base + c.extra))
			if err != nil {
				t.Fatal(err)
			}
			tab := workerTable(t, cfg)
			capacity := tab.Capacity()
			limit := cfg.NAT.MaxPerHost
			n := 0
			for ; n <= capacity; n++ {
				sport := uint16(40000)
				if c.newSocket {
					sport = uint16(1024 + n)
				}
				v := openFlow(tab, hostA, sport, 0xc6120000+uint32(n)) // 198.18.x.y
				if v == nat.Reject {
					break
				}
				if v != nat.Pass {
					t.Fatalf("flow %d: %v", n, v)
				}
			}
			st := tab.Stats()
			if !c.limited {
				if st.Reasons[nat.ReasonTableFull] == 0 {
					t.Fatalf("no limit: host A refused after %d flows (%v), not by a full table", n, st.Reasons)
				}
				if v := openFlow(tab, hostB, 40000, 0xc6130001); v != nat.Reject {
					t.Fatalf("no limit, table full: host B's flow %v, want refused", v)
				}
				return
			}
			if limit == 0 {
				t.Fatalf("no default limit: host A opened %d flows of a %d-slot table (reasons %v)", n, capacity, st.Reasons)
			}
			if n != limit || st.Reasons[nat.ReasonHostLimit] != 1 {
				t.Fatalf("host A opened %d flows, want the limit %d (reasons %v)", n, limit, st.Reasons)
			}
			if share := int(st.Slots); share > capacity*3/8+1 || (cfg.NAT.Filtering == nat.EndpointIndependent && share > capacity/4+1) {
				t.Fatalf("host A holds %d of %d slots", share, capacity)
			}
			// A's other sockets are refused too; B opens its flows.
			if v := openFlow(tab, hostA, 39999, 0xc6130001); v != nat.Reject {
				t.Fatalf("host A at its limit, new socket: %v", v)
			}
			for i := range 1000 {
				if v := openFlow(tab, hostB, uint16(20000+i), 0xc6130000+uint32(i)); v != nat.Pass {
					t.Fatalf("host B's flow %d: %v (reasons %v)", i, v, tab.Stats().Reasons)
				}
			}
		})
	}
}
