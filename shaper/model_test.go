package shaper

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// model is a slow, obvious FQ scheduler written from RFC 8290's text (DRR
// over new and old flow lists), with Linux's fattest-queue batch drop and
// CAKE-style host fairness (quantum divided by the host's active flows). It
// has no CoDel: the differential test keeps sojourn times at zero.
type model struct {
	cfg     Config
	queues  map[int32][]*tpkt
	deficit map[int32]int64
	host    map[int32]int32
	load    map[int32]int64
	newL    []int32
	oldL    []int32
	active  map[int32]bool
	total   int
	mem     int
	dropped []uint32
}

func newModel(cfg Config) *model {
	return &model{cfg: cfg.WithDefaults(), queues: map[int32][]*tpkt{}, deficit: map[int32]int64{},
		host: map[int32]int32{}, load: map[int32]int64{}, active: map[int32]bool{}}
}

func (m *model) quantum(q int32) int64 {
	qn := int64(m.cfg.Quantum) << fpBits
	if m.cfg.HostFair && m.load[m.host[q]] > 1 {
		return qn / m.load[m.host[q]]
	}
	return qn
}

func (m *model) dropFattest() {
	best, bytes := int32(-1), 0
	for q := int32(0); q < int32(m.cfg.Flows); q++ {
		b := 0
		for _, p := range m.queues[q] {
			b += p.size
		}
		if b > bytes {
			best, bytes = q, b
		}
	}
	dropped := 0
	for i := 0; i < m.cfg.DropBatch && dropped < bytes/2 && len(m.queues[best]) > 0; i++ {
		p := m.queues[best][0]
		m.queues[best] = m.queues[best][1:]
		dropped += p.size
		m.total--
		m.mem -= p.size
		m.dropped = append(m.dropped, p.id)
	}
}

func (m *model) enqueue(p *tpkt) {
	if m.total == m.cfg.Limit {
		m.dropFattest()
	}
	q := reduce(p.flow, m.cfg.Flows)
	m.queues[q] = append(m.queues[q], p)
	m.total++
	m.mem += p.size
	if !m.active[q] {
		m.active[q] = true
		h := reduce(p.host, m.cfg.Flows)
		m.host[q] = h
		m.load[h]++
		m.deficit[q] = m.quantum(q)
		m.newL = append(m.newL, q)
	}
	if m.mem > m.cfg.MemLimit {
		m.dropFattest()
	}
}

func (m *model) dequeue() *tpkt {
	for {
		var list *[]int32
		switch {
		case len(m.newL) > 0:
			list = &m.newL
		case len(m.oldL) > 0:
			list = &m.oldL
		default:
			return nil
		}
		q := (*list)[0]
		if m.deficit[q] <= 0 {
			m.deficit[q] += m.quantum(q)
			*list = (*list)[1:]
			m.oldL = append(m.oldL, q)
			continue
		}
		if len(m.queues[q]) == 0 {
			*list = (*list)[1:]
			if list == &m.newL && len(m.oldL) > 0 {
				m.oldL = append(m.oldL, q)
			} else {
				m.active[q] = false
				m.load[m.host[q]]--
			}
			continue
		}
		p := m.queues[q][0]
		m.queues[q] = m.queues[q][1:]
		m.total--
		m.mem -= p.size
		m.deficit[q] -= int64(m.cfg.Overhead.WireLen(p.size)) << fpBits
		return p
	}
}

// runDiff interprets script as operations and compares FQCoDel with the
// model packet by packet.
func runDiff(t *testing.T, script []byte) {
	if len(script) < 2 {
		return
	}
	cfg := Config{
		Flows:     1 + int(script[0]&63),
		Quantum:   MinQuantum + int(script[1])*8,
		Limit:     1 + int(script[0]>>2),
		DropBatch: 1 + int(script[1]&7),
		HostFair:  script[0]&1 == 1,
		MemLimit:  20000 + int(script[1])*100,
		Target:    3600e9, // no CoDel drops: the model has none
	}
	if script[1]&0x10 != 0 {
		cfg.Overhead = Overhead{Bytes: 30, Framing: FramingPTM}
	}
	m := newModel(cfg)
	ops := &tops{record: true}
	clk := NewManualClock(1)
	s := New[*tpkt](cfg, nil, clk, ops)
	pkts := make([]tpkt, len(script))
	out := make([]*tpkt, 8)
	for i, op := range script[2:] {
		if op < 160 {
			p := &pkts[i]
			*p = tpkt{id: uint32(i), size: 40 + int(op)*37%3000, flow: uint32(op%13) * 0x01000193, host: uint32(op % 3)}
			m.enqueue(p)
			s.Enqueue(p, p.flow, p.host)
		} else {
			n := s.Dequeue(out[:1+int(op&7)])
			for j := range n {
				want := m.dequeue()
				if want == nil || want.id != out[j].id {
					t.Fatalf("op %d: dequeued packet %d, model says %v", i, out[j].id, want)
				}
			}
			if n < 1+int(op&7) && m.dequeue() != nil {
				t.Fatalf("op %d: shaper empty, model not", i)
			}
		}
		if !slices.Equal(ops.dropped, m.dropped) {
			t.Fatalf("op %d: drops %v, model %v", i, ops.dropped, m.dropped)
		}
		if s.Len() != m.total {
			t.Fatalf("op %d: Len %d, model %d", i, s.Len(), m.total)
		}
		if err := checkBulk(s); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
		clk.Advance(1000)
	}
}

// checkBulk checks the scheduler's weight counts against its flows: bulk
// is the number of old-list flows holding packets, hostBulk each host
// slot's share of them and bulkHosts the slots with any.
func checkBulk(s *FQCoDel[*tpkt]) error {
	var bulk int32
	perHost := map[int32]int32{}
	for i := range s.flows {
		if f := &s.flows[i]; f.list == listOld && f.qlen > 0 {
			bulk++
			if s.hostBulk != nil {
				perHost[f.host]++
			}
		}
	}
	if bulk != s.bulk {
		return fmt.Errorf("bulk %d, %d flows on the old list hold packets", s.bulk, bulk)
	}
	if s.hostBulk == nil {
		return nil
	}
	for h, n := range s.hostBulk {
		if n != perHost[int32(h)] {
			return fmt.Errorf("host slot %d: hostBulk %d, %d bulk flows", h, n, perHost[int32(h)])
		}
	}
	if int(s.bulkHosts) != len(perHost) {
		return fmt.Errorf("bulkHosts %d, %d hosts with bulk flows", s.bulkHosts, len(perHost))
	}
	return nil
}

func TestDifferentialFQ(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 77))
		script := make([]byte, 2+rng.IntN(3000))
		for i := range script {
			script[i] = byte(rng.UintN(256))
		}
		runDiff(t, script)
	}
}

func FuzzDifferentialFQ(f *testing.F) {
	f.Add([]byte{0x41, 0x10, 1, 2, 3, 200, 4, 5, 6, 255, 255})
	f.Add([]byte{0xff, 0xff, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 199})
	f.Fuzz(runDiff)
}
