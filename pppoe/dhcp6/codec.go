package dhcp6

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// UDP ports (RFC 8415 7.2).
const (
	ClientPort = 546
	ServerPort = 547
)

// AllDHCPRelayAgentsAndServers is ff02::1:2, where clients send (RFC 8415 7.1).
var AllDHCPRelayAgentsAndServers = hdr.Addr6{0: 0xff, 1: 0x02, 13: 0x01, 15: 0x02}

// MsgType is a DHCPv6 message type (RFC 8415 7.3).
type MsgType uint8

// Message types. Relay-forw (12) and Relay-repl (13) are not supported.
const (
	MsgSolicit            MsgType = 1
	MsgAdvertise          MsgType = 2
	MsgRequest            MsgType = 3
	MsgConfirm            MsgType = 4
	MsgRenew              MsgType = 5
	MsgRebind             MsgType = 6
	MsgReply              MsgType = 7
	MsgRelease            MsgType = 8
	MsgDecline            MsgType = 9
	MsgReconfigure        MsgType = 10
	MsgInformationRequest MsgType = 11

	// NumMsgTypes sizes arrays indexed by MsgType.
	NumMsgTypes = 12
)

var msgNames = [NumMsgTypes]string{"", "Solicit", "Advertise", "Request", "Confirm", "Renew",
	"Rebind", "Reply", "Release", "Decline", "Reconfigure", "Information-request"}

func (t MsgType) String() string {
	if t >= 1 && t < NumMsgTypes {
		return msgNames[t]
	}
	return fmt.Sprintf("MsgType(%d)", uint8(t))
}

// Option codes (RFC 8415 21, RFC 3646).
const (
	OptClientID    = 1
	OptServerID    = 2
	OptORO         = 6
	OptElapsedTime = 8
	OptStatusCode  = 13
	OptRapidCommit = 14
	OptDNSServers  = 23
	OptSolMaxRT    = 82 // RFC 8415 21.24: the server's cap on Solicit retransmission
	OptIAPD        = 25
	OptIAPrefix    = 26
)

// StatusCode is the code of a STATUS_CODE option (RFC 8415 21.13).
type StatusCode uint16

// Status codes.
const (
	StatusSuccess       StatusCode = 0
	StatusUnspecFail    StatusCode = 1
	StatusNoAddrsAvail  StatusCode = 2
	StatusNoBinding     StatusCode = 3
	StatusNotOnLink     StatusCode = 4
	StatusUseMulticast  StatusCode = 5
	StatusNoPrefixAvail StatusCode = 6
)

var statusNames = [...]string{"Success", "UnspecFail", "NoAddrsAvail", "NoBinding", "NotOnLink",
	"UseMulticast", "NoPrefixAvail"}

func (c StatusCode) String() string {
	if int(c) < len(statusNames) {
		return statusNames[c]
	}
	return fmt.Sprintf("StatusCode(%d)", uint16(c))
}

// InfiniteLifetime is the wire value of an infinite lifetime or T1/T2.
const InfiniteLifetime = 0xffffffff

// Infinite is the Duration an infinite lifetime (0xffffffff on the wire)
// maps to: math.MaxInt64, about 292 years, so now.Add(Infinite) is simply
// far in the future (time.Time does not overflow there).
const Infinite time.Duration = math.MaxInt64

// Lifetime converts a wire lifetime in seconds to a Duration
// (InfiniteLifetime to Infinite).
func Lifetime(s uint32) time.Duration {
	if s == InfiniteLifetime {
		return Infinite
	}
	return time.Duration(s) * time.Second
}

// Seconds converts a Duration to a wire lifetime: Infinite (or anything
// from 0xffffffff seconds up) to InfiniteLifetime, negative to 0, and
// fractions of a second rounded down.
func Seconds(d time.Duration) uint32 {
	switch {
	case d <= 0:
		return 0
	case d/time.Second >= InfiniteLifetime:
		return InfiniteLifetime
	}
	return uint32(d / time.Second)
}

// Status is a STATUS_CODE option: a code and a UTF-8 message (not
// validated; kept as received).
type Status struct {
	Code    StatusCode
	Message string
}

// Prefix is an IAPREFIX option (RFC 8415 21.22). Lifetimes are in
// seconds, InfiniteLifetime meaning infinite. Its suboptions are skipped.
type Prefix struct {
	Prefix    hdr.Addr6
	Bits      int // prefix length, 0..128
	Preferred uint32
	Valid     uint32
}

// MaskPrefix returns a with the bits past the first bits cleared.
func MaskPrefix(a hdr.Addr6, bits int) hdr.Addr6 {
	for i := range a {
		switch n := bits - 8*i; {
		case n <= 0:
			a[i] = 0
		case n < 8:
			a[i] &= 0xff << (8 - n)
		}
	}
	return a
}

func addrString(a hdr.Addr6) string { return netip.AddrFrom16(a).String() }

// IAPD is an IA_PD option (RFC 8415 21.21). T1 and T2 are in seconds.
type IAPD struct {
	IAID     uint32
	T1, T2   uint32
	Status   *Status // nil: no STATUS_CODE option in the IA_PD
	Prefixes []Prefix
}

// Message is a client/server DHCPv6 message (not a relay message).
//
// A nil slice or pointer means the option is absent. Parse keeps the first
// of repeated CLIENTID, SERVERID, ORO, ELAPSED_TIME, STATUS_CODE and
// DNS_SERVERS options (and the first STATUS_CODE of an IA_PD); every IA_PD
// and IAPREFIX is kept, in order.
type Message struct {
	Type        MsgType
	XID         uint32 // transaction id, 24 bits
	ClientID    []byte // DUID
	ServerID    []byte // DUID
	RapidCommit bool
	HasElapsed  bool   // ELAPSED_TIME present
	Elapsed     uint16 // hundredths of a second
	ORO         []uint16
	DNS         []hdr.Addr6
	SolMaxRT    uint32 // seconds; 0: no SOL_MAX_RT option
	Status      *Status
	IAPD        []IAPD
}

// ErrMalformed is wrapped by every Parse error.
var ErrMalformed = errors.New("dhcp6: malformed message")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// Minimum option payload sizes.
const (
	iapdLen     = 12 // IAID, T1, T2
	iaprefixLen = 25 // preferred, valid, prefix-length, prefix
	hdrLen      = 4  // msg-type, transaction-id
	optHdrLen   = 4  // option-code, option-len
)

// nextOpt splits the first option off b. ok is false at the end of b;
// err is set if the option does not fit.
func nextOpt(b []byte) (code uint16, data, rest []byte, ok bool, err error) {
	if len(b) == 0 {
		return 0, nil, nil, false, nil
	}
	if len(b) < optHdrLen {
		return 0, nil, nil, false, malformed("%d trailing bytes", len(b))
	}
	code = binary.BigEndian.Uint16(b)
	n := int(binary.BigEndian.Uint16(b[2:]))
	if optHdrLen+n > len(b) {
		return 0, nil, nil, false, malformed("option %d length %d exceeds %d bytes", code, n, len(b)-optHdrLen)
	}
	return code, b[optHdrLen : optHdrLen+n], b[optHdrLen+n:], true, nil
}

// Parse decodes a DHCPv6 client/server message. It never panics; the
// Message it returns shares no memory with b. Unknown options are
// skipped; known options with an impossible length, a relay or unknown
// message type, and truncated options are errors (wrapping ErrMalformed).
func Parse(b []byte) (Message, error) {
	var m Message
	if len(b) < hdrLen {
		return m, malformed("%d bytes", len(b))
	}
	m.Type = MsgType(b[0])
	if m.Type < MsgSolicit || m.Type > MsgInformationRequest {
		return m, malformed("message type %d", b[0])
	}
	m.XID = uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	var seen [OptSolMaxRT + 1]bool // first-wins for singleton options
	rest := b[hdrLen:]
	for {
		code, data, r, ok, err := nextOpt(rest)
		if err != nil {
			return m, err
		}
		if !ok {
			return m, nil
		}
		rest = r
		if code != OptIAPD && int(code) < len(seen) {
			if seen[code] {
				continue
			}
			seen[code] = true
		}
		switch code {
		case OptClientID, OptServerID:
			if len(data) < 2 {
				return m, malformed("DUID of %d bytes", len(data))
			}
			if code == OptClientID {
				m.ClientID = append([]byte(nil), data...)
			} else {
				m.ServerID = append([]byte(nil), data...)
			}
		case OptORO:
			if len(data)%2 != 0 {
				return m, malformed("ORO of %d bytes", len(data))
			}
			for i := 0; i < len(data); i += 2 {
				m.ORO = append(m.ORO, binary.BigEndian.Uint16(data[i:]))
			}
		case OptElapsedTime:
			if len(data) != 2 {
				return m, malformed("ELAPSED_TIME of %d bytes", len(data))
			}
			m.HasElapsed, m.Elapsed = true, binary.BigEndian.Uint16(data)
		case OptStatusCode:
			s, err := parseStatus(data)
			if err != nil {
				return m, err
			}
			m.Status = s
		case OptRapidCommit:
			if len(data) != 0 {
				return m, malformed("RAPID_COMMIT of %d bytes", len(data))
			}
			m.RapidCommit = true
		case OptDNSServers:
			if len(data)%16 != 0 {
				return m, malformed("DNS_SERVERS of %d bytes", len(data))
			}
			for i := 0; i < len(data); i += 16 {
				m.DNS = append(m.DNS, hdr.Addr6(data[i:i+16]))
			}
		case OptSolMaxRT:
			if len(data) != 4 {
				return m, malformed("SOL_MAX_RT of %d bytes", len(data))
			}
			m.SolMaxRT = binary.BigEndian.Uint32(data)
		case OptIAPD:
			ia, err := parseIAPD(data)
			if err != nil {
				return m, err
			}
			m.IAPD = append(m.IAPD, ia)
		}
	}
}

func parseStatus(data []byte) (*Status, error) {
	if len(data) < 2 {
		return nil, malformed("STATUS_CODE of %d bytes", len(data))
	}
	return &Status{Code: StatusCode(binary.BigEndian.Uint16(data)), Message: string(data[2:])}, nil
}

func parseIAPD(data []byte) (IAPD, error) {
	var ia IAPD
	if len(data) < iapdLen {
		return ia, malformed("IA_PD of %d bytes", len(data))
	}
	ia.IAID = binary.BigEndian.Uint32(data)
	ia.T1 = binary.BigEndian.Uint32(data[4:])
	ia.T2 = binary.BigEndian.Uint32(data[8:])
	rest := data[iapdLen:]
	for {
		code, d, r, ok, err := nextOpt(rest)
		if err != nil {
			return ia, err
		}
		if !ok {
			return ia, nil
		}
		rest = r
		switch code {
		case OptStatusCode:
			if ia.Status != nil {
				continue
			}
			s, err := parseStatus(d)
			if err != nil {
				return ia, err
			}
			ia.Status = s
		case OptIAPrefix:
			if len(d) < iaprefixLen {
				return ia, malformed("IAPREFIX of %d bytes", len(d))
			}
			p := Prefix{
				Preferred: binary.BigEndian.Uint32(d),
				Valid:     binary.BigEndian.Uint32(d[4:]),
				Bits:      int(d[8]),
				Prefix:    hdr.Addr6(d[9:25]),
			}
			if p.Bits > 128 {
				return ia, malformed("IAPREFIX length %d", p.Bits)
			}
			// Suboptions must still be well formed.
			for sub := d[iaprefixLen:]; ; {
				_, _, r, ok, err := nextOpt(sub)
				if err != nil {
					return ia, err
				}
				if !ok {
					break
				}
				sub = r
			}
			ia.Prefixes = append(ia.Prefixes, p)
		}
	}
}

// beginOpt appends an option header with a zero length and returns the
// offset to pass to endOpt once the option's data is appended.
func beginOpt(b []byte, code uint16) ([]byte, int) {
	return append(b, byte(code>>8), byte(code), 0, 0), len(b)
}

func endOpt(b []byte, start int) []byte {
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start-optHdrLen))
	return b
}

func appendOpt(b []byte, code uint16, data []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, code)
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	return append(b, data...)
}

func appendStatus(b []byte, s *Status) []byte {
	b, o := beginOpt(b, OptStatusCode)
	b = binary.BigEndian.AppendUint16(b, uint16(s.Code))
	b = append(b, s.Message...)
	return endOpt(b, o)
}

// Append appends the encoded message to b. Options are written in a fixed
// order: CLIENTID, SERVERID, ELAPSED_TIME, ORO, RAPID_COMMIT, STATUS_CODE,
// DNS_SERVERS, then each IA_PD (its STATUS_CODE, then its IAPREFIXes).
// XID is truncated to 24 bits and Bits to 8. Append does not check that
// each option fits in 65535 bytes (anything Parse returns does).
func (m *Message) Append(b []byte) []byte {
	b = append(b, byte(m.Type), byte(m.XID>>16), byte(m.XID>>8), byte(m.XID))
	if m.ClientID != nil {
		b = appendOpt(b, OptClientID, m.ClientID)
	}
	if m.ServerID != nil {
		b = appendOpt(b, OptServerID, m.ServerID)
	}
	if m.HasElapsed {
		b = appendOpt(b, OptElapsedTime, binary.BigEndian.AppendUint16(nil, m.Elapsed))
	}
	if m.ORO != nil {
		var o int
		b, o = beginOpt(b, OptORO)
		for _, c := range m.ORO {
			b = binary.BigEndian.AppendUint16(b, c)
		}
		b = endOpt(b, o)
	}
	if m.RapidCommit {
		b = appendOpt(b, OptRapidCommit, nil)
	}
	if m.Status != nil {
		b = appendStatus(b, m.Status)
	}
	if m.SolMaxRT != 0 {
		b = appendOpt(b, OptSolMaxRT, binary.BigEndian.AppendUint32(nil, m.SolMaxRT))
	}
	if m.DNS != nil {
		var o int
		b, o = beginOpt(b, OptDNSServers)
		for i := range m.DNS {
			b = append(b, m.DNS[i][:]...)
		}
		b = endOpt(b, o)
	}
	for i := range m.IAPD {
		ia := &m.IAPD[i]
		var o int
		b, o = beginOpt(b, OptIAPD)
		b = binary.BigEndian.AppendUint32(b, ia.IAID)
		b = binary.BigEndian.AppendUint32(b, ia.T1)
		b = binary.BigEndian.AppendUint32(b, ia.T2)
		if ia.Status != nil {
			b = appendStatus(b, ia.Status)
		}
		for _, p := range ia.Prefixes {
			var po int
			b, po = beginOpt(b, OptIAPrefix)
			b = binary.BigEndian.AppendUint32(b, p.Preferred)
			b = binary.BigEndian.AppendUint32(b, p.Valid)
			b = append(b, byte(p.Bits))
			b = append(b, p.Prefix[:]...)
			b = endOpt(b, po)
		}
		b = endOpt(b, o)
	}
	return b
}

// Encode returns the encoded message in a new slice.
func (m *Message) Encode() []byte { return m.Append(nil) }

// FindIAPD returns the first IA_PD with the given IAID, or nil.
func (m *Message) FindIAPD(iaid uint32) *IAPD {
	for i := range m.IAPD {
		if m.IAPD[i].IAID == iaid {
			return &m.IAPD[i]
		}
	}
	return nil
}

// Requests reports whether the ORO asks for option code.
func (m *Message) Requests(code uint16) bool {
	for _, c := range m.ORO {
		if c == code {
			return true
		}
	}
	return false
}

// DUIDLL returns the DUID-LL (type 3, hardware type 1: Ethernet) of mac
// (RFC 8415 11.4).
func DUIDLL(mac [6]byte) []byte {
	return []byte{0, 3, 0, 1, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]}
}

// EncodeUDP6 appends to b an IPv6 header (no extension headers, traffic
// class and flow label zero) from src to dst with the given hop limit, a
// UDP header from sport to dport with its checksum, and payload. A payload
// too long for the UDP length field (over 65527 bytes) appends nothing and
// returns b unchanged.
func EncodeUDP6(b []byte, src, dst *hdr.Addr6, hopLimit uint8, sport, dport uint16, payload []byte) []byte {
	udpLen := hdr.UDPLen + len(payload)
	if udpLen > 0xffff {
		return b
	}
	start := len(b)
	b = append(b, make([]byte, hdr.IPv6Len+hdr.UDPLen)...)
	hdr.IPv6(b[start:]).SetHeader(hdr.ProtoUDP, hopLimit, udpLen, src, dst)
	u := b[start+hdr.IPv6Len:]
	binary.BigEndian.PutUint16(u, sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(udpLen))
	b = append(b, payload...)
	u = b[start+hdr.IPv6Len:]
	c := hdr.Checksum(u, hdr.PseudoSum6(src, dst, hdr.ProtoUDP, udpLen))
	if c == 0 {
		c = 0xffff // RFC 8200 8.1: a computed zero is sent as all ones
	}
	binary.BigEndian.PutUint16(u[6:], c)
	return b
}

// DecodeUDP6 checks that pkt is an IPv6 packet (version 6, payload length
// within pkt; bytes past it are ignored) carrying UDP directly (next
// header 17, no extension headers) whose length fits the IPv6 payload and
// whose checksum is present and correct, and returns its addresses, ports
// and payload. payload aliases pkt. It never panics.
func DecodeUDP6(pkt []byte) (src, dst hdr.Addr6, sport, dport uint16, payload []byte, ok bool) {
	ip := hdr.IPv6(pkt)
	if !ip.IsValid() || ip.NextHeader() != hdr.ProtoUDP {
		return
	}
	u := ip.Payload()
	if len(u) < hdr.UDPLen {
		return
	}
	n := int(binary.BigEndian.Uint16(u[4:]))
	if n < hdr.UDPLen || n > len(u) || binary.BigEndian.Uint16(u[6:]) == 0 {
		return
	}
	u = u[:n]
	s, d := ip.Src(), ip.Dst()
	if hdr.Fold(hdr.Sum(u, hdr.PseudoSum6(&s, &d, hdr.ProtoUDP, n))) != 0xffff {
		return
	}
	return s, d, binary.BigEndian.Uint16(u), binary.BigEndian.Uint16(u[2:]), u[hdr.UDPLen:], true
}
