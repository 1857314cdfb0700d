package dhcp6

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// MAC gives the server's DUID (DUID-LL).
	MAC [6]byte
	// Pool/PoolBits is the prefix delegated from, e.g. 2001:db8:100::/40;
	// bits of Pool past PoolBits must be zero.
	Pool     hdr.Addr6
	PoolBits int
	// Delegate is the length of the prefixes handed out (default 56). At
	// most 2^32 prefixes: Delegate-PoolBits <= 32.
	Delegate int
	// Preferred and Valid are the lifetimes sent (Valid default 1h,
	// Preferred default Valid); Infinite is sent as 0xffffffff.
	Preferred, Valid time.Duration
	// T1 and T2 are sent as they are; 0 leaves them to the client.
	T1, T2 time.Duration
	// DNS is sent in DNS_SERVERS to clients whose ORO asks for it.
	DNS []hdr.Addr6
	// NoRapidCommit makes the server answer a Solicit with an Advertise
	// even when it carries RAPID_COMMIT.
	NoRapidCommit bool
}

// A Server is a minimal DHCPv6 prefix-delegation server for tests and the
// lab's simulated ISP. It answers Solicit (Advertise, or Reply with rapid
// commit), Request, Renew, Rebind and Release for IA_PDs, and
// Information-request, on one link, without relays. A client (DUID and
// IAID) keeps its prefix for as long as its binding lives; bindings expire
// after the valid lifetime. Prefixes are handed out lowest free first, or
// the one the client asks for if it is free and of the delegated length.
// Handle is safe for concurrent use.
type Server struct {
	cfg  ServerConfig
	duid []byte
	size uint64 // prefixes in the pool

	mu      sync.Mutex
	byKey   map[string]*binding // DUID + IAID
	byIndex map[uint64]*binding
}

type binding struct {
	key     string
	index   uint64
	expires time.Time
}

// NewServer checks cfg and returns a server with no bindings.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Delegate == 0 {
		cfg.Delegate = 56
	}
	if cfg.Valid == 0 {
		cfg.Valid = time.Hour
	}
	if cfg.Preferred == 0 {
		cfg.Preferred = cfg.Valid
	}
	switch {
	case cfg.PoolBits < 1 || cfg.PoolBits > 128:
		return nil, fmt.Errorf("dhcp6: pool length %d not in 1..128", cfg.PoolBits)
	case cfg.Delegate < cfg.PoolBits || cfg.Delegate > 128:
		return nil, fmt.Errorf("dhcp6: delegated length %d not in %d..128", cfg.Delegate, cfg.PoolBits)
	case cfg.Delegate-cfg.PoolBits > 32:
		return nil, fmt.Errorf("dhcp6: a /%d pool of /%d prefixes is too large (at most 2^32)", cfg.PoolBits, cfg.Delegate)
	case MaskPrefix(cfg.Pool, cfg.PoolBits) != cfg.Pool:
		return nil, fmt.Errorf("dhcp6: pool %s has bits set past /%d", addrString(cfg.Pool), cfg.PoolBits)
	case cfg.Valid < 0 || cfg.Preferred < 0 || cfg.T1 < 0 || cfg.T2 < 0:
		return nil, errors.New("dhcp6: negative lifetime or timer")
	case cfg.Preferred > cfg.Valid:
		return nil, errors.New("dhcp6: preferred lifetime above valid lifetime")
	case cfg.T1 != 0 && cfg.T2 != 0 && cfg.T1 > cfg.T2:
		return nil, errors.New("dhcp6: T1 above T2")
	}
	cfg.DNS = slices.Clone(cfg.DNS)
	return &Server{
		cfg:     cfg,
		duid:    DUIDLL(cfg.MAC),
		size:    1 << (cfg.Delegate - cfg.PoolBits),
		byKey:   make(map[string]*binding),
		byIndex: make(map[uint64]*binding),
	}, nil
}

// DUID returns the server's DUID.
func (s *Server) DUID() []byte { return slices.Clone(s.duid) }

// Bindings returns the number of live bindings, as of the last Handle
// (expired ones are removed there).
func (s *Server) Bindings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}

// prefixAt returns the index-th prefix of the pool.
func (s *Server) prefixAt(i uint64) hdr.Addr6 {
	shift := uint(128 - s.cfg.Delegate)
	var hi, lo uint64
	if shift >= 64 {
		hi = i << (shift - 64)
	} else {
		lo = i << shift
		hi = i >> (64 - shift) // 0 when shift is 0
	}
	a := s.cfg.Pool
	binary.BigEndian.PutUint64(a[:8], binary.BigEndian.Uint64(a[:8])|hi)
	binary.BigEndian.PutUint64(a[8:], binary.BigEndian.Uint64(a[8:])|lo)
	return a
}

// indexOf returns the pool index of prefix/bits, if it is one of the
// pool's delegated prefixes.
func (s *Server) indexOf(prefix hdr.Addr6, bits int) (uint64, bool) {
	if bits != s.cfg.Delegate || !hdr.InPrefix6(&prefix, &s.cfg.Pool, s.cfg.PoolBits) {
		return 0, false
	}
	prefix = MaskPrefix(prefix, bits)
	shift := uint(128 - s.cfg.Delegate)
	hi, lo := binary.BigEndian.Uint64(prefix[:8]), binary.BigEndian.Uint64(prefix[8:])
	var i uint64
	if shift >= 64 {
		i = hi >> (shift - 64)
	} else {
		i = lo>>shift | hi<<(64-shift)
	}
	return i & (s.size - 1), true
}

func bindingKey(duid []byte, iaid uint32) string {
	return string(binary.BigEndian.AppendUint32(slices.Clone(duid), iaid))
}

func (s *Server) expire(now time.Time) {
	for k, b := range s.byKey {
		if !now.Before(b.expires) {
			delete(s.byKey, k)
			delete(s.byIndex, b.index)
		}
	}
}

// choose picks the prefix index for key: its binding's, else the first
// free hint, else the lowest free one.
func (s *Server) choose(key string, ia *IAPD) (uint64, bool) {
	if b := s.byKey[key]; b != nil {
		return b.index, true
	}
	for _, p := range ia.Prefixes {
		if i, ok := s.indexOf(p.Prefix, p.Bits); ok && s.byIndex[i] == nil {
			return i, true
		}
	}
	if uint64(len(s.byIndex)) >= s.size {
		return 0, false
	}
	for i := uint64(0); ; i++ {
		if s.byIndex[i] == nil {
			return i, true
		}
	}
}

func (s *Server) bind(key string, i uint64, now time.Time) {
	b := s.byKey[key]
	if b == nil {
		b = &binding{key: key, index: i}
		s.byKey[key] = b
		s.byIndex[i] = b
	}
	b.expires = now.Add(s.cfg.Valid)
}

func (s *Server) grant(ia *IAPD, i uint64) IAPD {
	return IAPD{
		IAID: ia.IAID, T1: Seconds(s.cfg.T1), T2: Seconds(s.cfg.T2),
		Prefixes: []Prefix{{
			Prefix: s.prefixAt(i), Bits: s.cfg.Delegate,
			Preferred: Seconds(s.cfg.Preferred), Valid: Seconds(s.cfg.Valid),
		}},
	}
}

func refuse(ia *IAPD, code StatusCode, msg string) IAPD {
	return IAPD{IAID: ia.IAID, Status: &Status{Code: code, Message: msg}}
}

// offer puts a prefix for each of m's IA_PDs in r (NoPrefixAvail when the
// pool is exhausted), binding them when commit.
func (s *Server) offer(m, r *Message, commit bool, now time.Time) {
	for k := range m.IAPD {
		ia := &m.IAPD[k]
		key := bindingKey(m.ClientID, ia.IAID)
		i, ok := s.choose(key, ia)
		if !ok {
			r.IAPD = append(r.IAPD, refuse(ia, StatusNoPrefixAvail, "pool exhausted"))
			continue
		}
		if commit {
			s.bind(key, i, now)
		}
		r.IAPD = append(r.IAPD, s.grant(ia, i))
	}
}

// Handle processes a client message received at now and returns the
// message to send back to the client (to its link-local address, port
// ClientPort), or nil if there is nothing to send: unparseable messages,
// Solicit or Rebind with a SERVERID, Request, Renew or Release for another
// server, messages without a CLIENTID (but Information-request), Confirm,
// Decline and server message types.
func (s *Server) Handle(msg []byte, now time.Time) []byte {
	m, err := Parse(msg)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)

	r := Message{Type: MsgReply, XID: m.XID, ClientID: m.ClientID, ServerID: s.duid}
	if m.Requests(OptDNSServers) && len(s.cfg.DNS) > 0 {
		r.DNS = s.cfg.DNS
	}
	mine := sameID(m.ServerID, s.duid)
	if m.Type == MsgInformationRequest {
		if m.ServerID != nil && !mine {
			return nil
		}
		return r.Encode()
	}
	if m.ClientID == nil {
		return nil
	}
	switch m.Type {
	case MsgSolicit:
		if m.ServerID != nil {
			return nil
		}
		commit := m.RapidCommit && !s.cfg.NoRapidCommit
		if commit {
			r.RapidCommit = true
		} else {
			r.Type = MsgAdvertise
		}
		if len(m.IAPD) == 0 {
			r.Status = &Status{Code: StatusNoPrefixAvail, Message: "no IA_PD in Solicit"}
		}
		s.offer(&m, &r, commit, now)
	case MsgRequest:
		if !mine {
			return nil
		}
		s.offer(&m, &r, true, now)
	case MsgRenew, MsgRebind:
		if m.Type == MsgRenew && !mine || m.Type == MsgRebind && m.ServerID != nil {
			return nil
		}
		for k := range m.IAPD {
			ia := &m.IAPD[k]
			key := bindingKey(m.ClientID, ia.IAID)
			i, ok := uint64(0), false
			if b := s.byKey[key]; b != nil {
				i, ok = b.index, true
			} else if m.Type == MsgRebind {
				i, ok = s.adoptable(ia)
			}
			if !ok {
				r.IAPD = append(r.IAPD, refuse(ia, StatusNoBinding, "no binding"))
				continue
			}
			s.bind(key, i, now)
			r.IAPD = append(r.IAPD, s.grant(ia, i))
		}
	case MsgRelease:
		if !mine {
			return nil
		}
		r.Status = &Status{Code: StatusSuccess, Message: "released"}
		for k := range m.IAPD {
			ia := &m.IAPD[k]
			key := bindingKey(m.ClientID, ia.IAID)
			if b := s.byKey[key]; b != nil {
				delete(s.byKey, key)
				delete(s.byIndex, b.index)
				continue
			}
			r.IAPD = append(r.IAPD, refuse(ia, StatusNoBinding, "no binding"))
		}
		r.DNS = nil
	default:
		return nil
	}
	return r.Encode()
}

// adoptable returns, for a Rebind this server has no binding for, a
// prefix the client holds if it is a free prefix of the pool (RFC 8415
// 18.3.5 lets a server extend prefixes appropriate for the link).
func (s *Server) adoptable(ia *IAPD) (uint64, bool) {
	for _, p := range ia.Prefixes {
		if i, ok := s.indexOf(p.Prefix, p.Bits); ok && s.byIndex[i] == nil {
			return i, true
		}
	}
	return 0, false
}

// sameID reports whether DUID a is present and equal to b.
func sameID(a, b []byte) bool { return a != nil && string(a) == string(b) }
