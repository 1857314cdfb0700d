package pppoe

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
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
	// Logf, when set, receives state changes (never per packet).
	Logf func(format string, args ...any)
}

// Client is a PPPoE client session (RFC 2516 discovery + PPP). It works
// purely through its Conn.
type Client struct {
	cfg     ClientConfig
	conn    Conn
	publish func(*Session)
	clock   Clock
	sess    atomic.Pointer[Session]

	mu sync.Mutex // guards everything below (Run's goroutine and accessors)
	st Status
}

// NewClient returns a client that runs over conn and calls publish with
// every new session snapshot (nil when the session goes down). publish
// is called from Run's goroutine and must not block for long.
func NewClient(cfg ClientConfig, conn Conn, publish func(*Session)) *Client {
	c := &Client{cfg: cfg, conn: conn, publish: publish}
	c.clock = cfg.Clock
	if c.clock == nil {
		c.clock = SystemClock
	}
	return c
}

// Run connects and keeps the session up until ctx is done, then sends LCP
// Terminate-Request and PADT and returns nil. Errors of the Conn are
// returned.
func (c *Client) Run(ctx context.Context) error {
	// TODO: implemented in the next commit.
	<-ctx.Done()
	return nil
}

// Session returns the current session snapshot, or nil when down.
func (c *Client) Session() *Session { return c.sess.Load() }

// Status returns a snapshot of the client's state and counters.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// SendIPv4 encapsulates ip for the current session and writes it to the
// Conn (labs/tests). It fails when the session is down.
func (c *Client) SendIPv4(ip []byte) error {
	return ErrNotUp
}
