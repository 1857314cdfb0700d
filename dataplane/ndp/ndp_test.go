package ndp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

func addr(s string) hdr.Addr6 { return netip.MustParseAddr(s).As16() }

// The hosts of the fixtures.
var (
	hostMAC = [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	rtrMAC  = [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}
	hostIP  = addr("2001:db8:1::100")
	rtrIP   = addr("2001:db8:1::1")
	hostLL  = addr("fe80::11:22ff:fe33:4455")
	rtrLL   = addr("fe80::5054:ff:fe12:3456")
)

// testRA is the RA of raFixture.
func testRA() RA {
	return RA{
		SrcMAC: rtrMAC, Src: rtrLL, Dst: AllNodes(), DstMAC: AllNodesMAC(),
		CurHopLimit: 64, Other: true, RouterLifetime: 30 * time.Minute,
		Prefixes: []PrefixInfo{
			{Prefix: addr("2001:db8:1::"), Bits: 64, OnLink: true, Autonomous: true, Valid: 24 * time.Hour, Preferred: 4 * time.Hour},
			{Prefix: addr("2001:db8:2::"), Bits: 48, OnLink: true, Valid: Infinity, Preferred: Infinity},
		},
		MTU:           1492,
		RDNSS:         []hdr.Addr6{rtrIP},
		RDNSSLifetime: 10 * time.Minute,
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func mustParse(t testing.TB, f []byte) Message {
	t.Helper()
	m, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%x): %v", f, err)
	}
	return m
}

// fixup sets the IPv6 payload length of f to the rest of f and recomputes
// the ICMPv6 checksum (f starts with Ethernet + IPv6 and no extension
// header; a message shorter than 4 bytes has no checksum to fix).
func fixup(f []byte) []byte {
	binary.BigEndian.PutUint16(f[18:], uint16(len(f)-headersLen))
	src, dst := hdr.Addr6(f[22:38]), hdr.Addr6(f[38:54])
	if len(f) >= headersLen+4 {
		hdr.ICMP6Checksum(f[headersLen:], &src, &dst)
	}
	return f
}

// redirectFrame is a valid redirect from the router's link-local address:
// target fe80::2 (a better first hop) for destination 2001:db8:9::9, with
// a target link-layer option.
func redirectFrame() []byte {
	f := append([]byte{}, naFixture[:headersLen]...)
	copy(f[22:38], rtrLL[:])
	f = append(f, TypeRedirect, 0, 0, 0, 0, 0, 0, 0)
	t, d := addr("fe80::2"), addr("2001:db8:9::9")
	f = append(f, t[:]...)
	f = append(f, d[:]...)
	f = append(f, OptTargetLL, 1, 2, 0, 0, 0, 0, 2)
	return fixup(f)
}

func TestParseFixtures(t *testing.T) {
	for _, c := range []struct {
		name  string
		frame []byte
		want  Message
	}{
		{"ns", nsFixture, Message{
			SrcMAC: hostMAC, DstMAC: [6]byte{0x33, 0x33, 0xff, 0, 0, 1}, Src: hostIP, Dst: addr("ff02::1:ff00:1"),
			HopLimit: 255, Type: hdr.ICMP6NeighborSol, Target: rtrIP, SourceLL: hostMAC, HasSourceLL: true,
		}},
		{"na", naFixture, Message{
			SrcMAC: rtrMAC, DstMAC: hostMAC, Src: rtrIP, Dst: hostIP, HopLimit: 255, Type: hdr.ICMP6NeighborAdv,
			Target: rtrIP, Router: true, Solicited: true, Override: true, TargetLL: rtrMAC, HasTargetLL: true,
		}},
		{"dad ns with nonce", dadnsFixture, Message{
			SrcMAC: hostMAC, DstMAC: [6]byte{0x33, 0x33, 0xff, 0, 1, 0}, Dst: addr("ff02::1:ff00:100"),
			HopLimit: 255, Type: hdr.ICMP6NeighborSol, Target: hostIP,
		}},
		{"dad na", dadnaFixture, Message{
			SrcMAC: rtrMAC, DstMAC: AllNodesMAC(), Src: hostIP, Dst: AllNodes(), HopLimit: 255, Type: hdr.ICMP6NeighborAdv,
			Target: hostIP, Router: true, Override: true, TargetLL: rtrMAC, HasTargetLL: true,
		}},
		{"ra", raFixture, Message{
			SrcMAC: rtrMAC, DstMAC: AllNodesMAC(), Src: rtrLL, Dst: AllNodes(), HopLimit: 255, Type: hdr.ICMP6RouterAdv,
			SourceLL: rtrMAC, HasSourceLL: true,
		}},
		{"rs", rsFixture, Message{
			SrcMAC: hostMAC, DstMAC: AllRoutersMAC(), Src: hostLL, Dst: AllRouters(), HopLimit: 255, Type: hdr.ICMP6RouterSol,
			SourceLL: hostMAC, HasSourceLL: true,
		}},
		{"echo request", echoreqFixture, Message{
			SrcMAC: hostMAC, DstMAC: rtrMAC, Src: hostIP, Dst: rtrIP, HopLimit: 64, Type: hdr.ICMP6EchoRequest,
			EchoID: 0x1234, EchoSeq: 1,
		}},
		{"echo reply", echorepFixture, Message{
			SrcMAC: rtrMAC, DstMAC: hostMAC, Src: rtrIP, Dst: hostIP, HopLimit: 64, Type: hdr.ICMP6EchoReply,
			EchoID: 0x1234, EchoSeq: 1,
		}},
		{"ns out", nsoutFixture, Message{
			SrcMAC: rtrMAC, DstMAC: [6]byte{0x33, 0x33, 0xff, 0, 1, 0}, Src: rtrIP, Dst: addr("ff02::1:ff00:100"),
			HopLimit: 255, Type: hdr.ICMP6NeighborSol, Target: hostIP, SourceLL: rtrMAC, HasSourceLL: true,
		}},
		{"redirect", redirectFrame(), Message{
			SrcMAC: rtrMAC, DstMAC: hostMAC, Src: rtrLL, Dst: hostIP, HopLimit: 255, Type: TypeRedirect,
			Target: addr("fe80::2"), TargetLL: [6]byte{2, 0, 0, 0, 0, 2}, HasTargetLL: true,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := clone(c.frame)
			m := mustParse(t, f)
			if !bytes.Equal(m.Body, f[headersLen:]) || &m.Body[0] != &f[headersLen] {
				t.Fatalf("Body %x does not alias the ICMPv6 message of the frame", m.Body)
			}
			m.Body = nil
			if !reflect.DeepEqual(m, c.want) {
				t.Fatalf("got  %+v\nwant %+v", m, c.want)
			}
		})
	}
}

// TestParsePadding: Ethernet padding after the IPv6 payload is not part of
// the message.
func TestParsePadding(t *testing.T) {
	f := append(clone(echoreqFixture), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	m := mustParse(t, f)
	if len(m.Body) != len(echoreqFixture)-headersLen {
		t.Fatalf("body %d bytes, want %d", len(m.Body), len(echoreqFixture)-headersLen)
	}
}

// TestParseFirstLLOption: of two source link-layer options the first
// counts; an option the message type does not use is ignored, whatever
// its length.
func TestParseFirstLLOption(t *testing.T) {
	f := append(clone(nsFixture), OptSourceLL, 1, 9, 9, 9, 9, 9, 9)
	if m := mustParse(t, fixup(f)); m.SourceLL != hostMAC {
		t.Fatalf("SourceLL %x, want the first option's %x", m.SourceLL, hostMAC)
	}
	f = append(clone(nsFixture), OptTargetLL, 2, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9)
	if m := mustParse(t, fixup(f)); m.HasTargetLL {
		t.Fatal("NS took a target link-layer option")
	}
	f = clone(naFixture)
	f[headersLen+24] = OptSourceLL
	if m := mustParse(t, fixup(f)); m.HasTargetLL || m.HasSourceLL {
		t.Fatalf("NA with only a source link-layer option: %+v", m)
	}
}

// TestValidity: each check rejects what it should, with its own error,
// and lets the valid neighbours of those frames through. Frames are fixed
// up (payload length, checksum) after the edit unless raw, so the check
// under test is the only thing wrong.
func TestValidity(t *testing.T) {
	set := func(off int, v ...byte) func([]byte) []byte {
		return func(f []byte) []byte { copy(f[off:], v); return f }
	}
	setAddr := func(off int, a hdr.Addr6) func([]byte) []byte { return set(off, a[:]...) }
	cut := func(n int) func([]byte) []byte { // keep n bytes of the ICMPv6 message
		return func(f []byte) []byte { return f[:headersLen+n] }
	}
	add := func(v ...byte) func([]byte) []byte {
		return func(f []byte) []byte { return append(f, v...) }
	}
	const (
		ipSrc = 22
		ipDst = 38
		icmp  = headersLen
		opt   = headersLen + 24 // first option of an NS/NA
	)
	for _, c := range []struct {
		name string
		base []byte
		edit func([]byte) []byte
		raw  bool
		want error
	}{
		// Frame and IPv6 layer.
		{"IPv4 ethertype", nsFixture, set(12, 0x08, 0x00), true, ErrNotIPv6},
		{"VLAN tag", nsFixture, func(f []byte) []byte {
			return append(append(clone(f[:12]), 0x81, 0x00, 0x00, 0x07), f[12:]...)
		}, true, ErrNotIPv6},
		{"version 4", nsFixture, set(14, 0x45), true, ErrNotIPv6},
		{"payload length past the frame", nsFixture, set(18, 0, 33), true, ErrTruncated},
		{"hop-by-hop header", echoreqFixture, func(f []byte) []byte {
			g := append(clone(f[:headersLen]), hdr.ProtoICMP6, 0, 1, 4, 0, 0, 0, 0) // HBH: next 58, PadN
			g = append(g, f[headersLen:]...)
			g[20] = 0
			binary.BigEndian.PutUint16(g[18:], uint16(len(g)-headersLen))
			return g
		}, true, ErrExtHeader},
		{"fragment header", echoreqFixture, set(20, 44), true, ErrExtHeader},
		{"destination options", echoreqFixture, set(20, 60), true, ErrExtHeader},
		{"UDP", echoreqFixture, set(20, hdr.ProtoUDP), true, ErrNotICMPv6},
		{"no next header", echoreqFixture, set(20, 59), true, ErrNotICMPv6},
		{"3-byte ICMPv6", echoreqFixture, cut(3), false, errShort},
		{"empty ICMPv6", echoreqFixture, cut(0), false, errShort},
		// Checksum.
		{"bad checksum", nsFixture, set(icmp+23, 2), true, ErrChecksum},
		{"checksum zero", nsFixture, set(icmp+2, 0, 0), true, ErrChecksum},
		{"checksum over a changed source", echoreqFixture, set(ipSrc+15, 1), true, ErrChecksum},
		// Any ICMPv6.
		{"multicast source", echoreqFixture, setAddr(ipSrc, AllNodes()), false, errSrcMulticast},
		{"echo 7 bytes", echoreqFixture, cut(7), false, errShort},
		{"echo 8 bytes", echoreqFixture, cut(8), false, nil},
		{"echo hop limit 1", echoreqFixture, set(21, 1), false, nil},
		{"MLDv2 report hop limit 1", echoreqFixture, func(f []byte) []byte {
			f[21], f[icmp] = 1, 143
			return f
		}, false, nil},
		// Hop limit and code (6.1.1, 6.1.2, 7.1.1, 7.1.2, 8.1).
		{"NS hop limit 254", nsFixture, set(21, 254), false, errHopLimit},
		{"NA hop limit 254", naFixture, set(21, 254), false, errHopLimit},
		{"RS hop limit 254", rsFixture, set(21, 254), false, errHopLimit},
		{"RA hop limit 254", raFixture, set(21, 254), false, errHopLimit},
		{"redirect hop limit 64", redirectFrame(), set(21, 64), false, errHopLimit},
		{"NS code 1", nsFixture, set(icmp+1, 1), false, errCode},
		{"NA code 255", naFixture, set(icmp+1, 255), false, errCode},
		{"RS code 1", rsFixture, set(icmp+1, 1), false, errCode},
		{"RA code 1", raFixture, set(icmp+1, 1), false, errCode},
		// Minimum lengths.
		{"NS 23 bytes", nsFixture, cut(23), false, errShort},
		{"NS 24 bytes", nsFixture, cut(24), false, nil},
		{"NA 23 bytes", naFixture, cut(23), false, errShort},
		{"RS 7 bytes", rsFixture, cut(7), false, errShort},
		{"RS 8 bytes", rsFixture, cut(8), false, nil},
		{"RA 15 bytes", raFixture, cut(15), false, errShort},
		{"RA 16 bytes", raFixture, cut(16), false, nil},
		{"redirect 39 bytes", redirectFrame(), cut(39), false, errShort},
		{"redirect 40 bytes", redirectFrame(), cut(40), false, nil},
		// Options.
		{"NS zero-length option", nsFixture, set(opt+1, 0), false, errOptZero},
		{"NS option past the end", nsFixture, set(opt+1, 2), false, errOptOverrun},
		{"NS lone option byte", nsFixture, add(OptSourceLL), false, errOptOverrun},
		{"NS zero-length unknown option", nsFixture, add(14, 0, 0, 0, 0, 0, 0, 0), false, errOptZero},
		{"NS unknown option", nsFixture, add(14, 1, 1, 2, 3, 4, 5, 6), false, nil},
		{"NA zero-length option", naFixture, set(opt+1, 0), false, errOptZero},
		{"RA option past the end", raFixture, set(icmp+16+1, 200), false, errOptOverrun},
		{"RS zero-length option", rsFixture, set(icmp+8+1, 0), false, errOptZero},
		{"NS 16-byte source LL", nsFixture, func(f []byte) []byte {
			f[opt+1] = 2
			return append(f, 0, 0, 0, 0, 0, 0, 0, 0)
		}, false, errLLOptLen},
		{"NA 16-byte target LL", naFixture, func(f []byte) []byte {
			f[opt+1] = 2
			return append(f, 0, 0, 0, 0, 0, 0, 0, 0)
		}, false, errLLOptLen},
		// Targets (7.1.1, 7.1.2).
		{"NS multicast target", nsFixture, setAddr(icmp+8, AllNodes()), false, errTargetMulticast},
		{"NS solicited-node target", nsFixture, setAddr(icmp+8, addr("ff02::1:ff00:1")), false, errTargetMulticast},
		{"NA multicast target", naFixture, setAddr(icmp+8, AllRouters()), false, errTargetMulticast},
		// DAD (7.1.1) and RS from :: (6.1.1).
		{"DAD NS with source LL", dadnsFixture, set(opt, OptSourceLL, 1, 2, 0x11, 0x22, 0x33, 0x44, 0x55), false, errUnspecSourceLL},
		{"DAD NS to all-nodes", dadnsFixture, setAddr(ipDst, AllNodes()), false, errDADDst},
		{"DAD NS to unicast", dadnsFixture, setAddr(ipDst, rtrIP), false, errDADDst},
		{"DAD NS to another solicited-node group", dadnsFixture, setAddr(ipDst, addr("ff02::1:ff12:3456")), false, nil},
		{"NUD NS to unicast", nsFixture, setAddr(ipDst, rtrIP), false, nil},
		{"RS from :: with source LL", rsFixture, setAddr(ipSrc, hdr.Addr6{}), false, errUnspecSourceLL},
		{"RS from :: without source LL", rsFixture, func(f []byte) []byte {
			copy(f[ipSrc:], make([]byte, 16))
			return f[:headersLen+8]
		}, false, nil},
		// NA destination (7.1.2).
		{"solicited NA to all-nodes", naFixture, setAddr(ipDst, AllNodes()), false, errSolicitedMcast},
		{"solicited NA to solicited-node", naFixture, setAddr(ipDst, addr("ff02::1:ff00:100")), false, errSolicitedMcast},
		{"unsolicited NA to all-nodes", naFixture, func(f []byte) []byte {
			all := AllNodes()
			copy(f[ipDst:], all[:])
			f[icmp+4] &^= naSolicited
			return f
		}, false, nil},
		// RA and redirect source (6.1.2, 8.1).
		{"RA from global", raFixture, setAddr(ipSrc, rtrIP), false, errNotLinkLocal},
		{"RA from ::", raFixture, setAddr(ipSrc, hdr.Addr6{}), false, errNotLinkLocal},
		{"redirect from global", redirectFrame(), setAddr(ipSrc, rtrIP), false, errNotLinkLocal},
		{"redirect to multicast destination", redirectFrame(), setAddr(icmp+24, AllNodes()), false, errRedirectDst},
		{"redirect global target", redirectFrame(), setAddr(icmp+8, addr("2001:db8:1::2")), false, errRedirectTarget},
		{"redirect target is destination", redirectFrame(), setAddr(icmp+8, addr("2001:db8:9::9")), false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.edit(clone(c.base))
			if !c.raw {
				f = fixup(f)
			}
			m, err := Parse(f)
			if err != c.want {
				t.Fatalf("Parse: %v, want %v\nframe %x", err, c.want, f)
			}
			if _, isInvalid := c.want.(invalidError); errors.Is(err, ErrInvalid) != isInvalid {
				t.Fatalf("errors.Is(%v, ErrInvalid) = %v", err, !isInvalid)
			} else if isInvalid && err.Error() != "ndp: invalid message: "+string(c.want.(invalidError)) {
				t.Fatalf("error text %q", err.Error())
			}
			if err != nil && !reflect.DeepEqual(m, Message{}) {
				t.Fatalf("Message not zero on error: %+v", m)
			}
		})
	}
}

// TestTruncatedEverywhere: every fixture cut at every length short of its
// end is ErrTruncated (the IPv6 payload length no longer fits).
func TestTruncatedEverywhere(t *testing.T) {
	for name, f := range allFixtures() {
		for n := range len(f) {
			if m, err := Parse(clone(f[:n])); err != ErrTruncated || !reflect.DeepEqual(m, Message{}) {
				t.Errorf("%s cut to %d bytes: %v, %+v", name, n, err, m)
			}
		}
	}
}

// TestShortenedEverywhere: every fixture whose ICMPv6 message is cut at
// every length (with the payload length and checksum fixed to match)
// fails for being short or for a cut option, except where the cut falls
// between options.
func TestShortenedEverywhere(t *testing.T) {
	for name, f := range allFixtures() {
		ok := map[int]bool{}
		wantShort := 4
		switch f[headersLen] {
		case hdr.ICMP6EchoRequest, hdr.ICMP6EchoReply:
			wantShort = 8
			for n := 8; n < len(f)-headersLen; n++ {
				ok[n] = true
			}
		case hdr.ICMP6RouterSol:
			wantShort, ok[8] = 8, true
		case hdr.ICMP6RouterAdv:
			wantShort = 16
			for _, n := range []int{16, 24, 32, 64, 96} { // after LL, MTU, prefix, prefix
				ok[n] = true
			}
		case hdr.ICMP6NeighborSol, hdr.ICMP6NeighborAdv:
			wantShort, ok[24] = 24, true
		}
		for n := range len(f) - headersLen {
			g := fixup(clone(f[:headersLen+n]))
			_, err := Parse(g)
			var want error
			switch {
			case n < wantShort:
				want = errShort
			case !ok[n]:
				want = errOptOverrun
			}
			if err != want {
				t.Errorf("%s with a %d-byte message: %v, want %v", name, n, err, want)
			}
		}
	}
}

func allFixtures() map[string][]byte {
	return map[string][]byte{
		"ns": nsFixture, "na": naFixture, "dadns": dadnsFixture, "dadna": dadnaFixture, "ra": raFixture,
		"echoreq": echoreqFixture, "echorep": echorepFixture, "rs": rsFixture, "nsout": nsoutFixture,
	}
}

// TestBuildFixtures: the builders produce the annotated fixtures byte for
// byte, appended after what b holds, into b's spare capacity when it is
// big enough, whatever was left there.
func TestBuildFixtures(t *testing.T) {
	ns, dadns, echo := mustParse(t, nsFixture), mustParse(t, dadnsFixture), mustParse(t, echoreqFixture)
	ra := testRA()
	for _, c := range []struct {
		name  string
		build func([]byte) []byte
		want  []byte
	}{
		{"AppendNA", func(b []byte) []byte { return AppendNA(b, &ns, rtrIP, rtrMAC, true) }, naFixture},
		{"AppendNA to DAD", func(b []byte) []byte { return AppendNA(b, &dadns, hostIP, rtrMAC, true) }, dadnaFixture},
		{"AppendNS", func(b []byte) []byte { return AppendNS(b, rtrIP, hostIP, rtrMAC) }, nsoutFixture},
		{"AppendRA", func(b []byte) []byte { return AppendRA(b, &ra) }, raFixture},
		{"AppendEchoReply", func(b []byte) []byte { return AppendEchoReply(b, &echo, rtrIP, rtrMAC) }, echorepFixture},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.build(nil); !bytes.Equal(got, c.want) {
				t.Fatalf("built\n%x\nwant\n%x", got, c.want)
			}
			b := []byte("prefix")
			if got := c.build(b); string(got[:6]) != "prefix" || !bytes.Equal(got[6:], c.want) {
				t.Fatalf("appended after %q: %x", b, got)
			}
			spare := bytes.Repeat([]byte{0xaa}, 512)
			got := c.build(spare[:3])
			if &got[0] != &spare[0] || !bytes.Equal(got[3:], c.want) {
				t.Fatalf("into spare capacity full of 0xaa: %x (same array %v)", got, &got[0] == &spare[0])
			}
		})
	}
}

// TestNAFromNSWithoutSourceLL: an NS without a source link-layer option is
// answered at its Ethernet source; the option, when present, wins.
func TestNAFromNSWithoutSourceLL(t *testing.T) {
	ns := mustParse(t, fixup(clone(nsFixture[:headersLen+24])))
	if ns.HasSourceLL {
		t.Fatal("source LL without the option")
	}
	na := mustParse(t, AppendNA(nil, &ns, rtrIP, rtrMAC, false))
	if na.DstMAC != hostMAC || na.Dst != hostIP || na.Router || !na.Solicited || !na.Override {
		t.Fatalf("NA %+v", na)
	}
	ns.SourceLL, ns.HasSourceLL = [6]byte{2, 9, 9, 9, 9, 9}, true
	if na := mustParse(t, AppendNA(nil, &ns, rtrIP, rtrMAC, false)); na.DstMAC != ns.SourceLL {
		t.Fatalf("NA to %x, want the source LL option's %x", na.DstMAC, ns.SourceLL)
	}
}

func TestAppendUnsolicitedNA(t *testing.T) {
	for _, router := range []bool{false, true} {
		m := mustParse(t, AppendUnsolicitedNA(nil, rtrIP, rtrMAC, router))
		want := Message{
			SrcMAC: rtrMAC, DstMAC: AllNodesMAC(), Src: rtrIP, Dst: AllNodes(), HopLimit: 255, Type: hdr.ICMP6NeighborAdv,
			Target: rtrIP, Router: router, Override: true, TargetLL: rtrMAC, HasTargetLL: true,
		}
		m.Body = nil
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("router %v: got %+v\nwant %+v", router, m, want)
		}
	}
}

// TestAppendNSForDAD: an NS from the unspecified address has no source
// link-layer option and parses as a valid DAD probe.
func TestAppendNSForDAD(t *testing.T) {
	m := mustParse(t, AppendNS(nil, hdr.Addr6{}, rtrLL, rtrMAC))
	if m.HasSourceLL || m.Dst != hdr.SolicitedNode(&rtrLL) || m.DstMAC != hdr.MulticastMAC(&m.Dst) || m.Target != rtrLL || len(m.Body) != 24 {
		t.Fatalf("DAD NS %+v", m)
	}
}

func TestAppendEchoReply(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1232} {
		// The request, host to router, built as a reply from the host
		// to the router and relabelled.
		req := AppendEchoReply(nil, &Message{SrcMAC: rtrMAC, Src: rtrIP, EchoID: 7, EchoSeq: 9,
			Body: append(make([]byte, 8), bytes.Repeat([]byte{0x5a}, n)...)}, hostIP, hostMAC)
		req[headersLen] = hdr.ICMP6EchoRequest
		m := mustParse(t, fixup(req))
		rep := mustParse(t, AppendEchoReply(nil, &m, rtrIP, rtrMAC))
		if rep.Type != hdr.ICMP6EchoReply || rep.EchoID != 7 || rep.EchoSeq != 9 || rep.Dst != hostIP ||
			rep.DstMAC != hostMAC || rep.SrcMAC != rtrMAC || rep.Src != rtrIP || len(rep.Body) != 8+n ||
			!bytes.Equal(rep.Body[8:], m.Body[8:]) {
			t.Fatalf("%d data bytes: reply %+v to %+v", n, rep, m)
		}
	}
	// A Message with a short Body (not from Parse) still gives a valid reply.
	rep := mustParse(t, AppendEchoReply(nil, &Message{Src: hostIP, EchoID: 1, Body: []byte{128}}, rtrIP, rtrMAC))
	if rep.EchoID != 1 || len(rep.Body) != 8 {
		t.Fatalf("reply %+v", rep)
	}
}

func TestGroups(t *testing.T) {
	all, rtrs := AllNodes(), AllRouters()
	if all != addr("ff02::1") || rtrs != addr("ff02::2") {
		t.Fatalf("AllNodes %x AllRouters %x", all, rtrs)
	}
	if AllNodesMAC() != hdr.MulticastMAC(&all) || AllRoutersMAC() != hdr.MulticastMAC(&rtrs) {
		t.Fatal("group MACs")
	}
	if hdr.LinkLocalEUI64(rtrMAC) != rtrLL || hdr.LinkLocalEUI64(hostMAC) != hostLL {
		t.Fatal("fixture link-local addresses are not the EUI-64 ones")
	}
	for _, c := range []struct {
		a    string
		want bool
	}{
		{"ff02::1:ff00:1", true}, {"ff02::1:ffff:ffff", true}, {"ff02::1:fe00:1", false},
		{"ff02::2:ff00:1", false}, {"ff05::1:ff00:1", false}, {"ff02::1", false}, {"2001:db8::1:ff00:1", false},
	} {
		if a := addr(c.a); IsSolicitedNode(&a) != c.want {
			t.Errorf("IsSolicitedNode(%s) = %v", c.a, !c.want)
		}
	}
}

// TestAllocs: Parse does not allocate, and neither do the builders when b
// has room, so a control plane that reuses its buffers runs without
// garbage.
func TestAllocs(t *testing.T) {
	ns, echo, ra := mustParse(t, nsFixture), mustParse(t, echoreqFixture), testRA()
	buf := make([]byte, 0, 2048)
	bad := fixup(append(clone(nsFixture[:headersLen+24]), 0, 0, 0, 0, 0, 0, 0, 0)) // zero-length option
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"Parse", func() { _, _ = Parse(nsFixture) }},
		{"Parse error", func() { _, _ = Parse(bad) }},
		{"ParseRA", func() { _, _ = ParseRA(raFixture[headersLen : headersLen+24]) }},
		{"AppendNA", func() { _ = AppendNA(buf, &ns, rtrIP, rtrMAC, true) }},
		{"AppendUnsolicitedNA", func() { _ = AppendUnsolicitedNA(buf, rtrIP, rtrMAC, true) }},
		{"AppendNS", func() { _ = AppendNS(buf, rtrIP, hostIP, rtrMAC) }},
		{"AppendRA", func() { _ = AppendRA(buf, &ra) }},
		{"AppendEchoReply", func() { _ = AppendEchoReply(buf, &echo, rtrIP, rtrMAC) }},
	} {
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s: %v allocs", c.name, n)
		}
	}
	if _, err := Parse(bad); err != errOptZero {
		t.Fatalf("bad frame: %v", err)
	}
}
