package pppoe

// IPv6CP (RFC 5072) of a link: interface-identifier negotiation and the
// link's IPv6 up and down.

import "encoding/binary"

func (l *link) newIfID() (id [8]byte) {
	for id == ([8]byte{}) || id == l.hisIfID {
		binary.BigEndian.PutUint64(id[:], l.cfg.rand())
	}
	return id
}

type ipv6cpHandler link

func (h *ipv6cpHandler) addCI(b []byte) []byte {
	l := (*link)(h)
	if l.reqIfID {
		b = appendOpt(b, OptInterfaceID, l.ourIfID[:]...)
	}
	return b
}

func (h *ipv6cpHandler) nakCI(opts []Option) {
	l := (*link)(h)
	for _, o := range opts {
		if o.Type == OptInterfaceID && len(o.Value) == 8 {
			if id := [8]byte(o.Value); id != ([8]byte{}) && id != l.hisIfID {
				l.ourIfID = id
			} else {
				l.ourIfID = l.newIfID()
			}
		}
	}
}

func (h *ipv6cpHandler) rejCI(opts []Option) {
	l := (*link)(h)
	for _, o := range opts {
		if o.Type == OptInterfaceID {
			l.reqIfID = false
		}
	}
}

func (h *ipv6cpHandler) reqCI(opts []Option, raw, out []byte, rejectOnly bool) (uint8, []byte) {
	l := (*link)(h)
	r := optReply{rejectOnly: rejectOnly}
	his := l.hisIfID
	for _, o := range opts {
		if o.Type != OptInterfaceID || len(o.Value) != 8 {
			r.reject(o)
			continue
		}
		id := [8]byte(o.Value)
		if id == ([8]byte{}) || (l.reqIfID && id == l.ourIfID) {
			l.hisIfID = id
			s := l.newIfID()
			r.nakOpt(OptInterfaceID, s[:]...)
			continue
		}
		his = id
	}
	code, out := r.finish(raw, out)
	if code == ConfAck {
		l.hisIfID = his
	}
	return code, out
}

func (h *ipv6cpHandler) up()             { (*link)(h).setIPv6(true) }
func (h *ipv6cpHandler) down()           { (*link)(h).setIPv6(false) }
func (h *ipv6cpHandler) finished(string) { (*link)(h).setIPv6(false) }

// setIPv6 records IPv6CP opening or closing and tells the owner.
func (l *link) setIPv6(up bool) {
	if l.ipv6Up != up {
		l.ipv6Up = up
		l.owner.linkChanged()
	}
}
func (h *ipv6cpHandler) extCode(p ControlPacket) bool { return false }
