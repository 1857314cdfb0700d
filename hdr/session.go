// The PPPoE session codec the fast path needs: the session snapshot the
// control plane publishes and the zero-allocation Encap/Decap.

package hdr

import (
	"github.com/pppfwd/pppfwd/nic"
)

// Session is the immutable snapshot of an established session that the
// control plane publishes to the workers (atomic.Pointer).
type Session struct {
	ID        uint16
	LocalMAC  [6]byte // our WAN MAC
	PeerMAC   [6]byte // the AC's MAC
	VLAN      uint16  // 0: untagged
	VLANPrio  uint8   // 802.1p priority for tagged frames
	LocalAddr uint32  // IPCP address (big-endian uint32)
	PeerAddr  uint32
	DNS       [2]uint32
	MTU       int // negotiated PPP MTU (1492, or 1500 with RFC 4638)
	// IPv6: IPv6CP is open (IPv6 may cross the session); the interface
	// identifiers it negotiated make the link-local addresses.
	IPv6                bool
	LocalIfID, PeerIfID [8]byte
	Gen                 uint64
}

// EncapLen is the bytes Encap pushes in front of an IP packet.
func (s *Session) EncapLen() int {
	n := EthernetLen + PPPoELen + PPPLen
	if s.VLAN != 0 {
		n += VLANLen
	}
	return n
}

// Encap pushes Ethernet (+802.1Q) + PPPoE + PPP headers in front of the
// IPv4 or IPv6 packet in f (the PPP protocol follows the IP version). It
// reports false if the headroom is too small.
func (s *Session) Encap(f *nic.Frame) bool {
	ipLen := f.Len
	b := f.Push(s.EncapLen())
	if b == nil {
		return false
	}
	copy(b[0:6], s.PeerMAC[:])
	copy(b[6:12], s.LocalMAC[:])
	o := 12
	if s.VLAN != 0 {
		b[12], b[13] = 0x81, 0x00
		tci := uint16(s.VLANPrio)<<13 | s.VLAN&0x0fff
		b[14], b[15] = byte(tci>>8), byte(tci)
		o = 16
	}
	b[o], b[o+1] = 0x88, 0x64
	PPPoE(b[o+2:]).SetSession(s.ID, ipLen+PPPLen)
	b[o+8], b[o+9] = 0x00, 0x21
	if d := f.Data(); ipLen > 0 && d[len(b)]>>4 == 6 {
		b[o+9] = 0x57 // IPv6
	}
	return true
}

// DecapResult classifies a WAN frame for Decap.
type DecapResult uint8

const (
	DecapIPv4         DecapResult = iota // IPv4 data: frame now starts at the IP header
	DecapControl                         // discovery or PPP control: for the control plane
	DecapIPv6                            // IPv6 data: frame now starts at the IP header
	DecapBadFrame                        // malformed
	DecapWrongSession                    // another session or another AC
	DecapNotPPPoE                        // not a PPPoE EtherType
)

// Decap strips Ethernet (+802.1Q) + PPPoE + PPP from a session data frame
// of this session, leaving f at the IPv4 header trimmed to the PPPoE
// length. Other frames are classified and left untouched.
func (s *Session) Decap(f *nic.Frame) DecapResult {
	b := f.Data()
	if l3 := int(f.L3); l3 != 0 {
		return s.decapAt(f, b, l3-PPPoELen-PPPLen)
	}
	eth := Ethernet(b)
	if !eth.IsValid() {
		return DecapBadFrame
	}
	o := EthernetLen
	et := eth.Type()
	if et == EtherTypeVLAN {
		if len(b) < o+VLANLen {
			return DecapBadFrame
		}
		v := VLAN(b[o:])
		if v.ID() != s.VLAN { // tagged, but not with our VLAN (or we use none)
			if t := v.Type(); t == EtherTypePPPoESess || t == EtherTypePPPoEDisc {
				return DecapWrongSession
			}
			return DecapNotPPPoE
		}
		et = v.Type()
		o += VLANLen
	} else if s.VLAN != 0 && (et == EtherTypePPPoESess || et == EtherTypePPPoEDisc) {
		return DecapWrongSession // untagged, but the session runs on a VLAN
	}
	switch et {
	case EtherTypePPPoESess:
	case EtherTypePPPoEDisc:
		return DecapControl
	default:
		return DecapNotPPPoE
	}
	return s.decapAt(f, b, o)
}

// decapAt is Decap for a PPPoE session frame whose PPPoE header is at o:
// a classifier found that (Frame.L3; its VLAN tag, if any, is checked
// here against the session's) or Decap's own parse did.
func (s *Session) decapAt(f *nic.Frame, b []byte, o int) DecapResult {
	if o == EthernetLen+VLANLen {
		if VLAN(b[EthernetLen:]).ID() != s.VLAN {
			return DecapWrongSession
		}
	} else if s.VLAN != 0 {
		return DecapWrongSession
	}
	eth := Ethernet(b)
	p := PPPoE(b[o:])
	if !p.IsValid() || p.Code() != 0 || p.Length() < PPPLen {
		return DecapBadFrame
	}
	if p.SessionID() != s.ID || [6]byte(eth.Src()) != s.PeerMAC {
		return DecapWrongSession
	}
	r := DecapIPv4
	switch p.PPPProto() {
	case PPPIPv4:
	case PPPIPv6:
		r = DecapIPv6
	default:
		return DecapControl
	}
	n := int(p.Length()) - PPPLen
	f.Pull(o + PPPoELen + PPPLen)
	f.Truncate(n)
	f.L3 = 0 // the network header is at the front now
	return r
}
