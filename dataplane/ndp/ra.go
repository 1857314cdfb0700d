package ndp

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// Lifetimes on the wire and time.Duration.
//
// The 32-bit lifetimes in seconds of the prefix information and RDNSS
// options use 0xffffffff for infinity (RFC 4861 4.6.2, RFC 8106 5.1). A
// Duration of at least 0xffffffff seconds (about 136 years; use Infinity)
// is sent as 0xffffffff, and ParseRA returns Infinity for it. Shorter
// positive Durations are rounded up to whole seconds (so a positive
// lifetime never becomes 0) and capped at 0xfffffffe; negative ones are
// sent as 0. The RA header's fields follow the same rounding up: Router
// Lifetime in seconds capped at MaxRouterLifetime (0 means "not a default
// router"), Reachable Time in milliseconds capped at MaxReachableTime,
// Retrans Timer in milliseconds capped at 0xffffffff ms (0 means
// unspecified for both).
const (
	// Infinity is the lifetime 0xffffffff stands for.
	Infinity time.Duration = math.MaxInt64
	// MaxRouterLifetime is the largest router lifetime AppendRA sends
	// (RFC 4861 6.2.1's 9000 s; RFC 8319 allows up to 65535 s, and
	// ParseRA returns whatever is on the wire).
	MaxRouterLifetime = 9000 * time.Second
	// MaxReachableTime is the largest reachable time AppendRA sends
	// (RFC 4861 6.2.1, 3,600,000 ms).
	MaxReachableTime = time.Hour

	infinite32 = 0xffffffff
)

// RA flag bits (RFC 4861 4.2).
const (
	raManaged = 0x80
	raOther   = 0x40
)

// Prefix information option flag bits (RFC 4861 4.6.2).
const (
	pioOnLink     = 0x80
	pioAutonomous = 0x40
)

// maxRDNSSPerOption is the most addresses one RDNSS option can carry: its
// length, 1+2n units of 8 bytes, must fit in a byte.
const maxRDNSSPerOption = 127

// RA is a Router Advertisement (RFC 4861 4.2) with the options the router
// sends. For AppendRA, Src must be the router's link-local address (hosts
// and Parse drop RAs from anything else); a zero Dst means all-nodes
// (ff02::1), and a zero DstMAC with a multicast Dst means that group's
// multicast MAC. ParseRA fills only what the ICMPv6 message carries:
// SrcMAC from the source link-layer option, not Src, Dst or DstMAC.
type RA struct {
	SrcMAC         [6]byte
	Src            hdr.Addr6 // the router's link-local address
	Dst            hdr.Addr6 // ff02::1, or a soliciting host's address
	DstMAC         [6]byte
	CurHopLimit    uint8 // hop limit hosts should use, e.g. 64; 0: unspecified
	Managed, Other bool  // DHCPv6 for addresses, for other configuration
	// RouterLifetime 0 says the router is not a default router.
	RouterLifetime              time.Duration
	ReachableTime, RetransTimer time.Duration
	Prefixes                    []PrefixInfo
	MTU                         uint32 // 0: no MTU option
	// RDNSS are recursive DNS servers (RFC 8106 option 25), all sent
	// with RDNSSLifetime (0 tells hosts to stop using them). ParseRA
	// gathers the addresses of every RDNSS option and returns the first
	// option's lifetime.
	RDNSS         []hdr.Addr6
	RDNSSLifetime time.Duration
}

// PrefixInfo is a prefix information option (RFC 4861 4.6.2). Valid and
// Preferred map to the wire as described under Infinity; RFC 4862 hosts
// ignore a prefix whose Preferred exceeds Valid. AppendRA sends Bits
// capped at 128 and Prefix with the bits past Bits cleared; ParseRA
// returns Prefix as it is on the wire.
type PrefixInfo struct {
	Prefix             hdr.Addr6
	Bits               uint8
	OnLink, Autonomous bool
	Valid, Preferred   time.Duration
}

// units returns d in whole units, rounded up, 0 for d <= 0, at most max.
func units(d, unit time.Duration, max uint64) uint64 {
	if d <= 0 {
		return 0
	}
	n := uint64(d / unit)
	if d%unit != 0 {
		n++
	}
	return min(n, max)
}

// lifetime32 encodes a 32-bit lifetime in seconds.
func lifetime32(d time.Duration) uint32 {
	if d >= infinite32*time.Second {
		return infinite32
	}
	return uint32(units(d, time.Second, infinite32-1))
}

// lifetimeOf decodes a 32-bit lifetime in seconds.
func lifetimeOf(v uint32) time.Duration {
	if v == infinite32 {
		return Infinity
	}
	return time.Duration(v) * time.Second
}

// maskPrefix clears the bits of p past bits.
func maskPrefix(p hdr.Addr6, bits int) hdr.Addr6 {
	for i := range p {
		switch {
		case bits >= 8:
			bits -= 8
		case bits > 0:
			p[i] &= byte(0xff << (8 - bits))
			bits = 0
		default:
			p[i] = 0
		}
	}
	return p
}

// AppendRA appends a Router Advertisement frame built from ra: the RA
// header, a source link-layer option with SrcMAC, an MTU option if MTU
// is not 0, a prefix information option per prefix and RDNSS options
// (RFC 8106; one per 127 addresses) if RDNSS is not empty, hop limit 255.
// The caller keeps it within the link MTU (each prefix takes 32 bytes);
// options that would take the ICMPv6 message past 65535 bytes are left
// out.
func AppendRA(b []byte, ra *RA) []byte {
	n := 16 + 8 // header, source link-layer option
	if ra.MTU != 0 {
		n += 8
	}
	prefixes := ra.Prefixes
	if room := (maxICMP - n) / 32; len(prefixes) > room {
		prefixes = prefixes[:room]
	}
	n += 32 * len(prefixes)
	rdnss := ra.RDNSS
	for i := 0; i < len(rdnss); {
		k := min(len(rdnss)-i, maxRDNSSPerOption)
		if room := (maxICMP - n - 8) / 16; room < k {
			k = max(room, 0)
			rdnss = rdnss[:i+k]
		}
		if k == 0 {
			break
		}
		n += 8 + 16*k
		i += k
	}
	dst, dstMAC := ra.Dst, ra.DstMAC
	if isUnspecified(&dst) {
		dst = AllNodes()
	}
	if dstMAC == ([6]byte{}) && hdr.IsMulticast6(&dst) {
		dstMAC = hdr.MulticastMAC(&dst)
	}
	src := ra.Src
	b, msg := appendFrame(b, dstMAC, ra.SrcMAC, &src, &dst, NDHopLimit, n)
	msg[0] = hdr.ICMP6RouterAdv
	msg[4] = ra.CurHopLimit
	if ra.Managed {
		msg[5] |= raManaged
	}
	if ra.Other {
		msg[5] |= raOther
	}
	binary.BigEndian.PutUint16(msg[6:], uint16(units(ra.RouterLifetime, time.Second, uint64(MaxRouterLifetime/time.Second))))
	binary.BigEndian.PutUint32(msg[8:], uint32(units(ra.ReachableTime, time.Millisecond, uint64(MaxReachableTime/time.Millisecond))))
	binary.BigEndian.PutUint32(msg[12:], uint32(units(ra.RetransTimer, time.Millisecond, math.MaxUint32)))
	o := msg[16:]
	putLLOption(o, OptSourceLL, ra.SrcMAC)
	o = o[8:]
	if ra.MTU != 0 {
		o[0], o[1] = OptMTU, 1
		binary.BigEndian.PutUint32(o[4:], ra.MTU)
		o = o[8:]
	}
	for i := range prefixes {
		p := &prefixes[i]
		bits := min(p.Bits, 128)
		o[0], o[1], o[2] = OptPrefixInfo, 4, bits
		if p.OnLink {
			o[3] |= pioOnLink
		}
		if p.Autonomous {
			o[3] |= pioAutonomous
		}
		binary.BigEndian.PutUint32(o[4:], lifetime32(p.Valid))
		binary.BigEndian.PutUint32(o[8:], lifetime32(p.Preferred))
		pre := maskPrefix(p.Prefix, int(bits))
		copy(o[16:32], pre[:])
		o = o[32:]
	}
	for len(rdnss) > 0 {
		k := min(len(rdnss), maxRDNSSPerOption)
		o[0], o[1] = OptRDNSS, byte(1+2*k)
		binary.BigEndian.PutUint32(o[4:], lifetime32(ra.RDNSSLifetime))
		for j, a := range rdnss[:k] {
			copy(o[8+16*j:], a[:])
		}
		o = o[8+16*k:]
		rdnss = rdnss[k:]
	}
	hdr.ICMP6Checksum(msg, &src, &dst)
	return b
}

// ParseRA decodes a Router Advertisement message: body is the ICMPv6
// message (Message.Body, type 134). It checks the type, code 0, the
// minimum length and the option framing (as Parse does), and the lengths
// of the options it reads: source link-layer address (1), prefix
// information (3, prefix length at most 128), MTU (5) and RDNSS (25);
// other options are skipped, and of repeated link-layer and MTU options
// the first counts. It does not verify the checksum, hop limit or source
// address, which need the IPv6 header: Parse does. Errors match ErrInvalid.
func ParseRA(body []byte) (RA, error) {
	ra, err := parseRA(body)
	if err != nil {
		return RA{}, err
	}
	return ra, nil
}

func parseRA(body []byte) (ra RA, err error) {
	if len(body) < 1 || body[0] != hdr.ICMP6RouterAdv {
		return ra, errNotRA
	}
	if len(body) < 16 {
		return ra, errShort
	}
	if body[1] != 0 {
		return ra, errCode
	}
	ra.CurHopLimit = body[4]
	ra.Managed, ra.Other = body[5]&raManaged != 0, body[5]&raOther != 0
	ra.RouterLifetime = time.Duration(binary.BigEndian.Uint16(body[6:])) * time.Second
	ra.ReachableTime = time.Duration(binary.BigEndian.Uint32(body[8:])) * time.Millisecond
	ra.RetransTimer = time.Duration(binary.BigEndian.Uint32(body[12:])) * time.Millisecond
	var haveLL, haveMTU, haveRDNSS bool
	err = walkOptions(body[16:], func(typ uint8, o []byte) error {
		switch typ {
		case OptSourceLL:
			if len(o) != 8 {
				return errLLOptLen
			}
			if !haveLL {
				ra.SrcMAC, haveLL = [6]byte(o[2:8]), true
			}
		case OptMTU:
			if len(o) != 8 {
				return errOptLen
			}
			if !haveMTU {
				ra.MTU, haveMTU = binary.BigEndian.Uint32(o[4:]), true
			}
		case OptPrefixInfo:
			if len(o) != 32 {
				return errOptLen
			}
			if o[2] > 128 {
				return errPrefixLen
			}
			ra.Prefixes = append(ra.Prefixes, PrefixInfo{
				Prefix:     hdr.Addr6(o[16:32]),
				Bits:       o[2],
				OnLink:     o[3]&pioOnLink != 0,
				Autonomous: o[3]&pioAutonomous != 0,
				Valid:      lifetimeOf(binary.BigEndian.Uint32(o[4:])),
				Preferred:  lifetimeOf(binary.BigEndian.Uint32(o[8:])),
			})
		case OptRDNSS:
			if len(o) < 24 || (len(o)-8)%16 != 0 {
				return errOptLen
			}
			if !haveRDNSS {
				ra.RDNSSLifetime, haveRDNSS = lifetimeOf(binary.BigEndian.Uint32(o[4:])), true
			}
			for a := o[8:]; len(a) > 0; a = a[16:] {
				ra.RDNSS = append(ra.RDNSS, hdr.Addr6(a[:16]))
			}
		}
		return nil
	})
	return ra, err
}
