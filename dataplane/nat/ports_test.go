package nat

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pppfwd/pppfwd/hdr"
)

// holder is the worker whose range or low share holds port p, or -1.
func holder(ranges []Range, p uint16) int {
	for j, r := range ranges {
		if r.Contains(p) || r.ContainsLow(p) {
			return j
		}
	}
	return -1
}

// TestPortIndex checks the compact port index against Range for every
// port: index is a bijection between the range's ports (low share
// included) and the valid indexes, port inverts it, and the division by
// the magic multiplier is exact.
func TestPortIndex(t *testing.T) {
	for _, c := range []struct {
		lo, hi uint16
		n      int
	}{
		{1024, 65535, 1}, {1024, 65535, 2}, {1024, 65535, 3}, {1024, 65535, 7}, {1024, 65535, 256},
		{2000, 2012, 3}, {4000, 4004, 1}, {1, 1024, 2}, {500, 60001, 5}, {1025, 1031, 2}, {0, 65535, 4},
	} {
		ranges := Partition(c.n, c.lo, c.hi)
		seen := make([]int, 65536)
		for w, r := range ranges {
			x := newPortIndex(r)
			used := make([]bool, x.span)
			for p := 0; p < 65536; p++ {
				q := uint16(p)
				if b := uint32(p) >> 1; uint32(uint64(b)*x.magic>>32) != b/x.n {
					t.Fatalf("n %d: magic division of %d", x.n, b)
				}
				i := x.index(q)
				mine := r.Contains(q) || r.ContainsLow(q)
				if mine != (i < x.span) {
					t.Fatalf("%+v worker %d port %d: index %d of %d, holds %v", c, w, p, i, x.span, mine)
				}
				if !mine {
					continue
				}
				seen[p]++
				if used[i] || x.port(i) != uint32(p) || !x.valid(i) || i&1 != uint32(p)&1 {
					t.Fatalf("%+v worker %d port %d: index %d taken %v, inverse %d", c, w, p, i, used[i], x.port(i))
				}
				used[i] = true
			}
			for i, u := range used {
				if !u && x.valid(uint32(i)) {
					t.Fatalf("%+v worker %d: index %d valid without a port", c, w, i)
				}
			}
		}
		for p, k := range seen {
			want := 0
			if (p >= int(c.lo) && p < int(c.hi)) || (p != 0 && p < 1024 && p < int(c.lo)) {
				want = 1
			}
			if k != want {
				t.Fatalf("%+v: port %d held by %d workers, want %d", c, p, k, want)
			}
		}
	}
}

// TestPortOwnershipAndPreservation: with 2 and 3 workers (Partition of
// 1024-65535), every LAN endpoint is owned by (LANSteer steers it to, and
// its frame is translated without a hand-over on) the worker holding its
// port; a port of 1024 and up leaves unchanged when free and with its
// parity when not (RFC 4787 REQ-4); a port below 1024 leaves in 1-1023
// (REQ-3a), unchanged when free. ICMP echo ids alike.
func TestPortOwnershipAndPreservation(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n, "workers"), func(t *testing.T) {
			cfg := baseConfig()
			cfg.Capacity = 1 << 16
			w := newWorkers(t, n, cfg)
			ranges := w.tabs[0].cfg.Ranges
			for p := 1; p < 65536; p++ {
				k := holder(ranges, uint16(p))
				if p == 65535 { // outside [1024, 65535): any worker's
					k = PortOwner(uint16(p), n)
				}
				if o := EndpointOwner(hdr.ProtoUDP, hostA, uint16(p), n); o != k || int(w.owners[p]) != k {
					t.Fatalf("port %d: endpoint owner %d, WAN owner %d, held by %d", p, o, w.owners[p], k)
				}
			}
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			used := map[[2]uint16]bool{} // {proto, external port}
			hosts := []uint32{hostA, hostB, hostC, hostA + 7}
			var kept, parity, low int
			const endpoints = 10000
			for i := range endpoints {
				proto := []uint8{hdr.ProtoUDP, hdr.ProtoTCP, hdr.ProtoICMP}[i%3]
				sport := uint16(1 + rng.IntN(65534))
				if i%50 == 0 {
					sport = uint16(1 + rng.IntN(1023))
				}
				tu := tuple{proto: proto, src: hosts[rng.IntN(len(hosts))], sport: sport, dst: srv1, dport: 443, flags: hdr.TCPSyn}
				if proto == hdr.ProtoICMP {
					tu.icmp, tu.dport, tu.flags = hdr.ICMPEcho, 0, 0
				}
				b := build(t, tu)
				k := w.steer.Owner(b)
				if want := holder(ranges, sport); sport < 65535 && k != want {
					t.Fatalf("%+v steered to %d, port held by %d", tu, k, want)
				}
				hops := w.hops
				v, at := w.lan(b, k, 0)
				if v != Pass || at != k || w.hops != hops {
					t.Fatalf("%+v: verdict %v at worker %d (arrived at %d)", tu, v, at, k)
				}
				off := 20 // the source port; the echo id
				if proto == hdr.ProtoICMP {
					off = 24
				}
				ext := binary.BigEndian.Uint16(b[off:])
				key := [2]uint16{uint16(proto), sport}
				if m := w.tabs[k].findMap(protoIndex(proto), tu.src, sport); m >= 0 && w.tabs[k].slots[m].ext != ext {
					t.Fatalf("%+v: mapping %d, packet %d", tu, w.tabs[k].slots[m].ext, ext)
				}
				free := !used[key] && sport != 65535
				switch {
				case ext == sport:
					kept++
				case free:
					t.Fatalf("%+v: free port left as %d", tu, ext)
				case ext&1 != sport&1:
					t.Fatalf("%+v: port taken, left as %d: parity lost", tu, ext)
				}
				if ext&1 == sport&1 {
					parity++
				}
				if sport < 1024 {
					low++
					if ext == 0 || ext >= 1024 {
						t.Fatalf("%+v: low port left as %d", tu, ext)
					}
				}
				used[[2]uint16{uint16(proto), ext}] = true
				if i%97 == 0 {
					decode(t, b) // checksums
				}
			}
			if low == 0 {
				t.Fatal("no low port drawn")
			}
			t.Logf("%d workers: %d endpoints, port kept %d, parity kept %d (%d below 1024)", n, endpoints, kept, parity, low)
		})
	}
}

// TestPartitionSmallSpans: 2n-1 consecutive ports give each of n workers
// a port, whatever the first port; fewer may not, and New says so.
func TestPartitionSmallSpans(t *testing.T) {
	for n := 2; n <= 9; n++ {
		for lo := 40000; lo < 40000+2*n; lo++ {
			for _, r := range Partition(n, uint16(lo), uint16(lo+2*n-1)) {
				if r.Len() == 0 {
					t.Fatalf("%d workers on %d-%d: worker %d has no port", n, lo, lo+2*n-1, r.Slot)
				}
			}
		}
	}
	ranges := Partition(2, 40000, 40002)
	cfg := baseConfig()
	cfg.Ports, cfg.Ranges, cfg.Worker = ranges[1], ranges, 1
	if _, err := New(cfg); err == nil {
		t.Fatal("worker without ports accepted")
	}
}
