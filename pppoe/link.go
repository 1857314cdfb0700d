package pppoe

import (
	"bytes"
	"crypto/md5"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/hdr"
)

const (
	pppLCP    = hdr.PPPLCP
	pppPAP    = hdr.PPPPAP
	pppCHAP   = hdr.PPPCHAP
	pppIPCP   = hdr.PPPIPCP
	pppIPv6CP = hdr.PPPIPv6CP
	pppIPv4   = hdr.PPPIPv4
	pppIPv6   = hdr.PPPIPv6

	mruPPPoE    = 1492 // RFC 2516 maximum without RFC 4638
	minMRU      = 128
	probeTries  = 3
	authRetries = 10
)

type role uint8

const (
	roleClient role = iota
	roleServer
)

type phase uint8

const (
	phaseDead phase = iota
	phaseEstablish
	phaseAuth
	phaseNetwork
	phaseTerminate
)

// linkConfig is what a link needs from the client or server config.
type linkConfig struct {
	role         role
	mru          int // largest MRU we can take (1492, or up to 1500 with RFC 4638)
	auth         AuthProto
	user, pass   string            // client
	users        map[string]string // server
	name         string            // server's CHAP name
	localAddr    uint32            // server: our address
	peerAddr     uint32            // server: address handed to the client
	dns          [2]uint32         // server: offered DNS
	wantDNS      bool              // client: request DNS
	ipv6         bool
	echoInterval time.Duration
	echoFailures int
	restart      time.Duration
	maxConfigure int
	authTimeout  time.Duration
	rand         func() uint64
	// refusePAP (client): an AC has authenticated us with CHAP in this
	// Client's life, so an AC insisting on PAP is refused (see
	// lcpHandler.reqCI).
	refusePAP bool
}

// linkOwner receives the link's state changes.
type linkOwner interface {
	sendPPP(proto uint16, b []byte)
	linkUp()                                     // IPCP opened
	linkDown()                                   // IPCP left Opened
	linkChanged()                                // the effective MTU (RFC 4638 probe) or IPv6CP state changed
	linkFinished(reason string, authFail bool)   // LCP finished: session over
	deliver(proto uint16, b []byte)              // IPv4/IPv6 data
	authResult(ok bool, user string, msg string) // authentication outcome
}

type linkCounters struct {
	echoSent, echoReplies, protoRejects, codeRejects uint64
	badAddrs                                         uint64 // IPCP addresses refused (badIPv4)
}

// link is one PPP session over PPPoE: LCP, authentication, IPCP, IPv6CP,
// echo keepalive. It is driven by input/tick with the current time and
// is not safe for concurrent use.
type link struct {
	cfg   *linkConfig
	owner linkOwner
	now   time.Time
	phase phase

	lcp, ipcp, ipv6cp fsm

	scratch, scratch2, reply []byte

	// LCP
	magic, peerMagic     uint32
	reqMRU, reqMagic     bool
	ourMRU, hisMRU       int
	reqAuth              uint16 // server: protocol we ask for (0: none)
	reqAlg               uint8  // server: CHAP algorithm we ask for
	authProto            uint16 // negotiated authentication protocol
	authAlg              uint8  // its CHAP algorithm (chapMD5, chapMSv2)
	authFailed, authDone bool
	echoRejected         bool
	// Client, PAP downgrade guard: papNaked is set once an AC's request
	// for PAP was Nak'd proposing CHAP, papNakID is the Identifier of
	// that request; papRefused once the link ends because the AC insisted
	// while cfg.refusePAP.
	papNaked   bool
	papNakID   uint8
	papRefused bool

	// authentication
	authID    uint8
	authTimer time.Time
	authDead  time.Time
	authTries int
	challenge []byte
	user      string
	// MS-CHAPv2: the client's peer challenge and NT-Response, for checking
	// the authenticator response; the server's Success message, resent
	// with a retransmitted response.
	peerChal [16]byte
	ntResp   [24]byte
	succMsg  []byte
	// chapAnswered: the client sent a CHAP Response in this phase; only
	// then is a Success or Failure for it taken.
	chapAnswered bool
	authMsg      string
	peerAuthOK   bool

	// IPCP
	ourAddr, hisAddr uint32
	dns              [2]uint32
	reqAddr          bool
	reqDNS           [2]bool

	// IPv6CP
	ourIfID, hisIfID [8]byte
	reqIfID          bool
	ipv6Up           bool

	// echo keepalive and RFC 4638 probe
	echoTimer   time.Time
	echoPending int
	echoID      uint8
	echoSentAt  time.Time
	rtt         time.Duration
	probeTimer  time.Time
	probeTries  int
	probeID     uint8
	probeOK     bool
	probeFailed bool

	counters linkCounters
	isUp     bool
}

func newLink(cfg *linkConfig, owner linkOwner, now time.Time) *link {
	l := &link{cfg: cfg, owner: owner, now: now,
		scratch: make([]byte, 0, 1600), scratch2: make([]byte, 0, 1600), reply: make([]byte, 0, 1600)}
	l.lcp = fsm{l: l, proto: pppLCP, h: (*lcpHandler)(l)}
	l.ipcp = fsm{l: l, proto: pppIPCP, h: (*ipcpHandler)(l)}
	l.ipv6cp = fsm{l: l, proto: pppIPv6CP, h: (*ipv6cpHandler)(l)}
	l.resetLCP()
	return l
}

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

func (l *link) newIfID() (id [8]byte) {
	for id == ([8]byte{}) || id == l.hisIfID {
		binary.BigEndian.PutUint64(id[:], l.cfg.rand())
	}
	return id
}

// start brings LCP up (the PPPoE session exists).
func (l *link) start() {
	l.phase = phaseEstablish
	l.lcp.Open()
	l.lcp.Up()
}

// close terminates the link gracefully (LCP Terminate-Request).
func (l *link) close(reason string) {
	if l.phase == phaseDead {
		return
	}
	l.phase = phaseTerminate
	l.lcp.Close(reason)
}

// abort drops the link at once (PADT received): no more packets are sent.
func (l *link) abort() {
	l.ipcp.Down()
	l.ipv6cp.Down()
	l.lcp.Down()
	l.phase = phaseDead
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

func (l *link) sendControl(proto uint16, b []byte) {
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	l.owner.sendPPP(proto, b)
}

// next returns the earliest pending timer (zero if none).
func (l *link) next() time.Time {
	var t time.Time
	for _, c := range [...]time.Time{l.lcp.timer, l.ipcp.timer, l.ipv6cp.timer, l.authTimer, l.authDead, l.echoTimer, l.probeTimer} {
		if !c.IsZero() && (t.IsZero() || c.Before(t)) {
			t = c
		}
	}
	return t
}

func due(t, now time.Time) bool { return !t.IsZero() && !now.Before(t) }

// tick runs expired timers.
func (l *link) tick(now time.Time) {
	l.now = now
	if due(l.lcp.timer, now) {
		l.lcp.timeout()
	}
	if due(l.ipcp.timer, now) {
		l.ipcp.timeout()
	}
	if due(l.ipv6cp.timer, now) {
		l.ipv6cp.timeout()
	}
	if due(l.authDead, now) {
		l.authDead, l.authTimer = time.Time{}, time.Time{}
		l.failAuth("authentication timed out", false)
	}
	if due(l.authTimer, now) {
		l.authTimer = time.Time{}
		l.authRetransmit()
	}
	if due(l.echoTimer, now) {
		l.echoTick()
	}
	if due(l.probeTimer, now) {
		l.probeTick()
	}
}

// input handles one PPP packet (protocol field + information).
func (l *link) input(now time.Time, proto uint16, b []byte) {
	l.now = now
	switch proto {
	case pppIPv4, pppIPv6:
		if l.phase == phaseNetwork && (proto == pppIPv4 && l.ipcp.state == stOpened || proto == pppIPv6 && l.ipv6Up) {
			l.owner.deliver(proto, b)
		}
		return
	case pppLCP:
		p, err := ParseControl(b)
		if err != nil {
			return
		}
		l.lcp.input(p, b[:lcpHdrLen+len(p.Data)])
		return
	}
	if l.lcp.state != stOpened {
		return // RFC 1661: non-LCP packets before Opened are discarded
	}
	switch {
	case proto == pppPAP && l.authProto == pppPAP, proto == pppCHAP && l.authProto == pppCHAP:
		if l.phase == phaseAuth || l.phase == phaseNetwork {
			p, err := ParseControl(b)
			if err == nil {
				l.authInput(proto, p)
			}
		}
	case proto == pppIPCP:
		if l.phase == phaseNetwork {
			if p, err := ParseControl(b); err == nil {
				l.ipcp.input(p, b[:lcpHdrLen+len(p.Data)])
			}
		}
	case proto == pppIPv6CP && l.cfg.ipv6:
		if l.phase == phaseNetwork {
			if p, err := ParseControl(b); err == nil {
				l.ipv6cp.input(p, b[:lcpHdrLen+len(p.Data)])
			}
		}
	default:
		l.protocolReject(proto, b)
	}
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

// ---- LCP ----

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
				var ok bool
				if l.reqAuth, l.reqAlg, ok = nextAuth(l.reqAuth, l.reqAlg, l.cfg.auth); !ok {
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

// optReply collects the Nak and Reject parts of a Configure-Request reply.
type optReply struct {
	nak, rej   []byte
	rejectOnly bool
}

func (r *optReply) reject(o Option) { r.rej = appendOpt(r.rej, o.Type, o.Value...) }
func (r *optReply) nakOpt(typ uint8, v ...byte) {
	if r.rejectOnly {
		r.rej = appendOpt(r.rej, typ, v...)
		return
	}
	r.nak = appendOpt(r.nak, typ, v...)
}

func (r *optReply) finish(raw, out []byte) (uint8, []byte) {
	switch {
	case len(r.rej) > 0:
		return ConfRej, append(out, r.rej...)
	case len(r.nak) > 0:
		return ConfNak, append(out, r.nak...)
	}
	return ConfAck, append(out, raw...)
}

func (h *lcpHandler) reqCI(opts []Option, raw, out []byte, rejectOnly bool) (uint8, []byte) {
	l := (*link)(h)
	r := optReply{rejectOnly: rejectOnly}
	mru, magic, auth, alg := 1500, uint32(0), uint16(0), uint8(0)
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
				// PADI first. The client Naks the first request for PAP
				// proposing CHAP (CHAP-MD5, else MS-CHAPv2) when its Auth
				// allows one; an AC that asks for PAP again in a request
				// with another Identifier (a retransmission of the Nak'd
				// one, our Nak lost, is Nak'd again) insists, and gets PAP,
				// unless cfg.refusePAP: then the link is closed (LCP
				// Terminate) and papRefused tells the client.
				switch id := l.lcp.peerID; {
				case l.cfg.auth&(AuthCHAPMD5|AuthMSCHAPv2) != 0 && (!l.papNaked || id == l.papNakID):
					l.papNaked, l.papNakID = true, id
					if l.cfg.auth&AuthCHAPMD5 != 0 {
						r.nakOpt(OptAuthProto, 0xc2, 0x23, chapMD5)
					} else {
						r.nakOpt(OptAuthProto, 0xc2, 0x23, chapMSv2)
					}
				case l.cfg.refusePAP:
					// The automaton sends no reply: the link is closing.
					l.papRefused = true
					l.close("refusing PAP (it sends the password in clear): an AC authenticated us with CHAP before")
					return ConfRej, append(out, raw...)
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
		l.hisMRU, l.peerMagic = mru, magic
		if l.cfg.role == roleClient {
			l.authProto, l.authAlg = auth, alg
		}
	}
	return code, out
}

func (h *lcpHandler) up() {
	l := (*link)(h)
	if l.cfg.role == roleServer {
		l.authProto, l.authAlg = l.reqAuth, l.reqAlg
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

// ---- authentication ----

func (l *link) authStart() {
	l.authTries = 0
	l.authDead = l.now.Add(l.cfg.authTimeout)
	// Nothing of an earlier authentication phase (an LCP restart in the
	// same session) may answer for this one.
	l.challenge, l.succMsg = l.challenge[:0], nil
	l.peerChal, l.ntResp = [16]byte{}, [24]byte{}
	l.chapAnswered = false
	switch {
	case l.cfg.role == roleClient && l.authProto == pppPAP:
		l.authRetransmit()
	case l.cfg.role == roleServer && l.authProto == pppCHAP:
		l.challenge = make([]byte, 16)
		for i := 0; i < 16; i += 8 {
			binary.BigEndian.PutUint64(l.challenge[i:], l.cfg.rand())
		}
		l.authRetransmit()
	}
}

// authRetransmit (re)sends a PAP request (client) or CHAP challenge
// (server).
func (l *link) authRetransmit() {
	if l.authDone || l.peerAuthOK {
		return
	}
	if l.authTries >= authRetries {
		l.failAuth("no authentication response", false)
		return
	}
	l.authTries++
	l.authID++
	switch {
	case l.cfg.role == roleClient && l.authProto == pppPAP:
		out := append(l.scratch[:0], PAPReq, l.authID, 0, 0)
		out = PAPRequest{[]byte(l.cfg.user), []byte(l.cfg.pass)}.Append(out)
		l.sendControl(pppPAP, out)
	case l.cfg.role == roleServer && l.authProto == pppCHAP:
		out := append(l.scratch[:0], CHAPChal, l.authID, 0, 0)
		out = CHAPValue{l.challenge, []byte(l.cfg.name)}.Append(out)
		l.sendControl(pppCHAP, out)
	default:
		return
	}
	l.authTimer = l.now.Add(l.cfg.restart)
}

// authOrder is the order in which a server offers protocols.
var authOrder = [...]struct {
	proto uint16
	alg   uint8
	set   AuthProto
}{{pppCHAP, chapMD5, AuthCHAPMD5}, {pppCHAP, chapMSv2, AuthMSCHAPv2}, {pppPAP, 0, AuthPAP}}

// nextAuth returns the protocol in auth that follows (proto, alg) in
// authOrder; ok is false when there is none.
func nextAuth(proto uint16, alg uint8, auth AuthProto) (uint16, uint8, bool) {
	i := 0
	for i < len(authOrder) && (authOrder[i].proto != proto || authOrder[i].alg != alg) {
		i++
	}
	for i++; i < len(authOrder); i++ {
		if auth&authOrder[i].set != 0 {
			return authOrder[i].proto, authOrder[i].alg, true
		}
	}
	return proto, alg, false
}

// unknownUserSecret stands in for an unknown user's secret so that the
// server does the same work as for a known one.
const unknownUserSecret = "\x00pppfwd: no such user"

// chapAllowed reports whether CHAP algorithm alg is in auth.
func chapAllowed(alg uint8, auth AuthProto) bool {
	return (alg == chapMD5 && auth&AuthCHAPMD5 != 0) || (alg == chapMSv2 && auth&AuthMSCHAPv2 != 0)
}

func chapMD5Response(id uint8, secret string, challenge []byte) [16]byte {
	h := md5.New()
	h.Write([]byte{id})
	h.Write([]byte(secret))
	h.Write(challenge)
	var r [16]byte
	h.Sum(r[:0])
	return r
}

func (l *link) authInput(proto uint16, p ControlPacket) {
	if l.cfg.role == roleClient {
		l.clientAuthInput(proto, p)
	} else {
		l.serverAuthInput(proto, p)
	}
}

func (l *link) clientAuthInput(proto uint16, p ControlPacket) {
	switch {
	case proto == pppCHAP && p.Code == CHAPChal:
		v, err := ParseCHAPValue(p.Data)
		if err != nil {
			return
		}
		out := append(l.scratch[:0], CHAPResp, p.ID, 0, 0)
		if l.authAlg == chapMSv2 {
			if len(v.Value) != 16 {
				return
			}
			// A retransmitted challenge (same id) gets the same answer.
			if p.ID != l.authID || l.ntResp == [24]byte{} || !bytes.Equal(v.Value, l.challenge) {
				binary.BigEndian.PutUint64(l.peerChal[0:], l.cfg.rand())
				binary.BigEndian.PutUint64(l.peerChal[8:], l.cfg.rand())
				l.ntResp = msv2NTResponse(v.Value, l.peerChal[:], l.cfg.user, l.cfg.pass)
				l.challenge = append(l.challenge[:0], v.Value...)
			}
			var val [msv2ValueLen]byte
			copy(val[msv2PeerChal:], l.peerChal[:])
			copy(val[msv2NTResp:], l.ntResp[:])
			out = CHAPValue{val[:], []byte(l.cfg.user)}.Append(out)
		} else {
			r := chapMD5Response(p.ID, l.cfg.pass, v.Value)
			out = CHAPValue{r[:], []byte(l.cfg.user)}.Append(out)
		}
		l.authID = p.ID
		l.chapAnswered = true
		l.sendControl(pppCHAP, out)
	case proto == pppCHAP && (p.Code == CHAPSucc || p.Code == CHAPFail):
		if !l.chapAnswered || p.ID != l.authID {
			return
		}
		msg := printable(p.Data)
		if p.Code == CHAPFail {
			l.failAuth("authentication failed (CHAP): "+msg, true)
			return
		}
		if l.authAlg == chapMSv2 {
			// Mutual authentication: the server must prove it knows the
			// password too.
			want := msv2AuthenticatorResponse(l.cfg.pass, l.ntResp, l.peerChal[:], l.challenge, l.cfg.user)
			if !msv2CheckSuccess(p.Data, want) {
				l.failAuth("MS-CHAPv2: the server's authenticator response is wrong: "+msg, true)
				return
			}
		}
		l.authSucceeded(msg)
	case proto == pppPAP && (p.Code == PAPAck || p.Code == PAPNak):
		if p.ID != l.authID {
			return
		}
		m, _ := ParsePAPMessage(p.Data)
		if p.Code == PAPNak {
			l.failAuth("authentication failed (PAP): "+printable(m), true)
			return
		}
		l.authSucceeded(printable(m))
	}
}

func (l *link) serverAuthInput(proto uint16, p ControlPacket) {
	var user string
	var ok bool
	switch {
	case proto == pppCHAP && p.Code == CHAPResp:
		if p.ID != l.authID {
			return
		}
		v, err := ParseCHAPValue(p.Data)
		if err != nil {
			return
		}
		user = string(v.Name)
		if l.peerAuthOK {
			ok = user == l.user
		} else {
			// The same work for an unknown user: the answer's timing must
			// not tell which user names exist.
			secret, known := l.cfg.users[user]
			if !known {
				secret = unknownUserSecret
			}
			if l.authAlg == chapMSv2 {
				ok = l.msv2Verify(v.Value, user, secret) && known
			} else {
				want := chapMD5Response(p.ID, secret, l.challenge)
				ok = subtle.ConstantTimeCompare(want[:], v.Value) == 1 && known
			}
		}
		code, msg := CHAPSucc, []byte("Access granted")
		switch {
		case !ok && l.authAlg == chapMSv2:
			// RFC 2759 section 6: E=691 (authentication failure), no retry.
			code, msg = CHAPFail, []byte("E=691 R=0 C="+strings.ToUpper(hex.EncodeToString(l.challenge))+" V=3 M=Authentication failed")
		case !ok:
			code, msg = CHAPFail, []byte("Authentication failed")
		case l.authAlg == chapMSv2:
			msg = l.succMsg
		}
		out := append(l.scratch[:0], code, p.ID, 0, 0)
		out = append(out, msg...)
		l.sendControl(pppCHAP, out)
	case proto == pppPAP && p.Code == PAPReq:
		r, err := ParsePAPRequest(p.Data)
		if err != nil {
			return
		}
		user = string(r.PeerID)
		secret, known := l.cfg.users[user]
		ok = known && subtle.ConstantTimeCompare([]byte(secret), r.Password) == 1
		code, msg := PAPAck, "Login ok"
		if !ok {
			code, msg = PAPNak, "Login incorrect"
		}
		out := append(l.scratch[:0], code, p.ID, 0, 0)
		out = appendLV(out, []byte(msg))
		l.sendControl(pppPAP, out)
	default:
		return
	}
	if l.peerAuthOK {
		return // retransmitted response after success
	}
	if !ok {
		l.failAuth("authentication failed for user "+printable([]byte(user)), true)
		return
	}
	l.user = user
	l.authSucceeded("")
}

// msv2Verify checks an MS-CHAPv2 Response value against the password
// and, when it matches, keeps the Success message with the authenticator
// response.
func (l *link) msv2Verify(val []byte, user, password string) bool {
	if len(val) != msv2ValueLen || val[msv2Flags] != 0 {
		return false
	}
	peerChal := val[msv2PeerChal : msv2PeerChal+16]
	want := msv2NTResponse(l.challenge, peerChal, user, password)
	if subtle.ConstantTimeCompare(want[:], val[msv2NTResp:msv2NTResp+24]) != 1 {
		return false
	}
	l.succMsg = []byte(msv2AuthenticatorResponse(password, want, peerChal, l.challenge, user) + " M=Access granted")
	return true
}

func (l *link) failAuth(msg string, wrong bool) {
	l.authTimer, l.authDead = time.Time{}, time.Time{}
	l.authFailed = wrong
	l.authMsg = msg
	l.owner.authResult(false, l.user, msg)
	l.close(msg)
}

func (l *link) authSucceeded(msg string) {
	l.authTimer, l.authDead = time.Time{}, time.Time{}
	if l.cfg.role == roleClient {
		l.authDone = true
	} else {
		l.peerAuthOK = true
	}
	l.authMsg = msg
	l.owner.authResult(true, l.user, msg)
	if l.phase == phaseAuth {
		l.networkPhase()
	}
}

func (l *link) networkPhase() {
	l.phase = phaseNetwork
	if l.cfg.role == roleClient {
		l.ourAddr, l.hisAddr = 0, 0
		l.reqDNS = [2]bool{l.cfg.wantDNS, l.cfg.wantDNS}
		l.dns = [2]uint32{}
	} else {
		l.ourAddr, l.hisAddr = l.cfg.localAddr, l.cfg.peerAddr
	}
	l.reqAddr = true
	l.ipcp.Open()
	l.ipcp.Up()
	if l.cfg.ipv6 {
		l.hisIfID = [8]byte{}
		l.ourIfID = l.newIfID()
		l.reqIfID = true
		l.ipv6cp.Open()
		l.ipv6cp.Up()
	}
}

// ---- IPCP ----

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

// ---- IPv6CP ----

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
