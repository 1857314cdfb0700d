package ndp

import (
	"encoding/binary"
	"errors"

	"github.com/pppfwd/pppfwd/hdr"
)

// ICMPv6 types and ND constants not in hdr.
const (
	TypeRedirect = 137 // RFC 4861 4.5

	// NDHopLimit is the hop limit every ND message is sent and must be
	// received with (RFC 4861 6.1, 7.1).
	NDHopLimit = 255
	// EchoHopLimit is the hop limit of the echo replies built here.
	EchoHopLimit = 64
)

// ND option types (RFC 4861 4.6, RFC 8106 5.1).
const (
	OptSourceLL   = 1
	OptTargetLL   = 2
	OptPrefixInfo = 3
	OptRedirected = 4
	OptMTU        = 5
	OptRDNSS      = 25
)

// NA flag bits (first byte after the checksum, RFC 4861 4.4).
const (
	naRouter    = 0x80
	naSolicited = 0x40
	naOverride  = 0x20
)

// Minimum ICMPv6 lengths of the ND messages (RFC 4861 6.1.1, 6.1.2, 7.1.1,
// 7.1.2, 8.1), indexed by type-133.
var ndMinLen = [5]int{8, 16, 24, 24, 40}

// Errors returned by Parse and ParseRA. They are distinct values so the
// caller can count drops by reason; compare with errors.Is. Every failed
// validity check (RFC 4861 6.1.1, 6.1.2, 7.1.1, 7.1.2, 8.1, and the
// malformed-message checks here) matches ErrInvalid, and its text says
// which check failed.
var (
	ErrTruncated = errors.New("ndp: truncated frame")
	ErrNotIPv6   = errors.New("ndp: not an untagged IPv6 frame")
	ErrExtHeader = errors.New("ndp: IPv6 extension header before the upper layer")
	ErrNotICMPv6 = errors.New("ndp: not ICMPv6")
	ErrChecksum  = errors.New("ndp: bad ICMPv6 checksum")
	ErrInvalid   = errors.New("ndp: invalid message")
)

// invalidError is one failed validity check; it matches ErrInvalid.
type invalidError string

func (e invalidError) Error() string        { return "ndp: invalid message: " + string(e) }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// The validity checks. Parse and ParseRA return these (as error values
// comparable with ==); callers see them as ErrInvalid.
const (
	errShort           = invalidError("ICMPv6 message shorter than its type's minimum")
	errSrcMulticast    = invalidError("multicast source address")
	errHopLimit        = invalidError("ND hop limit not 255")
	errCode            = invalidError("ND code not 0")
	errOptZero         = invalidError("ND option of length 0")
	errOptOverrun      = invalidError("ND option runs past the message")
	errLLOptLen        = invalidError("link-layer address option not 8 bytes")
	errOptLen          = invalidError("ND option of the wrong length for its type")
	errTargetMulticast = invalidError("NS/NA target is multicast")
	errUnspecSourceLL  = invalidError("source link-layer option from the unspecified address")
	errDADDst          = invalidError("NS from the unspecified address not to a solicited-node group")
	errSolicitedMcast  = invalidError("solicited NA to a multicast destination")
	errNotLinkLocal    = invalidError("RA or redirect not from a link-local address")
	errRedirectDst     = invalidError("redirect destination is multicast")
	errRedirectTarget  = invalidError("redirect target neither link-local nor the destination")
	errNotRA           = invalidError("not a router advertisement")
	errPrefixLen       = invalidError("prefix length over 128")
)

// Message is a parsed ICMPv6 frame. Which fields are set depends on Type:
// Target and the NA flags for NS/NA (Target also for redirects),
// SourceLL for RS/RA/NS, TargetLL for NA/redirect, EchoID/EchoSeq for
// echo request/reply. For an RA, ParseRA(Body) decodes the rest.
type Message struct {
	SrcMAC, DstMAC [6]byte
	Src, Dst       hdr.Addr6
	HopLimit       uint8
	Type, Code     uint8
	// Target is the target address of an NS, NA or redirect.
	Target hdr.Addr6
	// NA flags.
	Router, Solicited, Override bool
	// Link-layer address options, when present (HasSourceLL, HasTargetLL).
	// The first of several is kept.
	SourceLL, TargetLL       [6]byte
	HasSourceLL, HasTargetLL bool
	EchoID, EchoSeq          uint16
	// Body is the ICMPv6 message, from its type byte to the end of the
	// IPv6 payload (Ethernet padding excluded). It aliases the frame
	// passed to Parse and is valid as long as that frame is.
	Body []byte
}

// AllNodes returns the link-local all-nodes group ff02::1.
func AllNodes() hdr.Addr6 { return hdr.Addr6{0: 0xff, 1: 0x02, 15: 1} }

// AllRouters returns the link-local all-routers group ff02::2.
func AllRouters() hdr.Addr6 { return hdr.Addr6{0: 0xff, 1: 0x02, 15: 2} }

// AllNodesMAC returns the Ethernet address of ff02::1, 33:33:00:00:00:01.
func AllNodesMAC() [6]byte { return [6]byte{0x33, 0x33, 0, 0, 0, 1} }

// AllRoutersMAC returns the Ethernet address of ff02::2, 33:33:00:00:00:02.
func AllRoutersMAC() [6]byte { return [6]byte{0x33, 0x33, 0, 0, 0, 2} }

// solicitedPrefix is ff02::1:ff00:0/104.
var solicitedPrefix = [13]byte{0xff, 0x02, 11: 0x01, 12: 0xff}

// IsSolicitedNode reports whether a is a solicited-node multicast address
// (ff02::1:ff00:0/104, RFC 4291 2.7.1).
func IsSolicitedNode(a *hdr.Addr6) bool { return [13]byte(a[:13]) == solicitedPrefix }

func isUnspecified(a *hdr.Addr6) bool { return *a == hdr.Addr6{} }

// isExtHeader reports whether next is an IPv6 extension header (RFC 8200
// 4, the IANA "IPv6 Extension Header Types" registry).
func isExtHeader(next uint8) bool {
	switch next {
	case 0, 43, 44, 50, 51, 60, 135, 139, 140, 253, 254:
		return true
	}
	return false
}

// Parse decodes an untagged Ethernet frame carrying IPv6 with ICMPv6 as
// its next header. It checks, in order: the Ethernet and IPv6 headers and
// lengths (ErrTruncated, ErrNotIPv6), the next header (ErrExtHeader for an
// extension header, ErrNotICMPv6 for anything else), the ICMPv6 checksum
// (ErrChecksum), then the message: a multicast source is refused for every
// type, an echo request/reply must be at least 8 bytes, and the ND types
// 133-137 must pass RFC 4861's validity checks (hop limit 255, code 0,
// minimum length, every option of non-zero length and within the message,
// link-layer options of 8 bytes, NS/NA target not multicast, no source
// link-layer option from the unspecified address, a DAD NS to a
// solicited-node group, a solicited NA not to multicast, RA and redirect
// from link-local, the redirect's target and destination rules). These
// failures match ErrInvalid. Options of other types are skipped; other
// ICMPv6 types are returned without further checks.
//
// Bytes after the IPv6 payload (Ethernet padding) are ignored. On error
// the returned Message is zero.
func Parse(frame []byte) (Message, error) {
	m, err := parse(frame)
	if err != nil {
		return Message{}, err
	}
	return m, nil
}

func parse(frame []byte) (m Message, err error) {
	eth := hdr.Ethernet(frame)
	if !eth.IsValid() {
		return m, ErrTruncated
	}
	if eth.Type() != hdr.EtherTypeIPv6 {
		return m, ErrNotIPv6
	}
	ip := hdr.IPv6(frame[hdr.EthernetLen:])
	if len(ip) < hdr.IPv6Len {
		return m, ErrTruncated
	}
	if ip[0]>>4 != 6 {
		return m, ErrNotIPv6
	}
	if !ip.IsValid() {
		return m, ErrTruncated
	}
	if nh := ip.NextHeader(); nh != hdr.ProtoICMP6 {
		if isExtHeader(nh) {
			return m, ErrExtHeader
		}
		return m, ErrNotICMPv6
	}
	m.DstMAC, m.SrcMAC = [6]byte(eth.Dst()), [6]byte(eth.Src())
	m.Src, m.Dst, m.HopLimit = ip.Src(), ip.Dst(), ip.HopLimit()
	body := ip.Payload()
	if len(body) < 4 {
		return m, errShort
	}
	if !hdr.ICMP6ChecksumOK(body, &m.Src, &m.Dst) {
		return m, ErrChecksum
	}
	if hdr.IsMulticast6(&m.Src) {
		return m, errSrcMulticast
	}
	m.Type, m.Code, m.Body = body[0], body[1], body
	switch m.Type {
	case hdr.ICMP6EchoRequest, hdr.ICMP6EchoReply:
		if len(body) < 8 {
			return m, errShort
		}
		m.EchoID = binary.BigEndian.Uint16(body[4:])
		m.EchoSeq = binary.BigEndian.Uint16(body[6:])
	case hdr.ICMP6RouterSol, hdr.ICMP6RouterAdv, hdr.ICMP6NeighborSol, hdr.ICMP6NeighborAdv, TypeRedirect:
		return m, validND(&m, body)
	}
	return m, nil
}

// validND applies RFC 4861's receive-side validity checks to ND message
// body (type 133-137) and fills m's ND fields.
func validND(m *Message, body []byte) error {
	if m.HopLimit != NDHopLimit {
		return errHopLimit
	}
	if m.Code != 0 {
		return errCode
	}
	min := ndMinLen[m.Type-hdr.ICMP6RouterSol]
	if len(body) < min {
		return errShort
	}
	switch m.Type {
	case hdr.ICMP6RouterAdv:
		if !hdr.IsLinkLocal6(&m.Src) {
			return errNotLinkLocal
		}
	case hdr.ICMP6NeighborSol, hdr.ICMP6NeighborAdv:
		m.Target = hdr.Addr6(body[8:24])
		if hdr.IsMulticast6(&m.Target) {
			return errTargetMulticast
		}
		if m.Type == hdr.ICMP6NeighborAdv {
			f := body[4]
			m.Router, m.Solicited, m.Override = f&naRouter != 0, f&naSolicited != 0, f&naOverride != 0
			if m.Solicited && hdr.IsMulticast6(&m.Dst) {
				return errSolicitedMcast
			}
		}
	case TypeRedirect:
		if !hdr.IsLinkLocal6(&m.Src) {
			return errNotLinkLocal
		}
		m.Target = hdr.Addr6(body[8:24])
		dst := hdr.Addr6(body[24:40])
		if hdr.IsMulticast6(&dst) {
			return errRedirectDst
		}
		if !hdr.IsLinkLocal6(&m.Target) && m.Target != dst {
			return errRedirectTarget
		}
	}
	// RFC 4861 4.6.1: the source link-layer option is used in RS, RA
	// and NS, the target one in NA and redirect; elsewhere they are
	// silently ignored.
	wantSource := m.Type <= hdr.ICMP6NeighborSol
	err := walkOptions(body[min:], func(typ uint8, opt []byte) error {
		var ll *[6]byte
		var has *bool
		switch {
		case typ == OptSourceLL && wantSource:
			ll, has = &m.SourceLL, &m.HasSourceLL
		case typ == OptTargetLL && !wantSource:
			ll, has = &m.TargetLL, &m.HasTargetLL
		default:
			return nil
		}
		if len(opt) != 8 {
			return errLLOptLen
		}
		if !*has {
			*ll, *has = [6]byte(opt[2:8]), true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if isUnspecified(&m.Src) {
		switch m.Type {
		case hdr.ICMP6RouterSol, hdr.ICMP6NeighborSol:
			if m.HasSourceLL {
				return errUnspecSourceLL
			}
		}
		if m.Type == hdr.ICMP6NeighborSol && !IsSolicitedNode(&m.Dst) {
			return errDADDst
		}
	}
	return nil
}

// walkOptions calls f with each ND option in opts (type byte through the
// end of the option). It fails on an option of length 0 or one that does
// not fit, before calling f for any later option.
func walkOptions(opts []byte, f func(typ uint8, opt []byte) error) error {
	for len(opts) > 0 {
		if len(opts) < 2 {
			return errOptOverrun
		}
		n := int(opts[1]) * 8
		if n == 0 {
			return errOptZero
		}
		if n > len(opts) {
			return errOptOverrun
		}
		if err := f(opts[0], opts[:n]); err != nil {
			return err
		}
		opts = opts[n:]
	}
	return nil
}
