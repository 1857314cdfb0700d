package shaperbench

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/memport"
	"github.com/pppfwd/pppfwd/shaper"
)

// PipelineOptions configure the pipeline path.
type PipelineOptions struct {
	Workers int  // dataplane workers [1]
	Uplink  bool // shape LAN->WAN (the upload) instead of WAN->LAN
}

// PathReport is what a path says about itself after a run (see Reporter).
type PathReport struct {
	Name      string            // "shaper", "pass", "pipeline"
	Pipeline  bool              // packets went through dataplane.Engine
	Direction string            // "down" or "up" (pipeline only)
	Workers   int               // dataplane workers (pipeline only)
	Frames    uint64            // frames delivered and matched to their packet
	EngineTx  uint64            // frames the engine transmitted on the egress port
	Drops     map[string]uint64 // the engine's drops by reason
	// ShaperDrops are the FQ-CoDel drops (the engine's, or the shaper's).
	ShaperDrops uint64
	Lost        uint64 // packets seen dropped (a later one of the flow came out)
	InFlight    uint64 // packets sent, neither out nor seen dropped yet
	Errors      uint64 // frames out that match no packet in flight
	Err         error  // a failure that invalidates the run
}

// Reporter is implemented by paths that describe what they did; Run puts
// the shaped run's report in the Result and fails on PathReport.Err.
type Reporter interface{ Report() PathReport }

// PipelinePath runs the scenario through the real dataplane in the
// downlink direction (WAN->LAN, PPPoE decap, NAT in, shaper(down)) with one
// worker. See NewPipelinePath.
func PipelinePath(clk shaper.Clock, shaped bool, opts Options, drop func(*Packet)) (Path, error) {
	return NewPipelinePath(PipelineOptions{})(clk, shaped, opts, drop)
}

// NewPipelinePath returns a PathFactory that runs the scenario through a
// dataplane.Engine over memports, driven on the simulated clock: Send
// writes each packet as a frame (PPPoE on the WAN for downlink, Ethernet
// on the LAN for uplink) into the ingress port at its send time, Recv runs
// Engine.Poll and takes the frames the engine transmitted on the egress
// port, and NextEvent is the engine's next shaper release. Shaped, the
// engine shapes that direction at opts.Rate with opts.Config; not shaped,
// the same engine runs with that direction's shaper off (Rate 0).
//
// Each packet is a UDP datagram of Packet.Size IP bytes whose payload
// carries its flow index and sequence number, so a frame coming out is
// matched to its packet; a packet is known dropped when a later packet of
// its flow comes out first (the pipeline keeps order within a flow).
// Downlink flows get their NAT mapping from one uplink packet the first
// time they are seen. Frames are built in one reused buffer: the hot loop
// does not allocate.
func NewPipelinePath(po PipelineOptions) PathFactory {
	return func(clk shaper.Clock, shaped bool, opts Options, drop func(*Packet)) (Path, error) {
		return newPipePath(po, clk, shaped, opts, drop)
	}
}

// Limits of the pipeline path's packets.
const (
	pipeMinSize = hdr.IPv4MinLen + 8 + 8 // IP + UDP + tag (flow, seq)
	pipeMaxFlow = 40000                  // LAN source ports 20000..59999
	primeSeq    = ^uint32(0)             // tag of NAT priming packets
	remotePort  = 443
	lanPortBase = 20000
	remoteNet   = 203<<24 | 113<<8 // 203.0.113.0/24 (TEST-NET-3)
)

type inflight struct {
	seq uint32
	p   *Packet
}

// pipeFlow is one simulated flow with the packets it has in the pipeline.
type pipeFlow struct {
	host    uint32  // LAN address
	mac     [6]byte // LAN host MAC
	remote  uint32
	lanPort uint16
	ext     uint16 // NAT external port (0: not learned yet)
	nextSeq uint32
	q       []inflight // ring of packets in flight, oldest at head
	head, n int
}

func (f *pipeFlow) push(e inflight) {
	if f.n == len(f.q) {
		q := make([]inflight, max(2*len(f.q), 64))
		for i := 0; i < f.n; i++ {
			q[i] = f.q[(f.head+i)%len(f.q)]
		}
		f.q, f.head = q, 0
	}
	f.q[(f.head+f.n)%len(f.q)] = e
	f.n++
}

func (f *pipeFlow) pop() inflight {
	e := f.q[f.head]
	f.q[f.head] = inflight{}
	f.head = (f.head + 1) % len(f.q)
	f.n--
	return e
}

type pipePath struct {
	e        *dataplane.Engine
	sim      *dataplane.Sim
	lan, wan *memport.Port
	sess     *hdr.Session
	uplink   bool
	workers  int
	drop     func(*Packet)

	flows  []pipeFlow
	byHash map[uint32]int32
	hosts  map[uint32]uint32 // Packet.Host -> LAN address

	scratch *nic.Frame
	dirty   bool      // frames injected since the last Poll
	pending []*Packet // delivered, not yet returned by Recv
	rd      int
	onOut   func([]byte) // p.out, bound once
	onPrime func([]byte) // p.primeOut, bound once
	priming int32        // flow being primed

	frames, lost, errs uint64
	err                error
}

func newPipePath(po PipelineOptions, clk shaper.Clock, shaped bool, opts Options, drop func(*Packet)) (*pipePath, error) {
	w := max(po.Workers, 1)
	for _, sz := range []int{opts.BulkSize, opts.PingSize} {
		if sz < pipeMinSize || sz > pipeline.Session().MTU {
			return nil, fmt.Errorf("shaperbench: packet size %d outside the pipeline path's [%d, %d] (PPPoE MTU)", sz, pipeMinSize, pipeline.Session().MTU)
		}
	}
	lan := memport.New("lan", w, 4096)
	wan := memport.New("wan", w, 4096)
	cfg := dataplane.Config{
		Workers: w, LAN: lan, WAN: wan,
		RouterMAC: pipeline.RouterMAC, RouterAddr: pipeline.RouterAddr,
		LANNet: pipeline.LANNet, LANBits: pipeline.LANBits,
		Clock: clk,
		// A simulation: steering holds back, never drops.
		SteerWait: -1,
	}
	cfg.NAT.Capacity = 4 * pipeMaxFlow
	if shaped {
		sp := shaper.Spec{Rate: opts.Rate, Config: opts.Config}
		if err := sp.Config.Validate(); err != nil {
			return nil, err
		}
		if po.Uplink {
			cfg.Up = sp
		} else {
			cfg.Down = sp
		}
	}
	e, err := dataplane.New(cfg)
	if err != nil {
		return nil, err
	}
	p := &pipePath{e: e, sim: dataplane.Simulate(e), lan: lan, wan: wan, sess: pipeline.Session(), uplink: po.Uplink, workers: w, drop: drop,
		byHash: map[uint32]int32{}, hosts: map[uint32]uint32{}, scratch: nic.NewFrame(),
		pending: make([]*Packet, 0, 1024)}
	e.SetSession(p.sess)
	p.onOut = p.out
	p.onPrime = p.primeOut
	return p, nil
}

// flow returns the index of pk's flow, creating (and for downlink priming)
// it on first sight; -1 on failure (p.err set).
func (p *pipePath) flow(pk *Packet) int32 {
	if i, ok := p.byHash[pk.Flow]; ok {
		return i
	}
	if p.err != nil {
		return -1
	}
	fi := len(p.flows)
	if fi >= pipeMaxFlow {
		p.err = fmt.Errorf("shaperbench: more than %d flows", pipeMaxFlow)
		return -1
	}
	host, ok := p.hosts[pk.Host]
	if !ok {
		n := uint32(len(p.hosts))
		if n >= 1<<(32-pipeline.LANBits)-16 {
			p.err = errors.New("shaperbench: too many LAN hosts")
			return -1
		}
		host = pipeline.LANNet | (10 + n)
		p.hosts[pk.Host] = host
	}
	p.flows = append(p.flows, pipeFlow{
		host:    host,
		mac:     [6]byte{0x02, 0x60, 0, byte(host >> 16), byte(host >> 8), byte(host)},
		remote:  remoteNet | uint32(1+fi%200),
		lanPort: uint16(lanPortBase + fi),
	})
	f := &p.flows[fi]
	p.e.SetNeighbor(f.host, f.mac)
	p.byHash[pk.Flow] = int32(fi)
	if !p.uplink {
		if err := p.prime(int32(fi)); err != nil {
			p.err = err
			return -1
		}
	}
	return int32(fi)
}

// prime sends one uplink packet of flow fi through the engine and learns
// the NAT's external port from the WAN side.
func (p *pipePath) prime(fi int32) error {
	f := &p.flows[fi]
	b := p.lanFrame(f, fi, primeSeq, pipeMinSize)
	q := max(p.e.LANOwner(b[hdr.EthernetLen:]), 0)
	if !p.lan.Inject(q, b) {
		return errors.New("shaperbench: LAN ring full while priming")
	}
	p.priming = fi
	for range 8 {
		p.poll()
		for q := range p.workers {
			p.wan.Drain(q, p.onPrime)
		}
		if f.ext != 0 {
			return nil
		}
	}
	return fmt.Errorf("shaperbench: priming flow %d: no NAT mapping came out (drops %v)", fi, p.e.Totals().DropMap())
}

func (p *pipePath) primeOut(b []byte) {
	fi, seq, udp, ok := p.parseWAN(b)
	if ok && seq == primeSeq && fi == p.priming {
		p.flows[fi].ext = hdr.UDP(udp).SrcPort()
	}
}

// ipUDP writes an IPv4+UDP header for size IP bytes and the tag at b.
func ipUDP(b []byte, src, dst uint32, sport, dport uint16, fi int32, seq uint32, size int) {
	ip := hdr.IPv4(b)
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(size))
	binary.BigEndian.PutUint16(ip[4:], uint16(seq))
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF
	ip[8], ip[9] = 64, hdr.ProtoUDP
	binary.BigEndian.PutUint32(ip[12:], src)
	binary.BigEndian.PutUint32(ip[16:], dst)
	ip.ComputeChecksum()
	u := b[hdr.IPv4MinLen:]
	binary.BigEndian.PutUint16(u[0:], sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(size-hdr.IPv4MinLen))
	binary.BigEndian.PutUint16(u[6:], 0) // no checksum (IPv4): the tag changes per packet
	binary.BigEndian.PutUint32(u[8:], uint32(fi))
	binary.BigEndian.PutUint32(u[12:], seq)
}

// lanFrame builds flow f's uplink frame in the scratch buffer.
func (p *pipePath) lanFrame(f *pipeFlow, fi int32, seq uint32, size int) []byte {
	fr := p.scratch
	fr.Off, fr.Len = nic.Headroom, hdr.EthernetLen+size
	b := fr.Data()
	eth := hdr.Ethernet(b)
	eth.SetAddrs(pipeline.RouterMAC, f.mac)
	eth.SetType(hdr.EtherTypeIPv4)
	ipUDP(b[hdr.EthernetLen:], f.host, f.remote, f.lanPort, remotePort, fi, seq, size)
	return b
}

// wanFrame builds flow f's downlink PPPoE frame in the scratch buffer.
func (p *pipePath) wanFrame(f *pipeFlow, fi int32, seq uint32, size int) []byte {
	fr := p.scratch
	fr.Off, fr.Len = nic.Headroom, size
	ipUDP(fr.Data(), f.remote, p.sess.LocalAddr, remotePort, f.ext, fi, seq, size)
	p.sess.Encap(fr) // headroom is ample
	b := fr.Data()
	hdr.Ethernet(b).SetAddrs(p.sess.LocalMAC, p.sess.PeerMAC) // from the AC to us
	return b
}

// Send implements Path.
func (p *pipePath) Send(_ int64, pk *Packet) {
	fi := p.flow(pk)
	if fi < 0 {
		p.drop(pk)
		return
	}
	f := &p.flows[fi]
	seq := f.nextSeq
	f.nextSeq++
	var ok bool
	if p.uplink {
		b := p.lanFrame(f, fi, seq, pk.Size)
		ok = p.lan.Inject(max(p.e.LANOwner(b[hdr.EthernetLen:]), 0), b)
	} else {
		ok = p.wan.Inject(0, p.wanFrame(f, fi, seq, pk.Size))
	}
	if !ok { // the ingress ring is full: the NIC drops it
		p.drop(pk)
		return
	}
	f.push(inflight{seq: seq, p: pk})
	p.dirty = true
}

func (p *pipePath) poll() {
	for i := 0; i < 64 && p.sim.Poll() > 0; i++ {
	}
	p.dirty = false
}

// Recv implements Path.
func (p *pipePath) Recv(now int64, out []*Packet) int {
	if p.rd == len(p.pending) {
		p.rd, p.pending = 0, p.pending[:0]
		if ev := p.sim.NextEvent(); p.dirty || ev != 0 && ev <= now {
			p.poll()
			for q := range p.workers {
				if p.uplink {
					p.wan.Drain(q, p.onOut)
				} else {
					p.lan.Drain(q, p.onOut)
				}
			}
		}
	}
	n := copy(out, p.pending[p.rd:])
	p.rd += n
	return n
}

// NextEvent implements Path.
func (p *pipePath) NextEvent(now int64) int64 {
	if p.dirty || p.rd < len(p.pending) {
		return now
	}
	return p.sim.NextEvent()
}

// parseWAN reads the tag of an uplink frame the engine sent on the WAN.
func (p *pipePath) parseWAN(b []byte) (fi int32, seq uint32, udp []byte, ok bool) {
	const o = hdr.EthernetLen + hdr.PPPoELen + hdr.PPPLen
	if len(b) < o+pipeMinSize || hdr.Ethernet(b).Type() != hdr.EtherTypePPPoESess {
		return 0, 0, nil, false
	}
	pp := hdr.PPPoE(b[hdr.EthernetLen:])
	ip := hdr.IPv4(b[o:])
	if pp.SessionID() != p.sess.ID || pp.PPPProto() != hdr.PPPIPv4 || !ip.IsValid() ||
		ip.Protocol() != hdr.ProtoUDP || ip.Src() != p.sess.LocalAddr {
		return 0, 0, nil, false
	}
	udp = ip[hdr.IPv4MinLen:]
	fi = int32(binary.BigEndian.Uint32(udp[8:]))
	if fi < 0 || int(fi) >= len(p.flows) {
		return 0, 0, nil, false
	}
	return fi, binary.BigEndian.Uint32(udp[12:]), udp, true
}

// out matches a frame the engine transmitted to its packet.
func (p *pipePath) out(b []byte) {
	var (
		fi   int32
		seq  uint32
		size int
		ok   bool
	)
	if p.uplink {
		var udp []byte
		fi, seq, udp, ok = p.parseWAN(b)
		if ok {
			f := &p.flows[fi]
			if f.ext == 0 {
				f.ext = hdr.UDP(udp).SrcPort()
			}
			ok = hdr.UDP(udp).SrcPort() == f.ext && hdr.UDP(udp).DstPort() == remotePort
			size = len(b) - (hdr.EthernetLen + hdr.PPPoELen + hdr.PPPLen)
		}
	} else {
		fi, seq, size, ok = p.parseLAN(b)
	}
	if !ok {
		p.errs++
		return
	}
	f := &p.flows[fi]
	for f.n > 0 {
		d := int32(seq - f.q[f.head].seq)
		if d < 0 {
			break // older than anything in flight: not ours
		}
		e := f.pop()
		if d > 0 { // overtaken: the pipeline dropped it
			p.lost++
			p.drop(e.p)
			continue
		}
		if e.p.Size != size { // mangled: an error, and the packet is lost
			p.errs++
			p.lost++
			p.drop(e.p)
			return
		}
		p.frames++
		p.pending = append(p.pending, e.p)
		return
	}
	p.errs++
}

// parseLAN reads the tag of a downlink frame the engine sent on the LAN and
// checks it went to the flow's host and port.
func (p *pipePath) parseLAN(b []byte) (fi int32, seq uint32, size int, ok bool) {
	if len(b) < hdr.EthernetLen+pipeMinSize || hdr.Ethernet(b).Type() != hdr.EtherTypeIPv4 {
		return 0, 0, 0, false
	}
	ip := hdr.IPv4(b[hdr.EthernetLen:])
	if !ip.IsValid() || ip.Protocol() != hdr.ProtoUDP || ip.TotalLen() < pipeMinSize {
		return 0, 0, 0, false
	}
	u := ip[hdr.IPv4MinLen:]
	fi = int32(binary.BigEndian.Uint32(u[8:]))
	if fi < 0 || int(fi) >= len(p.flows) {
		return 0, 0, 0, false
	}
	f := &p.flows[fi]
	if ip.Dst() != f.host || [6]byte(b[0:6]) != f.mac || hdr.UDP(u).DstPort() != f.lanPort || ip.Src() != f.remote {
		return 0, 0, 0, false
	}
	return fi, binary.BigEndian.Uint32(u[12:]), ip.TotalLen(), true
}

// Report implements Reporter.
func (p *pipePath) Report() PathReport {
	t := p.e.Totals()
	r := PathReport{Name: "pipeline", Pipeline: true, Direction: "down", Workers: p.workers,
		Frames: p.frames, EngineTx: t.TxLAN, Drops: t.DropMap(), ShaperDrops: t.Drops[dataplane.DropShaper],
		Lost: p.lost, Errors: p.errs, Err: p.err}
	for i := range p.flows {
		r.InFlight += uint64(p.flows[i].n)
	}
	if p.uplink {
		r.Direction, r.EngineTx = "up", t.TxWAN
	}
	if p.err == nil && p.errs > 0 {
		r.Err = fmt.Errorf("shaperbench: %d frames out of the pipeline matched no packet", p.errs)
	}
	return r
}

// Close implements io.Closer.
func (p *pipePath) Close() error {
	return errors.Join(p.lan.Close(), p.wan.Close())
}
