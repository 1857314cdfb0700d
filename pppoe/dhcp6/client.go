package dhcp6

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// ClientConfig configures a Client. Zero values select the defaults noted
// on each field.
type ClientConfig struct {
	// MAC is the WAN MAC address; the client's DUID is its DUID-LL.
	MAC [6]byte
	// IAID identifies the IA_PD (default 1).
	IAID uint32
	// PrefixLen, if 1..128, is sent as a prefix-length hint (::/PrefixLen)
	// in Solicit. ISPs delegate /48, /56 or /64.
	PrefixLen int
	// NoRapidCommit leaves RAPID_COMMIT out of Solicit (RFC 8415 18.2.1),
	// forcing the four-message exchange.
	NoRapidCommit bool
	// Send transmits a DHCPv6 message to AllDHCPRelayAgentsAndServers port
	// ServerPort; the caller frames it (EncodeUDP6). msg is the caller's to
	// keep. Send must not call back into the Client.
	Send func(msg []byte)
	// OnLease is called when a lease is obtained, renewed with changes
	// (any field but Obtained), or lost (l.Valid == 0). It must not call
	// Start, Stop, Input or Tick; Lease, Stats and Next are fine.
	OnLease func(l Lease)
	// Logf, if set, receives state changes (never per message).
	Logf func(format string, args ...any)
	// Rand draws transaction ids and retransmission jitter; tests pass a
	// seeded one. Default: a PCG seeded from the runtime's random source.
	Rand *rand.Rand
}

// Lease is a delegated prefix. Durations run from Obtained, the time of
// the Reply that granted or last renewed it; an infinite lifetime is
// Infinite.
type Lease struct {
	Prefix           hdr.Addr6 // bits past Bits are zero
	Bits             int
	Preferred, Valid time.Duration
	// T1 and T2 are the effective renew and rebind times: the server's,
	// or 0.5 and 0.8 of the shortest preferred lifetime in the IA_PD when
	// it sent 0; T1 is at least 1s and T2 at least T1.
	T1, T2   time.Duration
	DNS      []hdr.Addr6
	ServerID []byte // DUID of the server that granted or last renewed it
	Obtained time.Time
}

func (l Lease) clone() Lease {
	l.DNS = slices.Clone(l.DNS)
	l.ServerID = slices.Clone(l.ServerID)
	return l
}

// same reports whether l and o differ only in Obtained.
func (l *Lease) same(o *Lease) bool {
	return l.Prefix == o.Prefix && l.Bits == o.Bits && l.Preferred == o.Preferred &&
		l.Valid == o.Valid && l.T1 == o.T1 && l.T2 == o.T2 &&
		slices.Equal(l.DNS, o.DNS) && bytes.Equal(l.ServerID, o.ServerID)
}

func (l Lease) String() string {
	return fmt.Sprintf("%s/%d preferred %v valid %v T1 %v T2 %v", addrString(l.Prefix), l.Bits, l.Preferred, l.Valid, l.T1, l.T2)
}

// IgnoreReason is why the client ignored a received message.
type IgnoreReason uint8

// Ignore reasons.
const (
	IgnoreBad      IgnoreReason = iota // does not parse, or T1 > T2 in the IA_PD
	IgnoreType                         // not an Advertise or a Reply
	IgnoreState                        // not expected now (idle, bound, holding off; Advertise after Solicit; Reply to Solicit without rapid commit)
	IgnoreXID                          // not the current transaction id
	IgnoreClientID                     // CLIENTID missing or not ours
	IgnoreServerID                     // SERVERID missing, or not the server a Request or Renew went to
	IgnoreNoIAPD                       // no IA_PD with our IAID, or no usable prefix in it
	IgnoreStatus                       // a failure status the client waits out (e.g. NoPrefixAvail in an Advertise)

	NumIgnoreReasons
)

var ignoreNames = [NumIgnoreReasons]string{"bad", "type", "state", "xid", "client-id", "server-id", "no-ia-pd", "status"}

func (r IgnoreReason) String() string {
	if r < NumIgnoreReasons {
		return ignoreNames[r]
	}
	return fmt.Sprintf("IgnoreReason(%d)", uint8(r))
}

// ClientStats counts the client's work.
type ClientStats struct {
	Sent        [NumMsgTypes]uint64 // by message type, retransmissions included
	Received    uint64              // messages passed to Input
	Ignored     [NumIgnoreReasons]uint64
	Leases      uint64 // leases obtained through Solicit/Request (or rapid commit)
	Renewals    uint64 // successful Renew or Rebind exchanges
	Expirations uint64 // leases lost at the end of their valid lifetime
	Withdrawals uint64 // leases the server withdrew (valid lifetime 0 in a Reply)
}

type state uint8

const (
	stIdle state = iota
	stSoliciting
	stRequesting
	stBound
	stRenewing
	stRebinding
	stHoldoff // after NoPrefixAvail in a Reply: wait, then Solicit
)

var stateNames = [...]string{"idle", "soliciting", "requesting", "bound", "renewing", "rebinding", "holding off"}

func (s state) String() string { return stateNames[s] }

// Retransmission parameters (RFC 8415 7.6, 15).
type rtParams struct {
	irt, mrt time.Duration
	mrc      int // 0: unlimited
}

var (
	solParams = rtParams{1 * time.Second, 3600 * time.Second, 0}
	reqParams = rtParams{1 * time.Second, 30 * time.Second, 10}
	renParams = rtParams{10 * time.Second, 600 * time.Second, 0}
	rebParams = rtParams{10 * time.Second, 600 * time.Second, 0}
)

const (
	// After NoPrefixAvail in a Reply to Request the client waits
	// holdoffMin, doubling per consecutive failure up to holdoffMax,
	// before soliciting again.
	holdoffMin = 10 * time.Second
	holdoffMax = 600 * time.Second
	minT1      = time.Second
	// maxFires bounds the events one Tick handles (each makes progress;
	// a late Tick past T1, T2 and expiry needs three).
	maxFires = 16
)

// A Client is a DHCPv6 prefix-delegation client state machine. It is not
// safe for concurrent use; its callbacks run synchronously inside Start,
// Stop, Input and Tick.
//
// Behaviour (RFC 8415 15, 18.2), and where it simplifies:
//   - The first Solicit is sent by Start at once, without the RFC's random
//     initial delay of up to SOL_MAX_DELAY (the router starts the client
//     when IPv6CP opens, which already desynchronises it).
//   - Retransmissions follow RFC 8415 15 with RAND uniform in ±0.1 (the
//     first Solicit timeout strictly above IRT): Solicit 1s up to 3600s,
//     Request 1s up to 30s for 10 transmissions then back to Solicit, Renew
//     10s up to 600s until T2, Rebind 10s up to 600s until the lease
//     expires.
//   - The first Advertise carrying a usable prefix is taken at once (no
//     waiting out the first retransmission timeout to compare server
//     preferences). An Advertise with a failure status is ignored.
//   - A Reply to a Request with NoPrefixAvail (or no usable prefix) makes
//     the client wait 10s, doubling up to 600s, then Solicit again.
//   - A Reply to Renew or Rebind with NoBinding makes it Request the same
//     prefix from the replying server.
//   - Release is sent once by Stop, not retransmitted.
//   - Start keeps a lease already held: it solicits with that prefix as a
//     hint and keeps it until its valid lifetime ends.
//   - Reconfigure is not supported (ignored).
type Client struct {
	// solMaxRT: the SOL_MAX_RT a server set (0: the default 3600 s).
	solMaxRT time.Duration
	cfg      ClientConfig
	duid     []byte
	rnd      *rand.Rand
	st       state

	// The current exchange.
	xid    uint32
	begun  time.Time     // its first transmission, for ELAPSED_TIME
	p      rtParams      // its retransmission parameters
	rt     time.Duration // current retransmission timeout
	rc     int           // transmissions so far
	retx   time.Time     // next retransmission; in stHoldoff, the next Solicit
	server []byte        // SERVERID for Request and Renew
	want   []Prefix      // IAPREFIXes sent in the IA_PD (lifetimes 0)

	holdoff time.Duration // last holdoff, 0 after a success

	have           bool
	lease          Lease
	t1, t2, expiry time.Time

	stats ClientStats
}

// NewClient returns an idle client.
func NewClient(cfg ClientConfig) *Client {
	if cfg.IAID == 0 {
		cfg.IAID = 1
	}
	if cfg.PrefixLen < 1 || cfg.PrefixLen > 128 {
		cfg.PrefixLen = 0
	}
	if cfg.Send == nil {
		cfg.Send = func([]byte) {}
	}
	if cfg.OnLease == nil {
		cfg.OnLease = func(Lease) {}
	}
	c := &Client{cfg: cfg, duid: DUIDLL(cfg.MAC), rnd: cfg.Rand}
	if c.rnd == nil {
		c.rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return c
}

// DUID returns the client's DUID (DUID-LL of the configured MAC).
func (c *Client) DUID() []byte { return slices.Clone(c.duid) }

func (c *Client) logf(format string, args ...any) {
	if c.cfg.Logf != nil {
		c.cfg.Logf("dhcp6: "+format, args...)
	}
}

// Start (re)starts the client with a Solicit, sent at once. A lease
// already held is kept (and hinted in the Solicit) until a Reply replaces
// it or its valid lifetime ends.
func (c *Client) Start(now time.Time) {
	c.holdoff = 0
	c.solicit(now)
}

// Stop sends a Release for a lease held (once, no retransmission), reports
// the lease lost through OnLease and leaves the client idle.
func (c *Client) Stop(now time.Time) {
	had := c.have
	var lost Lease
	if had {
		rel := Message{
			Type: MsgRelease, XID: c.newXID(), ClientID: c.duid, ServerID: c.lease.ServerID,
			HasElapsed: true,
			IAPD:       []IAPD{{IAID: c.cfg.IAID, Prefixes: []Prefix{{Prefix: c.lease.Prefix, Bits: c.lease.Bits}}}},
		}
		c.send(&rel)
		lost = c.drop(now)
		c.logf("released %s/%d", addrString(lost.Prefix), lost.Bits)
	}
	c.st = stIdle
	c.server, c.want = nil, nil
	if had {
		c.cfg.OnLease(lost)
	}
}

// Lease returns the lease held, if any.
func (c *Client) Lease() (Lease, bool) {
	if !c.have {
		return Lease{}, false
	}
	return c.lease.clone(), true
}

// Stats returns the counters.
func (c *Client) Stats() ClientStats { return c.stats }

// Next returns when Tick next needs to run; zero when idle.
func (c *Client) Next() time.Time {
	var n time.Time
	switch c.st {
	case stIdle:
		return time.Time{}
	case stBound:
		n = c.t1 // t1 <= t2
	case stRenewing:
		n = minTime(c.retx, c.t2)
	default:
		n = c.retx
	}
	if c.have && c.expiry.Before(n) {
		n = c.expiry
	}
	return n
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Tick runs the timers due at now: retransmissions, T1, T2, expiry. Call
// it at or after Next; calling it early does nothing.
func (c *Client) Tick(now time.Time) {
	for range maxFires {
		if c.st == stIdle || now.Before(c.Next()) {
			return
		}
		c.fire(now)
	}
}

func (c *Client) fire(now time.Time) {
	if c.have && !now.Before(c.expiry) {
		l := c.drop(now)
		c.stats.Expirations++
		c.logf("lease %s/%d expired", addrString(l.Prefix), l.Bits)
		if c.st == stBound || c.st == stRenewing || c.st == stRebinding {
			c.solicit(now) // before OnLease, so the callback sees the new state
		}
		c.cfg.OnLease(l)
		return
	}
	switch c.st {
	case stSoliciting, stRebinding:
		c.transmit(now)
	case stRequesting:
		if c.rc >= c.p.mrc {
			c.logf("no reply to %d Requests; soliciting", c.rc)
			c.solicit(now)
			return
		}
		c.transmit(now)
	case stBound:
		if !now.Before(c.t2) {
			c.rebind(now)
		} else {
			c.renew(now)
		}
	case stRenewing:
		if !now.Before(c.t2) {
			c.rebind(now)
		} else {
			c.transmit(now)
		}
	case stHoldoff:
		c.solicit(now)
	}
}

func (c *Client) newXID() uint32 { return c.rnd.Uint32() & 0xffffff }

// begin starts a new exchange in state st and sends its first message.
func (c *Client) begin(now time.Time, st state, p rtParams) {
	c.st, c.p = st, p
	c.xid = c.newXID()
	c.begun = now
	c.rc, c.rt = 0, 0
	c.transmit(now)
}

func (c *Client) solicit(now time.Time) {
	c.server = nil
	c.want = nil
	switch {
	case c.have:
		c.want = []Prefix{{Prefix: c.lease.Prefix, Bits: c.lease.Bits}}
	case c.cfg.PrefixLen != 0:
		c.want = []Prefix{{Bits: c.cfg.PrefixLen}}
	}
	c.logf("soliciting")
	p := solParams
	if c.solMaxRT != 0 {
		p.mrt = c.solMaxRT
	}
	c.begin(now, stSoliciting, p)
}

func (c *Client) renew(now time.Time) {
	c.server = c.lease.ServerID
	c.want = []Prefix{{Prefix: c.lease.Prefix, Bits: c.lease.Bits}}
	c.logf("renewing %s/%d", addrString(c.lease.Prefix), c.lease.Bits)
	c.begin(now, stRenewing, renParams)
}

func (c *Client) rebind(now time.Time) {
	c.server = nil
	c.want = []Prefix{{Prefix: c.lease.Prefix, Bits: c.lease.Bits}}
	c.logf("rebinding %s/%d", addrString(c.lease.Prefix), c.lease.Bits)
	c.begin(now, stRebinding, rebParams)
}

func (c *Client) request(now time.Time, server []byte, want []Prefix) {
	c.server = slices.Clone(server)
	c.want = want
	c.logf("requesting from server %x", server)
	c.begin(now, stRequesting, reqParams)
}

// transmit sends the current exchange's message and sets the next
// retransmission time (RFC 8415 15).
func (c *Client) transmit(now time.Time) {
	r := (c.rnd.Float64()*2 - 1) * 0.1 // RAND in [-0.1, 0.1)
	if c.rc == 0 {
		if c.st == stSoliciting {
			r = 0.1 * (1 - c.rnd.Float64()) // (0, 0.1]: first RT strictly above IRT
		}
		c.rt = scale(c.p.irt, 1+r)
	} else {
		c.rt = scale(c.rt, 2+r)
	}
	if c.p.mrt > 0 && c.rt > c.p.mrt {
		c.rt = scale(c.p.mrt, 1+r)
	}
	c.rc++
	c.retx = now.Add(c.rt)

	m := Message{
		XID:        c.xid,
		ClientID:   c.duid,
		HasElapsed: true,
		Elapsed:    elapsed(now.Sub(c.begun)),
		ORO:        []uint16{OptDNSServers, OptSolMaxRT}, // RFC 8415 18.2: SOL_MAX_RT in every ORO
		IAPD:       []IAPD{{IAID: c.cfg.IAID, Prefixes: c.want}},
	}
	switch c.st {
	case stSoliciting:
		m.Type = MsgSolicit
		m.RapidCommit = !c.cfg.NoRapidCommit
	case stRequesting:
		m.Type, m.ServerID = MsgRequest, c.server
	case stRenewing:
		m.Type, m.ServerID = MsgRenew, c.server
	case stRebinding:
		m.Type = MsgRebind
	}
	c.send(&m)
}

func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// elapsed converts to ELAPSED_TIME: hundredths of a second, capped.
func elapsed(d time.Duration) uint16 {
	cs := d / (10 * time.Millisecond)
	switch {
	case cs < 0:
		return 0
	case cs > 0xffff:
		return 0xffff
	}
	return uint16(cs)
}

func (c *Client) send(m *Message) {
	c.stats.Sent[m.Type]++
	c.cfg.Send(m.Encode())
}

func (c *Client) ignore(r IgnoreReason) { c.stats.Ignored[r]++ }

// Input processes a DHCPv6 message received from port 547 at now.
// Messages that do not belong to the current exchange are counted by
// reason in Stats and change nothing.
func (c *Client) Input(msg []byte, now time.Time) {
	c.stats.Received++
	m, err := Parse(msg)
	switch {
	case err != nil:
		c.ignore(IgnoreBad)
	case m.Type != MsgAdvertise && m.Type != MsgReply:
		c.ignore(IgnoreType)
	case c.st == stIdle || c.st == stBound || c.st == stHoldoff:
		c.ignore(IgnoreState)
	case m.XID != c.xid:
		c.ignore(IgnoreXID)
	case !bytes.Equal(m.ClientID, c.duid):
		c.ignore(IgnoreClientID)
	case m.ServerID == nil:
		c.ignore(IgnoreServerID)
	default:
		c.setSolMaxRT(m.SolMaxRT)
		c.fromServer(&m, now)
	}
}

// fromServer handles an Advertise or Reply that Input found is for this
// exchange.
func (c *Client) fromServer(m *Message, now time.Time) {
	switch {
	case m.Type == MsgAdvertise:
		if c.st != stSoliciting {
			c.ignore(IgnoreState)
			return
		}
		c.advertise(m, now)
	case c.st == stSoliciting && (!m.RapidCommit || c.cfg.NoRapidCommit):
		c.ignore(IgnoreState)
	case (c.st == stRequesting || c.st == stRenewing) && !bytes.Equal(m.ServerID, c.server):
		c.ignore(IgnoreServerID)
	default:
		c.reply(m, now)
	}
}

// setSolMaxRT takes a server's SOL_MAX_RT (seconds, 0: none), whatever
// else its message says (RFC 8415 18.2.9), if it is within 60..86400 s
// (21.24); a Solicit under way is capped at once.
func (c *Client) setSolMaxRT(s uint32) {
	if s < 60 || s > 86400 {
		return
	}
	c.solMaxRT = time.Duration(s) * time.Second
	if c.st == stSoliciting {
		c.p.mrt = c.solMaxRT
	}
}

// usable returns the IA_PD's prefixes a lease can use: valid lifetime
// non-zero, preferred not above valid (RFC 8415 21.22), length 1..128.
func usable(ia *IAPD) []Prefix {
	var u []Prefix
	for _, p := range ia.Prefixes {
		if p.Valid != 0 && p.Preferred <= p.Valid && p.Bits >= 1 && p.Bits <= 128 {
			u = append(u, p)
		}
	}
	return u
}

func failed(s *Status) bool { return s != nil && s.Code != StatusSuccess }

// ourIAPD returns m's IA_PD for the client, counting the message ignored
// (and returning nil) if m failed or carries none.
func (c *Client) ourIAPD(m *Message) *IAPD {
	if failed(m.Status) {
		c.ignore(IgnoreStatus)
		return nil
	}
	ia := m.FindIAPD(c.cfg.IAID)
	if ia == nil {
		c.ignore(IgnoreNoIAPD)
	}
	return ia
}

func (c *Client) advertise(m *Message, now time.Time) {
	ia := c.ourIAPD(m)
	if ia == nil {
		return
	}
	if failed(ia.Status) {
		c.ignore(IgnoreStatus)
		return
	}
	u := usable(ia)
	if len(u) == 0 {
		c.ignore(IgnoreNoIAPD)
		return
	}
	for i := range u {
		u[i].Preferred, u[i].Valid = 0, 0 // RFC 8415 21.22: clients send 0
	}
	c.request(now, m.ServerID, u)
}

func (c *Client) reply(m *Message, now time.Time) {
	ia := c.ourIAPD(m)
	if ia == nil {
		return
	}
	acquiring := c.st == stSoliciting || c.st == stRequesting
	if failed(ia.Status) {
		switch {
		case ia.Status.Code == StatusNoBinding && !acquiring:
			c.request(now, m.ServerID, []Prefix{{Prefix: c.lease.Prefix, Bits: c.lease.Bits}})
		case ia.Status.Code == StatusNoPrefixAvail && acquiring:
			c.startHoldoff(now)
		default:
			c.ignore(IgnoreStatus)
		}
		return
	}
	if ia.T1 != 0 && ia.T2 != 0 && ia.T1 > ia.T2 {
		c.ignore(IgnoreBad) // RFC 8415 21.21: discard the IA_PD
		return
	}
	u := usable(ia)
	if len(u) == 0 {
		switch {
		case acquiring:
			c.startHoldoff(now)
		case c.withdrawn(ia):
			l := c.drop(now)
			c.stats.Withdrawals++
			c.logf("server withdrew %s/%d", addrString(l.Prefix), l.Bits)
			c.solicit(now)
			c.cfg.OnLease(l)
		default:
			c.ignore(IgnoreNoIAPD)
		}
		return
	}
	chosen := u[0]
	if c.have {
		for _, p := range u {
			if p.Bits == c.lease.Bits && MaskPrefix(p.Prefix, p.Bits) == c.lease.Prefix {
				chosen = p
				break
			}
		}
	}
	// T1/T2 default from the shortest preferred lifetime; deprecated
	// prefixes (preferred 0) do not count (bind falls back to the valid
	// lifetime when all are).
	var minPref time.Duration
	for _, p := range u {
		if p.Preferred != 0 && (minPref == 0 || Lifetime(p.Preferred) < minPref) {
			minPref = Lifetime(p.Preferred)
		}
	}
	c.bind(now, m, ia, chosen, minPref)
}

// withdrawn reports whether ia lists the held prefix with valid lifetime 0.
func (c *Client) withdrawn(ia *IAPD) bool {
	if !c.have {
		return false
	}
	for _, p := range ia.Prefixes {
		if p.Valid == 0 && p.Bits == c.lease.Bits && MaskPrefix(p.Prefix, p.Bits) == c.lease.Prefix {
			return true
		}
	}
	return false
}

func (c *Client) startHoldoff(now time.Time) {
	c.holdoff = min(max(2*c.holdoff, holdoffMin), holdoffMax)
	c.st = stHoldoff
	c.retx = now.Add(c.holdoff)
	c.server, c.want = nil, nil
	c.logf("no prefix available; soliciting again in %v", c.holdoff)
}

func (c *Client) bind(now time.Time, m *Message, ia *IAPD, p Prefix, minPref time.Duration) {
	l := Lease{
		Prefix:    MaskPrefix(p.Prefix, p.Bits),
		Bits:      p.Bits,
		Preferred: Lifetime(p.Preferred),
		Valid:     Lifetime(p.Valid),
		T1:        Lifetime(ia.T1),
		T2:        Lifetime(ia.T2),
		DNS:       slices.Clone(m.DNS),
		ServerID:  slices.Clone(m.ServerID),
		Obtained:  now,
	}
	// A deprecated prefix (preferred 0) is renewed by its valid
	// lifetime: a base of 0 would renew once a second.
	base := minPref
	if base == 0 {
		base = l.Valid
	}
	if ia.T1 == 0 {
		l.T1 = scale(base, 0.5)
	}
	if ia.T2 == 0 {
		l.T2 = scale(base, 0.8)
	}
	l.T1 = max(l.T1, minT1)
	l.T2 = max(l.T2, l.T1)

	changed := !c.have || !l.same(&c.lease)
	if c.st == stSoliciting || c.st == stRequesting {
		c.stats.Leases++
	} else {
		c.stats.Renewals++
	}
	c.have, c.lease = true, l
	c.t1, c.t2, c.expiry = now.Add(l.T1), now.Add(l.T2), now.Add(l.Valid)
	c.st = stBound
	c.server, c.want = nil, nil
	c.holdoff = 0
	if changed {
		c.logf("bound %v from server %x", l, l.ServerID)
		c.cfg.OnLease(l.clone())
	}
}

// drop forgets the lease held and returns it as OnLease reports a loss:
// lifetimes and T1/T2 zero, Obtained now.
func (c *Client) drop(now time.Time) Lease {
	l := c.lease
	l.Preferred, l.Valid, l.T1, l.T2 = 0, 0, 0, 0
	l.Obtained = now
	c.have, c.lease = false, Lease{}
	return l
}
