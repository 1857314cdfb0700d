package pppoe

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pppfwd/pppfwd/hdr"
)

// Discovery codes (RFC 2516 section 5).
const (
	CodeSession uint8 = 0x00
	CodePADI    uint8 = 0x09
	CodePADO    uint8 = 0x07
	CodePADR    uint8 = 0x19
	CodePADS    uint8 = 0x65
	CodePADT    uint8 = 0xa7
)

// Discovery tag types (RFC 2516 appendix A, RFC 4638).
const (
	TagEndOfList        uint16 = 0x0000
	TagServiceName      uint16 = 0x0101
	TagACName           uint16 = 0x0102
	TagHostUniq         uint16 = 0x0103
	TagACCookie         uint16 = 0x0104
	TagVendorSpecific   uint16 = 0x0105
	TagRelaySessionID   uint16 = 0x0110
	TagPPPMaxPayload    uint16 = 0x0120
	TagServiceNameError uint16 = 0x0201
	TagACSystemError    uint16 = 0x0202
	TagGenericError     uint16 = 0x0203
)

// PPP control codes (RFC 1661 section 5; PAP/CHAP reuse 1..4).
const (
	ConfReq   uint8 = 1
	ConfAck   uint8 = 2
	ConfNak   uint8 = 3
	ConfRej   uint8 = 4
	TermReq   uint8 = 5
	TermAck   uint8 = 6
	CodeRej   uint8 = 7
	ProtoRej  uint8 = 8
	EchoReq   uint8 = 9
	EchoRep   uint8 = 10
	DiscReq   uint8 = 11
	CHAPChal  uint8 = 1
	CHAPResp  uint8 = 2
	CHAPSucc  uint8 = 3
	CHAPFail  uint8 = 4
	PAPReq    uint8 = 1
	PAPAck    uint8 = 2
	PAPNak    uint8 = 3
	chapMD5   uint8 = 5
	chapMSv2  uint8 = 0x81 // MS-CHAPv2 (RFC 2759)
	lcpHdrLen       = 4
)

// LCP, IPCP and IPv6CP option types used here.
const (
	OptMRU         uint8 = 1
	OptACCM        uint8 = 2
	OptAuthProto   uint8 = 3
	OptQuality     uint8 = 4
	OptMagic       uint8 = 5
	OptPFC         uint8 = 7
	OptACFC        uint8 = 8
	OptIPAddresses uint8 = 1
	OptIPCompress  uint8 = 2
	OptIPAddress   uint8 = 3
	OptPrimaryDNS  uint8 = 129
	OptPrimaryNBNS uint8 = 130
	OptSecondDNS   uint8 = 131
	OptInterfaceID uint8 = 1
)

// Decoding errors.
var (
	ErrShort     = errors.New("pppoe: truncated")
	ErrBadHeader = errors.New("pppoe: bad header")
	ErrBadLength = errors.New("pppoe: bad length")
)

// Tag is one PPPoE discovery TLV. Value aliases the decoded buffer.
type Tag struct {
	Type  uint16
	Value []byte
}

// Discovery is a decoded discovery packet (PPPoE header + tags).
type Discovery struct {
	Code      uint8
	SessionID uint16
	Tags      []Tag
}

// ParseDiscovery decodes a PPPoE discovery packet starting at the PPPoE
// header. Bytes after the PPPoE length (Ethernet padding) are ignored.
// Parsing stops at an End-Of-List tag. Tag values alias b.
func ParseDiscovery(b []byte) (Discovery, error) {
	var d Discovery
	p := hdr.PPPoE(b)
	if len(b) < hdr.PPPoELen {
		return d, ErrShort
	}
	if b[0] != 0x11 {
		return d, ErrBadHeader
	}
	if !p.IsValid() {
		return d, ErrBadLength
	}
	d.Code, d.SessionID = p.Code(), p.SessionID()
	t := b[hdr.PPPoELen : hdr.PPPoELen+int(p.Length())]
	for len(t) > 0 {
		if len(t) < 4 {
			return d, ErrBadLength
		}
		typ, l := binary.BigEndian.Uint16(t), int(binary.BigEndian.Uint16(t[2:]))
		if 4+l > len(t) {
			return d, ErrBadLength
		}
		if typ == TagEndOfList {
			break
		}
		d.Tags = append(d.Tags, Tag{typ, t[4 : 4+l : 4+l]})
		t = t[4+l:]
	}
	return d, nil
}

// Tag returns the first tag of type typ.
func (d *Discovery) Tag(typ uint16) ([]byte, bool) {
	for _, t := range d.Tags {
		if t.Type == typ {
			return t.Value, true
		}
	}
	return nil, false
}

// Append encodes d (PPPoE header + tags) onto b.
func (d *Discovery) Append(b []byte) []byte {
	n := 0
	for _, t := range d.Tags {
		n += 4 + len(t.Value)
	}
	b = append(b, 0x11, d.Code, byte(d.SessionID>>8), byte(d.SessionID), byte(n>>8), byte(n))
	for _, t := range d.Tags {
		b = append(b, byte(t.Type>>8), byte(t.Type), byte(len(t.Value)>>8), byte(len(t.Value)))
		b = append(b, t.Value...)
	}
	return b
}

// String renders the packet for logs.
func (d *Discovery) String() string {
	s := fmt.Sprintf("%s session=%#04x", codeName(d.Code), d.SessionID)
	for _, t := range d.Tags {
		s += fmt.Sprintf(" %#04x=%q", t.Type, t.Value)
	}
	return s
}

func codeName(c uint8) string {
	switch c {
	case CodePADI:
		return "PADI"
	case CodePADO:
		return "PADO"
	case CodePADR:
		return "PADR"
	case CodePADS:
		return "PADS"
	case CodePADT:
		return "PADT"
	case CodeSession:
		return "session"
	}
	return fmt.Sprintf("code(%#02x)", c)
}

// ControlPacket is an LCP/IPCP/IPv6CP/PAP/CHAP packet: code, identifier and
// data (RFC 1661 section 5). Data aliases the decoded buffer.
type ControlPacket struct {
	Code, ID uint8
	Data     []byte
}

// ParseControl decodes a PPP control packet (after the PPP protocol
// field). Bytes after the Length field (padding) are ignored.
func ParseControl(b []byte) (ControlPacket, error) {
	if len(b) < lcpHdrLen {
		return ControlPacket{}, ErrShort
	}
	l := int(binary.BigEndian.Uint16(b[2:]))
	if l < lcpHdrLen || l > len(b) {
		return ControlPacket{}, ErrBadLength
	}
	return ControlPacket{b[0], b[1], b[lcpHdrLen:l:l]}, nil
}

// Append encodes p onto b.
func (p ControlPacket) Append(b []byte) []byte {
	l := lcpHdrLen + len(p.Data)
	b = append(b, p.Code, p.ID, byte(l>>8), byte(l))
	return append(b, p.Data...)
}

// Option is one LCP/IPCP/IPv6CP configuration option. Value aliases the
// decoded buffer.
type Option struct {
	Type  uint8
	Value []byte
}

// ParseOptions decodes a configuration option list (RFC 1661 section 6).
func ParseOptions(b []byte) ([]Option, error) {
	var opts []Option
	for len(b) > 0 {
		if len(b) < 2 {
			return opts, ErrShort
		}
		l := int(b[1])
		if l < 2 || l > len(b) {
			return opts, ErrBadLength
		}
		opts = append(opts, Option{b[0], b[2:l:l]})
		b = b[l:]
	}
	return opts, nil
}

// AppendOptions encodes opts onto b. Values longer than 253 bytes are
// truncated to fit the one-byte length.
func AppendOptions(b []byte, opts []Option) []byte {
	for _, o := range opts {
		v := o.Value
		if len(v) > 253 {
			v = v[:253]
		}
		b = append(b, o.Type, byte(2+len(v)))
		b = append(b, v...)
	}
	return b
}

func appendOpt(b []byte, typ uint8, v ...byte) []byte {
	b = append(b, typ, byte(2+len(v)))
	return append(b, v...)
}

func appendOpt16(b []byte, typ uint8, v uint16) []byte {
	return appendOpt(b, typ, byte(v>>8), byte(v))
}

func appendOpt32(b []byte, typ uint8, v uint32) []byte {
	return appendOpt(b, typ, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// PAPRequest is a PAP Authenticate-Request body (RFC 1334 section 2.2.1).
type PAPRequest struct {
	PeerID, Password []byte
}

// ParsePAPRequest decodes the data of a PAP Authenticate-Request.
func ParsePAPRequest(b []byte) (PAPRequest, error) {
	if len(b) < 1 || len(b) < 1+int(b[0])+1 {
		return PAPRequest{}, ErrShort
	}
	n := int(b[0])
	id := b[1 : 1+n : 1+n]
	b = b[1+n:]
	m := int(b[0])
	if len(b) < 1+m {
		return PAPRequest{}, ErrShort
	}
	return PAPRequest{id, b[1 : 1+m : 1+m]}, nil
}

// Append encodes r onto b (fields longer than 255 bytes are truncated).
func (r PAPRequest) Append(b []byte) []byte {
	return appendLV(appendLV(b, r.PeerID), r.Password)
}

func appendLV(b, v []byte) []byte {
	if len(v) > 255 {
		v = v[:255]
	}
	b = append(b, byte(len(v)))
	return append(b, v...)
}

// ParsePAPMessage decodes the data of a PAP Authenticate-Ack/Nak.
func ParsePAPMessage(b []byte) ([]byte, error) {
	if len(b) < 1 || len(b) < 1+int(b[0]) {
		return nil, ErrShort
	}
	return b[1 : 1+int(b[0])], nil
}

// CHAPValue is the body of a CHAP Challenge or Response (RFC 1994 4.1).
type CHAPValue struct {
	Value, Name []byte
}

// ParseCHAPValue decodes the data of a CHAP Challenge or Response.
func ParseCHAPValue(b []byte) (CHAPValue, error) {
	if len(b) < 1 || int(b[0]) == 0 || len(b) < 1+int(b[0]) {
		return CHAPValue{}, ErrShort
	}
	n := int(b[0])
	return CHAPValue{b[1 : 1+n : 1+n], b[1+n:]}, nil
}

// Append encodes v onto b.
func (v CHAPValue) Append(b []byte) []byte {
	return append(appendLV(b, v.Value), v.Name...)
}

// Frame is a decoded Ethernet frame carrying PPPoE.
type Frame struct {
	Dst, Src  [6]byte
	VLAN      uint16 // 0 when untagged
	VLANPrio  uint8
	EtherType uint16
	Code      uint8
	SessionID uint16
	// Payload is the PPPoE payload (discovery tags, or PPP protocol +
	// information for session frames), trimmed to the PPPoE length.
	Payload []byte
	// PPPoE is the PPPoE header and Payload.
	PPPoE []byte
}

// ParseFrame decodes Ethernet (+ one 802.1Q tag) + PPPoE headers.
func ParseFrame(b []byte) (Frame, error) {
	var f Frame
	eth := hdr.Ethernet(b)
	if !eth.IsValid() {
		return f, ErrShort
	}
	f.Dst, f.Src = [6]byte(eth.Dst()), [6]byte(eth.Src())
	o := hdr.EthernetLen
	et := eth.Type()
	if et == hdr.EtherTypeVLAN {
		if len(b) < o+hdr.VLANLen {
			return f, ErrShort
		}
		v := hdr.VLAN(b[o:])
		f.VLAN, f.VLANPrio, et = v.ID(), v.PCP(), v.Type()
		o += hdr.VLANLen
	}
	f.EtherType = et
	if et != hdr.EtherTypePPPoEDisc && et != hdr.EtherTypePPPoESess {
		return f, ErrBadHeader
	}
	p := hdr.PPPoE(b[o:])
	if len(p) < hdr.PPPoELen {
		return f, ErrShort
	}
	if p[0] != 0x11 {
		return f, ErrBadHeader
	}
	if !p.IsValid() {
		return f, ErrBadLength
	}
	f.Code, f.SessionID = p.Code(), p.SessionID()
	end := hdr.PPPoELen + int(p.Length())
	f.PPPoE = p[:end:end]
	f.Payload = p[hdr.PPPoELen:end:end]
	return f, nil
}

// appendEthernet writes the Ethernet (+802.1Q) header onto b.
func appendEthernet(b []byte, dst, src [6]byte, vlan uint16, prio uint8, et uint16) []byte {
	b = append(b, dst[:]...)
	b = append(b, src[:]...)
	if vlan != 0 {
		tci := uint16(prio)<<13 | vlan&0x0fff
		b = append(b, 0x81, 0x00, byte(tci>>8), byte(tci))
	}
	return append(b, byte(et>>8), byte(et))
}

// padFrame pads b to the 60-byte Ethernet minimum (without FCS).
func padFrame(b []byte) []byte {
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

// Broadcast is the Ethernet broadcast address used by PADI.
var Broadcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
