package ethtool

import "testing"

// TestPortPairRules: the rules give every TCP and UDP source port the
// queue (p>>1) % queues, and the fixed owners before them win.
func TestPortPairRules(t *testing.T) {
	fwd := PortRule{Proto: 6, Addr: 0xc0a80102, Port: 22, Mask: 0xffff, Queue: 0}
	for _, q := range []int{2, 4, 8, 256} {
		rules, err := PortPairRules(q, []PortRule{fwd})
		if err != nil {
			t.Fatal(err)
		}
		if len(rules) != 1+2*q {
			t.Fatalf("%d queues: %d rules, want %d", q, len(rules), 1+2*q)
		}
		for _, proto := range []uint8{6, 17} {
			for p := 0; p < 65536; p++ {
				got, ok := Match(rules, proto, 0xc0a80105, uint16(p))
				if want := (p >> 1) % q; !ok || got != want {
					t.Fatalf("%d queues, proto %d port %d: queue %d (%v), want %d", q, proto, p, got, ok, want)
				}
			}
		}
		if got, ok := Match(rules, 6, fwd.Addr, 22); !ok || got != 0 {
			t.Fatalf("forward: queue %d (%v), want 0", got, ok)
		}
		if q > 2 {
			// port 22 is pair 11: queue 11 % q is not 0 for q > 2
			if got, _ := Match(rules, 6, 0xc0a80105, 22); got == 0 {
				t.Fatalf("%d queues: another host's port 22 went to the forward's queue", q)
			}
		}
		if _, ok := Match(rules, 1, 0xc0a80105, 8); ok {
			t.Fatalf("an ICMP frame matched a rule")
		}
	}
	for _, q := range []int{0, 1, 3, 6, 512} {
		if _, err := PortPairRules(q, nil); err == nil {
			t.Errorf("PortPairRules(%d) did not fail", q)
		}
	}
}
