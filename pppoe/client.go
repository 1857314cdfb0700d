package pppoe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// ClientConfig configures a PPPoE client. Zero values select the defaults
// noted on each field.
type ClientConfig struct {
	Username, Password string
	// ServiceName is the Service-Name requested in PADI/PADR ("" = any).
	ServiceName string
	// ACName, when set, accepts only PADOs from this access concentrator.
	ACName string
	// HostUniq adds a Host-Uniq tag to PADI/PADR/PADT and ignores
	// discovery replies that do not echo it.
	HostUniq bool
	// VLAN tags every frame with this 802.1Q id (0 = untagged) and
	// VLANPrio as 802.1p priority.
	VLAN     uint16
	VLANPrio uint8
	// MTU is 1492 (default) or up to 1500 with RFC 4638 PPP-Max-Payload
	// (baby-jumbo frames on the WAN); without the AC's echo of the tag
	// the client falls back to 1492.
	MTU int
	// StatePath persists the current session id and AC MAC; on start a
	// PADT is sent for a persisted session before the first PADI ("" =
	// off).
	StatePath string
	// EchoInterval is the LCP echo keepalive period (default 10s, < 0
	// off); EchoFailures unanswered echoes (default 3) drop the link.
	EchoInterval time.Duration
	EchoFailures int
	// Auth is the set of protocols the client accepts (default AuthAny).
	// When it allows CHAP-MD5 or MS-CHAPv2 as well as PAP, an AC asking
	// for PAP is first Nak'd with CHAP (CHAP-MD5, else MS-CHAPv2) and gets
	// PAP if it asks for it again; an AC that answers the Nak by dropping
	// authentication (pppd with require-pap does) or by ending the
	// session is taken as PAP-only (by MAC and AC-Name): that attempt
	// ends, and later ones with that AC take PAP at once. Whenever PAP is
	// used a warning is logged: PAP sends the password in clear. Once an
	// AC has authenticated the client with CHAP (a CHAP Success), PAP is
	// refused for the rest of the Client's life: an AC that wants it has
	// its session ended (LCP Terminate, PADT; Counters.PAPRefused), and
	// later discoveries choose it only if no other AC offers.
	Auth AuthProto
	// IPv6 negotiates IPv6CP (interface identifier) besides IPCP.
	IPv6 bool
	// NoDNS does not request DNS servers (RFC 1877).
	NoDNS bool

	// Timers. PADITimeout (default 1s) doubles on every retry up to
	// MaxPADITimeout (default 32s), with ±25% jitter. PADOWait (default
	// 200ms) collects PADOs after the first one to choose among several.
	PADITimeout, MaxPADITimeout, PADOWait time.Duration
	// RestartTimer is the PPP restart timer (default 3s); MaxConfigure
	// (default 10) Configure-Requests without reply drop the attempt.
	RestartTimer time.Duration
	MaxConfigure int
	// AuthTimeout bounds the authentication phase (default 30s).
	AuthTimeout time.Duration
	// HoldoffDelay (default 1s) is the wait after a dropped session,
	// doubling per consecutive failure up to MaxHoldoff (default 60s).
	// Authentication failures start at AuthFailDelay (default 10s) and
	// double up to MaxAuthFailDelay (default 10min).
	HoldoffDelay, MaxHoldoff        time.Duration
	AuthFailDelay, MaxAuthFailDelay time.Duration
	// TerminateTimeout bounds the wait for Terminate-Ack on shutdown
	// (default 1s).
	TerminateTimeout time.Duration

	// Deliver, when set, receives decapsulated IPv4 packets that reach
	// the client through its Conn (labs/tests; in production the
	// dataplane takes data frames before the control plane). ip is valid
	// only during the call.
	Deliver func(ip []byte)
	// Clock defaults to SystemClock. Rand (default: crypto seeded)
	// supplies magic numbers, Host-Uniq and jitter.
	Clock Clock
	Rand  func() uint64
	// Logf, when set, receives state changes (never per packet): a line
	// per discovery attempt and result, authentication result, IPCP and
	// IPv6CP result and retry, each with what to check when it failed;
	// repeats of a kind are rate-limited (logBurst, then one per
	// logEvery). Secrets (the password, CHAP values) are never logged.
	Logf func(format string, args ...any)
	// Interface names the WAN port in log lines ("" = "the WAN").
	Interface string
}

func (cfg *ClientConfig) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if cfg.MTU == 0 {
		cfg.MTU = mruPPPoE
	}
	cfg.MTU = max(min(cfg.MTU, 1500), 576)
	def(&cfg.EchoInterval, 10*time.Second)
	if cfg.EchoFailures <= 0 {
		cfg.EchoFailures = 3
	}
	if cfg.Auth == 0 {
		cfg.Auth = AuthAny
	}
	def(&cfg.PADITimeout, time.Second)
	def(&cfg.MaxPADITimeout, 32*time.Second)
	def(&cfg.PADOWait, 200*time.Millisecond)
	def(&cfg.RestartTimer, 3*time.Second)
	if cfg.MaxConfigure <= 0 {
		cfg.MaxConfigure = 10
	}
	def(&cfg.AuthTimeout, 30*time.Second)
	def(&cfg.HoldoffDelay, time.Second)
	def(&cfg.MaxHoldoff, 60*time.Second)
	def(&cfg.AuthFailDelay, 10*time.Second)
	def(&cfg.MaxAuthFailDelay, 10*time.Minute)
	def(&cfg.TerminateTimeout, time.Second)
	if cfg.Clock == nil {
		cfg.Clock = SystemClock
	}
	if cfg.Rand == nil {
		cfg.Rand = cryptoRand
	}
}

func cryptoRand() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])
}

// maxOffers bounds the PADOs kept while the client waits PADOWait for
// more: a PADO flood cannot grow memory; later ones are counted
// (Counters.OffersDropped) and dropped.
const maxOffers = 16

// offer is a PADO the client may answer.
type offer struct {
	mac        [6]byte
	acName     string
	cookie     []byte
	relay      []byte
	maxPayload int // PPP-Max-Payload echoed (0: none)
}

// Client is a PPPoE client session (RFC 2516 discovery + PPP). It works
// purely through its Conn.
type Client struct {
	cfg     ClientConfig
	conn    Conn
	publish func(*hdr.Session)
	sess    atomic.Pointer[hdr.Session]

	mu  sync.Mutex // guards everything below (Run's goroutine and accessors)
	st  Status
	mac [6]byte

	timer       time.Time // discovery, request, holdoff and shutdown timer
	padiTimeout time.Duration
	padrTries   int
	hostUniq    []byte
	offers      []offer
	offerWait   time.Time
	chosen      offer
	link        *link
	lcfg        linkConfig
	failStreak  int
	closing     bool
	done        bool
	gen         uint64
	buf         []byte
	now         time.Time // of the event being handled (Run's loop)
	tx          txQueue
	// refused: the last ACs refused for wanting PAP after CHAP worked
	// with an AC (see choose); papACs: the last ACs known to do only PAP
	// (see link.papAnswered). Each is a ring; the counts go on past it.
	refused  [maxOffers][6]byte
	refusedN int
	papACs   [maxOffers]acID
	papACsN  int

	// Bring-up logging: the PADIs of this discovery round, PADOs ignored
	// for their AC-Name or Service-Name, whether IPv6CP's outcome was
	// logged for this session, and the rate limits of repeated lines.
	padiRound   int
	padoIgnored int
	ipv6Logged  uint8 // ipv6Unknown, ipv6LoggedUp or ipv6LoggedRefused
	limits      [numLogKinds]logLimit
}

// What was logged of IPv6CP in this session.
const (
	ipv6Unknown uint8 = iota
	ipv6LoggedUp
	ipv6LoggedRefused
)

// Kinds of bring-up line that repeat while a line stays down.
const (
	logPADI = iota
	logNoPADO
	logNoPADS
	logAuthFail
	logRetry
	numLogKinds
)

// A kind's first logBurst lines are logged; after that one per logEvery,
// telling how many were left out. A session that comes up resets all.
const (
	logBurst = 3
	logEvery = 5 * time.Minute
)

type logLimit struct {
	n       int       // lines of the kind since the last reset
	next    time.Time // when one may be logged again, after the burst
	skipped int       // left out since the last one logged
}

// logRepeat logs a line of a repeating kind within its rate limit.
func (c *Client) logRepeat(kind int, format string, args ...any) {
	lim := &c.limits[kind]
	lim.n++
	if lim.n > logBurst {
		if c.now.Before(lim.next) {
			lim.skipped++
			return
		}
		if lim.skipped > 0 {
			format += fmt.Sprintf(" (%d like it not logged in the last %v)", lim.skipped, logEvery)
		}
	}
	lim.skipped = 0
	if lim.n >= logBurst {
		lim.next = c.now.Add(logEvery)
	}
	c.logf(format, args...)
}

// where names the WAN port and its VLAN for log lines.
func (c *Client) where() string {
	ifn := c.cfg.Interface
	if ifn == "" {
		ifn = "the WAN"
	}
	if c.cfg.VLAN != 0 {
		return fmt.Sprintf("%s (VLAN %d)", ifn, c.cfg.VLAN)
	}
	return ifn + " (untagged)"
}

// noPADOHint says what to check when no access concentrator answers.
func (c *Client) noPADOHint() string {
	h := "check the cable, that the modem or ONT is in bridge mode and up"
	if c.cfg.VLAN != 0 {
		h = "check the VLAN id (wan.vlan) and " + h[len("check "):]
	} else {
		h += ", and whether the ISP needs a VLAN (wan.vlan; Deutsche Telekom: 7)"
	}
	if c.padoIgnored > 0 {
		h += fmt.Sprintf("; %d PADOs were ignored for their AC-Name or Service-Name: check pppoe.ac_name and pppoe.service", c.padoIgnored)
	}
	return h
}

// acID names an access concentrator: its MAC and AC-Name.
type acID struct {
	mac  [6]byte
	name string
}

// NewClient returns a client that runs over conn and calls publish with
// every new session snapshot (nil when the session goes down). publish
// is called from Run's goroutine with the client's lock held: it must not
// call back into the Client, and must not block.
func NewClient(cfg ClientConfig, conn Conn, publish func(*hdr.Session)) *Client {
	cfg.defaults()
	c := &Client{cfg: cfg, conn: conn, publish: publish, mac: conn.HardwareAddr(), buf: make([]byte, 0, 1600)}
	c.tx = txQueue{conn: conn, onError: func(err error) { c.setError("write: %v (retrying)", err) }}
	c.lcfg = linkConfig{role: roleClient, auth: cfg.Auth, user: cfg.Username, pass: cfg.Password,
		wantDNS: !cfg.NoDNS, ipv6: cfg.IPv6, echoInterval: cfg.EchoInterval, echoFailures: cfg.EchoFailures,
		restart: cfg.RestartTimer, maxConfigure: cfg.MaxConfigure, authTimeout: cfg.AuthTimeout, rand: cfg.Rand}
	return c
}

// Run connects and keeps the session up until ctx is done, then sends LCP
// Terminate-Request and PADT and returns nil. A closed Conn (a write or
// read error matching ErrClosed or os.ErrClosed, or any read error) ends
// Run with its error; other write errors are transient: they are counted
// (Counters.WriteErrors, LastError) and the frame is retried.
func (c *Client) Run(ctx context.Context) error {
	return runLoop(ctx, c.conn, c.cfg.Clock, c.cfg.TerminateTimeout, (*clientCore)(c))
}

// Session returns the current session snapshot, or nil when down.
func (c *Client) Session() *hdr.Session { return c.sess.Load() }

// Status returns a snapshot of the client's state and counters.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.st
	if l := c.link; l != nil {
		st.Counters.EchoSent = l.counters.echoSent + c.st.Counters.EchoSent
		st.Counters.EchoReplies = l.counters.echoReplies + c.st.Counters.EchoReplies
		st.Counters.ProtocolRejectsSent += l.counters.protoRejects
		st.Counters.CodeRejectsSent += l.counters.codeRejects
		st.Counters.BadAddresses += l.counters.badAddrs
		st.EchoRTT = l.rtt
	}
	st.Counters.WriteErrors, st.Counters.WriteDrops = c.tx.errors, c.tx.dropped
	return st
}

// SendIPv4 encapsulates ip for the current session and writes it to the
// Conn (labs/tests). It fails when the session is down.
func (c *Client) SendIPv4(ip []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.link == nil || !c.link.isUp {
		return ErrNotUp
	}
	c.sendPPP(pppIPv4, ip)
	return c.tx.err
}

// ErrShutdown is reported by Run's core when ctx ended the session.
var errShutdown = errors.New("administrative shutdown")

// clientCore is the event-driven state machine behind Run; its methods
// are called with c.mu held.
type clientCore Client

func (c *Client) logf(format string, args ...any) {
	if c.cfg.Logf != nil {
		c.cfg.Logf(format, args...)
	}
}

func (c *Client) setError(format string, args ...any) {
	c.st.LastError = fmt.Sprintf(format, args...)
	c.logf("pppoe: %s", c.st.LastError)
}

func (c *Client) frame(dst [6]byte, et uint16) []byte {
	return appendEthernet(c.buf[:0], dst, c.mac, c.cfg.VLAN, c.cfg.VLANPrio, et)
}

func (c *Client) write(b []byte) {
	c.tx.write(padFrame(b), c.now)
	c.buf = b[:0]
}

func (c *Client) sendDiscovery(dst [6]byte, code uint8, sid uint16, tags []Tag) {
	d := Discovery{Code: code, SessionID: sid, Tags: tags}
	c.write(d.Append(c.frame(dst, hdr.EtherTypePPPoEDisc)))
}

// sendPPP implements linkOwner.
func (c *Client) sendPPP(proto uint16, b []byte) {
	f := c.frame(c.chosen.mac, hdr.EtherTypePPPoESess)
	f = append(f, 0x11, 0, byte(c.st.SessionID>>8), byte(c.st.SessionID), 0, 0, byte(proto>>8), byte(proto))
	binary.BigEndian.PutUint16(f[len(f)-4:], uint16(len(b)+2))
	c.write(append(f, b...))
}

func (cc *clientCore) start(now time.Time) {
	c := (*Client)(cc)
	c.now = now
	c.st.State = StateIdle
	if c.cfg.StatePath != "" {
		if ps, err := loadState(c.cfg.StatePath); err == nil && ps.SessionID != 0 && ps.ACMAC[0]&1 == 0 && ps.ACMAC != ([6]byte{}) {
			// A BRAS may still hold the session of a previous run that
			// died without PADT: release it before asking for a new one,
			// to the AC and on the VLAN the session lived on (the
			// configured VLAN for records that predate the vlan line).
			vlan := c.cfg.VLAN
			if ps.VLANKnown {
				vlan = ps.VLAN
			}
			d := Discovery{Code: CodePADT, SessionID: ps.SessionID, Tags: []Tag{{TagGenericError, []byte("stale session")}}}
			c.write(d.Append(appendEthernet(c.buf[:0], ps.ACMAC, c.mac, vlan, c.cfg.VLANPrio, hdr.EtherTypePPPoEDisc)))
			c.st.Counters.StalePADTSent++
			c.logf("pppoe: sent PADT for stale session %#04x to %x on vlan %d", ps.SessionID, ps.ACMAC, vlan)
		}
		removeState(c.cfg.StatePath)
	}
	c.startDiscovery(now)
}

func (c *Client) jitter(d time.Duration) time.Duration {
	// ±25 %
	q := int64(d) / 4
	if q <= 0 {
		return d
	}
	return d - time.Duration(q) + time.Duration(c.cfg.Rand()%uint64(2*q+1))
}

func (c *Client) startDiscovery(now time.Time) {
	c.st.State = StateDiscovery
	c.offers, c.offerWait = c.offers[:0], time.Time{}
	c.padiTimeout = c.cfg.PADITimeout
	c.padiRound, c.padoIgnored = 0, 0
	if c.cfg.HostUniq {
		c.hostUniq = binary.BigEndian.AppendUint64(nil, c.cfg.Rand())
	}
	c.sendPADI(now)
}

func (c *Client) baseTags() []Tag {
	tags := []Tag{{TagServiceName, []byte(c.cfg.ServiceName)}}
	if c.hostUniq != nil {
		tags = append(tags, Tag{TagHostUniq, c.hostUniq})
	}
	if c.cfg.MTU > mruPPPoE {
		tags = append(tags, Tag{TagPPPMaxPayload, []byte{byte(c.cfg.MTU >> 8), byte(c.cfg.MTU)}})
	}
	return tags
}

func (c *Client) sendPADI(now time.Time) {
	c.sendDiscovery(Broadcast, CodePADI, 0, c.baseTags())
	c.st.Counters.PADISent++
	c.padiRound++
	wait := c.jitter(c.padiTimeout)
	c.logRepeat(logPADI, "pppoe: discovery: PADI %d on %s, waiting %v for a PADO", c.padiRound, c.where(), wait.Round(time.Millisecond))
	c.timer = now.Add(wait)
	c.padiTimeout = min(2*c.padiTimeout, c.cfg.MaxPADITimeout)
}

func (c *Client) sendPADR(now time.Time) {
	tags := c.baseTags()
	if c.chosen.cookie != nil {
		tags = append(tags, Tag{TagACCookie, c.chosen.cookie})
	}
	if c.chosen.relay != nil {
		tags = append(tags, Tag{TagRelaySessionID, c.chosen.relay})
	}
	c.sendDiscovery(c.chosen.mac, CodePADR, 0, tags)
	c.st.Counters.PADRSent++
	c.padrTries++
	c.timer = now.Add(c.jitter(c.cfg.PADITimeout << (c.padrTries - 1)))
}

// choose picks among the collected PADOs: an AC that echoed
// PPP-Max-Payload when RFC 4638 is wanted, else the first to answer;
// ACs refused for wanting PAP (refused) only when no other offered.
func (c *Client) choose(now time.Time) {
	best := -1
	for i, o := range c.offers {
		switch {
		case c.refusedPAP(o.mac):
		case best < 0:
			best = i
		case c.cfg.MTU > mruPPPoE && o.maxPayload > mruPPPoE && c.offers[best].maxPayload <= mruPPPoE:
			best = i
		}
	}
	if best < 0 {
		best = 0
	}
	c.chosen = c.offers[best]
	c.st.ACName, c.st.ACMAC = c.chosen.acName, c.chosen.mac
	c.logf("pppoe: discovery: PADO from %q (%x) after %d PADI (%d offers); sending PADR", c.chosen.acName, c.chosen.mac, c.padiRound, len(c.offers))
	c.st.State = StateRequest
	c.padrTries = 0
	c.sendPADR(now)
}

// refusedPAP reports whether mac is among the ACs refused for wanting
// PAP.
func (c *Client) refusedPAP(mac [6]byte) bool {
	for _, m := range c.refused[:min(c.refusedN, len(c.refused))] {
		if m == mac {
			return true
		}
	}
	return false
}

// papOnlyAC reports whether the AC id is known to do only PAP.
func (c *Client) papOnlyAC(id acID) bool {
	for _, a := range c.papACs[:min(c.papACsN, len(c.papACs))] {
		if a == id {
			return true
		}
	}
	return false
}

// notePAP records what the ending link learned about its AC's PAP
// (link.papAnswered): refused, or known to do only PAP.
func (c *Client) notePAP() {
	l := c.link
	switch {
	case l.papRefused:
		c.st.Counters.PAPRefused++
		c.refused[c.refusedN%len(c.refused)] = c.chosen.mac
		c.refusedN++
	case l.papOnly:
		if id := (acID{c.chosen.mac, c.chosen.acName}); !c.papOnlyAC(id) {
			c.papACs[c.papACsN%len(c.papACs)] = id
			c.papACsN++
			c.logf("pppoe: %s (%x) cannot do CHAP: PAP, which sends the password in clear, on the next attempt", c.chosen.acName, c.chosen.mac)
		}
	}
}

func (cc *clientCore) next() time.Time {
	c := (*Client)(cc)
	t := c.timer
	if r := c.tx.next(); !r.IsZero() && (t.IsZero() || r.Before(t)) {
		t = r
	}
	if c.link != nil {
		if l := c.link.next(); !l.IsZero() && (t.IsZero() || l.Before(t)) {
			t = l
		}
	}
	return t
}

func (cc *clientCore) tick(now time.Time) {
	c := (*Client)(cc)
	c.now = now
	c.tx.flush(now) // frames waiting go out before any the timers make
	if c.link != nil {
		c.link.tick(now)
	}
	if !due(c.timer, now) {
		return
	}
	c.timer = time.Time{}
	switch c.st.State {
	case StateDiscovery:
		if len(c.offers) > 0 {
			c.choose(now)
			return
		}
		if c.padiRound >= 3 {
			c.logRepeat(logNoPADO, "pppoe: no PADO after %d PADI on %s: %s", c.padiRound, c.where(), c.noPADOHint())
		}
		c.sendPADI(now)
	case StateRequest:
		if c.padrTries >= 3 {
			c.st.LastError = fmt.Sprintf("no PADS from %s (%x)", c.chosen.acName, c.chosen.mac)
			c.logRepeat(logNoPADS, "pppoe: %s after %d PADR: it offered but does not answer; check pppoe.service and pppoe.ac_name, or another AC answers: starting over", c.st.LastError, c.padrTries)
			c.startDiscovery(now)
			return
		}
		c.sendPADR(now)
	case StateHoldoff:
		c.st.Counters.Reconnects++
		c.startDiscovery(now)
	case StateClosing:
		// Terminate-Ack did not come: end with PADT anyway.
		c.endSession(now, errShutdown.Error(), false, true)
	}
}

func (cc *clientCore) input(b []byte, now time.Time) {
	c := (*Client)(cc)
	c.now = now
	f, err := ParseFrame(b)
	if err != nil {
		c.st.Counters.BadFrames++
		return
	}
	if f.Dst != c.mac && (f.EtherType != hdr.EtherTypePPPoEDisc || f.Dst != Broadcast) || f.VLAN != c.cfg.VLAN {
		c.st.Counters.OtherFrames++
		return
	}
	if f.EtherType == hdr.EtherTypePPPoESess {
		if c.link == nil || f.SessionID != c.st.SessionID || f.Src != c.chosen.mac || f.Code != 0 || len(f.Payload) < 2 {
			c.st.Counters.OtherFrames++
			return
		}
		c.link.input(now, be16(f.Payload), f.Payload[2:])
		c.syncState()
		c.noteIPv6()
		return
	}
	d, err := ParseDiscovery(f.PPPoE)
	if err != nil {
		c.st.Counters.BadFrames++
		return
	}
	switch d.Code {
	case CodePADO:
		c.st.Counters.PADOReceived++
		c.handlePADO(&f, &d, now)
	case CodePADS:
		c.handlePADS(&f, &d, now)
	case CodePADT:
		c.handlePADT(&f, &d, now)
	default:
		c.st.Counters.OtherFrames++
	}
}

func (c *Client) hostUniqOK(d *Discovery) bool {
	if c.hostUniq == nil {
		return true
	}
	v, ok := d.Tag(TagHostUniq)
	return ok && bytes.Equal(v, c.hostUniq)
}

// discoveryError reports error tags and tells whether one was present.
func (c *Client) discoveryError(d *Discovery, from string) bool {
	for _, t := range d.Tags {
		switch t.Type {
		case TagServiceNameError:
			c.st.Counters.ServiceNameErrors++
			c.setError("%s: Service-Name-Error %q: the AC does not offer the service asked for: check pppoe.service (absent: any)", from, printable(t.Value))
			return true
		case TagACSystemError:
			c.st.Counters.ACSystemErrors++
			c.setError("%s: AC-System-Error %q: the AC cannot take a session now (overloaded or out of resources)", from, printable(t.Value))
			return true
		case TagGenericError:
			c.st.Counters.GenericErrors++
			c.setError("%s: Generic-Error %q", from, printable(t.Value))
			return true
		}
	}
	return false
}

func (c *Client) handlePADO(f *Frame, d *Discovery, now time.Time) {
	if c.st.State != StateDiscovery || d.SessionID != 0 || f.Dst != c.mac || !c.hostUniqOK(d) {
		c.st.Counters.OtherFrames++
		return
	}
	name, ok := d.Tag(TagACName)
	if !ok {
		c.st.Counters.BadFrames++
		return
	}
	if c.discoveryError(d, "PADO from "+printable(name)) {
		return
	}
	if c.cfg.ACName != "" && string(name) != c.cfg.ACName {
		c.st.Counters.OtherFrames++
		c.padoIgnored++
		return
	}
	if c.cfg.ServiceName != "" {
		found := false
		for _, t := range d.Tags {
			found = found || t.Type == TagServiceName && string(t.Value) == c.cfg.ServiceName
		}
		if !found {
			c.st.Counters.OtherFrames++
			c.padoIgnored++
			return
		}
	}
	if len(c.offers) >= maxOffers {
		c.st.Counters.OffersDropped++
		return
	}
	o := offer{mac: f.Src, acName: string(name)}
	if v, ok := d.Tag(TagACCookie); ok {
		o.cookie = append([]byte{}, v...)
	}
	if v, ok := d.Tag(TagRelaySessionID); ok {
		o.relay = append([]byte{}, v...)
	}
	if v, ok := d.Tag(TagPPPMaxPayload); ok && len(v) == 2 {
		o.maxPayload = int(be16(v))
	}
	c.offers = append(c.offers, o)
	if len(c.offers) == 1 {
		c.offerWait = now.Add(c.cfg.PADOWait)
		c.timer = c.offerWait
		if c.cfg.PADOWait <= 0 {
			c.choose(now)
		}
	}
}

func (c *Client) handlePADS(f *Frame, d *Discovery, now time.Time) {
	if c.st.State != StateRequest || f.Src != c.chosen.mac || f.Dst != c.mac || !c.hostUniqOK(d) {
		c.st.Counters.OtherFrames++
		return
	}
	c.st.Counters.PADSReceived++
	if c.discoveryError(d, "PADS from "+c.chosen.acName) || d.SessionID == 0 {
		if d.SessionID == 0 && c.st.LastError == "" {
			c.setError("PADS from %s without session id", c.chosen.acName)
		}
		c.holdoff(now, c.st.LastError, false)
		return
	}
	mru := mruPPPoE
	c.st.MaxPayload = false
	if v, ok := d.Tag(TagPPPMaxPayload); ok && len(v) == 2 && c.cfg.MTU > mruPPPoE && int(be16(v)) > mruPPPoE {
		mru = min(c.cfg.MTU, int(be16(v)))
		c.st.MaxPayload = true
	}
	c.st.SessionID = d.SessionID
	c.timer = time.Time{}
	if c.cfg.StatePath != "" {
		if err := saveState(c.cfg.StatePath, persisted{SessionID: d.SessionID, ACMAC: f.Src, LocalMAC: c.mac, VLAN: c.cfg.VLAN, VLANKnown: true}); err != nil {
			c.logf("pppoe: saving session state: %v", err)
		}
	}
	c.lcfg.mru = mru
	c.lcfg.papAC = c.papOnlyAC(acID{c.chosen.mac, c.chosen.acName})
	c.link = newLink(&c.lcfg, c, now)
	c.st.State = StateLCP
	c.logf("pppoe: discovery: PADS: session %#04x with %s (%x); negotiating LCP", d.SessionID, c.chosen.acName, f.Src)
	c.ipv6Logged = ipv6Unknown
	c.link.start()
	c.syncState()
}

func (c *Client) handlePADT(f *Frame, d *Discovery, now time.Time) {
	if c.link == nil || f.Src != c.chosen.mac || d.SessionID != c.st.SessionID || f.Dst != c.mac {
		c.st.Counters.PADTIgnored++
		return
	}
	c.st.Counters.PADTReceived++
	msg := "PADT from AC"
	if c.discoveryError(d, "PADT") {
		msg = c.st.LastError
	}
	switch l := c.link; {
	case l.papNakOpen:
		msg = l.papAnswered("it sent PADT after our Nak for CHAP")
		c.setError("%s", msg)
	case l.papOnly || l.papRefused:
		// The link was closing for that reason (papAnswered).
		msg = l.lcp.reason
		c.setError("%s", msg)
	}
	c.notePAP()
	// After an authentication failure the link is closing (Terminate-
	// Request sent) and the AC may end the session with PADT before the
	// Terminate-Ack: that is the same failure, and its backoff
	// (AuthFailDelay) holds, whichever of the two arrives first.
	authFail := c.link.authFailed
	c.link.abort()
	c.endSession(now, msg, authFail, false)
}

// syncState maps the link's phase onto the client state.
func (c *Client) syncState() {
	if c.link == nil || c.st.State == StateClosing {
		return
	}
	switch c.link.phase {
	case phaseEstablish:
		c.st.State = StateLCP
	case phaseAuth:
		if c.st.State != StateAuth && c.link.authProto == pppPAP {
			how := "insists on PAP"
			if c.lcfg.papAC {
				how = "can only do PAP"
			}
			c.logf("pppoe: warning: %s (%x) %s: PAP sends the password in clear", c.chosen.acName, c.chosen.mac, how)
		}
		c.st.State = StateAuth
	case phaseNetwork:
		if c.st.State != StateUp {
			c.st.State = StateNetwork
		}
	}
}

// linkUp implements linkOwner: IPCP opened.
func (c *Client) linkUp() {
	l := c.link
	c.st.State = StateUp
	c.st.LocalAddr, c.st.PeerAddr, c.st.DNS = l.ourAddr, l.hisAddr, l.dns
	c.st.UpSince = l.now
	c.st.AuthFailures = 0
	c.failStreak = 0
	c.st.Counters.SessionsUp++
	dns := "none"
	if l.dns[0] != 0 || l.dns[1] != 0 {
		dns = ip4(l.dns[0]) + " " + ip4(l.dns[1])
	}
	c.logf("pppoe: IPCP up: session %#04x local %s peer %s DNS %s mtu %d", c.st.SessionID, ip4(l.ourAddr), ip4(l.hisAddr), dns, l.mtu())
	c.limits = [numLogKinds]logLimit{} // a later outage logs from the start
	c.publishSession()
	c.noteIPv6()
}

// linkDown implements linkOwner: IPCP left Opened, the dataplane must
// stop using the session at once.
func (c *Client) linkDown() {
	if c.sess.Swap(nil) != nil && c.publish != nil {
		c.publish(nil)
	}
	if c.st.State == StateUp {
		c.st.State = StateNetwork
	}
}

func (c *Client) linkChanged() {
	if c.link.probeFailed && c.st.MaxPayload { // once: linkChanged also reports IPv6CP
		c.st.MaxPayload = false
		c.setError("RFC 4638: no reply to %d-byte echo, MTU stays 1492", min(c.link.ourMRU, c.link.peerMRU()))
	}
	if c.link.isUp {
		c.publishSession()
	} else {
		c.st.MTU = c.link.mtu()
	}
	c.noteIPv6()
}

// noteIPv6 logs IPv6CP's outcome: up (with the interface identifiers),
// down, or, once per session, that the AC did not open it.
func (c *Client) noteIPv6() {
	l := c.link
	if !c.cfg.IPv6 || l == nil {
		return
	}
	switch {
	case l.ipv6Up && c.ipv6Logged != ipv6LoggedUp:
		c.ipv6Logged = ipv6LoggedUp
		c.logf("pppoe: IPv6CP up: local interface id %x peer %x", l.ourIfID, l.hisIfID)
	case !l.ipv6Up && c.ipv6Logged == ipv6LoggedUp && l.isUp:
		c.ipv6Logged = ipv6Unknown
		c.logf("pppoe: IPv6CP down: the session carries IPv4 only now")
	case !l.ipv6Up && c.ipv6Logged == ipv6Unknown && l.isUp && (l.ipv6cp.state == stStopped || l.ipv6cp.state == stClosed):
		c.ipv6Logged = ipv6LoggedRefused
		why := l.ipv6cp.reason
		if why == "" {
			why = "refused"
		}
		c.logf("pppoe: IPv6CP not opened (%s): the session carries IPv4 only; check that the ISP gives this line IPv6", why)
	}
}

func (c *Client) publishSession() {
	l := c.link
	c.st.MTU = l.mtu()
	c.st.LocalIfID, c.st.PeerIfID = l.ourIfID, l.hisIfID
	c.gen++
	s := &hdr.Session{ID: c.st.SessionID, LocalMAC: c.mac, PeerMAC: c.chosen.mac, VLAN: c.cfg.VLAN, VLANPrio: c.cfg.VLANPrio,
		LocalAddr: l.ourAddr, PeerAddr: l.hisAddr, DNS: l.dns, MTU: l.mtu(), Gen: c.gen,
		IPv6: l.ipv6Up, LocalIfID: l.ourIfID, PeerIfID: l.hisIfID}
	c.sess.Store(s)
	if c.publish != nil {
		c.publish(s)
	}
}

func (c *Client) authResult(ok bool, _ string, msg string) {
	if ok {
		switch {
		case c.link.authProto == pppPAP:
			c.st.AuthProto = AuthPAP
		case c.link.authProto == pppCHAP && c.link.authAlg == chapMSv2:
			c.st.AuthProto = AuthMSCHAPv2
		case c.link.authProto == pppCHAP:
			c.st.AuthProto = AuthCHAPMD5
		}
		c.logf("pppoe: authenticated as %q with %v; negotiating IPCP", c.cfg.Username, c.st.AuthProto)
		if c.link.authProto == pppCHAP && c.cfg.Auth&AuthPAP != 0 && !c.lcfg.refusePAP {
			c.lcfg.refusePAP = true
			c.logf("pppoe: authenticated with CHAP: PAP is refused from now on")
		}
		return
	}
	// msg is the AC's or our own description, never the password.
	c.st.LastError = msg
	c.logRepeat(logAuthFail, "pppoe: %s (user %q): check pppoe.user and pppoe.password (Deutsche Telekom: line id, T-Online number, #0001@t-online.de)", msg, c.cfg.Username)
}

func (c *Client) deliver(proto uint16, b []byte) {
	if proto == pppIPv4 && c.cfg.Deliver != nil {
		c.cfg.Deliver(b)
	}
}

// linkFinished implements linkOwner: LCP is down for good.
func (c *Client) linkFinished(reason string, authFail bool) {
	c.notePAP()
	if reason != "" && !authFail && c.st.State != StateClosing {
		c.st.LastError = reason // holdoff's line logs it
	}
	if reason == "peer not responding to LCP echo" {
		c.st.Counters.EchoTimeouts++
	}
	c.endSession(c.link.now, reason, authFail, true)
}

// endSession tears the session down, optionally sending PADT, and moves
// to holdoff (or finishes a shutdown).
func (c *Client) endSession(now time.Time, reason string, authFail, padt bool) {
	if padt && c.st.SessionID != 0 {
		c.sendDiscovery(c.chosen.mac, CodePADT, c.st.SessionID, nil)
		c.st.Counters.PADTSent++
	}
	if c.cfg.StatePath != "" {
		removeState(c.cfg.StatePath)
	}
	if c.link != nil {
		c.st.Counters.EchoSent += c.link.counters.echoSent
		c.st.Counters.EchoReplies += c.link.counters.echoReplies
		c.st.Counters.ProtocolRejectsSent += c.link.counters.protoRejects
		c.st.Counters.CodeRejectsSent += c.link.counters.codeRejects
		c.st.Counters.BadAddresses += c.link.counters.badAddrs
		c.st.EchoRTT = c.link.rtt
	}
	c.link = nil
	c.st.SessionID = 0
	c.st.LocalAddr, c.st.PeerAddr, c.st.DNS = 0, 0, [2]uint32{}
	if c.sess.Swap(nil) != nil && c.publish != nil {
		c.publish(nil)
	}
	if c.closing {
		c.done = true
		c.st.State = StateIdle
		return
	}
	c.holdoff(now, reason, authFail)
}

// holdoff waits before the next discovery: AuthFailDelay doubling after
// authentication failures, HoldoffDelay doubling after other failures,
// and logs why (reason) and when.
func (c *Client) holdoff(now time.Time, reason string, authFail bool) {
	var d time.Duration
	if authFail {
		c.st.AuthFailures++
		c.st.Counters.AuthFailures++
		d = backoff(c.cfg.AuthFailDelay, c.cfg.MaxAuthFailDelay, c.st.AuthFailures)
	} else {
		c.failStreak++
		d = backoff(c.cfg.HoldoffDelay, c.cfg.MaxHoldoff, c.failStreak)
	}
	c.st.State = StateHoldoff
	wait := c.jitter(d)
	c.timer = now.Add(wait)
	if authFail {
		c.logRepeat(logRetry, "pppoe: login refused %d times in a row: next attempt in %v (the wait doubles up to %v, so a wrong password does not hammer the AC)",
			c.st.AuthFailures, wait.Round(time.Second), c.cfg.MaxAuthFailDelay)
		return
	}
	if reason == "" {
		reason = "session ended"
	}
	c.logRepeat(logRetry, "pppoe: %s%s: next attempt in %v (%d in a row)", reason, endHint(reason), wait.Round(time.Millisecond), c.failStreak)
}

// endHint says what to check for the reasons a session ends with that
// point somewhere ("" for the others).
func endHint(reason string) string {
	switch {
	case strings.HasPrefix(reason, "IPCP"):
		return " (authenticated, but the AC gave no IPv4 address: ask the ISP whether the line is provisioned)"
	case reason == "negotiation timed out":
		return " (LCP: the AC stopped answering after PADS: check pppoe.mtu and the line)"
	case reason == "peer not responding to LCP echo":
		return " (the line or the AC went away: check the cable and the modem)"
	}
	return ""
}

func backoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

func (cc *clientCore) shutdown(now time.Time) {
	c := (*Client)(cc)
	c.now = now
	c.closing = true
	if c.link == nil {
		c.done = true
		c.st.State = StateIdle
		return
	}
	c.st.State = StateClosing
	c.timer = now.Add(c.cfg.TerminateTimeout)
	c.link.close(errShutdown.Error())
}

// finished: the session is over and no frame (its PADT) waits for a retry.
func (cc *clientCore) finished() bool { return cc.done && !cc.tx.pending() }
func (cc *clientCore) lock()          { cc.mu.Lock() }
func (cc *clientCore) unlock()        { cc.mu.Unlock() }
func (cc *clientCore) err() error     { return cc.tx.err }

func ip4(a uint32) string {
	return fmt.Sprintf("%d.%d.%d.%d", a>>24, a>>16&0xff, a>>8&0xff, a&0xff)
}
