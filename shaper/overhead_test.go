package shaper

import (
	"strings"
	"testing"
)

func TestWireLen(t *testing.T) {
	for _, tc := range []struct {
		spec string
		in   int
		want int
	}{
		{"", 1500, 1500},
		{"raw", 64, 64},
		{"overhead 8", 1500, 1508},
		{"overhead -10", 40, 30},
		{"overhead -64", 20, 1},
		{"ethernet", 1500, 1538},                 // 1500 + 14 MAC + 4 FCS + 8 preamble + 12 IFG
		{"ethernet", 28, 84},                     // mpu 84: the minimum Ethernet slot
		{"ethernet ether-vlan", 1500, 1542},      // + 802.1Q tag
		{"pppoe-ptm", 1500, 1530 + (1530+63)/64}, // 64/65 PTM: one byte per 64 or part
		{"bridged-ptm", 100, 122 + 2},            // (122+63)/64 = 2
		{"pppoe-vcmux", 1500, 32 * 53},           // 1532 bytes -> 32 cells
		{"pppoa-vcmux", 38, 53},                  // 48 bytes exactly: one cell
		{"pppoa-vcmux", 39, 2 * 53},              // 49 bytes: two cells
		{"conservative", 1500, 33 * 53},          // 1548 bytes -> 33 cells
		{"docsis", 10, 64},                       // mpu 64
		{"overhead 10 mpu 100 atm", 10, 3 * 53},  // mpu before cells: 100 -> 3 cells
		{"pppoe-ptm overhead 0 noatm", 1500, 1500},
	} {
		o := mustOverhead(t, tc.spec)
		if got := o.WireLen(tc.in); got != tc.want {
			t.Errorf("%q: WireLen(%d) = %d, want %d", tc.spec, tc.in, got, tc.want)
		}
	}
}

func TestParseOverhead(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Overhead
		err  bool
	}{
		{"", Overhead{}, false},
		{"pppoe-ptm", Overhead{30, 0, FramingPTM}, false},
		{"pppoe-ptm ether-vlan", Overhead{34, 0, FramingPTM}, false},
		{"ethernet ether-vlan ether-vlan", Overhead{46, 84, FramingNone}, false},
		{"overhead 44 mpu 64 ptm", Overhead{44, 64, FramingPTM}, false},
		{"mpu 64 pppoe-vcmux", Overhead{32, 64, FramingATM}, false}, // presets keep mpu
		{"ethernet raw", Overhead{}, false},
		{"conservative", Overhead{48, 0, FramingATM}, false},
		{"via-ethernet overhead 18", Overhead{18, 0, FramingNone}, false},
		{"overhead", Overhead{}, true},
		{"overhead x", Overhead{}, true},
		{"overhead 300", Overhead{}, true},
		{"overhead -65", Overhead{}, true},
		{"mpu -1", Overhead{}, true},
		{"mpu 257", Overhead{}, true},
		{"pppoe", Overhead{}, true},
		{"overhead 255 ether-vlan", Overhead{}, true},
	} {
		got, err := ParseOverhead(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseOverhead(%q) = %+v, %v; want %+v, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		err  bool
	}{
		{"", Spec{}, false},
		{"bandwidth 900mbit pppoe-ptm dual-dsthost nat", Spec{900e6, Config{HostFair: true, Overhead: Overhead{30, 0, FramingPTM}}}, false},
		{"bandwidth 1.5Gbit", Spec{Rate: 1.5e9}, false},
		{"rate 100kbps", Spec{Rate: 800e3}, false},
		{"bandwidth 1mibit", Spec{Rate: 1 << 20}, false},
		{"unlimited target 2ms interval 50ms", Spec{Config: Config{Target: 2 * ms, Interval: 50 * ms}}, false},
		{"target 1500", Spec{Config: Config{Target: 1500_000}}, false}, // bare time: us
		{"flows 2048 quantum 300 limit 1000 memory_limit 4mb drop_batch 8 noecn", Spec{Config: Config{Flows: 2048, Quantum: 300, Limit: 1000, MemLimit: 4 << 20, DropBatch: 8, NoECN: true}}, false},
		{"dual-srchost flows", Spec{}, false}, // "flows" isolation undoes host fairness
		{"triple-isolate besteffort", Spec{Config: Config{HostFair: true}}, false},
		{"bandwidth", Spec{}, true},
		{"bandwidth 10furlongs", Spec{}, true},
		{"bandwidth 1e9", Spec{}, true},
		{"bandwidth 99999tbit", Spec{}, true},
		{"target 0", Spec{}, true},
		{"quantum 10", Spec{}, true},
		{"flows 0", Spec{}, false},
		{"flows 70000", Spec{}, true},
		{"limit -1", Spec{}, true},
		{"memory_limit 0", Spec{}, true},
		{"ecn wat", Spec{}, true},
	} {
		got, err := ParseSpec(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// FuzzParseSpec: no panics; what parses is valid and round-trips through
// String; an unlimited/limited rate survives.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"bandwidth 900mbit pppoe-ptm dual-dsthost nat",
		"bandwidth 500Mbit overhead 34 mpu 64 ether-vlan atm",
		"unlimited flows 64 quantum 300 target 2ms interval 40ms limit 99 memory_limit 1m drop_batch 3 noecn",
		"ethernet ether-vlan raw conservative docsis bridged-ptm triple-isolate",
		"rate 1.5gbit target 4500 flows",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sp, err := ParseSpec(in)
		if err != nil {
			return
		}
		if err := sp.Config.Validate(); err != nil {
			t.Fatalf("%q parsed to an invalid config: %v", in, err)
		}
		again, err := ParseSpec(sp.String())
		if err != nil || again != sp {
			t.Fatalf("%q -> %q -> %+v, %v; want %+v", in, sp.String(), again, err, sp)
		}
		o := sp.Config.Overhead
		for _, n := range []int{0, 1, 40, 1500, 9000} {
			if w := o.WireLen(n); w < 1 || w < o.MPU {
				t.Fatalf("%v: WireLen(%d) = %d", o, n, w)
			}
		}
	})
}

// FuzzParseOverhead: no panics; String round-trips; WireLen is monotonic.
func FuzzParseOverhead(f *testing.F) {
	for _, s := range []string{"pppoe-ptm ether-vlan", "overhead -20 mpu 96 atm", "conservative", "ethernet", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		o, err := ParseOverhead(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "shaper: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
			return
		}
		again, err := ParseOverhead(o.String())
		if err != nil || again != o {
			t.Fatalf("%q -> %q -> %+v, %v", in, o.String(), again, err)
		}
		prev := 0
		for n := 0; n < 3000; n += 7 {
			w := o.WireLen(n)
			if w < prev {
				t.Fatalf("%v: WireLen not monotonic at %d", o, n)
			}
			prev = w
		}
	})
}
