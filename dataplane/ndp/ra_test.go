package ndp

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// parseBuiltRA builds ra, checks Parse accepts the frame as an RA, and
// decodes it with ParseRA.
func parseBuiltRA(t *testing.T, ra *RA) (Message, RA) {
	t.Helper()
	m := mustParse(t, AppendRA(nil, ra))
	if m.Type != hdr.ICMP6RouterAdv || !m.HasSourceLL || m.SourceLL != ra.SrcMAC {
		t.Fatalf("built RA parsed as %+v", m)
	}
	got, err := ParseRA(m.Body)
	if err != nil {
		t.Fatalf("ParseRA: %v\n%x", err, m.Body)
	}
	return m, got
}

// TestRARoundTrip: AppendRA then ParseRA gives back every field the
// message carries, for values the wire holds exactly.
func TestRARoundTrip(t *testing.T) {
	many := make([]hdr.Addr6, 300) // three RDNSS options: 127, 127, 46
	for i := range many {
		many[i] = addr("2001:db8:53::")
		binary.BigEndian.PutUint16(many[i][14:], uint16(i))
	}
	for _, c := range []struct {
		name string
		ra   RA
	}{
		{"fixture", testRA()},
		{"bare", RA{SrcMAC: rtrMAC, Src: rtrLL}},
		{"all header fields", RA{
			SrcMAC: rtrMAC, Src: rtrLL, CurHopLimit: 255, Managed: true, Other: true,
			RouterLifetime: MaxRouterLifetime, ReachableTime: MaxReachableTime, RetransTimer: (1<<32 - 1) * time.Millisecond,
		}},
		{"infinite and zero lifetimes", RA{
			SrcMAC: rtrMAC, Src: rtrLL, RouterLifetime: time.Second,
			Prefixes: []PrefixInfo{
				{Prefix: addr("2001:db8:a::"), Bits: 64, OnLink: true, Autonomous: true, Valid: Infinity, Preferred: Infinity},
				{Prefix: addr("2001:db8:b::"), Bits: 64, Autonomous: true, Valid: 2 * time.Hour, Preferred: 0},
				{Prefix: addr("2001:db8:c::"), Bits: 56, Valid: 0, Preferred: 0},
				{Prefix: addr("2001:db8:d::1"), Bits: 128, OnLink: true, Valid: 0xfffffffe * time.Second, Preferred: Infinity},
				{Prefix: hdr.Addr6{}, Bits: 0, OnLink: true, Valid: time.Second, Preferred: time.Second},
			},
			MTU:   1280,
			RDNSS: []hdr.Addr6{rtrLL, rtrIP}, RDNSSLifetime: Infinity,
		}},
		{"RDNSS lifetime 0", RA{SrcMAC: rtrMAC, Src: rtrLL, RDNSS: []hdr.Addr6{rtrIP}, RDNSSLifetime: 0}},
		{"300 RDNSS", RA{SrcMAC: rtrMAC, Src: rtrLL, MTU: 9000, RDNSS: many, RDNSSLifetime: 20 * time.Minute}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, got := parseBuiltRA(t, &c.ra)
			want := c.ra
			want.Src, want.Dst, want.DstMAC = hdr.Addr6{}, hdr.Addr6{}, [6]byte{}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestRAWire: how Durations and out-of-range values go on the wire.
func TestRAWire(t *testing.T) {
	const (
		lifetime = 16 + 8 // offset in the message of the first option after the source LL
		valid    = lifetime + 4
		pref     = lifetime + 8
		prefix   = lifetime + 16
		bits     = lifetime + 2
	)
	u16 := func(b []byte) uint64 { return uint64(binary.BigEndian.Uint16(b)) }
	u32 := func(b []byte) uint64 { return uint64(binary.BigEndian.Uint32(b)) }
	withPrefix := func(p PrefixInfo) RA { return RA{SrcMAC: rtrMAC, Src: rtrLL, Prefixes: []PrefixInfo{p}} }
	for _, c := range []struct {
		name string
		ra   RA
		get  func(msg []byte) uint64
		want uint64
	}{
		{"router lifetime 0", RA{}, func(m []byte) uint64 { return u16(m[6:]) }, 0},
		{"router lifetime 1ns rounds up", RA{RouterLifetime: 1}, func(m []byte) uint64 { return u16(m[6:]) }, 1},
		{"router lifetime 1.5s", RA{RouterLifetime: 1500 * time.Millisecond}, func(m []byte) uint64 { return u16(m[6:]) }, 2},
		{"router lifetime negative", RA{RouterLifetime: -time.Hour}, func(m []byte) uint64 { return u16(m[6:]) }, 0},
		{"router lifetime capped", RA{RouterLifetime: 3 * time.Hour}, func(m []byte) uint64 { return u16(m[6:]) }, 9000},
		{"router lifetime Infinity", RA{RouterLifetime: Infinity}, func(m []byte) uint64 { return u16(m[6:]) }, 9000},
		{"reachable 1.0001s", RA{ReachableTime: time.Second + 100*time.Microsecond}, func(m []byte) uint64 { return u32(m[8:]) }, 1001},
		{"reachable capped", RA{ReachableTime: 2 * time.Hour}, func(m []byte) uint64 { return u32(m[8:]) }, 3600000},
		{"retrans 1s", RA{RetransTimer: time.Second}, func(m []byte) uint64 { return u32(m[12:]) }, 1000},
		{"retrans capped", RA{RetransTimer: Infinity}, func(m []byte) uint64 { return u32(m[12:]) }, 0xffffffff},
		{"valid 0", withPrefix(PrefixInfo{}), func(m []byte) uint64 { return u32(m[valid:]) }, 0},
		{"valid 1ns", withPrefix(PrefixInfo{Valid: 1}), func(m []byte) uint64 { return u32(m[valid:]) }, 1},
		{"valid negative", withPrefix(PrefixInfo{Valid: -1}), func(m []byte) uint64 { return u32(m[valid:]) }, 0},
		{"valid just under 0xffffffff s stays finite", withPrefix(PrefixInfo{Valid: 0xffffffff*time.Second - 1}),
			func(m []byte) uint64 { return u32(m[valid:]) }, 0xfffffffe},
		{"valid 0xffffffff s is infinity", withPrefix(PrefixInfo{Valid: 0xffffffff * time.Second}),
			func(m []byte) uint64 { return u32(m[valid:]) }, 0xffffffff},
		{"preferred Infinity", withPrefix(PrefixInfo{Preferred: Infinity}), func(m []byte) uint64 { return u32(m[pref:]) }, 0xffffffff},
		{"RDNSS lifetime Infinity", RA{RDNSS: []hdr.Addr6{rtrIP}, RDNSSLifetime: Infinity},
			func(m []byte) uint64 { return u32(m[lifetime+4:]) }, 0xffffffff},
		{"RDNSS lifetime 90s", RA{RDNSS: []hdr.Addr6{rtrIP}, RDNSSLifetime: 90 * time.Second},
			func(m []byte) uint64 { return u32(m[lifetime+4:]) }, 90},
		{"prefix length capped", withPrefix(PrefixInfo{Bits: 200}), func(m []byte) uint64 { return uint64(m[bits]) }, 128},
		// 2001:db8:1:2fff::1/52 goes out as 2001:db8:1:2000::/52.
		{"prefix masked", withPrefix(PrefixInfo{Prefix: addr("2001:db8:1:2fff::1"), Bits: 52}),
			func(m []byte) uint64 { return u32(m[prefix+4:]) }, 0x00012000},
		{"prefix masked low bits", withPrefix(PrefixInfo{Prefix: addr("2001:db8:1:2fff::1"), Bits: 52}),
			func(m []byte) uint64 { return u32(m[prefix+12:]) }, 0},
		{"prefix /128 kept", withPrefix(PrefixInfo{Prefix: addr("2001:db8::1"), Bits: 128}),
			func(m []byte) uint64 { return u32(m[prefix+12:]) }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.ra.Src = rtrLL
			m := mustParse(t, AppendRA(nil, &c.ra))
			if got := c.get(m.Body); got != c.want {
				t.Fatalf("on the wire %d (%#x), want %d (%#x)", got, got, c.want, c.want)
			}
		})
	}
	if lifetimeOf(0xffffffff) != Infinity || lifetimeOf(0xfffffffe) != 0xfffffffe*time.Second || lifetimeOf(0) != 0 {
		t.Fatal("lifetimeOf")
	}
}

// TestRADestination: a zero Dst is all-nodes, a zero DstMAC with a
// multicast Dst is its group MAC, and given ones are used as they are.
func TestRADestination(t *testing.T) {
	m := mustParse(t, AppendRA(nil, &RA{SrcMAC: rtrMAC, Src: rtrLL}))
	if m.Dst != AllNodes() || m.DstMAC != AllNodesMAC() || m.SrcMAC != rtrMAC || m.Src != rtrLL || m.HopLimit != 255 {
		t.Fatalf("default destination: %+v", m)
	}
	m = mustParse(t, AppendRA(nil, &RA{SrcMAC: rtrMAC, Src: rtrLL, Dst: hostLL, DstMAC: hostMAC}))
	if m.Dst != hostLL || m.DstMAC != hostMAC {
		t.Fatalf("unicast destination: %+v", m)
	}
	m = mustParse(t, AppendRA(nil, &RA{SrcMAC: rtrMAC, Src: rtrLL, Dst: AllRouters()}))
	if m.DstMAC != AllRoutersMAC() {
		t.Fatalf("multicast destination MAC: %+v", m)
	}
}

// TestRATooBig: lists that would take the message past 65535 bytes are
// cut to what fits, and the frame stays valid.
func TestRATooBig(t *testing.T) {
	ra := RA{SrcMAC: rtrMAC, Src: rtrLL, MTU: 1500, Prefixes: make([]PrefixInfo, 3000), RDNSS: make([]hdr.Addr6, 10)}
	m, got := parseBuiltRA(t, &ra)
	// 32 bytes of header, source LL and MTU; 2046 prefixes of 32 bytes
	// take it to 65504, leaving room for one 24-byte RDNSS option.
	if len(got.Prefixes) != 2046 || len(got.RDNSS) != 1 || len(m.Body) != 65528 {
		t.Fatalf("%d prefixes and %d RDNSS in %d bytes, want 2046 and 1 in 65528", len(got.Prefixes), len(got.RDNSS), len(m.Body))
	}
	if len(m.Body) > 0xffff {
		t.Fatalf("message %d bytes", len(m.Body))
	}
	ra = RA{SrcMAC: rtrMAC, Src: rtrLL, RDNSS: make([]hdr.Addr6, 5000)}
	m, got = parseBuiltRA(t, &ra)
	// 24 bytes of header and source LL, then options of 8+16*127 bytes.
	room, want := 0xffff-24, 0
	for room >= 8+16 {
		k := min((room-8)/16, 127)
		want += k
		room -= 8 + 16*k
	}
	if len(got.RDNSS) != want || len(m.Body) > 0xffff || len(m.Body) < 0xffff-8-16 {
		t.Fatalf("%d RDNSS in %d bytes, want %d", len(got.RDNSS), len(m.Body), want)
	}
}

// TestParseRAInvalid: ParseRA's checks, each with its own error.
func TestParseRAInvalid(t *testing.T) {
	base := func() []byte { return clone(raFixture[headersLen:]) }
	const (
		mtuOpt  = 24
		pioOpt  = 32
		rdnss   = 96
		llOpt   = 16
		fixture = 120
	)
	for _, c := range []struct {
		name string
		body func() []byte
		want error
	}{
		{"fixture", base, nil},
		{"empty", func() []byte { return nil }, errNotRA},
		{"RS", func() []byte { b := base(); b[0] = hdr.ICMP6RouterSol; return b }, errNotRA},
		{"15 bytes", func() []byte { return base()[:15] }, errShort},
		{"code 1", func() []byte { b := base(); b[1] = 1; return b }, errCode},
		{"zero-length option", func() []byte { b := base(); b[mtuOpt+1] = 0; return b }, errOptZero},
		{"option past the end", func() []byte { return base()[:fixture-1] }, errOptOverrun},
		{"source LL 16 bytes", func() []byte { b := base(); b[llOpt+1] = 2; return b }, errLLOptLen},
		{"MTU 16 bytes", func() []byte { b := base(); b[mtuOpt+1] = 2; b[mtuOpt+8] = 0; return b }, errOptLen},
		{"prefix info 24 bytes", func() []byte { b := base(); b[pioOpt+1] = 3; return append(b, 0, 0, 0, 0, 0, 0, 0, 0) }, errOptLen},
		{"prefix info 40 bytes", func() []byte {
			b := base()
			b[pioOpt+1] = 5
			return append(b[:pioOpt+32], append(make([]byte, 8), b[pioOpt+32:]...)...)
		}, errOptLen},
		{"prefix length 129", func() []byte { b := base(); b[pioOpt+2] = 129; return b }, errPrefixLen},
		{"RDNSS without addresses", func() []byte { b := base()[:rdnss+8]; b[rdnss+1] = 1; return b }, errOptLen},
		{"RDNSS length 4", func() []byte { b := base(); b[rdnss+1] = 4; return append(b, 0, 0, 0, 0, 0, 0, 0, 0) }, errOptLen},
		{"unknown option", func() []byte { return append(base(), 31, 1, 0, 0, 0, 0, 0, 0) }, nil},
		// Options of types ParseRA does not read have no length rules.
		{"unknown 16-byte option", func() []byte { return append(base(), 31, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ra, err := ParseRA(c.body())
			if err != c.want {
				t.Fatalf("ParseRA: %v, want %v", err, c.want)
			}
			if err != nil && !reflect.DeepEqual(ra, RA{}) {
				t.Fatalf("RA not zero on error: %+v", ra)
			}
		})
	}
}

// TestParseRAFirstWins: of repeated source LL and MTU options the first
// counts; RDNSS options add up, with the first one's lifetime.
func TestParseRAFirstWins(t *testing.T) {
	b := clone(raFixture[headersLen:])
	b = append(b, OptSourceLL, 1, 9, 9, 9, 9, 9, 9)
	b = append(b, OptMTU, 1, 0, 0, 0, 0, 0x23, 0x28)
	b = append(b, OptRDNSS, 3, 0, 0, 0, 0, 0, 1)
	b = append(b, hostIP[:]...)
	ra, err := ParseRA(b)
	if err != nil {
		t.Fatal(err)
	}
	if ra.SrcMAC != rtrMAC || ra.MTU != 1492 || ra.RDNSSLifetime != 600*time.Second ||
		!reflect.DeepEqual(ra.RDNSS, []hdr.Addr6{rtrIP, hostIP}) {
		t.Fatalf("%+v", ra)
	}
}
