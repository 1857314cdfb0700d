package pppoe

// IPCP (RFC 1332, DNS options RFC 1877) of a link: address negotiation for
// client and server, and the link's IPv4 up and down.

type ipcpHandler link

func (h *ipcpHandler) addCI(b []byte) []byte {
	l := (*link)(h)
	if l.reqAddr {
		b = appendOpt32(b, OptIPAddress, l.ourAddr)
	}
	if l.reqDNS[0] {
		b = appendOpt32(b, OptPrimaryDNS, l.dns[0])
	}
	if l.reqDNS[1] {
		b = appendOpt32(b, OptSecondDNS, l.dns[1])
	}
	return b
}

// badIPv4 reports whether a is no address for either end of the link:
// 0.0.0.0/8 ("this network"), 127.0.0.0/8 (loopback), 224.0.0.0/4
// (multicast) or 240.0.0.0/4 (reserved, with 255.255.255.255), as pppd's
// bad_ip_adrs.
func badIPv4(a uint32) bool {
	return a>>24 == 0 || a>>24 == 127 || a >= 0xe0000000
}

// refuseAddr ends a link whose peer hands out or claims an address
// badIPv4 refuses: the session is useless with it, and a Nak loop would
// not converge (IPCP has no way to ask for "any other address").
func (l *link) refuseAddr(what string, a uint32) {
	l.counters.badAddrs++
	l.close("IPCP: " + what + " " + ip4(a) + " is not a usable address")
}

func (h *ipcpHandler) nakCI(opts []Option) {
	l := (*link)(h)
	for _, o := range opts {
		if len(o.Value) != 4 {
			continue
		}
		v := be32(o.Value)
		switch o.Type {
		case OptIPAddress:
			if l.cfg.role == roleClient {
				if badIPv4(v) {
					l.refuseAddr("local address offered by the AC", v)
					return
				}
				l.ourAddr = v
			}
		case OptPrimaryDNS:
			l.dns[0] = v
		case OptSecondDNS:
			l.dns[1] = v
		}
	}
}

func (h *ipcpHandler) rejCI(opts []Option) {
	l := (*link)(h)
	for _, o := range opts {
		switch o.Type {
		case OptIPAddress:
			l.reqAddr = false
		case OptPrimaryDNS:
			l.reqDNS[0], l.dns[0] = false, 0
		case OptSecondDNS:
			l.reqDNS[1], l.dns[1] = false, 0
		}
	}
}

func (h *ipcpHandler) reqCI(opts []Option, raw, out []byte, rejectOnly bool) (uint8, []byte) {
	l := (*link)(h)
	r := optReply{rejectOnly: rejectOnly}
	his := l.hisAddr
	for _, o := range opts {
		if len(o.Value) != 4 {
			r.reject(o)
			continue
		}
		v := be32(o.Value)
		switch {
		case o.Type == OptIPAddress && l.cfg.role == roleClient:
			if v == 0 {
				r.reject(o) // we have no address to offer the AC
				continue
			}
			if badIPv4(v) {
				// The automaton sends no reply: the link is closing.
				l.refuseAddr("the AC's address", v)
				return ConfRej, append(out, raw...)
			}
			his = v
		case o.Type == OptIPAddress:
			if l.cfg.peerAddr == 0 {
				r.reject(o)
			} else if v != l.cfg.peerAddr {
				r.nakOpt(OptIPAddress, be32bytes(l.cfg.peerAddr)...)
			}
		case (o.Type == OptPrimaryDNS || o.Type == OptSecondDNS) && l.cfg.role == roleServer:
			i := 0
			if o.Type == OptSecondDNS {
				i = 1
			}
			if l.cfg.dns[i] == 0 {
				r.reject(o)
			} else if v != l.cfg.dns[i] {
				r.nakOpt(o.Type, be32bytes(l.cfg.dns[i])...)
			}
		default: // IP-Compression-Protocol, IP-Addresses, NBNS, unknown
			r.reject(o)
		}
	}
	code, out := r.finish(raw, out)
	if code == ConfAck {
		l.hisAddr = his
	}
	return code, out
}

func be32bytes(v uint32) []byte {
	return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

func (h *ipcpHandler) up() {
	l := (*link)(h)
	if l.cfg.role == roleClient && (l.ourAddr == 0 || badIPv4(l.ourAddr)) {
		l.close("IPCP: no local address assigned")
		return
	}
	l.isUp = true
	l.owner.linkUp()
}

func (h *ipcpHandler) down() {
	l := (*link)(h)
	if l.isUp {
		l.isUp = false
		l.owner.linkDown()
	}
}

func (h *ipcpHandler) finished(reason string) {
	l := (*link)(h)
	if l.phase == phaseNetwork {
		l.close("IPCP: " + reason)
	}
}

func (h *ipcpHandler) extCode(p ControlPacket) bool { return false }
