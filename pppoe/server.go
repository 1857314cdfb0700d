package pppoe

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// ErrNotUp is returned when sending on a session that is not up.
var ErrNotUp = errors.New("pppoe: session not up")

// ServerConfig configures the access concentrator (for labs, tests and
// benchmarks on kernels without PPP).
type ServerConfig struct {
	ACName string // default "pppfwd"
	// ServiceName is offered in PADO; PADI/PADR asking for another
	// non-empty service get a Service-Name-Error ("" = serve any).
	ServiceName string
	// Auth is the set of protocols offered (default CHAP-MD5): CHAP-MD5
	// first, then MS-CHAPv2, then PAP, each when Auth includes it; the
	// client's Nak may pick another one Auth includes.
	Auth  AuthProto
	Users map[string]string
	// LocalAddr is the AC's IPCP address; PoolFirst..PoolLast are handed
	// to clients; DNS is offered per RFC 1877 (zero entries rejected).
	LocalAddr, PoolFirst, PoolLast uint32
	DNS                            [2]uint32
	// MTU is 1492 (default); above 1492 the AC echoes PPP-Max-Payload
	// (RFC 4638) to clients that ask for it.
	MTU int
	// IPv6 negotiates IPv6CP interface identifiers.
	IPv6 bool
	// Cookie sends an AC-Cookie in PADO and requires it in PADR.
	Cookie bool
	// VLAN: serve 802.1Q-tagged clients on this id (0 = untagged).
	VLAN     uint16
	VLANPrio uint8
	// EchoInterval (default 10s, < 0 off) and EchoFailures (default 3)
	// as in ClientConfig; RestartTimer/MaxConfigure likewise.
	EchoInterval time.Duration
	EchoFailures int
	RestartTimer time.Duration
	MaxConfigure int
	// Deliver receives decapsulated IPv4 and IPv6 (once IPv6CP is open)
	// from clients (tell them apart by the version nibble); ip is valid
	// only during the call.
	Deliver func(s SessionInfo, ip []byte)
	Clock   Clock
	Rand    func() uint64
	Logf    func(format string, args ...any)
}

func (cfg *ServerConfig) defaults() {
	if cfg.ACName == "" {
		cfg.ACName = "pppfwd"
	}
	if cfg.Auth == 0 {
		cfg.Auth = AuthCHAPMD5
	}
	if cfg.MTU == 0 {
		cfg.MTU = mruPPPoE
	}
	cfg.MTU = max(min(cfg.MTU, 1500), 576)
	if cfg.EchoInterval == 0 {
		cfg.EchoInterval = 10 * time.Second
	}
	if cfg.EchoFailures <= 0 {
		cfg.EchoFailures = 3
	}
	if cfg.RestartTimer == 0 {
		cfg.RestartTimer = 3 * time.Second
	}
	if cfg.MaxConfigure <= 0 {
		cfg.MaxConfigure = 10
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock
	}
	if cfg.Rand == nil {
		cfg.Rand = cryptoRand
	}
}

// Server is a PPPoE access concentrator.
type Server struct {
	cfg  ServerConfig
	conn Conn
	mac  [6]byte
	key  [16]byte // AC-Cookie HMAC key

	mu       sync.Mutex
	counters ServerCounters
	sessions map[uint16]*srvSession
	byAddr   map[uint32]*srvSession
	nextID   uint16
	buf      []byte
	tx       txQueue
	closing  bool
	now      time.Time
	// ended remembers the last sessions that ended, so that the PADT a
	// client sends after an LCP Terminate (pppd does) is known as late,
	// not foreign.
	ended [8]struct {
		id  uint16
		mac [6]byte
	}
	endedN int
	// dropAuthOnNak (tests) makes the AC answer a Nak of its
	// authentication protocol proposing one it does not offer as pppd
	// does: it drops the option, and once LCP is open without
	// authentication it terminates ("peer refused to authenticate").
	dropAuthOnNak bool
}

type srvSession struct {
	s          *Server
	id         uint16
	mac        [6]byte
	hostUniq   []byte
	maxPayload int
	addr       uint32
	lcfg       linkConfig
	link       *link
	pads       []Tag
}

// NewServer returns an access concentrator serving on conn.
func NewServer(cfg ServerConfig, conn Conn) *Server {
	cfg.defaults()
	s := &Server{cfg: cfg, conn: conn, mac: conn.HardwareAddr(), sessions: map[uint16]*srvSession{},
		byAddr: map[uint32]*srvSession{}, buf: make([]byte, 0, 1600)}
	s.tx = txQueue{conn: conn, onError: func(err error) { s.logf("pppoe-server: write: %v (retrying)", err) }}
	binary.BigEndian.PutUint64(s.key[:], cfg.Rand())
	binary.BigEndian.PutUint64(s.key[8:], cfg.Rand())
	s.nextID = uint16(cfg.Rand()%0xfffe) + 1
	return s
}

// Run serves until ctx is done, then terminates every session (LCP
// Terminate-Request + PADT) and returns nil. As for Client.Run, only a
// closed Conn ends it early; other write errors are counted and retried.
func (s *Server) Run(ctx context.Context) error {
	return runLoop(ctx, s.conn, s.cfg.Clock, s.cfg.RestartTimer, (*serverCore)(s))
}

// Sessions lists the current sessions ordered by id.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionInfo, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (ss *srvSession) info() SessionInfo {
	i := SessionInfo{ID: ss.id, PeerMAC: ss.mac, MaxPayload: ss.maxPayload > mruPPPoE}
	if l := ss.link; l != nil {
		i.User, i.Up, i.MTU, i.PeerIfID = l.user, l.isUp, l.mtu(), l.hisIfID
		if l.isUp {
			i.Addr = l.hisAddr
		}
	}
	return i
}

// Counters returns the server's counters.
func (s *Server) Counters() ServerCounters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counters
	c.WriteErrors, c.WriteDrops = s.tx.errors, s.tx.dropped
	return c
}

// SendIPv4 sends ip to the client session whose assigned address is the
// packet's destination.
func (s *Server) SendIPv4(ip []byte) error {
	v := hdr.IPv4(ip)
	if !v.IsValid() {
		return errors.New("pppoe: invalid IPv4 packet")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendIP(s.byAddr[v.Dst()], pppIPv4, ip, &s.counters.IPv4Out)
}

// SendIPv6 sends the IPv6 packet ip to client session id (IPv6 has no
// per-session address here: the caller routes).
func (s *Server) SendIPv6(id uint16, ip []byte) error {
	if v := hdr.IPv6(ip); !v.IsValid() {
		return errors.New("pppoe: invalid IPv6 packet")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendIP(s.sessions[id], pppIPv6, ip, &s.counters.IPv6Out)
}

// sendIP sends ip over ss (s.mu held) if its network protocol is open.
func (s *Server) sendIP(ss *srvSession, proto uint16, ip []byte, sent *uint64) error {
	if ss == nil || ss.link == nil || !ss.link.isUp || proto == pppIPv6 && !ss.link.ipv6Up {
		s.counters.Dropped++
		return ErrNotUp
	}
	if len(ip) > ss.link.mtu() {
		s.counters.Dropped++
		return fmt.Errorf("pppoe: packet of %d bytes exceeds session MTU %d", len(ip), ss.link.mtu())
	}
	ss.sendPPP(proto, ip)
	*sent++
	return s.tx.err
}

// Hangup ends session id from the AC side: LCP Terminate-Request, then
// PADT (the client is expected to reconnect).
func (s *Server) Hangup(id uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		return ErrNotUp
	}
	ss.link.close("administrative hangup")
	return nil
}

// Kill ends session id with a bare PADT, without LCP Terminate (as an AC
// that restarts or drops a session would).
func (s *Server) Kill(id uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		return ErrNotUp
	}
	ss.link.abort()
	s.endSession(ss, true)
	return nil
}

type serverCore Server

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

func (s *Server) frame(dst [6]byte, et uint16) []byte {
	return appendEthernet(s.buf[:0], dst, s.mac, s.cfg.VLAN, s.cfg.VLANPrio, et)
}

func (s *Server) write(b []byte) {
	s.tx.write(padFrame(b), s.now)
	s.buf = b[:0]
}

func (s *Server) sendDiscovery(dst [6]byte, code uint8, sid uint16, tags []Tag) {
	d := Discovery{Code: code, SessionID: sid, Tags: tags}
	s.write(d.Append(s.frame(dst, hdr.EtherTypePPPoEDisc)))
}

func (s *Server) cookie(mac [6]byte) []byte {
	h := hmac.New(sha256.New, s.key[:])
	h.Write(mac[:])
	return h.Sum(nil)[:16]
}

func (sc *serverCore) start(now time.Time) { sc.now = now }

func (sc *serverCore) next() time.Time {
	t := sc.tx.next()
	for _, ss := range sc.sessions {
		if n := ss.link.next(); !n.IsZero() && (t.IsZero() || n.Before(t)) {
			t = n
		}
	}
	return t
}

func (sc *serverCore) tick(now time.Time) {
	sc.now = now
	sc.tx.flush(now) // frames waiting go out before any the timers make
	for _, ss := range sc.sessions {
		if due(ss.link.next(), now) {
			ss.link.tick(now)
		}
	}
}

func (sc *serverCore) shutdown(now time.Time) {
	sc.now = now
	sc.closing = true
	for _, ss := range sc.sessions {
		ss.link.close("AC shutting down")
	}
}

// finished: no session left and no frame (a PADT) waits for a retry.
func (sc *serverCore) finished() bool { return len(sc.sessions) == 0 && !sc.tx.pending() }
func (sc *serverCore) lock()          { sc.mu.Lock() }
func (sc *serverCore) unlock()        { sc.mu.Unlock() }
func (sc *serverCore) err() error     { return sc.tx.err }

func (sc *serverCore) input(b []byte, now time.Time) {
	s := (*Server)(sc)
	s.now = now
	f, err := ParseFrame(b)
	if err != nil {
		s.counters.BadFrames++
		return
	}
	if f.VLAN != s.cfg.VLAN || f.Dst != s.mac && f.Dst != Broadcast {
		s.counters.Dropped++
		return
	}
	if f.EtherType == hdr.EtherTypePPPoESess {
		ss := s.sessions[f.SessionID]
		if ss == nil || ss.mac != f.Src || f.Code != 0 || len(f.Payload) < 2 {
			s.counters.Dropped++
			return
		}
		ss.link.input(now, be16(f.Payload), f.Payload[2:])
		return
	}
	d, err := ParseDiscovery(f.PPPoE)
	if err != nil {
		s.counters.BadFrames++
		return
	}
	switch d.Code {
	case CodePADI:
		s.counters.PADIReceived++
		s.handlePADI(&f, &d)
	case CodePADR:
		if f.Dst != s.mac {
			return
		}
		s.counters.PADRReceived++
		s.handlePADR(&f, &d)
	case CodePADT:
		ss := s.sessions[d.SessionID]
		if ss == nil || ss.mac != f.Src || f.Dst != s.mac {
			if f.Dst == s.mac && s.recentlyEnded(d.SessionID, f.Src) {
				s.counters.PADTLate++
				return
			}
			s.counters.Dropped++
			return
		}
		s.counters.PADTReceived++
		ss.link.abort()
		s.endSession(ss, false)
	default:
		s.counters.Dropped++
	}
}

// replyTags echoes Host-Uniq and Relay-Session-Id and answers
// PPP-Max-Payload (RFC 4638) when the AC allows more than 1492.
func (s *Server) replyTags(d *Discovery, service []byte) ([]Tag, int) {
	tags := []Tag{{TagServiceName, service}, {TagACName, []byte(s.cfg.ACName)}}
	for _, t := range []uint16{TagHostUniq, TagRelaySessionID} {
		if v, ok := d.Tag(t); ok {
			tags = append(tags, Tag{t, v})
		}
	}
	mp := 0
	if v, ok := d.Tag(TagPPPMaxPayload); ok && len(v) == 2 && s.cfg.MTU > mruPPPoE && int(be16(v)) > mruPPPoE {
		mp = min(int(be16(v)), s.cfg.MTU)
		tags = append(tags, Tag{TagPPPMaxPayload, []byte{byte(mp >> 8), byte(mp)}})
	}
	return tags, mp
}

func (s *Server) serviceOK(d *Discovery) ([]byte, bool) {
	v, ok := d.Tag(TagServiceName)
	if !ok {
		return nil, false
	}
	return v, len(v) == 0 || s.cfg.ServiceName == "" || string(v) == s.cfg.ServiceName
}

func (s *Server) handlePADI(f *Frame, d *Discovery) {
	if s.closing {
		return
	}
	svc, ok := s.serviceOK(d)
	tags, _ := s.replyTags(d, []byte(s.cfg.ServiceName))
	if !ok {
		tags = append(tags, Tag{TagServiceNameError, []byte("service " + printable(svc) + " not offered")})
	} else if s.cfg.Cookie {
		tags = append(tags, Tag{TagACCookie, s.cookie(f.Src)})
	}
	s.sendDiscovery(f.Src, CodePADO, 0, tags)
	s.counters.PADOSent++
}

func (s *Server) handlePADR(f *Frame, d *Discovery) {
	svc, ok := s.serviceOK(d)
	tags, mp := s.replyTags(d, svc)
	hu, _ := d.Tag(TagHostUniq)
	// A retransmitted PADR (our PADS was lost) gets the same PADS again.
	for _, ss := range s.sessions {
		if ss.mac == f.Src && bytes.Equal(ss.hostUniq, hu) && ss.link.phase == phaseEstablish {
			s.sendDiscovery(f.Src, CodePADS, ss.id, ss.pads)
			s.counters.PADSSent++
			return
		}
	}
	fail := func(tag uint16, msg string) {
		s.sendDiscovery(f.Src, CodePADS, 0, append(tags, Tag{tag, []byte(msg)}))
		s.counters.PADSSent++
	}
	if !ok {
		fail(TagServiceNameError, "service "+printable(svc)+" not offered")
		return
	}
	if s.cfg.Cookie {
		if c, ok := d.Tag(TagACCookie); !ok || !hmac.Equal(c, s.cookie(f.Src)) {
			fail(TagGenericError, "bad AC-Cookie")
			return
		}
	}
	if s.closing {
		fail(TagACSystemError, "AC shutting down")
		return
	}
	addr := s.allocAddr()
	if addr == 0 && s.cfg.PoolFirst != 0 {
		fail(TagACSystemError, "address pool exhausted")
		return
	}
	id := s.allocID()
	if id == 0 {
		fail(TagACSystemError, "no free session")
		return
	}
	ss := &srvSession{s: s, id: id, mac: f.Src, hostUniq: append([]byte(nil), hu...), maxPayload: mp, addr: addr}
	ss.pads = make([]Tag, len(tags))
	for i, t := range tags {
		ss.pads[i] = Tag{t.Type, append([]byte(nil), t.Value...)}
	}
	mru := mruPPPoE
	if mp > mruPPPoE {
		mru = mp
	}
	ss.lcfg = linkConfig{role: roleServer, mru: mru, auth: s.cfg.Auth, users: s.cfg.Users, name: s.cfg.ACName,
		localAddr: s.cfg.LocalAddr, peerAddr: addr, dns: s.cfg.DNS, ipv6: s.cfg.IPv6,
		echoInterval: s.cfg.EchoInterval, echoFailures: s.cfg.EchoFailures, restart: s.cfg.RestartTimer,
		maxConfigure: s.cfg.MaxConfigure, authTimeout: 30 * time.Second, rand: s.cfg.Rand, dropAuthOnNak: s.dropAuthOnNak}
	s.sessions[id] = ss
	if addr != 0 {
		s.byAddr[addr] = ss
	}
	s.sendDiscovery(f.Src, CodePADS, id, ss.pads)
	s.counters.PADSSent++
	ss.link = newLink(&ss.lcfg, ss, s.now)
	ss.link.start()
}

func (s *Server) allocID() uint16 {
	for range 0xfffe {
		id := s.nextID
		s.nextID++
		if s.nextID == 0 || s.nextID == 0xffff {
			s.nextID = 1
		}
		if s.sessions[id] == nil {
			return id
		}
	}
	return 0
}

func (s *Server) allocAddr() uint32 {
	if s.cfg.PoolFirst == 0 {
		return 0
	}
	for a := s.cfg.PoolFirst; a <= s.cfg.PoolLast && a != 0; a++ {
		if s.byAddr[a] == nil {
			return a
		}
	}
	return 0
}

// recentlyEnded reports whether session id with peer mac is among the
// last ones that ended.
func (s *Server) recentlyEnded(id uint16, mac [6]byte) bool {
	for _, e := range s.ended[:min(s.endedN, len(s.ended))] {
		if e.id == id && e.mac == mac {
			return true
		}
	}
	return false
}

func (s *Server) endSession(ss *srvSession, padt bool) {
	if s.sessions[ss.id] != ss {
		return
	}
	if padt {
		s.sendDiscovery(ss.mac, CodePADT, ss.id, nil)
		s.counters.PADTSent++
	}
	delete(s.sessions, ss.id)
	s.ended[s.endedN%len(s.ended)] = struct {
		id  uint16
		mac [6]byte
	}{ss.id, ss.mac}
	s.endedN++
	if ss.addr != 0 && s.byAddr[ss.addr] == ss {
		delete(s.byAddr, ss.addr)
	}
}

// linkOwner for one server session.

func (ss *srvSession) sendPPP(proto uint16, b []byte) {
	s := ss.s
	f := s.frame(ss.mac, hdr.EtherTypePPPoESess)
	f = append(f, 0x11, 0, byte(ss.id>>8), byte(ss.id), byte((len(b)+2)>>8), byte(len(b)+2), byte(proto>>8), byte(proto))
	s.write(append(f, b...))
}

func (ss *srvSession) linkUp() {
	ss.s.counters.SessionsUp++
	ss.s.logf("pppoe-server: session %#04x user %q up, address %s", ss.id, ss.link.user, ip4(ss.link.hisAddr))
}

func (ss *srvSession) linkChanged() {}
func (ss *srvSession) linkDown()    {}

func (ss *srvSession) linkFinished(reason string, _ bool) {
	ss.s.logf("pppoe-server: session %#04x down: %s", ss.id, reason)
	ss.s.endSession(ss, true)
}

func (ss *srvSession) deliver(proto uint16, b []byte) {
	switch proto {
	case pppIPv4:
		ss.s.counters.IPv4In++
	case pppIPv6:
		ss.s.counters.IPv6In++
	default:
		return
	}
	if ss.s.cfg.Deliver != nil {
		ss.s.cfg.Deliver(ss.info(), b)
	}
}

func (ss *srvSession) authResult(ok bool, user, msg string) {
	if ok {
		ss.s.counters.AuthOK++
	} else {
		ss.s.counters.AuthFailed++
	}
}
