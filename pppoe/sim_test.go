package pppoe

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// simNet is a deterministic wire for client/server cores: frames are
// delivered in order to every other node (a hub), and when none are in
// flight the manual clock jumps to the earliest timer.
type simNet struct {
	t     testing.TB
	now   time.Time
	nodes []*simNode
	queue []simFrame
	// drop, when set, discards frames (loss, a dead peer).
	drop func(from *simNode, b []byte) bool
	sent []simFrame // capture of every frame sent
	rng  *rand.Rand
}

type simFrame struct {
	from *simNode
	at   time.Time
	b    []byte
}

type simNode struct {
	net *simNet
	mac [6]byte
	c   core
	// fail, when set, makes WriteFrame return its error (the frame is
	// then not sent).
	fail func(b []byte) error
}

func newSimNet(t testing.TB) *simNet {
	return &simNet{t: t, now: time.Unix(1_700_000_000, 0), rng: rand.New(rand.NewPCG(1, 2))}
}

func (n *simNet) rand() uint64 { return n.rng.Uint64() }

func (n *simNet) conn(mac byte) *simNode {
	nd := &simNode{net: n, mac: [6]byte{2, 0, 0, 0, 0, mac}}
	n.nodes = append(n.nodes, nd)
	return nd
}

func (nd *simNode) ReadFrame(b []byte, timeout time.Duration) (int, error) { return 0, ErrTimeout }
func (nd *simNode) WriteFrame(b []byte) error {
	if nd.fail != nil {
		if err := nd.fail(b); err != nil {
			return err
		}
	}
	f := simFrame{nd, nd.net.now, append([]byte(nil), b...)}
	nd.net.sent = append(nd.net.sent, f)
	if nd.net.drop == nil || !nd.net.drop(nd, f.b) {
		nd.net.queue = append(nd.net.queue, f)
	}
	return nil
}
func (nd *simNode) HardwareAddr() [6]byte { return nd.mac }
func (nd *simNode) Close() error          { return nil }

func (n *simNet) start() {
	for _, nd := range n.nodes {
		if nd.c != nil {
			nd.c.start(n.now)
		}
	}
}

// run advances the simulation until cond holds or d of simulated time has
// passed; it reports whether cond held.
func (n *simNet) run(d time.Duration, cond func() bool) bool {
	end := n.now.Add(d)
	for i := 0; i < 1_000_000; i++ {
		if cond != nil && cond() {
			return true
		}
		if len(n.queue) > 0 {
			f := n.queue[0]
			n.queue = n.queue[1:]
			for _, nd := range n.nodes {
				if nd != f.from && nd.c != nil {
					nd.c.input(f.b, n.now)
				}
			}
			continue
		}
		var next time.Time
		for _, nd := range n.nodes {
			if nd.c == nil {
				continue
			}
			if t := nd.c.next(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
		if next.IsZero() || next.After(end) {
			n.now = end
			return cond != nil && cond()
		}
		if next.After(n.now) {
			n.now = next
		}
		for _, nd := range n.nodes {
			if nd.c != nil {
				nd.c.tick(n.now)
			}
		}
	}
	n.t.Fatal("simulation did not settle")
	return false
}

// inject puts a raw frame on the wire as if sent by from (nil: outsider).
func (n *simNet) inject(b []byte) {
	n.queue = append(n.queue, simFrame{nil, n.now, b})
}

// framesFrom returns the decoded frames nd sent, in order.
func (n *simNet) framesFrom(nd *simNode) []Frame {
	var out []Frame
	for _, f := range n.sent {
		if f.from == nd {
			if fr, err := ParseFrame(f.b); err == nil {
				out = append(out, fr)
			}
		}
	}
	return out
}

const (
	srvAddr  = 0x0a000001 // 10.0.0.1
	poolLo   = 0x0a000064 // 10.0.0.100
	poolHi   = 0x0a0000c8
	dns1     = 0x08080808
	dns2     = 0x01010101
	testUser = "alice"
	testPass = "s3cret"
)

func testServerConfig(n *simNet) ServerConfig {
	return ServerConfig{ACName: "test-ac", Auth: AuthCHAPMD5, Users: map[string]string{testUser: testPass},
		LocalAddr: srvAddr, PoolFirst: poolLo, PoolLast: poolHi, DNS: [2]uint32{dns1, dns2},
		EchoInterval: 10 * time.Second, Rand: n.rand}
}

func testClientConfig(n *simNet) ClientConfig {
	return ClientConfig{Username: testUser, Password: testPass, HostUniq: true,
		EchoInterval: 10 * time.Second, EchoFailures: 3, Rand: n.rand}
}

type simPair struct {
	net       *simNet
	c         *Client
	s         *Server
	cn, sn    *simNode
	published []*hdr.Session
	cIn, sIn  [][]byte
}

func newSimPair(t testing.TB, ccfg func(*ClientConfig), scfg func(*ServerConfig)) *simPair {
	n := newSimNet(t)
	p := &simPair{net: n, cn: n.conn(1), sn: n.conn(2)}
	cc, sc := testClientConfig(n), testServerConfig(n)
	cc.Deliver = func(ip []byte) { p.cIn = append(p.cIn, append([]byte(nil), ip...)) }
	sc.Deliver = func(_ SessionInfo, ip []byte) { p.sIn = append(p.sIn, append([]byte(nil), ip...)) }
	if ccfg != nil {
		ccfg(&cc)
	}
	if scfg != nil {
		scfg(&sc)
	}
	p.c = NewClient(cc, p.cn, func(s *hdr.Session) { p.published = append(p.published, s) })
	p.s = NewServer(sc, p.sn)
	p.cn.c, p.sn.c = (*clientCore)(p.c), (*serverCore)(p.s)
	n.start()
	return p
}

func (p *simPair) up() bool {
	return p.c.st.State == StateUp
}

func (p *simPair) waitUp(t testing.TB, d time.Duration) {
	t.Helper()
	if !p.net.run(d, p.up) {
		t.Fatalf("client not up after %v: state %v, last error %q", d, p.c.st.State, p.c.st.LastError)
	}
}
