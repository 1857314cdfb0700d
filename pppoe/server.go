package pppoe

import (
	"context"
	"errors"
	"sync"
	"time"
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
	// Auth is the set of protocols offered (default CHAP-MD5, then PAP
	// when the client Naks CHAP and Auth includes PAP).
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
	// Deliver receives decapsulated IPv4 from clients; ip is valid only
	// during the call.
	Deliver func(s SessionInfo, ip []byte)
	Clock   Clock
	Rand    func() uint64
	Logf    func(format string, args ...any)
}

// Server is a PPPoE access concentrator.
type Server struct {
	cfg   ServerConfig
	conn  Conn
	clock Clock

	mu       sync.Mutex
	counters ServerCounters
}

// NewServer returns an access concentrator serving on conn.
func NewServer(cfg ServerConfig, conn Conn) *Server {
	s := &Server{cfg: cfg, conn: conn, clock: cfg.Clock}
	if s.clock == nil {
		s.clock = SystemClock
	}
	return s
}

// Run serves until ctx is done, then terminates every session (LCP
// Terminate-Request + PADT) and returns nil.
func (s *Server) Run(ctx context.Context) error {
	// TODO: implemented in the next commit.
	<-ctx.Done()
	return nil
}

// Sessions lists the current sessions.
func (s *Server) Sessions() []SessionInfo { return nil }

// Counters returns the server's counters.
func (s *Server) Counters() ServerCounters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters
}

// SendIPv4 sends ip to the client session whose assigned address is the
// packet's destination.
func (s *Server) SendIPv4(ip []byte) error { return ErrNotUp }

// Hangup ends session id from the AC side: LCP Terminate-Request, then
// PADT (the client is expected to reconnect).
func (s *Server) Hangup(id uint16) error { return ErrNotUp }
