package nat

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pppfwd/pppfwd/hdr"
)

// The reference model: a slow, obvious NAT over Go maps with eager
// expiry, written from the behaviour spec (package doc), not from the
// table code. It models every worker at once; ownership comes from the
// exported helpers (Partition, EndpointOwner, AssignForwards), which are
// part of the spec.

type mEP struct {
	pi   int
	lan  uint32
	port uint16
}

type mKey struct {
	pi    int
	lan   uint32
	lport uint16
	rem   uint32
	rport uint16
}

type mFlow struct {
	ext                  uint16
	seenOut, seenIn, est bool
	finOut, finIn, rst   bool
	exp                  uint32
}

type model struct {
	pub     uint32
	lan     uint32
	lanBits int
	ranges  []Range
	fwds    []Forward
	local   Range
	adf     bool
	cap     int
	perHost int
	to      [4]uint32
	maps    map[mEP]uint16
	flows   map[mKey]*mFlow
	// fconns are the forward states: keyed by the forward's LAN endpoint
	// and a remote endpoint the forwarded endpoint sent to via the WAN.
	fconns map[mKey]*mFlow
	// untracked counts forward packets that found the forward share or
	// the table full (coverage only).
	untracked int
}

type result struct {
	v      Verdict
	reason Reason
	out    tuple
	inner  tuple // ICMP errors: the translated quote
}

func newModel(cfg Config, ranges []Range) *model {
	return &model{pub: cfg.PublicAddr, lan: cfg.LANAddr, lanBits: cfg.LANBits, ranges: ranges, fwds: cfg.Forwards,
		local: cfg.LocalPorts, adf: cfg.Filtering == AddressDependent, cap: cfg.Capacity, perHost: cfg.MaxPerHost,
		to: [4]uint32{300, 7440, 240, 60}, maps: map[mEP]uint16{}, flows: map[mKey]*mFlow{},
		fconns: map[mKey]*mFlow{}}
}

func mPI(proto uint8) int {
	return map[uint8]int{hdr.ProtoTCP: 0, hdr.ProtoUDP: 1, hdr.ProtoICMP: 2}[proto]
}

func (m *model) owner(pi int, lan uint32, port uint16) int {
	return EndpointOwner([]uint8{hdr.ProtoTCP, hdr.ProtoUDP, hdr.ProtoICMP}[pi], lan, port, len(m.ranges))
}

func (m *model) isLAN(a uint32) bool {
	if m.lanBits == 0 {
		return true
	}
	return a>>(32-m.lanBits) == m.lan>>(32-m.lanBits)
}

func (m *model) fwdExt(pi int, p uint16) *Forward {
	for i, f := range m.fwds {
		if mPI(f.Proto) == pi && f.ExtPort == p {
			return &m.fwds[i]
		}
	}
	return nil
}

func (m *model) fwdLAN(pi int, a uint32, p uint16) *Forward {
	for i, f := range m.fwds {
		if mPI(f.Proto) == pi && f.LANAddr == a && f.LANPort == p {
			return &m.fwds[i]
		}
	}
	return nil
}

func (m *model) rangeOf(p uint16) int {
	for j, r := range m.ranges {
		if r.Contains(p) {
			return j
		}
	}
	return -1
}

// holderOf is the worker whose range or low share (below 1024 and the
// range's Lo, PortOwner(p) == j) holds external port p, or -1.
func (m *model) holderOf(p uint16) int {
	if j := m.rangeOf(p); j >= 0 {
		return j
	}
	for j, r := range m.ranges {
		if p != 0 && p < 1024 && p < r.Lo && PortOwner(p, len(m.ranges)) == j {
			return j
		}
	}
	return -1
}

// mappingAt returns the LAN endpoint mapped to external port p.
func (m *model) mappingAt(pi int, p uint16) (mEP, bool) {
	for ep, ext := range m.maps {
		if ep.pi == pi && ext == p {
			return ep, true
		}
	}
	return mEP{}, false
}

// expire removes dead flows and forward states, then mappings without
// flows.
func (m *model) expire(s uint32) {
	for k, f := range m.flows {
		if int32(s-f.exp) > 0 {
			delete(m.flows, k)
		}
	}
	for k, f := range m.fconns {
		if int32(s-f.exp) > 0 {
			delete(m.fconns, k)
		}
	}
	for ep := range m.maps {
		alive := false
		for k := range m.flows {
			if k.pi == ep.pi && k.lan == ep.lan && k.lport == ep.port {
				alive = true
			}
		}
		if !alive {
			delete(m.maps, ep)
		}
	}
}

// fwdConns counts the forward states of worker w (those of the forwards
// it owns).
func (m *model) fwdConns(w int) int {
	n := 0
	for k := range m.fconns {
		if m.fwdLAN(k.pi, k.lan, k.lport).Worker == w {
			n++
		}
	}
	return n
}

// slots counts worker w's table slots: flows, mappings, hosts, ADF
// permissions, forward states.
func (m *model) slots(w int) int {
	n := m.fwdConns(w)
	hosts := map[uint32]bool{}
	perms := map[[4]uint32]bool{}
	for k := range m.flows {
		if m.owner(k.pi, k.lan, k.lport) == w && m.fwdLAN(k.pi, k.lan, k.lport) == nil {
			n++
			hosts[k.lan] = true
			perms[[4]uint32{uint32(k.pi), k.lan, uint32(k.lport), k.rem}] = true
		}
	}
	for ep := range m.maps {
		if m.owner(ep.pi, ep.lan, ep.port) == w {
			n++
		}
	}
	n += len(hosts)
	if m.adf {
		n += len(perms)
	}
	return n
}

func (m *model) hostFlows(w int, h uint32) int {
	n := 0
	for k := range m.flows {
		if k.lan == h && m.owner(k.pi, k.lan, k.lport) == w {
			n++
		}
	}
	return n
}

func (m *model) portFree(pi int, p uint16) bool {
	if m.local.Contains(p) || m.fwdExt(pi, p) != nil {
		return false
	}
	_, used := m.mappingAt(pi, p)
	return !used
}

// allocPort is the allocation rule spelled out: worker w's ports are
// the ports p of its range (Range.Contains) and of its low share (below
// 1024 and the range's Lo, PortOwner(p) == w). A LAN port below 1024
// takes from the low share (unless its range holds it), any other from
// the range. In that set: the first free port from pref upward
// (wrapping) of pref's parity, then of any parity; a low pref then the
// same in the range.
func (m *model) allocPort(pi, w int, pref uint16) (uint16, bool) {
	r := m.ranges[w]
	var low, high []uint16
	for p := 1; p < 65536; p++ {
		q := uint16(p)
		switch {
		case r.Contains(q):
			high = append(high, q)
		case p < 1024 && p < int(r.Lo) && PortOwner(q, len(m.ranges)) == w:
			low = append(low, q)
		}
	}
	sets := [][]uint16{high}
	if pref < 1024 && !r.Contains(pref) && len(low) > 0 {
		sets = [][]uint16{low, high}
	}
	for _, set := range sets {
		for _, anyParity := range []bool{false, true} {
			first, found := uint16(0), false
			for _, p := range set {
				if (!anyParity && p&1 != pref&1) || !m.portFree(pi, p) {
					continue
				}
				if p >= pref {
					return p, true
				}
				if !found {
					first, found = p, true
				}
			}
			if found {
				return first, true
			}
		}
	}
	return 0, false
}

func (m *model) touch(f *mFlow, pi int, flags uint8, out bool, s uint32) {
	to := m.to[0]
	switch pi {
	case 2:
		to = m.to[3]
	case 0:
		syn, ack, fin, rst := flags&hdr.TCPSyn != 0, flags&hdr.TCPAck != 0, flags&hdr.TCPFin != 0, flags&hdr.TCPRst != 0
		switch {
		case rst:
			if out {
				f.seenOut = true
			} else {
				f.seenIn = true
			}
			f.rst = true
		default:
			if syn && !ack && (f.finOut || f.finIn || f.rst) {
				*f = mFlow{ext: f.ext}
			}
			if out {
				f.seenOut = true
				f.finOut = f.finOut || fin
				f.est = f.est || (ack && !syn && f.seenIn)
			} else {
				f.seenIn = true
				f.finIn = f.finIn || fin
				f.est = f.est || (ack && !syn && f.seenOut)
			}
		}
		to = m.to[2]
		if f.est && !f.finOut && !f.finIn && !f.rst {
			to = m.to[1]
		}
	}
	f.exp = s + to
}

func drop(r Reason) result   { return result{v: Drop, reason: r} }
func reject(r Reason) result { return result{v: Reject, reason: r} }

// outbound: a LAN packet.
func (m *model) outbound(tu tuple, s uint32) result {
	pi := mPI(tu.proto)
	if !m.isLAN(tu.src) {
		return drop(ReasonNotLAN)
	}
	if pi == 2 {
		switch tu.icmp {
		case hdr.ICMPEcho:
			if tu.dst == m.pub {
				return result{v: Local}
			}
		default:
			return drop(ReasonICMPType)
		}
	}
	target := -1
	if tu.dst == m.pub {
		if f := m.fwdExt(pi, tu.dport); f != nil {
			target = f.Worker
		} else if !m.local.Contains(tu.dport) {
			target = m.rangeOf(tu.dport)
		}
		if target < 0 {
			return result{v: Local}
		}
	}
	o := tu
	o.src = m.pub
	if f := m.fwdLAN(pi, tu.src, tu.sport); f != nil {
		o.sport = f.ExtPort
		// Through the WAN (not a reflection answer): the forward's worker
		// tracks the remote, within a quarter of its capacity (at least
		// one) and its free slots; a lone RST creates nothing.
		if target < 0 {
			k := mKey{pi, tu.src, tu.sport, tu.dst, tu.dport}
			fl := m.fconns[k]
			if fl == nil && !(pi == 0 && tu.flags&hdr.TCPRst != 0) {
				if m.fwdConns(f.Worker) < max(1, m.cap/4) && m.slots(f.Worker) < m.cap {
					fl = &mFlow{ext: f.ExtPort}
					m.fconns[k] = fl
				} else {
					m.untracked++
				}
			}
			if fl != nil {
				m.touch(fl, pi, tu.flags, true, s)
			}
		}
	} else {
		k := mKey{pi, tu.src, tu.sport, tu.dst, tu.dport}
		fl := m.flows[k]
		if fl == nil {
			if pi == 0 && tu.flags&hdr.TCPRst != 0 {
				return drop(ReasonNoState)
			}
			w := m.owner(pi, tu.src, tu.sport)
			if m.perHost > 0 && m.hostFlows(w, tu.src) >= m.perHost {
				return reject(ReasonHostLimit)
			}
			ep := mEP{pi, tu.src, tu.sport}
			ext, mapped := m.maps[ep]
			need := 1
			if m.hostFlows(w, tu.src) == 0 {
				need++
			}
			if !mapped {
				need++
			}
			if m.adf {
				has := false
				for k2 := range m.flows {
					if k2.pi == pi && k2.lan == tu.src && k2.lport == tu.sport && k2.rem == tu.dst {
						has = true
					}
				}
				if !has {
					need++
				}
			}
			if m.slots(w)+need > m.cap {
				return reject(ReasonTableFull)
			}
			if !mapped {
				var found bool
				if ext, found = m.allocPort(pi, w, tu.sport); !found {
					return reject(ReasonPortsExhausted)
				}
				m.maps[ep] = ext
			}
			fl = &mFlow{ext: ext}
			m.flows[k] = fl
		}
		m.touch(fl, pi, tu.flags, true, s)
		o.sport = fl.ext
	}
	if target < 0 {
		return result{v: Pass, out: o}
	}
	r := m.inboundL4(o, s)
	if r.v == Pass {
		r.v = Hairpin
	}
	return r
}

func (m *model) inboundL4(tu tuple, s uint32) result {
	pi := mPI(tu.proto)
	o := tu
	if f := m.fwdExt(pi, tu.dport); f != nil {
		if fl := m.fconns[mKey{pi, f.LANAddr, f.LANPort, tu.src, tu.sport}]; fl != nil {
			m.touch(fl, pi, tu.flags, false, s)
		}
		o.dst, o.dport = f.LANAddr, f.LANPort
		return result{v: Pass, out: o}
	}
	if m.holderOf(tu.dport) < 0 || m.local.Contains(tu.dport) {
		if m.local.Contains(tu.dport) {
			return result{v: Local}
		}
		return drop(ReasonNoMapping)
	}
	ep, ok := m.mappingAt(pi, tu.dport)
	if !ok {
		return drop(ReasonNoMapping)
	}
	if fl := m.flows[mKey{pi, ep.lan, ep.port, tu.src, tu.sport}]; fl != nil {
		m.touch(fl, pi, tu.flags, false, s)
	} else if m.adf {
		allowed := false
		for k := range m.flows {
			if k.pi == pi && k.lan == ep.lan && k.lport == ep.port && k.rem == tu.src {
				allowed = true
			}
		}
		if !allowed {
			return drop(ReasonFiltered)
		}
	}
	o.dst, o.dport = ep.lan, ep.port
	return result{v: Pass, out: o}
}

// inbound: a WAN packet (tu.dst is the public address or not).
func (m *model) inbound(tu tuple, s uint32) result {
	if tu.dst != m.pub {
		return drop(ReasonNotPublic)
	}
	pi := mPI(tu.proto)
	if pi != 2 {
		return m.inboundL4(tu, s)
	}
	switch tu.icmp {
	case hdr.ICMPEcho:
		return result{v: Local}
	case hdr.ICMPEchoReply:
		ep, ok := m.mappingAt(2, tu.sport)
		if !ok {
			return drop(ReasonNoMapping)
		}
		fl := m.flows[mKey{2, ep.lan, ep.port, tu.src, 0}]
		if fl == nil {
			return drop(ReasonNoState)
		}
		m.touch(fl, 2, 0, false, s)
		o := tu
		o.dst, o.sport = ep.lan, ep.port
		return result{v: Pass, out: o}
	}
	return drop(ReasonICMPType)
}

// errorIn: a WAN ICMP error from outer.src quoting q.
func (m *model) errorIn(outer, q tuple) result {
	if outer.dst != m.pub {
		return drop(ReasonNotPublic)
	}
	if q.src != m.pub {
		return drop(ReasonNoState)
	}
	pi := mPI(q.proto)
	if pi == 2 && q.icmp != hdr.ICMPEcho {
		return drop(ReasonICMPType)
	}
	nq := q
	if f := m.fwdExt(pi, q.sport); f != nil {
		// Only about a packet the forwarded server sent to that remote.
		if m.fconns[mKey{pi, f.LANAddr, f.LANPort, q.dst, q.dport}] == nil {
			return drop(ReasonNoState)
		}
		nq.src, nq.sport = f.LANAddr, f.LANPort
	} else {
		ep, ok := m.mappingAt(pi, q.sport)
		if !ok || m.holderOf(q.sport) < 0 {
			return drop(ReasonNoMapping)
		}
		if m.flows[mKey{pi, ep.lan, ep.port, q.dst, q.dport}] == nil {
			return drop(ReasonNoState)
		}
		nq.src, nq.sport = ep.lan, ep.port
	}
	o := outer
	o.dst = nq.src
	return result{v: Pass, out: o, inner: nq}
}

// errorOut: a LAN ICMP error quoting q.
func (m *model) errorOut(outer, q tuple) result {
	if !m.isLAN(outer.src) {
		return drop(ReasonNotLAN)
	}
	if outer.dst == m.pub || q.src == m.pub || q.dst == m.pub {
		return drop(ReasonHairpinICMP)
	}
	pi := mPI(q.proto)
	if pi == 2 {
		return drop(ReasonICMPType)
	}
	nq := q
	if f := m.fwdLAN(pi, q.dst, q.dport); f != nil {
		nq.dport = f.ExtPort
	} else {
		ext, ok := m.maps[mEP{pi, q.dst, q.dport}]
		if !ok {
			return drop(ReasonNoMapping)
		}
		nq.dport = ext
	}
	nq.dst = m.pub
	o := outer
	o.src = m.pub
	return result{v: Pass, out: o, inner: nq}
}

func reasonsSum(w *workers) [NumReasons]uint64 {
	var s [NumReasons]uint64
	for _, t := range w.tabs {
		st := t.Stats()
		for i := range s {
			s[i] += st.Reasons[i]
		}
	}
	return s
}

func sweep(tb testing.TB, w *workers, now int64) {
	for _, t := range w.tabs {
		for t.Expire(now, 2*len(t.slots)) > 0 {
		}
	}
}

// TestDifferential runs randomized traffic through the tables (1 to 3
// workers, EIF and ADF, small ranges and capacities so that limits,
// port conflicts and exhaustion happen) and through the model, and
// requires the same verdict, the same drop/reject reason and the same
// translated packet (decoded by gopacket, checksums verified).
func TestDifferential(t *testing.T) {
	runs, steps := 60, 400
	if testing.Short() {
		runs = 10
	}
	var cov coverage
	for run := range runs {
		rng := rand.New(rand.NewPCG(uint64(run), 99))
		nw := 1 + run%3
		cfg := Config{PublicAddr: pubA, LANAddr: lanNet, LANBits: 24, Ports: Range{Lo: 2000, Hi: 2012}, HashSeed: uint64(run + 1),
			Capacity: 12 + rng.IntN(40), LocalPorts: Range{Lo: 700, Hi: 702},
			Forwards: []Forward{
				{Proto: hdr.ProtoTCP, ExtPort: 2003, LANAddr: hostC, LANPort: 22},
				{Proto: hdr.ProtoUDP, ExtPort: 600, LANAddr: hostB, LANPort: 600},
			}}
		if run%2 == 1 {
			cfg.Filtering = AddressDependent
		}
		if run%4 < 2 {
			cfg.MaxPerHost = 2 + rng.IntN(4)
		}
		w := newWorkers(t, nw, cfg)
		mcfg := cfg
		mcfg.Forwards = w.tabs[0].cfg.Forwards
		m := newModel(mcfg, w.tabs[0].cfg.Ranges)
		t.Run(fmt.Sprintf("run%d-w%d-f%d", run, nw, cfg.Filtering), func(t *testing.T) {
			differential(t, rng, w, m, steps, &cov)
		})
	}
	t.Logf("coverage %+v", cov)
	// The traffic must reach every outcome, or the comparison proves little.
	for v, n := range cov.verdicts {
		if n == 0 && Verdict(v) != Redirect {
			t.Errorf("verdict %v never happened", Verdict(v))
		}
	}
	for _, r := range []Reason{ReasonNotLAN, ReasonNotPublic, ReasonNoMapping, ReasonNoState, ReasonICMPType,
		ReasonHairpinICMP, ReasonTableFull, ReasonHostLimit, ReasonPortsExhausted, ReasonFiltered} {
		if cov.reasons[r] == 0 {
			t.Errorf("reason %v never happened", r)
		}
	}
	if cov.icmpPass == 0 {
		t.Error("no ICMP error translated")
	}
	if cov.fwdICMPPass == 0 || cov.fwdICMPDrop == 0 || cov.fwdUntracked == 0 {
		t.Errorf("forward states: ICMP errors passed %d, dropped %d, packets untracked %d",
			cov.fwdICMPPass, cov.fwdICMPDrop, cov.fwdUntracked)
	}
}

// coverage counts the model's outcomes over all runs.
type coverage struct {
	verdicts [Local + 1]int
	reasons  [NumReasons]int
	icmpPass int
	// ICMP errors quoting a forward's port that the model passed or
	// dropped, and forward packets it left untracked.
	fwdICMPPass, fwdICMPDrop, fwdUntracked int
}

func differential(t *testing.T, rng *rand.Rand, w *workers, m *model, steps int, cov *coverage) {
	now := int64(1000) * sec
	hosts := []uint32{hostA, hostB, hostC}
	lports := []uint16{2000, 2001, 2003, 2005, 2011, 50, 600, 22, 3000}
	remotes := []uint32{srv1, srv2}
	rports := []uint16{53, 80, 443}
	flagSet := []uint8{hdr.TCPSyn, hdr.TCPSyn | hdr.TCPAck, hdr.TCPAck, hdr.TCPAck | hdr.TCPPsh, hdr.TCPFin | hdr.TCPAck, hdr.TCPRst}
	pick := func(n int) int { return rng.IntN(n) }
	extPort := func() uint16 {
		switch pick(4) {
		case 0:
			var ps []uint16
			for _, p := range m.maps {
				ps = append(ps, p)
			}
			if len(ps) > 0 {
				return ps[pick(len(ps))]
			}
		case 1:
			return []uint16{2003, 600, 700}[pick(3)]
		}
		return uint16(1996 + pick(20))
	}
	proto := func() uint8 { return []uint8{hdr.ProtoUDP, hdr.ProtoTCP, hdr.ProtoICMP}[pick(3)] }
	for step := range steps {
		switch r := pick(20); {
		case r == 0:
			now += int64(pick(400)) * sec
		case r == 1 && pick(4) == 0:
			now += int64(pick(8000)) * sec
		default:
			now += int64(pick(3)) * sec
		}
		s := nowSec(now)
		sweep(t, w, now)
		m.expire(s)
		before := reasonsSum(w)
		var b []byte
		var want result
		var got Verdict
		var desc string
		switch op := pick(10); {
		case op < 4: // LAN -> WAN or hairpin
			tu := tuple{proto: proto(), src: hosts[pick(3)], sport: lports[pick(len(lports))], dst: remotes[pick(2)], dport: rports[pick(3)]}
			if pick(8) == 0 {
				tu.src = srv2
			}
			if pick(5) == 0 {
				tu.dst, tu.dport = pubA, extPort()
			}
			if len(m.fwds) > 0 && pick(5) == 0 { // the forwarded server
				f := m.fwds[pick(len(m.fwds))]
				tu.proto, tu.src, tu.sport = f.Proto, f.LANAddr, f.LANPort
			}
			switch tu.proto {
			case hdr.ProtoTCP:
				tu.flags = flagSet[pick(len(flagSet))]
			case hdr.ProtoICMP:
				tu.icmp, tu.dport = hdr.ICMPEcho, 0
				if pick(10) == 0 {
					tu.icmp = hdr.ICMPEchoReply
				}
			}
			desc = fmt.Sprintf("out %+v", tu)
			b = build(t, tu)
			got, _ = w.lan(b, pick(len(w.tabs)), now)
			want = m.outbound(tu, s)
		case op < 8: // WAN -> LAN
			tu := tuple{proto: proto(), src: remotes[pick(2)], sport: rports[pick(3)], dst: pubA, dport: extPort()}
			if pick(10) == 0 {
				tu.dst = pubB
			}
			switch tu.proto {
			case hdr.ProtoTCP:
				tu.flags = flagSet[pick(len(flagSet))]
			case hdr.ProtoICMP:
				tu.icmp, tu.sport, tu.dport = hdr.ICMPEchoReply, tu.dport, 0
				if pick(6) == 0 {
					tu.icmp = hdr.ICMPEcho
				}
			}
			desc = fmt.Sprintf("in %+v", tu)
			b = build(t, tu)
			got, _ = w.wan(b, now)
			want = m.inbound(tu, s)
		case op == 8: // WAN ICMP error quoting one of our packets
			q := tuple{proto: proto(), src: pubA, sport: extPort(), dst: remotes[pick(2)], dport: rports[pick(3)]}
			fwdQuote := false
			if len(m.fwds) > 0 && pick(3) == 0 { // about the forwarded server's packet
				f := m.fwds[pick(len(m.fwds))]
				q.proto, q.sport, fwdQuote = f.Proto, f.ExtPort, true
			}
			if q.proto == hdr.ProtoICMP {
				q.icmp, q.dport = hdr.ICMPEcho, 0
			} else if q.proto == hdr.ProtoTCP {
				q.flags = hdr.TCPSyn
			}
			outer := tuple{proto: hdr.ProtoICMP, src: ip4(100, 64, 0, 1), dst: pubA, icmp: hdr.ICMPTimeExceeded}
			desc = fmt.Sprintf("icmp in quoting %+v", q)
			b = buildICMPError(t, outer.src, outer.dst, hdr.ICMPTimeExceeded, 0, build(t, q))
			got, _ = w.wan(b, now)
			want = m.errorIn(outer, q)
			if fwdQuote && want.v == Pass {
				cov.fwdICMPPass++
			} else if fwdQuote {
				cov.fwdICMPDrop++
			}
		default: // LAN ICMP error quoting a packet it received
			h := hosts[pick(3)]
			q := tuple{proto: []uint8{hdr.ProtoUDP, hdr.ProtoTCP}[pick(2)], src: remotes[pick(2)], sport: rports[pick(3)], dst: h, dport: lports[pick(len(lports))]}
			if q.proto == hdr.ProtoTCP {
				q.flags = hdr.TCPAck
			}
			if pick(8) == 0 {
				q.src = pubA // about a hairpinned packet
			}
			outer := tuple{proto: hdr.ProtoICMP, src: h, dst: q.src, icmp: hdr.ICMPDestUnreach}
			desc = fmt.Sprintf("icmp out quoting %+v", q)
			b = buildICMPError(t, outer.src, outer.dst, hdr.ICMPDestUnreach, hdr.ICMPCodePortUnreach, build(t, q))
			got, _ = w.lan(b, pick(len(w.tabs)), now)
			want = m.errorOut(outer, q)
		}
		after := reasonsSum(w)
		cov.verdicts[want.v]++
		if want.v == Drop || want.v == Reject {
			cov.reasons[want.reason]++
		}
		if want.v == Pass && want.inner.proto != 0 {
			cov.icmpPass++
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("step %d t=%ds %s: "+format, append([]any{step, s, desc}, args...)...)
		}
		if got != want.v {
			fail("verdict %v, model %v (reason %v); reasons now %v", got, want.v, want.reason, after)
		}
		switch got {
		case Drop, Reject:
			if after[want.reason] != before[want.reason]+1 {
				fail("reason: model %v, counters %v -> %v", want.reason, before, after)
			}
		case Pass, Hairpin:
			d := decode(t, b)
			wo := want.out
			if wo.proto == hdr.ProtoICMP && d.inner != nil {
				wo.icmp = d.icmp // outer type kept
			}
			if d.tuple != wo {
				fail("translated %+v, model %+v", d.tuple, wo)
			}
			if d.inner != nil && d.inner.tuple != want.inner {
				fail("quote %+v, model %+v", d.inner.tuple, want.inner)
			}
		}
		// Slot accounting agrees with the model.
		for k, tab := range w.tabs {
			if tab.used != m.slots(k) {
				fail("worker %d slots %d, model %d", k, tab.used, m.slots(k))
			}
		}
	}
	for _, tab := range w.tabs {
		checkInvariants(t, tab)
	}
	cov.fwdUntracked += m.untracked
}
