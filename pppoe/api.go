package pppoe

import (
	"fmt"
	"strings"
	"time"
)

// AuthProto is a set of PPP authentication protocols.
type AuthProto uint8

// Authentication protocols.
const (
	AuthPAP AuthProto = 1 << iota
	AuthCHAPMD5
	// AuthMSCHAPv2 is MS-CHAPv2 (RFC 2759). When it is the protocol in
	// use, the client also checks the server's authenticator response
	// (mutual authentication); as with pppd, a server may still ask for
	// no authentication at all, or (under AuthAny) for PAP, which sends
	// the password in clear. The client guards PAP (see ClientConfig.Auth);
	// restrict Auth to rule it out.
	AuthMSCHAPv2
	// AuthAny allows every implemented protocol; the server picks.
	AuthAny = AuthPAP | AuthCHAPMD5 | AuthMSCHAPv2
)

func (a AuthProto) String() string {
	if a == 0 {
		return "none"
	}
	if a&^AuthAny != 0 {
		return fmt.Sprintf("auth(%#x)", uint8(a))
	}
	var names []string
	for _, p := range []struct {
		a AuthProto
		s string
	}{{AuthPAP, "PAP"}, {AuthCHAPMD5, "CHAP-MD5"}, {AuthMSCHAPv2, "MS-CHAPv2"}} {
		if a&p.a != 0 {
			names = append(names, p.s)
		}
	}
	return strings.Join(names, "|")
}

// State is the client's connection state.
type State uint8

// Client states, in the order a connection goes through them.
const (
	StateIdle      State = iota // not running
	StateDiscovery              // sending PADI, collecting PADOs
	StateRequest                // PADR sent, waiting for PADS
	StateLCP                    // session id known, LCP negotiating
	StateAuth                   // LCP opened, authenticating
	StateNetwork                // authenticated, IPCP/IPv6CP negotiating
	StateUp                     // IPCP opened, session published
	StateHoldoff                // waiting before the next attempt
	StateClosing                // shutting down (LCP Terminate, PADT)
)

var stateNames = [...]string{"idle", "discovery", "request", "lcp", "auth", "network", "up", "holdoff", "closing"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ClientCounters are the client's monotonic counters.
type ClientCounters struct {
	PADISent            uint64 `json:"padi_sent"`
	PADOReceived        uint64 `json:"pado_received"`
	PADRSent            uint64 `json:"padr_sent"`
	PADSReceived        uint64 `json:"pads_received"`
	PADTSent            uint64 `json:"padt_sent"`
	PADTReceived        uint64 `json:"padt_received"`
	PADTIgnored         uint64 `json:"padt_ignored"`
	StalePADTSent       uint64 `json:"stale_padt_sent"` // PADT for a persisted session before PADI
	ServiceNameErrors   uint64 `json:"service_name_errors"`
	ACSystemErrors      uint64 `json:"ac_system_errors"`
	GenericErrors       uint64 `json:"generic_errors"`
	SessionsUp          uint64 `json:"sessions_up"`
	Reconnects          uint64 `json:"reconnects"`
	AuthFailures        uint64 `json:"auth_failures"`
	EchoSent            uint64 `json:"echo_sent"`
	EchoReplies         uint64 `json:"echo_replies"`
	EchoTimeouts        uint64 `json:"echo_timeouts"` // links dropped for missed echoes
	ProtocolRejectsSent uint64 `json:"protocol_rejects_sent"`
	CodeRejectsSent     uint64 `json:"code_rejects_sent"`
	BadFrames           uint64 `json:"bad_frames"`   // undecodable frames
	OtherFrames         uint64 `json:"other_frames"` // frames for another session/AC, ignored
	// WriteErrors counts transient Conn write failures (e.g. the
	// dataplane's injection ring full); the frames are retried in order.
	// WriteDrops counts frames dropped because too many waited.
	WriteErrors uint64 `json:"write_errors"`
	WriteDrops  uint64 `json:"write_drops"`
	// OffersDropped counts PADOs beyond the first 16 of one discovery.
	OffersDropped uint64 `json:"offers_dropped"`
	// BadAddresses counts IPCP addresses refused (0/8, 127/8, 224/4,
	// 240/4 offered to us or claimed by the AC): each ends the attempt.
	BadAddresses uint64 `json:"bad_addresses"`
	// PAPRefused counts sessions ended because the AC wanted PAP (it
	// insisted, or could do only PAP) after an AC had authenticated the
	// client with CHAP.
	PAPRefused uint64 `json:"pap_refused"`
}

// Status is a snapshot of the client's state for monitoring.
type Status struct {
	State     State
	SessionID uint16
	ACMAC     [6]byte
	ACName    string
	// LastError describes why the last attempt failed (e.g.
	// "authentication failed (CHAP): Authentication failure"); it is kept
	// after the session comes back up.
	LastError string
	// AuthFailures counts consecutive authentication failures; the
	// holdoff before the next attempt grows with it.
	AuthFailures int
	AuthProto    AuthProto
	EchoRTT      time.Duration // last LCP echo round trip
	MTU          int           // negotiated MTU (min of both MRUs)
	MaxPayload   bool          // RFC 4638 PPP-Max-Payload accepted by the AC
	LocalAddr    uint32
	PeerAddr     uint32
	DNS          [2]uint32
	LocalIfID    [8]byte // IPv6CP interface identifiers (zero when not negotiated)
	PeerIfID     [8]byte
	UpSince      time.Time
	Counters     ClientCounters
}

// SessionInfo describes one session of the access concentrator.
type SessionInfo struct {
	ID         uint16
	PeerMAC    [6]byte
	User       string
	Addr       uint32 // assigned client address, 0 until IPCP opens
	Up         bool   // IPCP opened
	MTU        int
	MaxPayload bool
	PeerIfID   [8]byte
}

// ServerCounters are the access concentrator's monotonic counters.
type ServerCounters struct {
	PADIReceived, PADOSent, PADRReceived, PADSSent uint64
	PADTSent, PADTReceived                         uint64
	PADTLate                                       uint64 // for a session that had just ended (after LCP Terminate)
	AuthOK, AuthFailed                             uint64
	SessionsUp                                     uint64
	IPv4In, IPv4Out                                uint64
	IPv6In, IPv6Out                                uint64
	BadFrames, Dropped                             uint64
	WriteErrors, WriteDrops                        uint64 // as in ClientCounters
}
