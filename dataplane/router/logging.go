package router

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/pppoe"
	"github.com/pppfwd/pppfwd/pppoe/dhcp6"
)

// parseLevel reads log.level.
func parseLevel(s string) (slog.Level, error) {
	switch s {
	case "error":
		return slog.LevelError, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	}
	return 0, fmt.Errorf("%q: want error, warn, info or debug", s)
}

// NewLogger returns the logger log.level and log.format ask for, writing
// to w. Under systemd (JOURNAL_STREAM set) the text format leaves out the
// time, which the journal records itself.
func NewLogger(w io.Writer, o ObsConfig, journal bool) (*slog.Logger, error) {
	lv, err := parseLevel(o.LogLevel)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch o.LogFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text", "":
		if journal {
			opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
				if len(groups) == 0 && a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}
		}
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log.format %q: want text or json", o.LogFormat)
}

// Logf adapts l to the printf-style logf the router's parts take: the
// message's "pppfwd: "/"pppoe: "/"dhcp6: " prefix becomes the component
// attribute, and a message that says it is a warning is logged as one.
func Logf(l *slog.Logger) func(format string, args ...any) {
	return func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		comp := "pppfwd"
		for _, p := range []string{"pppfwd: ", "pppoe: ", "dhcp6: "} {
			if strings.HasPrefix(msg, p) {
				comp, msg = p[:len(p)-2], msg[len(p):]
				break
			}
		}
		// "pppfwd: dhcp6: ..." (the PD runner's) names the inner part.
		for _, p := range []string{"dhcp6: ", "hooks: "} {
			if strings.HasPrefix(msg, p) {
				comp, msg = p[:len(p)-2], msg[len(p):]
			}
		}
		lv := slog.LevelInfo
		if strings.HasPrefix(msg, "warning: ") {
			lv, msg = slog.LevelWarn, msg[len("warning: "):]
		}
		l.Log(context.Background(), lv, msg, "component", comp)
	}
}

// SetLogger gives the router a structured logger for what Logf does not
// carry: the protocol trace of log.level debug (before Run).
func (r *Router) SetLogger(l *slog.Logger) { r.log.Store(l) }

// traceConn logs every control frame the PPPoE client sends and receives
// at debug level (discovery, LCP, authentication, IPCP, IPv6CP), as
// pppd's debug option does; a passthrough otherwise. Credentials (PAP's
// password, CHAP's response) are never logged.
type traceConn struct {
	pppoe.Conn
	r *Router
}

// traceConn wraps c for the router's protocol trace.
func (r *Router) traceConn(c pppoe.Conn) pppoe.Conn { return traceConn{c, r} }

func (t traceConn) ReadFrame(b []byte, timeout time.Duration) (int, error) {
	n, err := t.Conn.ReadFrame(b, timeout)
	if err == nil {
		t.trace("rcvd", b[:n])
	}
	return n, err
}

// WakeReader passes pppoe.ReaderWaker on.
func (t traceConn) WakeReader() {
	if w, ok := t.Conn.(pppoe.ReaderWaker); ok {
		w.WakeReader()
	}
}

func (t traceConn) WriteFrame(b []byte) error {
	t.trace("sent", b)
	return t.Conn.WriteFrame(b)
}

func (t traceConn) trace(dir string, b []byte) {
	t.r.trace("pppoe", dir, func() string { return DescribeFrame(b) })
}

// trace logs one protocol message of component at debug level; describe
// runs only when debug is on.
func (r *Router) trace(component, dir string, describe func() string) {
	l := r.log.Load()
	if l == nil || !l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	l.Debug(dir+" "+describe(), "component", component)
}

// DescribeFrame renders a PPPoE control frame for the protocol trace:
// "PADO session=0x0000 0x0102="ac"...", or "LCP ConfReq id=1 <mru 1492>
// <magic 0x1a2b3c4d>". Authentication payloads are left out.
func DescribeFrame(b []byte) string {
	f, err := pppoe.ParseFrame(b)
	if err != nil {
		return fmt.Sprintf("undecodable frame (%v, %d bytes)", err, len(b))
	}
	if f.EtherType == hdr.EtherTypePPPoEDisc {
		d, err := pppoe.ParseDiscovery(f.PPPoE)
		if err != nil {
			return fmt.Sprintf("bad discovery frame (%v)", err)
		}
		return d.String()
	}
	if len(f.Payload) < 2 {
		return "short session frame"
	}
	proto := binary.BigEndian.Uint16(f.Payload)
	name, ok := pppProtoNames[proto]
	if !ok {
		return fmt.Sprintf("session %#04x proto %#04x (%d bytes)", f.SessionID, proto, len(f.Payload)-2)
	}
	p, err := pppoe.ParseControl(f.Payload[2:])
	if err != nil {
		return fmt.Sprintf("%s undecodable (%v)", name, err)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "%s %s id=%d", name, controlCodeName(proto, p.Code), p.ID)
	switch {
	case proto == 0xc023 || proto == 0xc223: // PAP, CHAP: no credentials in logs
		if p.Code >= 3 && len(p.Data) > 0 { // success/failure messages
			msg := p.Data
			if proto == 0xc023 && len(msg) > 0 { // PAP Ack/Nak: Msg-Length, Message
				msg = msg[1:min(len(msg), 1+int(msg[0]))]
			}
			fmt.Fprintf(&s, " %q", msg)
		}
	case p.Code >= 1 && p.Code <= 4: // Configure-*: options
		for o := p.Data; len(o) >= 2 && int(o[1]) >= 2 && int(o[1]) <= len(o); o = o[o[1]:] {
			fmt.Fprintf(&s, " <%s>", optionString(proto, o[0], o[2:o[1]]))
		}
	case proto == 0xc021 && (p.Code == 9 || p.Code == 10) && len(p.Data) >= 4: // echo
		fmt.Fprintf(&s, " magic=%#08x", binary.BigEndian.Uint32(p.Data))
	case p.Code == 5 || p.Code == 6: // Terminate: reason text
		if len(p.Data) > 0 {
			fmt.Fprintf(&s, " %q", p.Data)
		}
	}
	return s.String()
}

var pppProtoNames = map[uint16]string{0xc021: "LCP", 0xc023: "PAP", 0xc223: "CHAP", 0x8021: "IPCP", 0x8057: "IPV6CP"}

var cpCodes = []string{1: "ConfReq", 2: "ConfAck", 3: "ConfNak", 4: "ConfRej", 5: "TermReq", 6: "TermAck", 7: "CodeRej",
	8: "ProtRej", 9: "EchoReq", 10: "EchoRep", 11: "DiscReq"}

func controlCodeName(proto uint16, c uint8) string {
	switch proto {
	case 0xc023:
		if n := []string{1: "AuthReq", 2: "AuthAck", 3: "AuthNak"}; int(c) < len(n) && n[c] != "" {
			return n[c]
		}
	case 0xc223:
		if n := []string{1: "Challenge", 2: "Response", 3: "Success", 4: "Failure"}; int(c) < len(n) && n[c] != "" {
			return n[c]
		}
	default:
		if int(c) < len(cpCodes) && cpCodes[c] != "" {
			return cpCodes[c]
		}
	}
	return fmt.Sprintf("code%d", c)
}

func optionString(proto uint16, typ uint8, v []byte) string {
	switch {
	case proto == 0xc021 && typ == 1 && len(v) == 2:
		return fmt.Sprintf("mru %d", binary.BigEndian.Uint16(v))
	case proto == 0xc021 && typ == 3 && len(v) >= 2:
		a := binary.BigEndian.Uint16(v)
		switch {
		case a == 0xc023:
			return "auth pap"
		case a == 0xc223 && len(v) == 3 && v[2] == 5:
			return "auth chap md5"
		case a == 0xc223 && len(v) == 3 && v[2] == 0x81:
			return "auth chap mschapv2"
		}
		return fmt.Sprintf("auth %x", v)
	case proto == 0xc021 && typ == 5 && len(v) == 4:
		return fmt.Sprintf("magic %#08x", binary.BigEndian.Uint32(v))
	case proto == 0x8021 && (typ == 3 || typ == 129 || typ == 131) && len(v) == 4:
		name := map[uint8]string{3: "addr", 129: "ms-dns1", 131: "ms-dns2"}[typ]
		return fmt.Sprintf("%s %d.%d.%d.%d", name, v[0], v[1], v[2], v[3])
	case proto == 0x8057 && typ == 1 && len(v) == 8:
		return fmt.Sprintf("addr fe80::%x:%x:%x:%x", binary.BigEndian.Uint16(v), binary.BigEndian.Uint16(v[2:]),
			binary.BigEndian.Uint16(v[4:]), binary.BigEndian.Uint16(v[6:]))
	}
	return fmt.Sprintf("opt%d %x", typ, v)
}

// traceDHCP6 logs a DHCPv6 message the PD client sent or received at
// debug level: its type, transaction id, status and the prefixes of its
// IA_PDs.
func (r *Router) traceDHCP6(dir string, msg []byte) {
	r.trace("dhcp6", dir, func() string { return DescribeDHCP6(msg) })
}

// DescribeDHCP6 renders a DHCPv6 message for the protocol trace:
// "DHCPv6 Reply xid=0x1a2b3c <ia_pd 1 2001:db8::/56 valid 7200s>".
func DescribeDHCP6(msg []byte) string {
	m, err := dhcp6.Parse(msg)
	if err != nil {
		return fmt.Sprintf("DHCPv6 undecodable (%v)", err)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "DHCPv6 %s xid=%#06x", m.Type, m.XID)
	if m.RapidCommit {
		s.WriteString(" rapid-commit")
	}
	if m.Status != nil {
		fmt.Fprintf(&s, " status=%d %q", m.Status.Code, m.Status.Message)
	}
	for _, ia := range m.IAPD {
		fmt.Fprintf(&s, " <ia_pd %d t1 %d t2 %d", ia.IAID, ia.T1, ia.T2)
		for _, p := range ia.Prefixes {
			fmt.Fprintf(&s, " %s/%d valid %ds", addr6String(p.Prefix), p.Bits, p.Valid)
		}
		if ia.Status != nil {
			fmt.Fprintf(&s, " status=%d", ia.Status.Code)
		}
		s.WriteString(">")
	}
	for _, d := range m.DNS {
		fmt.Fprintf(&s, " <dns %s>", addr6String(d))
	}
	return s.String()
}
