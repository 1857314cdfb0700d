package pppoe

// The link core: one PPP session's configuration, state and phases, its
// timers, and the dispatch of received packets to LCP (lcp.go),
// authentication (auth.go), IPCP (ipcp.go) and IPv6CP (ipv6cp.go).

import (
	"encoding/binary"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
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
	// papAC (client): the AC of this session is known to do only PAP
	// (see lcpHandler.reqCI): its request for PAP is not Nak'd.
	papAC bool
	// dropAuthOnNak (server, tests): see Server.dropAuthOnNak.
	dropAuthOnNak bool
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
	// Client, PAP downgrade guard (see papAnswered): papNaked is set once
	// an AC's request for PAP was Nak'd proposing CHAP, papNakID is the
	// Identifier of that request, papNakOpen while no request of the AC
	// was acknowledged since; papRefused once the link ends because the
	// AC wants PAP while cfg.refusePAP; papOnly once it ends because the
	// AC cannot do CHAP.
	papNaked   bool
	papNakID   uint8
	papNakOpen bool
	papRefused bool
	papOnly    bool

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
		if p.Code == TermReq && l.papNakOpen {
			l.close(l.papAnswered("it ended the link after our Nak for CHAP"))
		}
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
