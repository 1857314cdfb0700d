package pppoe

// LCP (RFC 1661) of a link: MRU, authentication-protocol and magic-number
// negotiation, Protocol-Reject, the echo keepalive and the RFC 4638 MRU
// probe.

import (
	"encoding/binary"
	"time"
)

func (l *link) resetLCP() {
	l.reqMRU, l.reqMagic = true, true
	l.ourMRU, l.hisMRU = l.cfg.mru, 1500
	l.magic = l.newMagic()
	l.reqAuth, l.reqAlg = 0, 0
	if l.cfg.role == roleServer {
		for _, a := range authOrder {
			if l.cfg.auth&a.set != 0 {
				l.reqAuth, l.reqAlg = a.proto, a.alg
				break
			}
		}
	}
}

func (l *link) newMagic() uint32 {
	for {
		if m := uint32(l.cfg.rand()); m != 0 && m != l.peerMagic {
			return m
		}
	}
}

func (l *link) peerMRU() int {
	if l.hisMRU < minMRU {
		return minMRU
	}
	return l.hisMRU
}

// mtu is the effective IPv4 MTU: the smaller MRU, and 1492 while an
// RFC 4638 MRU above 1492 is not yet proven by the echo probe.
func (l *link) mtu() int {
	m := min(l.ourMRU, l.peerMRU())
	if m > mruPPPoE && !l.probeOK {
		m = mruPPPoE
	}
	return m
}

func (l *link) protocolReject(proto uint16, info []byte) {
	l.lcp.id++
	out := append(l.scratch[:0], ProtoRej, l.lcp.id, 0, 0, byte(proto>>8), byte(proto))
	max := l.peerMRU() - len(out)
	if len(info) > max {
		info = info[:max]
	}
	out = append(out, info...)
	l.sendControl(pppLCP, out)
	l.counters.protoRejects++
}

type lcpHandler link

func (h *lcpHandler) addCI(b []byte) []byte {
	l := (*link)(h)
	if l.reqMRU {
		b = appendOpt16(b, OptMRU, uint16(l.ourMRU))
	}
	switch l.reqAuth {
	case pppCHAP:
		b = appendOpt(b, OptAuthProto, 0xc2, 0x23, l.reqAlg)
	case pppPAP:
		b = appendOpt(b, OptAuthProto, 0xc0, 0x23)
	}
	if l.reqMagic {
		b = appendOpt32(b, OptMagic, l.magic)
	}
	return b
}

func (h *lcpHandler) nakCI(opts []Option) {
	l := (*link)(h)
	for _, o := range opts {
		switch {
		case o.Type == OptMRU && len(o.Value) == 2:
			if v := int(be16(o.Value)); v >= minMRU {
				l.ourMRU = min(v, l.cfg.mru)
			}
		case o.Type == OptMagic && len(o.Value) == 4:
			l.magic = l.newMagic()
		case o.Type == OptAuthProto && len(o.Value) >= 2 && l.reqAuth != 0:
			switch p := be16(o.Value); {
			case p == pppPAP && l.cfg.auth&AuthPAP != 0:
				l.reqAuth, l.reqAlg = pppPAP, 0
			case p == pppCHAP && len(o.Value) == 3 && chapAllowed(o.Value[2], l.cfg.auth):
				l.reqAuth, l.reqAlg = pppCHAP, o.Value[2]
			default:
				// The peer wants one we do not offer: try our next one.
				proto, alg, ok := nextAuth(l.reqAuth, l.reqAlg, l.cfg.auth)
				switch {
				case ok:
					l.reqAuth, l.reqAlg = proto, alg
				case l.cfg.dropAuthOnNak:
					l.reqAuth, l.reqAlg = 0, 0 // up() then terminates
				default:
					l.lcp.reason = "peer refuses our authentication protocols"
					l.authFailed = true
				}
			}
		}
	}
}

func (h *lcpHandler) rejCI(opts []Option) {
	l := (*link)(h)
	for _, o := range opts {
		switch o.Type {
		case OptMRU:
			l.reqMRU = false
			l.ourMRU = min(l.cfg.mru, mruPPPoE)
		case OptMagic:
			l.reqMagic, l.magic = false, 0
		case OptAuthProto:
			if l.reqAuth != 0 {
				l.lcp.reason = "peer refuses to authenticate"
				l.authFailed = true
			}
		}
	}
}

func (h *lcpHandler) reqCI(opts []Option, raw, out []byte, rejectOnly bool) (uint8, []byte) {
	l := (*link)(h)
	r := optReply{rejectOnly: rejectOnly}
	mru, magic, auth, alg := 1500, uint32(0), uint16(0), uint8(0)
	if l.papNakOpen && !hasOpt(opts, OptAuthProto) {
		// The AC dropped authentication after our Nak of its PAP request;
		// the automaton sends no reply: the link is closing.
		l.close(l.papAnswered("it dropped authentication after our Nak for CHAP"))
		return ConfRej, append(out, raw...)
	}
	for _, o := range opts {
		switch o.Type {
		case OptMRU:
			if len(o.Value) != 2 {
				r.reject(o)
				continue
			}
			mru = int(be16(o.Value))
			if mru < minMRU {
				r.nakOpt(OptMRU, byte(minMRU>>8), byte(minMRU))
			}
		case OptACCM:
			if len(o.Value) != 4 {
				r.reject(o)
			} // meaningless over PPPoE but harmless: acknowledged
		case OptMagic:
			if len(o.Value) != 4 {
				r.reject(o)
				continue
			}
			magic = be32(o.Value)
			if magic == 0 || (l.reqMagic && magic == l.magic) {
				// Zero, or our own number (a looped-back link): suggest another.
				var v [4]byte
				binary.BigEndian.PutUint32(v[:], l.newMagic())
				r.nakOpt(OptMagic, v[:]...)
			}
		case OptAuthProto:
			if l.cfg.role == roleServer || l.cfg.auth == 0 || len(o.Value) < 2 {
				r.reject(o)
				continue
			}
			p := be16(o.Value)
			switch {
			case p == pppCHAP && len(o.Value) == 3 && chapAllowed(o.Value[2], l.cfg.auth):
				auth, alg = pppCHAP, o.Value[2]
			case p == pppPAP && len(o.Value) == 2 && l.cfg.auth&AuthPAP != 0:
				// PAP sends the password in clear, to whichever AC answered
				// PADI first; the rule is documented at papAnswered.
				switch id := l.lcp.peerID; {
				case l.cfg.refusePAP && (l.cfg.papAC || l.papNaked && id != l.papNakID):
					// The automaton sends no reply: the link is closing.
					l.papRefused = true
					l.close(papRefusedReason("it asks for PAP"))
					return ConfRej, append(out, raw...)
				case l.cfg.auth&(AuthCHAPMD5|AuthMSCHAPv2) != 0 && !l.cfg.papAC && (!l.papNaked || id == l.papNakID):
					l.papNaked, l.papNakID, l.papNakOpen = true, id, true
					if l.cfg.auth&AuthCHAPMD5 != 0 {
						r.nakOpt(OptAuthProto, 0xc2, 0x23, chapMD5)
					} else {
						r.nakOpt(OptAuthProto, 0xc2, 0x23, chapMSv2)
					}
				default:
					auth = pppPAP
				}
			case l.cfg.auth&AuthCHAPMD5 != 0:
				r.nakOpt(OptAuthProto, 0xc2, 0x23, chapMD5)
			case l.cfg.auth&AuthMSCHAPv2 != 0:
				r.nakOpt(OptAuthProto, 0xc2, 0x23, chapMSv2)
			default:
				r.nakOpt(OptAuthProto, 0xc0, 0x23)
			}
		default: // PFC, ACFC (forbidden over PPPoE), Quality and unknown options
			r.reject(o)
		}
	}
	code, out := r.finish(raw, out)
	if code == ConfAck {
		l.papNakOpen = false
		l.hisMRU, l.peerMagic = mru, magic
		if l.cfg.role == roleClient {
			l.authProto, l.authAlg = auth, alg
		}
	}
	return code, out
}

func hasOpt(opts []Option, typ uint8) bool {
	for _, o := range opts {
		if o.Type == typ {
			return true
		}
	}
	return false
}

// papAnswered marks the AC of a client link that answered our Nak of its
// request for PAP (papNakOpen) by dropping the Authentication-Protocol
// option from its next Configure-Request or by ending the session
// (Terminate-Request, PADT) as PAP-only (papOnly), or refused under
// cfg.refusePAP (papRefused), and returns the reason the attempt ends
// with; how says what the AC did. The caller ends the link.
//
// The client's rule for PAP, which sends the password in clear to
// whichever AC answered PADI first:
//   - An AC's first request for PAP is Nak'd proposing CHAP (CHAP-MD5,
//     else MS-CHAPv2) when Auth allows one, so that an AC able to do
//     both uses CHAP. A retransmission of that request (same Identifier:
//     our Nak was lost) is Nak'd again.
//   - An AC that asks for PAP again with another Identifier insists, and
//     gets PAP. One that drops authentication instead (pppd with
//     require-pap does, then ends the link: "peer refused to
//     authenticate") or ends the session is marked PAP-only by the client
//     (papOnly; AC MAC and AC-Name): this attempt ends without
//     acknowledging the request without authentication, and later ones
//     with that AC take its PAP at once (cfg.papAC). The Client logs the
//     warning that PAP sends the password in clear whenever PAP is used.
//   - Once an AC has authenticated us with CHAP (cfg.refusePAP), PAP is
//     never sent: an AC insisting on PAP, or PAP-only, has its session
//     ended (LCP Terminate) and papRefused tells the Client, which counts
//     it and prefers other ACs.
//   - A request without authentication that does not answer our Nak is
//     acknowledged: the AC chose not to authenticate us, and no password
//     is sent.
//
// The Nak does not stop a rogue AC (it can insist, or drop
// authentication and be taken as PAP-only); only refusePAP does.
func (l *link) papAnswered(how string) string {
	l.papNakOpen = false
	if l.cfg.refusePAP {
		l.papRefused = true
		return papRefusedReason(how)
	}
	l.papOnly = true
	return "the AC cannot do CHAP (" + how + "): PAP on the next attempt"
}

func papRefusedReason(how string) string {
	return "refusing PAP (it sends the password in clear): an AC authenticated us with CHAP before, and this one wants PAP (" + how + ")"
}

func (h *lcpHandler) up() {
	l := (*link)(h)
	if l.cfg.role == roleServer {
		l.authProto, l.authAlg = l.reqAuth, l.reqAlg
		if l.cfg.dropAuthOnNak && l.reqAuth == 0 && l.cfg.auth != 0 {
			l.close("peer refused to authenticate")
			return
		}
	}
	l.echoPending = 0
	if l.cfg.echoInterval > 0 && !l.echoRejected {
		l.echoTimer = l.now.Add(l.cfg.echoInterval)
	}
	l.probeOK, l.probeFailed = false, false
	if min(l.ourMRU, l.peerMRU()) > mruPPPoE {
		l.probeTries = 0
		l.probeTick()
	}
	if l.authProto == 0 {
		l.networkPhase()
		return
	}
	l.phase = phaseAuth
	l.authStart()
}

func (h *lcpHandler) down() {
	l := (*link)(h)
	l.echoTimer, l.probeTimer, l.authTimer, l.authDead = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	l.ipcp.Down()
	l.ipv6cp.Down()
	if l.phase != phaseTerminate && l.phase != phaseDead {
		l.phase = phaseEstablish
	}
	l.authDone, l.peerAuthOK = false, false
}

func (h *lcpHandler) finished(reason string) {
	l := (*link)(h)
	l.phase = phaseDead
	l.isUp = false
	l.owner.linkFinished(reason, l.authFailed)
}

func (h *lcpHandler) extCode(p ControlPacket) bool {
	l := (*link)(h)
	switch p.Code {
	case EchoReq:
		if len(p.Data) < 4 {
			return true
		}
		if l.reqMagic && be32(p.Data) == l.magic && l.magic != 0 {
			return true // looped back
		}
		out := append(l.scratch[:0], EchoRep, p.ID, 0, 0)
		out = binary.BigEndian.AppendUint32(out, l.magic)
		out = append(out, p.Data[4:]...)
		l.sendControl(pppLCP, out)
		return true
	case EchoRep:
		if len(p.Data) < 4 || (l.reqMagic && l.magic != 0 && be32(p.Data) == l.magic) {
			return true
		}
		if l.probeTries > 0 && !l.probeOK && p.ID == l.probeID && len(p.Data)+lcpHdrLen >= min(l.ourMRU, l.peerMRU()) {
			l.probeOK, l.probeTimer = true, time.Time{}
			l.echoPending = 0
			l.owner.linkChanged()
			return true
		}
		if p.ID == l.echoID && l.echoPending > 0 {
			l.rtt = l.now.Sub(l.echoSentAt)
		}
		l.echoPending = 0
		l.counters.echoReplies++
		return true
	case DiscReq:
		return true
	case ProtoRej:
		if len(p.Data) < 2 {
			return true
		}
		switch be16(p.Data) {
		case pppIPCP:
			l.ipcp.rxjMinus("peer rejected IPCP")
		case pppIPv6CP:
			l.ipv6cp.rxjMinus("peer rejected IPv6CP")
		case pppLCP, pppPAP, pppCHAP:
			l.close("peer rejected protocol " + itoa(int(be16(p.Data))))
		}
		return true
	}
	return false
}

func (l *link) echoTick() {
	if l.echoPending >= l.cfg.echoFailures {
		l.echoTimer = time.Time{}
		l.lcp.reason = "peer not responding to LCP echo"
		l.echoDead()
		return
	}
	l.lcp.id++
	l.echoID = l.lcp.id
	out := append(l.scratch[:0], EchoReq, l.echoID, 0, 0)
	out = binary.BigEndian.AppendUint32(out, l.magic)
	l.sendControl(pppLCP, out)
	l.echoSentAt = l.now
	l.echoPending++
	l.counters.echoSent++
	l.echoTimer = l.now.Add(l.cfg.echoInterval)
}

// echoDead ends a link whose peer stopped answering: the LCP goes
// straight to finished without waiting for Terminate-Ack (there is no one
// to send it).
func (l *link) echoDead() {
	reason := l.lcp.reason
	l.abort()
	l.lcp.state = stInitial
	l.owner.linkFinished(reason, false)
}

// probeTick sends a padded Echo-Request of the full MRU to prove the
// baby-jumbo path (RFC 4638 section 7); without a reply the MTU stays
// at 1492.
func (l *link) probeTick() {
	if l.probeTries >= probeTries {
		l.probeTimer = time.Time{}
		l.probeFailed = true
		l.owner.linkChanged()
		return
	}
	size := min(l.ourMRU, l.peerMRU())
	l.lcp.id++
	l.probeID = l.lcp.id
	out := append(l.scratch[:0], EchoReq, l.probeID, 0, 0)
	out = binary.BigEndian.AppendUint32(out, l.magic)
	for len(out) < size {
		out = append(out, 0)
	}
	l.sendControl(pppLCP, out)
	l.probeTries++
	l.probeTimer = l.now.Add(l.cfg.restart)
}
