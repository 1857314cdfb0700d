package dhcp6

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
)

// Fixtures: DHCPv6 payloads as tshark decodes them.
var (
	// DHCPv6, Message type: Solicit (1), Transaction ID: 0x123456
	//   Client Identifier: DUID-LL, Hardware type: Ethernet (1), 02:00:00:00:00:01
	//   Elapsed time: 0 ms
	//   Option Request: DNS recursive name server (23), SOL_MAX_RT (82)
	//   Rapid Commit
	//   Identity Association for Prefix Delegation: IAID 00000001, T1 0, T2 0
	//     IA Prefix: ::/56, preferred 0, valid 0
	fixSolicit = []byte{
		0x01,             // msg-type Solicit
		0x12, 0x34, 0x56, // transaction-id
		0x00, 0x01, 0x00, 0x0a, // option CLIENTID, length 10
		0x00, 0x03, // DUID type 3: DUID-LL
		0x00, 0x01, // hardware type 1: Ethernet
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // link-layer address
		0x00, 0x08, 0x00, 0x02, // option ELAPSED_TIME, length 2
		0x00, 0x00, // 0 centiseconds
		0x00, 0x06, 0x00, 0x04, // option ORO, length 4
		0x00, 0x17, // DNS_SERVERS (23)
		0x00, 0x52, // SOL_MAX_RT (82)
		0x00, 0x0e, 0x00, 0x00, // option RAPID_COMMIT, length 0
		0x00, 0x19, 0x00, 0x29, // option IA_PD, length 41
		0x00, 0x00, 0x00, 0x01, //   IAID 1
		0x00, 0x00, 0x00, 0x00, //   T1 0
		0x00, 0x00, 0x00, 0x00, //   T2 0
		0x00, 0x1a, 0x00, 0x19, //   option IAPREFIX, length 25
		0x00, 0x00, 0x00, 0x00, //     preferred-lifetime 0
		0x00, 0x00, 0x00, 0x00, //     valid-lifetime 0
		0x38,                                           //     prefix-length 56
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, //     prefix ::
	}

	// DHCPv6, Message type: Advertise (2), Transaction ID: 0x123456
	//   Client Identifier: DUID-LL, Ethernet, 02:00:00:00:00:01
	//   Server Identifier: DUID-LL, Ethernet, 02:00:00:00:00:fe
	//   Preference: 255
	//   DNS recursive name server: 2001:db8::53
	//   Identity Association for Prefix Delegation: IAID 00000001, T1 1800, T2 2880
	//     IA Prefix: 2001:db8:100:100::/56, preferred 3600, valid 7200
	fixAdvertise = []byte{
		0x02,             // msg-type Advertise
		0x12, 0x34, 0x56, // transaction-id
		0x00, 0x01, 0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // CLIENTID
		0x00, 0x02, 0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0xfe, // SERVERID
		0x00, 0x07, 0x00, 0x01, 0xff, // PREFERENCE 255 (not decoded: skipped)
		0x00, 0x17, 0x00, 0x10, // DNS_SERVERS, length 16
		0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x53, // 2001:db8::53
		0x00, 0x19, 0x00, 0x29, // IA_PD, length 41
		0x00, 0x00, 0x00, 0x01, //   IAID 1
		0x00, 0x00, 0x07, 0x08, //   T1 1800
		0x00, 0x00, 0x0b, 0x40, //   T2 2880
		0x00, 0x1a, 0x00, 0x19, //   IAPREFIX, length 25
		0x00, 0x00, 0x0e, 0x10, //     preferred 3600
		0x00, 0x00, 0x1c, 0x20, //     valid 7200
		0x38,                                                                   //     /56
		0x20, 0x01, 0x0d, 0xb8, 0x01, 0x00, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, //     2001:db8:100:100::
	}
)

var (
	clientMAC  = [6]byte{2, 0, 0, 0, 0, 1}
	serverMAC  = [6]byte{2, 0, 0, 0, 0, 0xfe}
	server2MAC = [6]byte{2, 0, 0, 0, 0, 0xfd}
	dnsAddr    = a6("2001:db8::53")
)

func a6(s string) hdr.Addr6 { return netip.MustParseAddr(s).As16() }

func TestSolicitFixture(t *testing.T) {
	m := Message{
		Type: MsgSolicit, XID: 0x123456, ClientID: DUIDLL(clientMAC), HasElapsed: true,
		ORO: []uint16{OptDNSServers, OptSolMaxRT}, RapidCommit: true,
		IAPD: []IAPD{{IAID: 1, Prefixes: []Prefix{{Bits: 56}}}},
	}
	if got := m.Encode(); !bytes.Equal(got, fixSolicit) {
		t.Fatalf("Solicit\n got %x\nwant %x", got, fixSolicit)
	}
	// The high byte of XID is not part of the 24-bit transaction id.
	m.XID |= 0xff000000
	if got := m.Append([]byte{0xaa}); !bytes.Equal(got[1:], fixSolicit) || got[0] != 0xaa {
		t.Fatalf("Append to a prefix: %x", got)
	}
}

func TestParseAdvertiseFixture(t *testing.T) {
	m, err := Parse(fixAdvertise)
	if err != nil {
		t.Fatal(err)
	}
	want := Message{
		Type: MsgAdvertise, XID: 0x123456, ClientID: DUIDLL(clientMAC), ServerID: DUIDLL(serverMAC),
		DNS: []hdr.Addr6{dnsAddr},
		IAPD: []IAPD{{IAID: 1, T1: 1800, T2: 2880, Prefixes: []Prefix{
			{Prefix: a6("2001:db8:100:100::"), Bits: 56, Preferred: 3600, Valid: 7200},
		}}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %+v\nwant %+v", m, want)
	}
	// The Message does not alias the input.
	in := bytes.Clone(fixAdvertise)
	m, _ = Parse(in)
	for i := range in {
		in[i] = 0
	}
	if !bytes.Equal(m.ServerID, DUIDLL(serverMAC)) {
		t.Fatal("ServerID aliases the input")
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []Message{
		{Type: MsgSolicit},
		{Type: MsgInformationRequest, XID: 0xffffff, ORO: []uint16{23, 24, 82}},
		{Type: MsgAdvertise, XID: 3, ServerID: DUIDLL(serverMAC), SolMaxRT: 600},
		{
			Type: MsgReply, XID: 7, ClientID: []byte{0, 1}, ServerID: DUIDLL(serverMAC),
			RapidCommit: true, HasElapsed: true, Elapsed: 0xffff,
			DNS:    []hdr.Addr6{dnsAddr, a6("2001:db8::54")},
			Status: &Status{Code: StatusSuccess, Message: "all good ✓"},
			IAPD: []IAPD{
				{IAID: 1, T1: 1, T2: 2, Status: &Status{Code: StatusNoPrefixAvail}},
				{IAID: 2, T1: InfiniteLifetime, T2: InfiniteLifetime, Prefixes: []Prefix{
					{Prefix: a6("2001:db8:1::"), Bits: 48, Preferred: InfiniteLifetime, Valid: InfiniteLifetime},
					{Prefix: a6("2001:db8:2::1"), Bits: 128, Preferred: 0, Valid: 1},
				}},
			},
		},
		{Type: MsgRelease, Status: &Status{Code: 999, Message: ""}, IAPD: []IAPD{{}}},
	}
	for _, m := range tests {
		b := m.Encode()
		got, err := Parse(b)
		if err != nil {
			t.Fatalf("%v: %v", m.Type, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip\n got %+v\nwant %+v", got, m)
		}
		if b2 := got.Encode(); !bytes.Equal(b2, b) {
			t.Fatalf("re-encoded %x, want %x", b2, b)
		}
	}
}

// TestParseSkipsAndFirstWins: unknown options are skipped wherever they
// are, and the first of repeated singleton options is kept.
func TestParseSkipsAndFirstWins(t *testing.T) {
	b := []byte{7, 0, 0, 1}
	b = appendOpt(b, 99, []byte{1, 2, 3})
	b = appendOpt(b, OptServerID, []byte{0, 3, 0, 1, 1, 1, 1, 1, 1, 1})
	b = appendOpt(b, OptServerID, []byte{0, 3, 0, 1, 2, 2, 2, 2, 2, 2})
	b = appendOpt(b, OptElapsedTime, []byte{0, 5})
	b = appendOpt(b, OptElapsedTime, []byte{0, 6})
	b = appendOpt(b, OptStatusCode, []byte{0, 3, 'x'})
	b = appendOpt(b, OptStatusCode, []byte{0, 4})
	b = appendOpt(b, OptDNSServers, dnsAddr[:])
	b = appendOpt(b, OptDNSServers, make([]byte, 32))
	ia := []byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 2}
	ia = appendOpt(ia, 99, nil)
	ia = appendOpt(ia, OptStatusCode, []byte{0, 0})
	ia = appendOpt(ia, OptStatusCode, []byte{0, 6})
	pfx := append([]byte{0, 0, 0, 1, 0, 0, 0, 2, 64}, make([]byte, 16)...)
	pfx = appendOpt(pfx, OptStatusCode, []byte{0, 0}) // IAPREFIX suboption: skipped
	ia = appendOpt(ia, OptIAPrefix, pfx)
	b = appendOpt(b, OptIAPD, ia)
	b = appendOpt(b, OptIAPD, []byte{0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0})
	m, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Message{
		Type: MsgReply, XID: 1, ServerID: []byte{0, 3, 0, 1, 1, 1, 1, 1, 1, 1},
		HasElapsed: true, Elapsed: 5, Status: &Status{Code: StatusNoBinding, Message: "x"},
		DNS: []hdr.Addr6{dnsAddr},
		IAPD: []IAPD{
			{IAID: 9, T1: 1, T2: 2, Status: &Status{}, Prefixes: []Prefix{{Bits: 64, Preferred: 1, Valid: 2}}},
			{IAID: 10},
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %+v\nwant %+v", m, want)
	}
}

func TestParseErrors(t *testing.T) {
	hdr4 := []byte{7, 0, 0, 1}
	opt := func(code uint16, data []byte) []byte { return appendOpt(bytes.Clone(hdr4), code, data) }
	iaWith := func(sub []byte) []byte {
		return opt(OptIAPD, append([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, sub...))
	}
	pfx := func(bits byte, sub []byte) []byte {
		p := append([]byte{0, 0, 0, 1, 0, 0, 0, 2, bits}, make([]byte, 16)...)
		return appendOpt(nil, OptIAPrefix, append(p, sub...))
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"3 bytes", []byte{1, 0, 0}},
		{"type 0", []byte{0, 0, 0, 0}},
		{"relay-forw", append([]byte{12, 0}, make([]byte, 32)...)},
		{"relay-repl", append([]byte{13, 0}, make([]byte, 32)...)},
		{"type 255", []byte{255, 0, 0, 0}},
		{"partial option header", append(bytes.Clone(hdr4), 0, 1, 0)},
		{"option past end", append(bytes.Clone(hdr4), 0, 99, 0, 5, 1, 2, 3, 4)},
		{"option length 0xffff", append(bytes.Clone(hdr4), 0, 99, 0xff, 0xff)},
		{"empty client id", opt(OptClientID, nil)},
		{"1-byte server id", opt(OptServerID, []byte{1})},
		{"odd ORO", opt(OptORO, []byte{0, 23, 0})},
		{"short elapsed", opt(OptElapsedTime, []byte{1})},
		{"long elapsed", opt(OptElapsedTime, []byte{1, 2, 3})},
		{"short status", opt(OptStatusCode, []byte{0})},
		{"rapid commit with data", opt(OptRapidCommit, []byte{0})},
		{"DNS not a multiple of 16", opt(OptDNSServers, make([]byte, 17))},
		{"short IA_PD", opt(OptIAPD, make([]byte, 11))},
		{"IA_PD suboption past end", iaWith([]byte{0, 26, 0, 30})},
		{"short IAPREFIX", iaWith(appendOpt(nil, OptIAPrefix, make([]byte, 24)))},
		{"IAPREFIX /129", iaWith(pfx(129, nil))},
		{"IAPREFIX bad suboption", iaWith(pfx(64, []byte{0, 13, 0, 9}))},
		{"short status in IA_PD", iaWith(appendOpt(nil, OptStatusCode, []byte{1}))},
	}
	for _, tt := range tests {
		if _, err := Parse(tt.b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", tt.name, err)
		}
	}
}

func TestLifetimeSeconds(t *testing.T) {
	for _, tt := range []struct {
		s uint32
		d time.Duration
	}{{0, 0}, {1, time.Second}, {0xfffffffe, 0xfffffffe * time.Second}, {InfiniteLifetime, Infinite}} {
		if got := Lifetime(tt.s); got != tt.d {
			t.Errorf("Lifetime(%d) = %v, want %v", tt.s, got, tt.d)
		}
		if got := Seconds(tt.d); got != tt.s {
			t.Errorf("Seconds(%v) = %d, want %d", tt.d, got, tt.s)
		}
	}
	if Seconds(-time.Second) != 0 || Seconds(1999*time.Millisecond) != 1 || Seconds(1<<62) != InfiniteLifetime {
		t.Error("Seconds of negative, fractional or huge durations")
	}
	// Infinite really is "never" for time arithmetic.
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if end := t0.Add(Infinite); !end.After(t0.Add(200 * 365 * 24 * time.Hour)) {
		t.Fatalf("t0 + Infinite = %v", end)
	}
}

func TestMaskPrefix(t *testing.T) {
	full := a6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
	for _, tt := range []struct {
		bits int
		want string
	}{
		{0, "::"}, {1, "8000::"}, {7, "fe00::"}, {8, "ff00::"}, {56, "ffff:ffff:ffff:ff00::"},
		{63, "ffff:ffff:ffff:fffe::"}, {64, "ffff:ffff:ffff:ffff::"}, {127, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"},
		{128, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	} {
		if got := MaskPrefix(full, tt.bits); got != a6(tt.want) {
			t.Errorf("/%d: %s, want %s", tt.bits, addrString(got), tt.want)
		}
	}
}

// TestGopacketDHCPv6 cross-checks the codec against gopacket's DHCPv6
// layer in both directions.
func TestGopacketDHCPv6(t *testing.T) {
	var d layers.DHCPv6
	if err := d.DecodeFromBytes(fixSolicit, gopacket.NilDecodeFeedback); err != nil {
		t.Fatal(err)
	}
	if d.MsgType != layers.DHCPv6MsgTypeSolicit || !bytes.Equal(d.TransactionID, []byte{0x12, 0x34, 0x56}) {
		t.Fatalf("gopacket: type %v xid %x", d.MsgType, d.TransactionID)
	}
	var codes []layers.DHCPv6Opt
	for _, o := range d.Options {
		codes = append(codes, o.Code)
	}
	wantCodes := []layers.DHCPv6Opt{layers.DHCPv6OptClientID, layers.DHCPv6OptElapsedTime, layers.DHCPv6OptOro,
		layers.DHCPv6OptRapidCommit, layers.DHCPv6OptIAPD}
	if !reflect.DeepEqual(codes, wantCodes) {
		t.Fatalf("gopacket options %v, want %v", codes, wantCodes)
	}
	var duid layers.DHCPv6DUID
	if err := duid.DecodeFromBytes(d.Options[0].Data); err != nil || duid.Type != layers.DHCPv6DUIDTypeLL ||
		!bytes.Equal(duid.HardwareType, []byte{0, 1}) || !bytes.Equal(duid.LinkLayerAddress, clientMAC[:]) {
		t.Fatalf("gopacket DUID %v %v", &duid, err)
	}
	if o := d.Options[4]; o.Length != 41 || binary.BigEndian.Uint32(o.Data) != 1 {
		t.Fatalf("gopacket IA_PD %v", o)
	}

	// gopacket builds a Reply; Parse reads it.
	sduid := layers.DHCPv6DUID{Type: layers.DHCPv6DUIDTypeLL, HardwareType: []byte{0, 1}, LinkLayerAddress: net.HardwareAddr(serverMAC[:])}
	pfx := append([]byte{0, 0, 0x0e, 0x10, 0, 0, 0x1c, 0x20, 48}, netip.MustParseAddr("2001:db8:7::").AsSlice()...)
	ia := appendOpt([]byte{0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, 20}, OptIAPrefix, pfx)
	g := &layers.DHCPv6{
		MsgType: layers.DHCPv6MsgTypeReply, TransactionID: []byte{0xab, 0xcd, 0xef},
		Options: layers.DHCPv6Options{
			layers.NewDHCPv6Option(layers.DHCPv6OptServerID, sduid.Encode()),
			layers.NewDHCPv6Option(layers.DHCPv6OptClientID, DUIDLL(clientMAC)),
			layers.NewDHCPv6Option(layers.DHCPv6OptIAPD, ia),
			layers.NewDHCPv6Option(layers.DHCPv6OptRapidCommit, nil),
		},
	}
	buf := gopacket.NewSerializeBuffer()
	if err := g.SerializeTo(buf, gopacket.SerializeOptions{FixLengths: true}); err != nil {
		t.Fatal(err)
	}
	m, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := Message{
		Type: MsgReply, XID: 0xabcdef, ClientID: DUIDLL(clientMAC), ServerID: DUIDLL(serverMAC), RapidCommit: true,
		IAPD: []IAPD{{IAID: 1, T1: 10, T2: 20, Prefixes: []Prefix{{Prefix: a6("2001:db8:7::"), Bits: 48, Preferred: 3600, Valid: 7200}}}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("parsed gopacket Reply\n got %+v\nwant %+v", m, want)
	}
}

// gopacketUDP6 builds the packet with gopacket's IPv6 and UDP layers.
func gopacketUDP6(t *testing.T, src, dst hdr.Addr6, hop uint8, sport, dport uint16, payload []byte) []byte {
	t.Helper()
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolUDP, HopLimit: hop, SrcIP: src[:], DstIP: dst[:]}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		ip, udp, gopacket.Payload(payload))
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zeroSumPayload returns a 2-byte payload making the UDP checksum compute
// to zero (sent as 0xffff): the checksum of the packet with a zero payload
// word is exactly the word that cancels the sum.
func zeroSumPayload(src, dst *hdr.Addr6, sport, dport uint16) []byte {
	p := EncodeUDP6(nil, src, dst, 1, sport, dport, []byte{0, 0})
	u := p[hdr.IPv6Len:]
	u[6], u[7] = 0, 0
	c := hdr.Checksum(u, hdr.PseudoSum6(src, dst, hdr.ProtoUDP, len(u)))
	return []byte{byte(c >> 8), byte(c)}
}

func TestUDP6VersusGopacket(t *testing.T) {
	src, dst := hdr.LinkLocalEUI64(clientMAC), AllDHCPRelayAgentsAndServers
	srv := hdr.LinkLocalEUI64(serverMAC)
	tests := []struct {
		name       string
		src, dst   hdr.Addr6
		hop        uint8
		sport, dpt uint16
		payload    []byte
	}{
		{"solicit", src, dst, 1, ClientPort, ServerPort, fixSolicit},
		{"advertise", srv, src, 255, ServerPort, ClientPort, fixAdvertise},
		{"empty", src, dst, 64, 1, 2, nil},
		{"odd length", src, dst, 1, 546, 547, []byte{1, 2, 3}},
		{"checksum computes to zero", src, dst, 1, 546, 547, zeroSumPayload(&src, &dst, 546, 547)},
		{"large", srv, src, 1, 547, 546, bytes.Repeat([]byte{0xa5}, 9000)},
	}
	for _, tt := range tests {
		got := EncodeUDP6([]byte{0xee}, &tt.src, &tt.dst, tt.hop, tt.sport, tt.dpt, tt.payload)[1:]
		want := gopacketUDP6(t, tt.src, tt.dst, tt.hop, tt.sport, tt.dpt, tt.payload)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: EncodeUDP6\n got %x\nwant %x", tt.name, got, want)
		}
		if tt.name == "checksum computes to zero" && binary.BigEndian.Uint16(got[hdr.IPv6Len+6:]) != 0xffff {
			t.Fatalf("zero checksum sent as %#x", binary.BigEndian.Uint16(got[hdr.IPv6Len+6:]))
		}
		pkt := gopacket.NewPacket(got, layers.LayerTypeIPv6, gopacket.Default)
		u, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if u == nil {
			t.Fatalf("%s: gopacket found no UDP: %v", tt.name, pkt)
		}
		if err := u.SetNetworkLayerForChecksum(pkt.NetworkLayer()); err != nil {
			t.Fatal(err)
		}
		if err, res := u.VerifyChecksum(); err != nil || !res.Valid {
			t.Fatalf("%s: gopacket checksum %v %+v", tt.name, err, res)
		}
		if tt.sport == ClientPort && len(tt.payload) > 4 {
			if pkt.Layer(layers.LayerTypeDHCPv6) == nil {
				t.Fatalf("%s: gopacket did not decode DHCPv6", tt.name)
			}
		}
		s, d, sp, dp, pl, ok := DecodeUDP6(want)
		if !ok || s != tt.src || d != tt.dst || sp != tt.sport || dp != tt.dpt || !bytes.Equal(pl, tt.payload) {
			t.Fatalf("%s: DecodeUDP6 of gopacket's packet: %v %v %d %d ok %v", tt.name, s, d, sp, dp, ok)
		}
	}
	if b := EncodeUDP6([]byte{1}, &src, &dst, 1, 1, 2, make([]byte, 0xffff-7)); len(b) != 1 {
		t.Fatal("oversized payload was encoded")
	}
	if b := EncodeUDP6(nil, &src, &dst, 1, 1, 2, make([]byte, 0xffff-8)); len(b) != hdr.IPv6Len+0xffff {
		t.Fatalf("largest payload: %d bytes", len(b))
	}
}

func TestDecodeUDP6Rejects(t *testing.T) {
	src, dst := hdr.LinkLocalEUI64(clientMAC), AllDHCPRelayAgentsAndServers
	good := EncodeUDP6(nil, &src, &dst, 1, ClientPort, ServerPort, fixSolicit)
	mut := func(f func(p []byte) []byte) []byte { return f(bytes.Clone(good)) }
	if _, _, _, _, pl, ok := DecodeUDP6(append(bytes.Clone(good), 0, 0, 0)); !ok || !bytes.Equal(pl, fixSolicit) {
		t.Fatal("trailing bytes past the IPv6 payload (link padding) must be ignored")
	}
	tests := []struct {
		name string
		pkt  []byte
	}{
		{"empty", nil},
		{"39 bytes", good[:39]},
		{"header only", mut(func(p []byte) []byte { p[4], p[5] = 0, 0; return p[:40] })},
		{"truncated payload", good[:len(good)-1]},
		{"version 4", mut(func(p []byte) []byte { p[0] = 0x40; return p })},
		{"TCP", mut(func(p []byte) []byte { p[6] = hdr.ProtoTCP; return p })},
		{"hop-by-hop extension header", mut(func(p []byte) []byte { p[6] = 0; return p })},
		{"UDP length 7", mut(func(p []byte) []byte { p[44], p[45] = 0, 7; return p })},
		{"UDP length past payload", mut(func(p []byte) []byte { binary.BigEndian.PutUint16(p[44:], uint16(len(p)-39)); return p })},
		{"zero checksum", mut(func(p []byte) []byte { p[46], p[47] = 0, 0; return p })},
		// 0 and 0xffff sum alike; a zero field means "no checksum", which
		// IPv6 forbids (RFC 8200 8.1), even when the sum would check out.
		{"zero checksum that sums correctly", func() []byte {
			p := EncodeUDP6(nil, &src, &dst, 1, 546, 547, zeroSumPayload(&src, &dst, 546, 547))
			p[46], p[47] = 0, 0
			return p
		}()},
		{"payload corrupted", mut(func(p []byte) []byte { p[len(p)-1] ^= 1; return p })},
		{"address changed", mut(func(p []byte) []byte { p[8] ^= 1; return p })},
		{"port changed", mut(func(p []byte) []byte { p[41]++; return p })},
	}
	for _, tt := range tests {
		if _, _, _, _, _, ok := DecodeUDP6(tt.pkt); ok {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	// A UDP length shorter than the IPv6 payload is honoured (checksum
	// over the UDP length only).
	short := EncodeUDP6(nil, &src, &dst, 1, 1, 2, []byte{1, 2, 3, 4})
	short = append(short, 9, 9)
	hdr.IPv6(short).SetPayloadLen(hdr.UDPLen + 6)
	if _, _, _, _, pl, ok := DecodeUDP6(short); !ok || !bytes.Equal(pl, []byte{1, 2, 3, 4}) {
		t.Fatalf("UDP shorter than the IPv6 payload: ok %v payload %x", ok, pl)
	}
}

// FuzzParse: Parse never panics, and whatever parses re-encodes to bytes
// that parse to the same Message and re-encode identically.
func FuzzParse(f *testing.F) {
	f.Add(fixSolicit)
	f.Add(fixAdvertise)
	f.Add([]byte{7, 0, 0, 1, 0, 13, 0, 2, 0, 3})
	f.Add((&Message{Type: MsgReply, Status: &Status{Message: "x"}, IAPD: []IAPD{{Status: &Status{Code: 6}}}}).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		enc := m.Encode()
		if len(enc) > len(b) {
			t.Fatalf("re-encoding grew from %d to %d bytes", len(b), len(enc))
		}
		m2, err := Parse(enc)
		if err != nil {
			t.Fatalf("re-encoded message does not parse: %v\n%x", err, enc)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip\n got %+v\nwant %+v", m2, m)
		}
		if enc2 := m2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not canonical\n%x\n%x", enc, enc2)
		}
		for _, ia := range m.IAPD {
			for _, p := range ia.Prefixes {
				if p.Bits < 0 || p.Bits > 128 {
					t.Fatalf("prefix length %d", p.Bits)
				}
			}
		}
	})
}

// FuzzDecodeUDP6: never panics; what decodes re-encodes (same hop limit)
// to a packet that decodes to the same fields, and payload lies in pkt.
func FuzzDecodeUDP6(f *testing.F) {
	src, dst := hdr.LinkLocalEUI64(clientMAC), AllDHCPRelayAgentsAndServers
	f.Add(EncodeUDP6(nil, &src, &dst, 1, ClientPort, ServerPort, fixSolicit))
	f.Add(EncodeUDP6(nil, &dst, &src, 255, ServerPort, ClientPort, nil))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		s, d, sp, dp, pl, ok := DecodeUDP6(pkt)
		if !ok {
			return
		}
		if off := hdr.IPv6Len + hdr.UDPLen; len(pkt) < off+len(pl) || !bytes.Equal(pl, pkt[off:off+len(pl)]) {
			t.Fatal("payload is not the bytes after the UDP header")
		}
		re := EncodeUDP6(nil, &s, &d, pkt[7], sp, dp, pl)
		s2, d2, sp2, dp2, pl2, ok := DecodeUDP6(re)
		if !ok || s2 != s || d2 != d || sp2 != sp || dp2 != dp || !bytes.Equal(pl2, pl) {
			t.Fatalf("re-encoded packet decodes differently: ok %v", ok)
		}
		// With traffic class and flow label zero and the UDP length filling
		// the IPv6 payload, the re-encoding is the packet itself.
		ip := hdr.IPv6(pkt)
		if pkt[0] == 0x60 && pkt[1] == 0 && pkt[2] == 0 && pkt[3] == 0 && ip.PayloadLen() == hdr.UDPLen+len(pl) &&
			!bytes.Equal(re, pkt[:ip.TotalLen()]) {
			t.Fatalf("re-encoding differs\n%x\n%x", re, pkt[:ip.TotalLen()])
		}
	})
}
