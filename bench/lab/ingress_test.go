package lab

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/rawsock"
)

// The namespace-lab version of dataplane's TestIngressTable: real
// packets, sent from the Internet host's veth and forwarded by the ISP
// namespace's kernel and the access concentrator into the PPPoE session,
// and a capture on the LAN host's interface that must see none of them.

// Every unsolicited packet carries igMagic, its row and its sequence
// number in its payload (in the quoted packet of an ICMP error, in every
// fragment's data), so a frame on the LAN is attributed to its row
// whatever the router rewrote in its headers.
const igMagic = "PFIG"

const igMarkLen = 8

func igMark(row, seq int) []byte {
	b := []byte(igMagic + "\x00\x00\x00\x00")
	binary.BigEndian.PutUint16(b[4:], uint16(row))
	binary.BigEndian.PutUint16(b[6:], uint16(seq))
	return b
}

// igMarked returns the row of the first marker in b.
func igMarked(b []byte) (int, bool) {
	i := bytes.Index(b, []byte(igMagic))
	if i < 0 || i+igMarkLen > len(b) {
		return 0, false
	}
	return int(binary.BigEndian.Uint16(b[i+4:])), true
}

const (
	igFIN = 0x01
	igSYN = 0x02
	igRST = 0x04
	igACK = 0x10

	igESP = 50
	// IPv6 extension headers (RFC 8200 4).
	igHopByHop = 0
	igRouting  = 43
	igFragment = 44
	igDestOpts = 60
)

// igTCP is a 20-byte TCP header (checksum left 0) and payload.
func igTCP(sport, dport uint16, flags uint8, payload []byte) []byte {
	b := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint32(b[4:], 1000)
	if flags&igACK != 0 {
		binary.BigEndian.PutUint32(b[8:], 2000)
	}
	b[12] = 5 << 4
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:], 65535)
	return append(b, payload...)
}

// igUDP is a UDP header (checksum left 0) and payload.
func igUDP(sport, dport uint16, payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	return append(b, payload...)
}

// igICMP is an ICMP or ICMPv6 message: type, code, the 4 bytes after the
// checksum, and body (checksum left 0).
func igICMP(typ, code uint8, rest uint32, body []byte) []byte {
	b := make([]byte, 8, 8+len(body))
	b[0], b[1] = typ, code
	binary.BigEndian.PutUint32(b[4:], rest)
	return append(b, body...)
}

// igSum fills in the TCP, UDP, ICMP or ICMPv6 checksum of the transport
// segment l4 sent from src to dst and returns l4; other protocols are
// left alone.
func igSum(src, dst netip.Addr, proto uint8, l4 []byte) []byte {
	var ps uint32
	if src.Is4() {
		ps = hdr.PseudoSum(src.AsSlice(), dst.AsSlice(), proto, len(l4))
	} else {
		s, d := src.As16(), dst.As16()
		ps = hdr.PseudoSum6(&s, &d, proto, len(l4))
	}
	switch proto {
	case hdr.ProtoTCP:
		binary.BigEndian.PutUint16(l4[16:], hdr.Checksum(l4, ps))
	case hdr.ProtoUDP:
		c := hdr.Checksum(l4, ps)
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(l4[6:], c)
	case hdr.ProtoICMP:
		binary.BigEndian.PutUint16(l4[2:], hdr.Checksum(l4, 0))
	case hdr.ProtoICMP6:
		binary.BigEndian.PutUint16(l4[2:], hdr.Checksum(l4, ps))
	}
	return l4
}

// igIPv4 is an IPv4 header (TTL 64) with identification id, the flags
// and fragment offset field frag, and opts (a multiple of 4 bytes), in
// front of l4 (taken as it is).
func igIPv4(src, dst netip.Addr, proto uint8, id, frag uint16, opts, l4 []byte) []byte {
	hl := 20 + len(opts)
	b := make([]byte, hl, hl+len(l4))
	b[0] = 0x40 | byte(hl/4)
	binary.BigEndian.PutUint16(b[2:], uint16(hl+len(l4)))
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], frag)
	b[8], b[9] = 64, proto
	copy(b[12:], src.AsSlice())
	copy(b[16:], dst.AsSlice())
	copy(b[20:], opts)
	binary.BigEndian.PutUint16(b[10:], hdr.Checksum(b[:hl], 0))
	return append(b, l4...)
}

// igPkt4 is an unfragmented IPv4 packet with its transport checksum.
func igPkt4(src, dst netip.Addr, proto uint8, l4 []byte) []byte {
	return igIPv4(src, dst, proto, 7, 0, nil, igSum(src, dst, proto, l4))
}

// igExt is an IPv6 extension header; its first byte (next header) is
// filled in by igIPv6.
type igExt struct {
	typ uint8
	b   []byte
}

func igHBH() igExt { return igExt{igHopByHop, []byte{0, 0, 1, 4, 0, 0, 0, 0}} } // PadN
func igDst() igExt { return igExt{igDestOpts, []byte{0, 0, 1, 4, 0, 0, 0, 0}} }

// igRH is a routing header of type typ (0: RFC 2460's, deprecated by
// RFC 5095; 4: a segment routing header, RFC 8754) with one address and
// segments left 0, so a node that does not drop it goes on to the next
// header.
func igRH(typ uint8, via netip.Addr) igExt {
	a := via.As16()
	b := []byte{0, 2, typ, 0, 0, 0, 0, 0}
	if typ == 4 {
		b[4] = 0 // last entry
	}
	return igExt{igRouting, append(b, a[:]...)}
}

// igFrag is a fragment header: offset in 8-byte units, M flag, id.
func igFrag(off uint16, more bool, id uint32) igExt {
	b := make([]byte, 8)
	v := off << 3
	if more {
		v |= 1
	}
	binary.BigEndian.PutUint16(b[2:], v)
	binary.BigEndian.PutUint32(b[4:], id)
	return igExt{igFragment, b}
}

// igIPv6 is an IPv6 header (hop limit 64), the extension headers exts
// chained in order, then upper-layer proto with bytes l4 (taken as
// they are).
func igIPv6(src, dst netip.Addr, exts []igExt, proto uint8, l4 []byte) []byte {
	n := len(l4)
	for _, e := range exts {
		n += len(e.b)
	}
	b := make([]byte, hdr.IPv6Len, hdr.IPv6Len+n)
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], uint16(n))
	b[6], b[7] = proto, 64
	if len(exts) > 0 {
		b[6] = exts[0].typ
	}
	s, d := src.As16(), dst.As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	for i, e := range exts {
		h := append([]byte(nil), e.b...)
		h[0] = proto
		if i+1 < len(exts) {
			h[0] = exts[i+1].typ
		}
		b = append(b, h...)
	}
	return append(b, l4...)
}

// igPkt6 is an IPv6 packet with its transport checksum.
func igPkt6(src, dst netip.Addr, exts []igExt, proto uint8, l4 []byte) []byte {
	return igIPv6(src, dst, exts, proto, igSum(src, dst, proto, l4))
}

// igVia is how a row's packets enter the session.
type igVia uint8

const (
	// viaInet: Ethernet frames from an AF_PACKET socket on the Internet
	// host's veth, routed by the ISP namespace's kernel into the
	// upstream TAP and from there by the access concentrator.
	viaInet igVia = iota
	// viaAC: handed to the access concentrator directly, for sources
	// the ISP's kernel refuses to forward (loopback, multicast, ...).
	viaAC
)

func (v igVia) String() string { return [...]string{"inet", "ac"}[v] }

// igRow is one class of unsolicited Internet traffic.
type igRow struct {
	name string
	v6   bool
	pkts [][]byte
	// fallback: if none of the packets reaches the router through the
	// ISP's kernel, they are sent again straight from the AC.
	fallback bool
	flood    bool
	toRouter bool               // addressed to the router itself: the control plane takes it
	want     []dataplane.Reason // the drop reasons the row may get (nil: any)
	// pass is how many of the packets the router lets in by policy
	// (IPsec to a LAN host's IPv6 address, RFC 6092 REC-22; a mapped
	// UDP port from any remote, RFC 4787 REQ-8): every other packet must
	// be dropped and none may reach the LAN.
	pass int
}

// igResult is what one row got.
type igResult struct {
	name       string
	via        igVia
	pkts, pass int
	lan        int64
	ctl        uint64 // taken by the control plane (for the router itself)
	drops      dataplane.Counters
	ok         bool
	why        string
}

func (r igResult) dropString() string {
	m := r.drops.DropMap()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s []string
	for _, k := range keys {
		s = append(s, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if r.ctl > 0 {
		s = append(s, fmt.Sprintf("control=%d", r.ctl))
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, " ")
}

// igCapture records every frame the LAN host's interface receives from
// the router: marked frames per row (and the first of each), the rest
// by class.
type igCapture struct {
	c       *rawsock.Conn
	rows    [256]atomic.Int64
	mu      sync.Mutex
	first   map[int][]byte
	classes map[string]int
	others  [][]byte
	live    map[string]bool // "src:port" of the live flows' echo services
	done    chan struct{}
}

func (l *Lab) igStartCapture(live map[string]bool) (*igCapture, error) {
	c := &igCapture{first: map[int][]byte{}, classes: map[string]int{}, live: live, done: make(chan struct{})}
	if err := l.LAN.Do(func() (err error) {
		c.c, err = rawsock.Open("lan0")
		return err
	}); err != nil {
		return nil, err
	}
	go func() {
		defer close(c.done)
		b := make([]byte, 65536)
		for {
			n, err := c.c.ReadFrame(b, time.Second)
			if err != nil {
				if errors.Is(err, rawsock.ErrTimeout) {
					continue
				}
				return
			}
			c.note(b[:n])
		}
	}()
	return c, nil
}

func (c *igCapture) note(b []byte) {
	if row, ok := igMarked(b); ok {
		if row < len(c.rows) {
			c.rows[row].Add(1)
		}
		c.mu.Lock()
		if _, seen := c.first[row]; !seen {
			c.first[row] = append([]byte(nil), b...)
		}
		c.mu.Unlock()
		return
	}
	class := igClass(b)
	live := false
	for k := range c.live {
		if strings.HasPrefix(class, k) {
			live = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if live {
		class = "live flow echo"
	} else if !strings.HasPrefix(class, "arp") && !strings.HasPrefix(class, "icmp6 13") && len(c.others) < 16 {
		c.others = append(c.others, append([]byte(nil), b...))
	}
	c.classes[class]++
}

// igClass names a frame: "arp", "icmp6 <type>", "<proto> <src>:<sport>
// -> <dst>:<dport>" and the like.
func igClass(b []byte) string {
	if len(b) < 14 {
		return "runt"
	}
	p := b[14:]
	switch binary.BigEndian.Uint16(b[12:]) {
	case hdr.EtherTypeARP:
		return "arp"
	case hdr.EtherTypeIPv4:
		if len(p) < 20 || p[0]>>4 != 4 {
			return "bad ipv4"
		}
		hl := int(p[0]&15) * 4
		src, _ := netip.AddrFromSlice(p[12:16])
		dst, _ := netip.AddrFromSlice(p[16:20])
		return igClassL4(p[9], src, dst, p[min(hl, len(p)):])
	case hdr.EtherTypeIPv6:
		if len(p) < 40 {
			return "bad ipv6"
		}
		src := netip.AddrFrom16([16]byte(p[8:24]))
		dst := netip.AddrFrom16([16]byte(p[24:40]))
		if p[6] == hdr.ProtoICMP6 && len(p) > 40 {
			return fmt.Sprintf("icmp6 %d", p[40])
		}
		return igClassL4(p[6], src, dst, p[40:])
	}
	return fmt.Sprintf("ethertype %#04x", binary.BigEndian.Uint16(b[12:]))
}

func igClassL4(proto uint8, src, dst netip.Addr, l4 []byte) string {
	if (proto == hdr.ProtoUDP || proto == hdr.ProtoTCP) && len(l4) >= 4 {
		return fmt.Sprintf("%s %s -> %s", map[uint8]string{hdr.ProtoUDP: "udp", hdr.ProtoTCP: "tcp"}[proto],
			netip.AddrPortFrom(src, binary.BigEndian.Uint16(l4)), netip.AddrPortFrom(dst, binary.BigEndian.Uint16(l4[2:])))
	}
	return fmt.Sprintf("proto %d %s -> %s", proto, src, dst)
}

func (c *igCapture) close() {
	c.c.Close()
	<-c.done
}

// igFlow is a live UDP flow from the LAN host: one datagram every
// interval, counting the echoes that come back.
type igFlow struct {
	c      net.Conn
	echoes atomic.Uint64
	stop   chan struct{}
	done   chan struct{}
}

func (l *Lab) igStartFlow(network string, to netip.AddrPort, interval time.Duration) (*igFlow, error) {
	f := &igFlow{stop: make(chan struct{}), done: make(chan struct{})}
	if err := l.LAN.Do(func() (err error) {
		f.c, err = net.Dial(network, to.String())
		return err
	}); err != nil {
		return nil, err
	}
	go func() {
		defer close(f.done)
		buf := make([]byte, 2048)
		for seq := 0; ; seq++ {
			select {
			case <-f.stop:
				return
			default:
			}
			next := time.Now().Add(interval)
			msg := fmt.Sprintf("live %d", seq)
			if _, err := f.c.Write([]byte(msg)); err != nil {
				time.Sleep(interval)
				continue
			}
			for {
				_ = f.c.SetReadDeadline(next)
				n, err := f.c.Read(buf)
				if err != nil {
					break
				}
				if strings.HasPrefix(string(buf[:n]), "live ") {
					f.echoes.Add(1)
				}
			}
		}
	}()
	return f, nil
}

func (f *igFlow) port() uint16 { return f.c.LocalAddr().(*net.UDPAddr).AddrPort().Port() }

func (f *igFlow) close() {
	close(f.stop)
	f.c.Close()
	<-f.done
}

// igRecorder is a UDP echo service on the Internet host that also
// records which public address and port each datagram came from: the
// NAT mappings of the live IPv4 flows.
type igRecorder struct {
	c    *net.UDPConn
	mu   sync.Mutex
	from []netip.AddrPort
}

func (l *Lab) igStartRecorder(at netip.AddrPort) (*igRecorder, error) {
	r := &igRecorder{}
	if err := l.Inet.Do(func() (err error) {
		r.c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(at))
		return err
	}); err != nil {
		return nil, err
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := r.c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
			r.mu.Lock()
			known := false
			for _, a := range r.from {
				known = known || a == from
			}
			if !known {
				r.from = append(r.from, from)
			}
			r.mu.Unlock()
			_, _ = r.c.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return r, nil
}

func (r *igRecorder) mapped() []netip.AddrPort {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]netip.AddrPort(nil), r.from...)
}

// igEnv is one lab of TestIntegrationIngress with what its rows need.
type igEnv struct {
	l        *Lab
	pub      netip.Addr // the session's public IPv4 address
	host6    netip.Addr // the LAN host's SLAAC address
	lan6     *dataplane.LAN6
	pd       netip.Prefix // the delegated prefix
	mapped   []uint16     // the live IPv4 flows' public ports
	live6    []uint16     // the live IPv6 flows' ports on the LAN host
	tx       *rawsock.Conn
	ethHdr   [14]byte // the Internet host to the ISP's router, IPv4
	session6 uint16
}

var (
	igRemote2  = netip.MustParseAddr("203.0.113.8") // never contacted by the LAN
	igRemote26 = netip.MustParseAddr("2001:db8:ffff::8")
)

// send puts one row's packets into the session.
func (g *igEnv) send(r *igRow, via igVia) error {
	frame := make([]byte, 0, 2048)
	for i, p := range r.pkts {
		var err error
		switch via {
		case viaInet:
			frame = append(frame[:0], g.ethHdr[:]...)
			if r.v6 {
				binary.BigEndian.PutUint16(frame[12:], hdr.EtherTypeIPv6)
			}
			err = g.tx.WriteFrame(append(frame, p...))
		case viaAC:
			if r.v6 {
				err = g.l.AC.SendIPv6(g.session6, p)
			} else {
				err = g.l.AC.SendIPv4(p)
			}
		}
		if err != nil && !r.flood {
			return fmt.Errorf("%s: packet %d via %s: %w", r.name, i, via, err)
		}
		// A burst larger than the upstream TAP's queue would be lost
		// before it reaches the router: pace floods.
		if r.flood && i%64 == 63 {
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}

func igDelta(a, b dataplane.Counters) dataplane.Counters {
	var d dataplane.Counters
	for i := range d.Drops {
		d.Drops[i] = b.Drops[i] - a.Drops[i]
	}
	return d
}

// run sends a row and waits until its packets are counted as dropped
// by a worker or ignored by the control plane (what is addressed to the
// router itself goes there), or have reached the LAN; then checks it.
func (g *igEnv) run(t *testing.T, idx int, r *igRow, capt *igCapture) igResult {
	res := igResult{name: r.name, pkts: len(r.pkts), pass: r.pass}
	want := uint64(len(r.pkts) - r.pass)
	// Only a row for the router's own address counts what the control
	// plane took (ignored, or handed to the DHCPv6 client's hook, which
	// leaves what is not DHCPv6); elsewhere the LAN host's own exceptions
	// would show up in it.
	ignored := func() uint64 {
		if !r.toRouter {
			return 0
		}
		st := g.l.R.Control().Stats()
		return st.Ignored + st.IPv6.ToWAN6
	}
	// A flood may overflow the WAN port's receive ring before a worker
	// reads it: the port counts those (Stats.RxDrops), and for a flood
	// they count as dropped by the router.
	ringDrops := func() uint64 {
		if !r.flood {
			return 0
		}
		return g.l.R.Engine().Config().WAN.Stats().RxDrops
	}
	var delta dataplane.Counters
	var ctl, ring uint64
	wait := func(before dataplane.Counters, ign, ring0 uint64, d time.Duration) {
		for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
			delta, ctl, ring = igDelta(before, g.l.R.Engine().Totals()), ignored()-ign, ringDrops()-ring0
			if delta.TotalDrops()+ctl+ring >= want && capt.rows[idx].Load() >= int64(r.pass) || time.Now().After(deadline) {
				return
			}
		}
	}
	d := 1500 * time.Millisecond
	switch {
	case r.flood:
		d = 6 * time.Second
	case r.fallback:
		d = 400 * time.Millisecond
	}
	before, ign, ring0 := g.l.R.Engine().Totals(), ignored(), ringDrops()
	if err := g.send(r, viaInet); err != nil {
		t.Fatal(err)
	}
	wait(before, ign, ring0, d)
	if r.fallback && delta.TotalDrops()+ctl == 0 && capt.rows[idx].Load() == 0 {
		// The ISP's kernel refused to forward them (as it should).
		res.via = viaAC
		before, ign, ring0 = g.l.R.Engine().Totals(), ignored(), ringDrops()
		if err := g.send(r, viaAC); err != nil {
			t.Fatal(err)
		}
		wait(before, ign, ring0, 1500*time.Millisecond)
	}
	// What the LAN host's interface got arrives before the workers
	// publish their counters; give late frames a moment anyway.
	time.Sleep(20 * time.Millisecond)
	res.drops, res.ctl = delta, ctl
	res.lan = capt.rows[idx].Load()
	res.ok = true
	var why []string
	if res.lan > int64(r.pass) {
		res.ok = false
		why = append(why, fmt.Sprintf("%d reached the LAN", res.lan-int64(r.pass)))
	}
	got := delta.TotalDrops() + ctl + ring
	switch {
	case r.flood && got < want*9/10:
		// A flood may lose packets on its way (the ISP's queues);
		// most must have reached the router and been dropped.
		res.ok = false
		why = append(why, fmt.Sprintf("only %d of %d dropped (%d of them by the WAN port's full ring)", got, want, ring))
	case !r.flood && got != want:
		res.ok = false
		why = append(why, fmt.Sprintf("%d dropped, want %d", got, want))
	}
	if len(r.want) > 0 {
		for i, n := range delta.Drops {
			if n != 0 && !containsReason(r.want, dataplane.Reason(i)) {
				res.ok = false
				why = append(why, fmt.Sprintf("%d as %s (want %v)", n, dataplane.Reason(i), r.want))
			}
		}
	}
	res.why = strings.Join(why, "; ")
	return res
}

func containsReason(rs []dataplane.Reason, r dataplane.Reason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// rows builds the table. Row i marks its packets igMark(i, seq).
func (g *igEnv) rows() []igRow {
	var rows []igRow
	mk := func(seq int) []byte { return igMark(len(rows), seq) }
	nat4 := []dataplane.Reason{dataplane.DropNAT}
	fw := []dataplane.Reason{dataplane.DropFirewall}
	martian := []dataplane.Reason{dataplane.DropMartian}
	add := func(r igRow) { rows = append(rows, r) }
	pub, host6 := g.pub, g.host6
	remote, remote6 := RemoteAddr, Remote6Addr
	mapped, live6 := g.mapped[0], g.live6[0]
	w4 := func(src netip.Addr, proto uint8, l4 []byte) []byte { return igPkt4(src, pub, proto, l4) }
	w6 := func(src netip.Addr, exts []igExt, proto uint8, l4 []byte) []byte {
		return igPkt6(src, host6, exts, proto, l4)
	}
	v4 := func(name string, want []dataplane.Reason, pkts ...[]byte) igRow {
		return igRow{name: name, want: want, pkts: pkts}
	}
	v6 := func(name string, want []dataplane.Reason, pkts ...[]byte) igRow {
		return igRow{name: name, v6: true, want: want, pkts: pkts}
	}

	// IPv4 to the session's address, no state.
	add(v4("v4 udp to an unmapped port", nat4, w4(remote, hdr.ProtoUDP, igUDP(53, 40001, mk(0)))))
	add(v4("v4 tcp syn to an unmapped port", nat4, w4(remote, hdr.ProtoTCP, igTCP(443, 40001, igSYN, mk(0)))))
	add(v4("v4 tcp syn to port 22", nat4, w4(igRemote2, hdr.ProtoTCP, igTCP(40000, 22, igSYN, mk(0)))))
	add(v4("v4 tcp ack without a flow", nat4, w4(remote, hdr.ProtoTCP, igTCP(443, 40001, igACK, mk(0)))))
	add(v4("v4 tcp rst without a flow", nat4, w4(remote, hdr.ProtoTCP, igTCP(443, 40001, igRST, mk(0)))))
	add(v4("v4 tcp fin without a flow", nat4, w4(remote, hdr.ProtoTCP, igTCP(443, 40001, igFIN|igACK, mk(0)))))
	add(v4("v4 esp", nat4, w4(remote, igESP, append([]byte{0, 0, 0x10, 0, 0, 0, 0, 1}, mk(0)...))))
	add(v4("v4 echo reply, unknown id", nat4, w4(remote, hdr.ProtoICMP, igICMP(0, 0, 0x77770001, mk(0)))))
	// The live UDP flow's public port: other protocols, other remotes.
	add(v4("v4 tcp syn to the live udp flow's port", nat4, w4(remote, hdr.ProtoTCP, igTCP(7007, mapped, igSYN, mk(0)))))
	add(v4("v4 tcp syn to the live udp flow's port, other remote", nat4, w4(igRemote2, hdr.ProtoTCP, igTCP(7007, mapped, igSYN, mk(0)))))
	add(v4("v4 tcp ack to the live udp flow's port, other remote", nat4, w4(igRemote2, hdr.ProtoTCP, igTCP(7007, mapped, igACK, mk(0)))))
	add(v4("v4 tcp rst to the live udp flow's port, other remote", nat4, w4(igRemote2, hdr.ProtoTCP, igTCP(7007, mapped, igRST, mk(0)))))
	add(v4("v4 echo reply to the live udp flow's port as id", nat4, w4(remote, hdr.ProtoICMP, igICMP(0, 0, uint32(mapped)<<16|1, mk(0)))))
	r := v4("v4 udp to the live flow's port, other remote (EIF: passes)", nil,
		w4(igRemote2, hdr.ProtoUDP, igUDP(7007, mapped, mk(0))))
	r.pass = 1 // endpoint-independent filtering, the NAT's default (RFC 4787 REQ-8)
	add(r)
	// Fragments.
	add(v4("v4 later fragment without a first", []dataplane.Reason{dataplane.DropFragment},
		igIPv4(remote, pub, hdr.ProtoUDP, 0x4242, 3, nil, append(mk(0), make([]byte, 8)...))))
	first := igSum(remote, pub, hdr.ProtoUDP, igUDP(53, 40001, append(mk(0), make([]byte, 32)...)))
	add(v4("v4 first fragment to an unmapped port", nat4, igIPv4(remote, pub, hdr.ProtoUDP, 0x4343, 0x2000, nil, first[:24])))
	add(v4("v4 later fragment of that dropped first fragment", []dataplane.Reason{dataplane.DropFragment},
		igIPv4(remote, pub, hdr.ProtoUDP, 0x4343, 3, nil, append(mk(0), first[24:]...))))
	add(v4("v4 ip options (record route) to the live flow's port", []dataplane.Reason{dataplane.DropIPOptions},
		igIPv4(remote, pub, hdr.ProtoUDP, 8, 0, []byte{7, 7, 4, 0, 0, 0, 0, 1},
			igSum(remote, pub, hdr.ProtoUDP, igUDP(7007, mapped, mk(0))))))
	// Spoofed sources, to the live flow's port and to port 22.
	for _, s := range []struct {
		name string
		a    netip.Addr
		fb   bool
	}{
		{"lan host 192.168.77.5", netip.MustParseAddr("192.168.77.5"), false},
		{"the lan host itself", HostAddr.Addr(), false},
		{"the router's lan address", LANPrefix.Addr(), false},
		{"the session's own address", pub, false},
		{"the AC's address", ACAddr, false},
		{"loopback 127.0.0.1", netip.MustParseAddr("127.0.0.1"), true},
		{"this network 0.1.2.3", netip.MustParseAddr("0.1.2.3"), true},
		{"multicast 224.0.0.5", netip.MustParseAddr("224.0.0.5"), true},
		{"reserved 240.0.0.1", netip.MustParseAddr("240.0.0.1"), true},
		{"broadcast 255.255.255.255", netip.MustParseAddr("255.255.255.255"), true},
	} {
		want, pass, name := martian, 0, "v4 spoofed "+s.name+" to the live flow's port"
		if s.a == ACAddr {
			// The session's peer is an Internet address like any other:
			// it may reach a mapped port (EIF).
			want, pass, name = nil, 1, "v4 from the AC's address to the live flow's port (EIF: passes)"
		}
		add(igRow{name: name, fallback: s.fb, want: want, pass: pass,
			pkts: [][]byte{w4(s.a, hdr.ProtoUDP, igUDP(7007, mapped, mk(0)))}})
		add(igRow{name: "v4 spoofed " + s.name + ", tcp syn :22", fallback: s.fb, want: want,
			pkts: [][]byte{w4(s.a, hdr.ProtoTCP, igTCP(40000, 22, igSYN, mk(0)))}})
	}
	// ICMP errors quoting packets the LAN never sent.
	quote := func(src, dst netip.Addr, sport, dport uint16) []byte {
		return igPkt4(src, dst, hdr.ProtoUDP, igUDP(sport, dport, mk(0)))
	}
	add(v4("v4 icmp error quoting an unmapped port", nat4,
		w4(remote, hdr.ProtoICMP, igICMP(3, 3, 0, quote(pub, remote, 40001, 53)))))
	add(v4("v4 icmp error quoting the live flow's port to another remote", nat4,
		w4(igRemote2, hdr.ProtoICMP, igICMP(3, 3, 0, quote(pub, igRemote2, mapped, 7007)))))
	add(v4("v4 icmp error quoting another source", nat4,
		w4(remote, hdr.ProtoICMP, igICMP(3, 3, 0, quote(ACAddr, remote, mapped, 7007)))))
	add(v4("v4 icmp frag needed quoting a tcp port never used", nat4,
		w4(remote, hdr.ProtoICMP, igICMP(3, 4, 1400, igPkt4(pub, remote, hdr.ProtoTCP, igTCP(40002, 443, igSYN, mk(0)))))))
	add(v4("v4 icmp time exceeded quoting the live flow's port, tcp", nat4,
		w4(remote, hdr.ProtoICMP, igICMP(11, 0, 0, igPkt4(pub, remote, hdr.ProtoTCP, igTCP(mapped, 7007, igSYN, mk(0)))))))

	// IPv6 to the LAN host, no state: the firewall keys on both
	// addresses, the protocol and both ports.
	add(v6("v6 udp to a closed port", fw, w6(remote6, nil, hdr.ProtoUDP, igUDP(53, 9999, mk(0)))))
	add(v6("v6 tcp syn to port 22", fw, w6(remote6, nil, hdr.ProtoTCP, igTCP(40000, 22, igSYN, mk(0)))))
	add(v6("v6 tcp ack without a flow", fw, w6(remote6, nil, hdr.ProtoTCP, igTCP(40000, 22, igACK, mk(0)))))
	add(v6("v6 tcp rst without a flow", fw, w6(remote6, nil, hdr.ProtoTCP, igTCP(40000, 22, igRST, mk(0)))))
	add(v6("v6 udp to the live flow's port, other remote", fw, w6(igRemote26, nil, hdr.ProtoUDP, igUDP(7, live6, mk(0)))))
	add(v6("v6 udp to the live flow's port, other source port", fw, w6(remote6, nil, hdr.ProtoUDP, igUDP(8, live6, mk(0)))))
	add(v6("v6 tcp syn to the live udp flow's port", fw, w6(remote6, nil, hdr.ProtoTCP, igTCP(7, live6, igSYN, mk(0)))))
	add(v6("v6 echo reply, unknown id", fw, w6(remote6, nil, hdr.ProtoICMP6, igICMP(hdr.ICMP6EchoReply, 0, 0x77770001, mk(0)))))
	add(v6("v6 esp to the lan host (RFC 6092 REC-22: passes)", nil, w6(remote6, nil, igESP, append([]byte{0, 0, 0x10, 1, 0, 0, 0, 1}, mk(0)...))))
	rows[len(rows)-1].pass = 1
	// Other addresses of the LAN prefix and of the delegated prefix.
	other := func(name string, dst netip.Addr) {
		add(v6("v6 udp to "+name, nil, igPkt6(remote6, dst, nil, hdr.ProtoUDP, igUDP(53, 9999, mk(0)))))
		add(v6("v6 tcp syn :22 to "+name, nil, igPkt6(remote6, dst, nil, hdr.ProtoTCP, igTCP(40000, 22, igSYN, mk(0)))))
	}
	p := g.lan6.Prefix
	p[15] = 0x34
	p[14] = 0x12
	other("a lan address nobody has", netip.AddrFrom16(p))
	other("the router's lan address", netip.AddrFrom16(g.lan6.Router))
	rows[len(rows)-1].toRouter, rows[len(rows)-2].toRouter = true, true
	other("the lan prefix's subnet-router anycast", netip.AddrFrom16(g.lan6.Prefix))
	q := g.pd.Addr().As16()
	q[7] |= 0xff // the delegated prefix's last /64 (the LAN takes the first)
	q[15] = 1
	if lq := netip.AddrFrom16(q); !g.pd.Contains(lq) || netip.PrefixFrom(netip.AddrFrom16(g.lan6.Prefix), 64).Contains(lq) {
		panic(fmt.Sprintf("%s: not in %s outside the lan", lq, g.pd))
	}
	other("the delegated prefix outside the lan", netip.AddrFrom16(q))
	// Spoofed sources to the live flow's port.
	lanOther := g.lan6.Prefix
	lanOther[15] = 0x20
	for _, s := range []struct {
		name string
		a    netip.Addr
	}{
		{"lan prefix", netip.AddrFrom16(lanOther)}, {"the lan host itself", host6},
		{"the router's lan address", netip.AddrFrom16(g.lan6.Router)},
		{"link-local fe80::1", netip.MustParseAddr("fe80::1")}, {"multicast ff02::1", netip.MustParseAddr("ff02::1")},
		{"multicast ff0e::1", netip.MustParseAddr("ff0e::1")}, {"loopback ::1", netip.IPv6Loopback()},
		{"unspecified ::", netip.IPv6Unspecified()}, {"v4-mapped ::ffff:127.0.0.1", netip.MustParseAddr("::ffff:127.0.0.1")},
	} {
		want := martian
		if s.a.Is4In6() {
			// Not a martian to the router (RFC 4291 2.5.5.2 keeps the
			// v4-mapped range off the wire); no state admits it.
			want = []dataplane.Reason{dataplane.DropMartian, dataplane.DropFirewall}
		}
		add(igRow{name: "v6 spoofed " + s.name + " to the live flow's port", v6: true, fallback: true, want: want,
			pkts: [][]byte{w6(s.a, nil, hdr.ProtoUDP, igUDP(7, live6, mk(0)))}})
	}
	// Extension headers and fragments: a TCP SYN to port 22 of the LAN
	// host from the remote it has a live UDP flow with.
	syn22 := func(n int) []byte {
		return igSum(remote6, host6, hdr.ProtoTCP, igTCP(40000, 22, igSYN, append(mk(0), make([]byte, n)...)))
	}
	add(v6("v6 hop-by-hop, tcp syn :22", fw, igIPv6(remote6, host6, []igExt{igHBH()}, hdr.ProtoTCP, syn22(0))))
	add(v6("v6 destination options, tcp syn :22", fw, igIPv6(remote6, host6, []igExt{igDst()}, hdr.ProtoTCP, syn22(0))))
	add(v6("v6 routing header type 0, tcp syn :22", fw, igIPv6(remote6, host6, []igExt{igRH(0, host6)}, hdr.ProtoTCP, syn22(0))))
	add(v6("v6 routing header type 4 (srh), tcp syn :22", fw, igIPv6(remote6, host6, []igExt{igRH(4, host6)}, hdr.ProtoTCP, syn22(0))))
	add(v6("v6 atomic fragment (off 0, M=0), tcp syn :22", fw, igIPv6(remote6, host6, []igExt{igFrag(0, false, 0x1001)}, hdr.ProtoTCP, syn22(0))))
	s := syn22(16)
	add(v6("v6 first fragment (off 0, M=1), tcp syn :22", fw, igIPv6(remote6, host6, []igExt{igFrag(0, true, 0x1002)}, hdr.ProtoTCP, s[:24])))
	add(v6("v6 later fragment of that dropped first fragment", fw,
		igIPv6(remote6, host6, []igExt{igFrag(3, false, 0x1002)}, hdr.ProtoTCP, append(mk(0), s[32:]...))))
	add(v6("v6 later fragment without a first", fw,
		igIPv6(remote6, host6, []igExt{igFrag(3, false, 0x1003)}, hdr.ProtoTCP, append(mk(0), make([]byte, 8)...))))
	add(v6("v6 later fragment of a udp datagram never sent, from the live flow's remote", fw,
		igIPv6(remote6, host6, []igExt{igFrag(1, false, 0x1004)}, hdr.ProtoUDP, append(mk(0), make([]byte, 8)...))))
	add(v6("v6 chain hbh+dst+rh0+frag, tcp syn :22", fw,
		igIPv6(remote6, host6, []igExt{igHBH(), igDst(), igRH(0, host6), igFrag(0, false, 0x1005)}, hdr.ProtoTCP, syn22(0))))
	add(v6("v6 atomic fragment, udp to the live flow's port, other remote", fw,
		igPkt6(igRemote26, host6, []igExt{igFrag(0, false, 0x1006)}, hdr.ProtoUDP, igUDP(7, live6, mk(0)))))
	// ICMPv6 errors quoting packets the LAN host never sent.
	q6 := func(src, dst netip.Addr, sport, dport uint16) []byte {
		return igPkt6(src, dst, nil, hdr.ProtoUDP, igUDP(sport, dport, mk(0)))
	}
	icmp6err := func(from netip.Addr, typ uint8, rest uint32, quoted []byte) []byte {
		return w6(from, nil, hdr.ProtoICMP6, igICMP(typ, 0, rest, quoted))
	}
	add(v6("v6 dest unreachable quoting a flow to another remote", fw, icmp6err(igRemote26, 1, 0, q6(host6, igRemote26, live6, 7))))
	add(v6("v6 packet too big quoting a port never used", fw, icmp6err(remote6, 2, 1280, q6(host6, remote6, 7777, 7))))
	add(v6("v6 time exceeded quoting another lan host's packet", fw, icmp6err(remote6, 3, 0, q6(netip.AddrFrom16(lanOther), remote6, live6, 7))))
	add(v6("v6 parameter problem quoting tcp never sent", fw,
		icmp6err(remote6, 4, 40, igPkt6(host6, remote6, nil, hdr.ProtoTCP, igTCP(22, 40000, igSYN|igACK, mk(0))))))

	// Floods: ESP and UDP to random ports from random sources.
	const flood = 3000
	rnd := rand.New(rand.NewPCG(7, 11))
	src4 := func() netip.Addr { // 198.18.0.0/15 (RFC 2544), routable through the ISP
		return netip.AddrFrom4([4]byte{198, 18 + byte(rnd.IntN(2)), byte(rnd.Uint32()), byte(1 + rnd.IntN(254))})
	}
	src6 := func() netip.Addr { // outside the LAN and delegated prefixes
		a := netip.MustParseAddr("2001:db8:ff00::").As16()
		binary.BigEndian.PutUint64(a[8:], rnd.Uint64())
		a[5] = byte(rnd.Uint32())
		return netip.AddrFrom16(a)
	}
	port := func(avoid []uint16) uint16 {
		for {
			p := uint16(rnd.Uint32())
			ok := p > 0 && p != 500
			for _, a := range avoid {
				ok = ok && p != a
			}
			if ok {
				return p
			}
		}
	}
	floodRow := func(name string, v6 bool, pass int, gen func(seq int) []byte) {
		r := igRow{name: name, v6: v6, flood: true, pass: pass}
		for i := 0; i < flood; i++ {
			r.pkts = append(r.pkts, gen(i))
		}
		add(r)
	}
	floodRow("v4 flood: esp from random sources", false, 0, func(i int) []byte {
		return w4(src4(), igESP, append(binary.BigEndian.AppendUint32(nil, rnd.Uint32()), mk(i)...))
	})
	floodRow("v4 flood: udp to random ports", false, 0, func(i int) []byte {
		return w4(src4(), hdr.ProtoUDP, igUDP(uint16(rnd.Uint32()), port(g.mapped), mk(i)))
	})
	floodRow("v6 flood: udp to random ports", true, 0, func(i int) []byte {
		return w6(src6(), nil, hdr.ProtoUDP, igUDP(uint16(rnd.Uint32()), port(g.live6), mk(i)))
	})
	// Last: what passes by policy also fills the capture's buffer.
	floodRow("v6 flood: esp from random sources (RFC 6092 REC-22: passes)", true, flood, func(i int) []byte {
		return w6(src6(), nil, igESP, append(binary.BigEndian.AppendUint32(nil, rnd.Uint32()), mk(i)...))
	})
	return rows
}

// TestIntegrationIngress: nothing unsolicited reaches the LAN, with real
// packets from a real kernel. The LAN host keeps live UDP flows to the
// Internet host over IPv4 (through the NAT) and IPv6 (through the
// firewall) while the Internet side sends every class of unsolicited
// packet (no state, spoofed sources, IPv6 extension headers and
// fragments, ICMP errors quoting packets the LAN never sent, floods) at
// the session's public IPv4 address and at the LAN host's IPv6 address
// and other addresses of its prefix. A capture on the LAN host's
// interface must see none of them (what passes by policy aside: IPsec
// to an IPv6 host, a mapped UDP port from any remote); each row's
// packets are counted as drops under the row's reasons; the live flows
// keep their echoes throughout and the lab's echo helpers work after.
func TestIntegrationIngress(t *testing.T) {
	for _, backend := range []string{"afpacket", "afxdp"} {
		t.Run(backend, func(t *testing.T) { testIngress(t, backend) })
	}
}

func testIngress(t *testing.T, backend string) {
	l := startLab(t, Options{Backend: backend, Workers: 2})
	host6, err := l.WaitAddr6(15 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pd, ok := l.Delegated()
	lan6 := l.R.Engine().LAN6()
	if !ok || lan6 == nil {
		t.Fatalf("no delegated prefix (%v) or LAN prefix (%v)", pd, lan6)
	}
	st := l.R.Client().Status()
	g := &igEnv{l: l, pub: netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, st.LocalAddr))),
		host6: host6, lan6: lan6, pd: pd}
	g.session6 = uint16(l.v6.session.Load())
	// The ISP forwards whatever source the Internet host claims (as a
	// transit network without uRPF would); what its kernel still
	// refuses (loopback, multicast, ...) the AC sends directly.
	for _, k := range []string{"all", "default", "isp1"} {
		if err := l.ISP.Sysctl("net.ipv4.conf."+k+".rp_filter", "0"); err != nil {
			t.Fatal(err)
		}
	}
	// The ISP's end of the WAN link speaks only PPPoE: its kernel's own
	// IPv6 (MLD reports) would be counted as unsupported in some row.
	if err := l.ISP.Sysctl("net.ipv6.conf."+ISPInterface+".disable_ipv6", "1"); err != nil {
		t.Fatal(err)
	}

	// Live flows: IPv4 to a recording echo service (their public ports),
	// IPv6 to the lab's echo service.
	rec, err := l.igStartRecorder(netip.AddrPortFrom(RemoteAddr, 7007))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.c.Close()
	var flows4, flows6 []*igFlow
	for i := 0; i < 4; i++ {
		f4, err := l.igStartFlow("udp4", netip.AddrPortFrom(RemoteAddr, 7007), 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer f4.close()
		f6, err := l.igStartFlow("udp6", netip.AddrPortFrom(Remote6Addr, 7), 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer f6.close()
		flows4, flows6 = append(flows4, f4), append(flows6, f6)
		g.live6 = append(g.live6, f6.port())
	}
	all := append(append([]*igFlow(nil), flows4...), flows6...)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n := 0
		for _, f := range all {
			if f.echoes.Load() > 0 {
				n++
			}
		}
		if n == len(all) && len(rec.mapped()) == len(flows4) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("live flows: %d of %d echoing, %d mappings seen; drops %v", n, len(all), len(rec.mapped()), l.R.Engine().Totals().DropMap())
		}
	}
	for _, m := range rec.mapped() {
		if m.Addr() != g.pub {
			t.Fatalf("a live flow arrived from %s, not the session's address %s", m, g.pub)
		}
		g.mapped = append(g.mapped, m.Port())
	}

	capt, err := l.igStartCapture(map[string]bool{
		"udp " + netip.AddrPortFrom(RemoteAddr, 7007).String(): true,
		"udp " + netip.AddrPortFrom(Remote6Addr, 7).String():   true,
		"udp " + netip.AddrPortFrom(RemoteAddr, 7).String():    true, // the echo helpers at the end
	})
	if err != nil {
		t.Fatal(err)
	}
	defer capt.close()
	// The sender: frames from the Internet host's MAC to the ISP's.
	if err := l.Inet.Do(func() (err error) {
		g.tx, err = rawsock.Open("inet0", 0x88b5) // receives nothing it would have to drain
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer g.tx.Close()
	ispMAC, err := l.ISP.MAC("isp1")
	if err != nil {
		t.Fatal(err)
	}
	hw, err := net.ParseMAC(ispMAC)
	if err != nil {
		t.Fatal(err)
	}
	inetMAC := g.tx.HardwareAddr()
	copy(g.ethHdr[0:], hw)
	copy(g.ethHdr[6:], inetMAC[:])
	binary.BigEndian.PutUint16(g.ethHdr[12:], hdr.EtherTypeIPv4)

	rows := g.rows()
	var results []igResult
	start := time.Now()
	for i := range rows {
		res := g.run(t, i, &rows[i], capt)
		results = append(results, res)
		if !res.ok {
			t.Errorf("%s (via %s): %s; drops %s", res.name, res.via, res.why, res.dropString())
		}
	}
	t.Logf("%d rows in %v", len(rows), time.Since(start).Round(time.Millisecond))

	// The live flows kept echoing to the end.
	snap := func() []uint64 {
		var s []uint64
		for _, f := range all {
			s = append(s, f.echoes.Load())
		}
		return s
	}
	s0 := snap()
	time.Sleep(time.Second)
	for i, n := range snap() {
		if n-s0[i] < 10 { // 20 sent in 1 s
			t.Errorf("live flow %d (%s) got %d echoes in the last second, want >= 10", i, all[i].c.LocalAddr(), n-s0[i])
		}
	}
	if got, err := l.UDPEcho(8, 5); err != nil || got != 40 {
		t.Errorf("after the table: %d of 40 UDP echoes over IPv4 (%v)", got, err)
	}
	if got, err := l.UDPEcho6(8, 5); err != nil || got != 40 {
		t.Errorf("after the table: %d of 40 UDP echoes over IPv6 (%v)", got, err)
	}
	time.Sleep(100 * time.Millisecond)

	var sb strings.Builder
	fmt.Fprintf(&sb, "%-78s %4s %5s %5s  %s\n", "row ("+backend+", 2 workers)", "via", "pkts", "lan", "drops")
	for _, r := range results {
		mark := ""
		if !r.ok {
			mark = "  FAIL: " + r.why
		}
		lan := fmt.Sprint(r.lan)
		if r.pass > 0 {
			lan += "*"
		}
		fmt.Fprintf(&sb, "%-78s %4s %5d %5s  %s%s\n", r.name, r.via, r.pkts, lan, r.dropString(), mark)
	}
	sb.WriteString("(* let in by policy)\n")
	t.Logf("\n%s", sb.String())
	t.Logf("router drops: %v", l.R.Stats().Drops)
	capt.mu.Lock()
	defer capt.mu.Unlock()
	t.Logf("LAN capture, unmarked frames by class: %v", capt.classes)
	for _, b := range capt.others {
		t.Logf("unmarked frame on the LAN (%s): %s", igClass(b), hex.EncodeToString(b[:min(len(b), 96)]))
	}
	for i, r := range rows {
		if b, ok := capt.first[i]; ok && r.pass == 0 {
			t.Errorf("LEAK %s: first frame on the LAN (%s): %s", r.name, igClass(b), hex.EncodeToString(b[:min(len(b), 128)]))
		}
	}
}
