package netmap

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// SimPortConfig describes one simulated netmap adapter.
type SimPortConfig struct {
	Name      string
	Rings     int // NIC TX/RX ring pairs (default 1)
	HostRings int // host ring pairs (default 1)
	Slots     int // slots per ring (default 256)
}

// SimConfig describes a simulated netmap memory region shared by adapters
// (like netmap's global allocator: buffer indices are valid across them).
type SimConfig struct {
	Ports      []SimPortConfig
	BufSize    int // default 2048
	ExtraBufs  int // spare buffers beyond one per slot
	PendingCap int // frames a ring's wire side queues before dropping (default 4096)
}

// Sim is a simulated netmap kernel side in pure Go. It lays out one byte
// slice exactly like the mmapped region (netmap_if, netmap_ring, slots,
// buffers) and implements rxsync/txsync with netmap's semantics: the
// kernel publishes received frames by advancing tail, consumes TX slots
// [hwcur, head) and returns them by advancing tail. Like the real kernel it
// checks the user's head/cur moves (nm_{tx,rx}sync_prologue) and resets a
// ring after a violation; unlike it, it also records every violation
// (Violations) and checks buffer ownership (NS_BUF_CHANGED on swaps, slots
// left alone while the kernel owns them, CheckBuffers).
//
// Sim is for tests: Inject and Transmitted model the wire, InjectHost and
// HostReceived the host stack. Syncs run in the calling goroutine; Inject
// and the wire accessors may be called from any goroutine.
type Sim struct {
	mem     []byte
	memID   uint16
	bufBase int
	bufSize int
	nbufs   uint32
	pendCap int
	ports   map[string]*simPort

	mu         sync.Mutex
	violations []string
	extra      []uint32 // buffers owned by nobody's slots
	// afterSync, if set, runs after every sync (tests: hostile kernel).
	afterSync func(k *kring)
}

type simPort struct {
	name   string
	ifOff  int
	nRings int
	nHost  int
	krings []*kring // ring_ofs order: tx, host tx, rx, host rx
}

// kring is the kernel's private state of one ring.
type kring struct {
	sim    *Sim
	name   string
	tx     bool
	host   bool
	id     int
	hdr    *ringHdr
	slots  []slot
	n      uint32
	hwcur  uint32
	hwtail uint32
	rhead  uint32
	rtail  uint32
	shadow []uint32 // buf_idx the kernel last saw in each slot
	done   uint32   // TX: first slot not yet transmitted

	mu      sync.Mutex // guards the wire side below
	stalled bool
	discard bool     // TX: count transmitted frames instead of keeping them
	sent    uint64   // TX: frames transmitted
	pending [][]byte // RX: frames on the wire not yet in the ring
	replay  []byte   // RX: if set, every free slot is refilled with it
	out     [][]byte // TX: frames transmitted
	drops   uint64
	notify  chan struct{}
}

func alignUp(x, a int) int { return (x + a - 1) / a * a }

// NewSim lays out and initialises a simulated region.
func NewSim(cfg SimConfig) (*Sim, error) {
	if len(cfg.Ports) == 0 {
		return nil, errors.New("netmap sim: no ports")
	}
	if cfg.BufSize == 0 {
		cfg.BufSize = 2048
	}
	if cfg.BufSize < 64 || cfg.BufSize > 1<<16 || cfg.BufSize%64 != 0 {
		return nil, fmt.Errorf("netmap sim: bad buffer size %d", cfg.BufSize)
	}
	if cfg.PendingCap == 0 {
		cfg.PendingCap = 4096
	}
	s := &Sim{memID: 1, bufSize: cfg.BufSize, pendCap: cfg.PendingCap, ports: map[string]*simPort{}}
	off := 0
	nslots := 0
	type ringPlan struct {
		off, n int
		tx     bool
		host   bool
		id     int
	}
	type portPlan struct {
		cfg   SimPortConfig
		ifOff int
		rings []ringPlan
	}
	plans := make([]portPlan, len(cfg.Ports))
	for i, pc := range cfg.Ports {
		if pc.Rings == 0 {
			pc.Rings = 1
		}
		if pc.HostRings == 0 {
			pc.HostRings = 1
		}
		if pc.Slots == 0 {
			pc.Slots = 256
		}
		if pc.Slots < 2 || pc.Rings < 0 || pc.HostRings < 0 || pc.Name == "" || len(pc.Name) >= ifNameSize {
			return nil, fmt.Errorf("netmap sim: bad port config %+v", pc)
		}
		if _, dup := s.ports[pc.Name]; dup {
			return nil, fmt.Errorf("netmap sim: duplicate port %q", pc.Name)
		}
		s.ports[pc.Name] = nil
		plans[i] = portPlan{cfg: pc, ifOff: off}
		off = alignUp(off+sizeofIfHdr+sizeofRingOfs*2*(pc.Rings+pc.HostRings), cacheAlign)
	}
	for i := range plans {
		pc := plans[i].cfg
		add := func(tx, host bool, id int) {
			plans[i].rings = append(plans[i].rings, ringPlan{off: off, n: pc.Slots, tx: tx, host: host, id: id})
			off = alignUp(off+sizeofRingHdr+pc.Slots*sizeofSlot, cacheAlign)
			nslots += pc.Slots
		}
		for r := 0; r < pc.Rings; r++ {
			add(true, false, r)
		}
		for r := 0; r < pc.HostRings; r++ {
			add(true, true, r)
		}
		for r := 0; r < pc.Rings; r++ {
			add(false, false, r)
		}
		for r := 0; r < pc.HostRings; r++ {
			add(false, true, r)
		}
	}
	s.bufBase = alignUp(off, cfg.BufSize)
	nb := 2 + nslots + cfg.ExtraBufs
	s.nbufs = uint32(nb)
	s.mem = make([]byte, s.bufBase+nb*cfg.BufSize)

	next := uint32(2) // buffers 0 and 1 are reserved, as in netmap
	for _, pp := range plans {
		sp := &simPort{name: pp.cfg.Name, ifOff: pp.ifOff, nRings: pp.cfg.Rings, nHost: pp.cfg.HostRings}
		ifp := viewIf(s.mem, pp.ifOff)
		copy(ifp.Name[:], pp.cfg.Name)
		ifp.Version = APIVersion
		ifp.TxRings, ifp.RxRings = uint32(pp.cfg.Rings), uint32(pp.cfg.Rings)
		ifp.HostTxRings, ifp.HostRxRings = uint32(pp.cfg.HostRings), uint32(pp.cfg.HostRings)
		for i, rp := range pp.rings {
			setRingOfs(s.mem, pp.ifOff, i, int64(rp.off-pp.ifOff))
			h := viewRing(s.mem, rp.off)
			h.BufOfs = int64(s.bufBase - rp.off)
			h.NumSlots = uint32(rp.n)
			h.BufSize = uint32(cfg.BufSize)
			h.RingID = uint16(rp.id)
			k := &kring{sim: s, tx: rp.tx, host: rp.host, id: rp.id, hdr: h,
				slots: viewSlots(s.mem, rp.off+sizeofRingHdr, rp.n), n: uint32(rp.n),
				shadow: make([]uint32, rp.n), notify: make(chan struct{}, 1)}
			dir := "rx"
			if rp.tx {
				dir = "tx"
			} else {
				h.Dir = 1
			}
			kind := ""
			if rp.host {
				kind = "host-"
			}
			k.name = fmt.Sprintf("%s %s%s%d", sp.name, kind, dir, rp.id)
			for j := range k.slots {
				k.slots[j].BufIdx = next
				k.shadow[j] = next
				next++
			}
			if rp.tx {
				k.hwtail = k.n - 1
				k.rtail = k.hwtail
				h.Tail = k.hwtail
			}
			sp.krings = append(sp.krings, k)
		}
		s.ports[sp.name] = sp
	}
	for ; next < s.nbufs; next++ {
		s.extra = append(s.extra, next)
	}
	return s, nil
}

// Mem returns the simulated shared region (tests may inspect it).
func (s *Sim) Mem() []byte { return s.mem }

func (s *Sim) violate(k *kring, format string, args ...any) {
	s.mu.Lock()
	s.violations = append(s.violations, k.name+": "+fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// Violations returns the user-side protocol violations seen so far.
func (s *Sim) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func (s *Sim) kring(port string, tx, host bool, id int) (*kring, error) {
	sp := s.ports[port]
	if sp == nil {
		return nil, fmt.Errorf("netmap sim: no port %q", port)
	}
	var i int
	switch {
	case tx && !host:
		i = id
	case tx && host:
		i = sp.nRings + id
	case !tx && !host:
		i = sp.nRings + sp.nHost + id
	default:
		i = 2*sp.nRings + sp.nHost + id
	}
	lim := sp.nRings
	if host {
		lim = sp.nHost
	}
	if id < 0 || id >= lim {
		return nil, fmt.Errorf("netmap sim: %s has no ring %d", port, id)
	}
	return sp.krings[i], nil
}

// Open registers queues NIC ring pairs of the simulated adapter port, one
// per queue (NR_REG_ONE_NIC), like Open does on the real device.
func (s *Sim) Open(port string, queues int) (*Port, error) {
	sp := s.ports[port]
	if sp == nil {
		return nil, fmt.Errorf("netmap sim: no port %q", port)
	}
	if queues <= 0 || queues > sp.nRings {
		queues = sp.nRings
	}
	p := &Port{name: "netmap:" + port}
	for q := 0; q < queues; q++ {
		fd := &simFD{sim: s, tx: sp.krings[q], rx: sp.krings[sp.nRings+sp.nHost+q]}
		qu, err := newQueue(s.mem, s.memID, int64(sp.ifOff), ringIndex{id: q}, fd, q)
		if err != nil {
			return nil, err
		}
		p.queues = append(p.queues, qu)
	}
	return p, nil
}

// OpenHost registers host ring pair 0 of the simulated adapter (NR_REG_SW).
func (s *Sim) OpenHost(port string) (*Port, error) {
	sp := s.ports[port]
	if sp == nil {
		return nil, fmt.Errorf("netmap sim: no port %q", port)
	}
	if sp.nHost == 0 {
		return nil, fmt.Errorf("netmap sim: %s has no host rings", port)
	}
	fd := &simFD{sim: s, tx: sp.krings[sp.nRings], rx: sp.krings[2*sp.nRings+sp.nHost]}
	qu, err := newQueue(s.mem, s.memID, int64(sp.ifOff), ringIndex{host: true}, fd, 0)
	if err != nil {
		return nil, err
	}
	return &Port{name: "netmap:" + port + "^", host: true, queues: []*queue{qu}}, nil
}

func (k *kring) push(pkt []byte) bool {
	k.mu.Lock()
	if len(k.pending) >= k.sim.pendCap {
		k.drops++
		k.mu.Unlock()
		return false
	}
	k.pending = append(k.pending, append([]byte(nil), pkt...))
	k.mu.Unlock()
	select {
	case k.notify <- struct{}{}:
	default:
	}
	return true
}

func (k *kring) take() [][]byte {
	k.mu.Lock()
	out := k.out
	k.out = nil
	k.mu.Unlock()
	return out
}

// Inject puts a frame on the wire towards NIC RX ring of port. It reports
// false (and counts a drop) when the wire queue is full.
func (s *Sim) Inject(port string, ring int, pkt []byte) bool {
	k, err := s.kring(port, false, false, ring)
	return err == nil && k.push(pkt)
}

// InjectHost makes the host stack send a frame: it appears on port's host
// RX ring.
func (s *Sim) InjectHost(port string, pkt []byte) bool {
	k, err := s.kring(port, false, true, 0)
	return err == nil && k.push(pkt)
}

// Transmitted returns and forgets the frames NIC TX ring of port sent.
func (s *Sim) Transmitted(port string, ring int) [][]byte {
	k, err := s.kring(port, true, false, ring)
	if err != nil {
		return nil
	}
	return k.take()
}

// HostReceived returns and forgets the frames delivered to the host stack
// through port's host TX ring.
func (s *Sim) HostReceived(port string) [][]byte {
	k, err := s.kring(port, true, true, 0)
	if err != nil {
		return nil
	}
	return k.take()
}

// SetTxStall stops (true) or restarts the wire of a NIC TX ring: while
// stalled, txsync accepts slots but completes none, so the ring fills.
func (s *Sim) SetTxStall(port string, ring int, stalled bool) {
	if k, err := s.kring(port, true, false, ring); err == nil {
		k.mu.Lock()
		k.stalled = stalled
		k.mu.Unlock()
	}
}

// SetTxDiscard makes a NIC TX ring count transmitted frames (TxSent)
// instead of keeping them for Transmitted (benchmarks, allocation tests).
func (s *Sim) SetTxDiscard(port string, ring int, discard bool) {
	if k, err := s.kring(port, true, false, ring); err == nil {
		k.mu.Lock()
		k.discard = discard
		k.mu.Unlock()
	}
}

// SetHostTxDiscard makes port's host TX ring count the frames it
// delivers to the host stack instead of keeping them for HostReceived
// (allocation tests).
func (s *Sim) SetHostTxDiscard(port string, discard bool) {
	if k, err := s.kring(port, true, true, 0); err == nil {
		k.mu.Lock()
		k.discard = discard
		k.mu.Unlock()
	}
}

// SetRxReplay makes a NIC RX ring receive pkt endlessly: every rxsync
// fills all free slots with it, without allocating (benchmarks). nil stops.
func (s *Sim) SetRxReplay(port string, ring int, pkt []byte) {
	if k, err := s.kring(port, false, false, ring); err == nil {
		k.mu.Lock()
		k.replay = append([]byte(nil), pkt...)
		k.mu.Unlock()
	}
}

// TxSent returns how many frames a NIC TX ring has transmitted.
func (s *Sim) TxSent(port string, ring int) uint64 {
	k, err := s.kring(port, true, false, ring)
	if err != nil {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sent
}

// RxDrops returns the frames the wire side of a NIC RX ring dropped.
func (s *Sim) RxDrops(port string, ring int) uint64 {
	k, err := s.kring(port, false, false, ring)
	if err != nil {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.drops
}

// CheckBuffers verifies buffer ownership at a quiescent point: every slot of
// every ring holds a valid buffer index and no index appears twice (a
// zero-copy swap that duplicated or lost a buffer shows up here).
func (s *Sim) CheckBuffers() error {
	seen := make(map[uint32]string, s.nbufs)
	var errs []error
	for _, idx := range s.extra {
		seen[idx] = "free list"
	}
	for _, sp := range s.ports {
		for _, k := range sp.krings {
			for i := range k.slots {
				idx := k.slots[i].BufIdx
				where := fmt.Sprintf("%s slot %d", k.name, i)
				if idx < 2 || idx >= s.nbufs {
					errs = append(errs, fmt.Errorf("%s: invalid buffer %d", where, idx))
					continue
				}
				if prev, dup := seen[idx]; dup {
					errs = append(errs, fmt.Errorf("buffer %d in %s and %s", idx, prev, where))
				}
				seen[idx] = where
			}
		}
	}
	return errors.Join(errs...)
}

func (k *kring) prev(i uint32) uint32 {
	if i == 0 {
		return k.n - 1
	}
	return i - 1
}

func (k *kring) next(i uint32) uint32 {
	if i+1 == k.n {
		return 0
	}
	return i + 1
}

// between reports whether x lies in the cyclic interval [a, b].
func between(a, x, b uint32) bool {
	if a <= b {
		return a <= x && x <= b
	}
	return x >= a || x <= b
}

// prologue checks the user's head and cur against the kernel's view, as
// nm_txsync_prologue / nm_rxsync_prologue do: rhead <= head <= cur <= rtail
// (cyclically) for TX, hwcur <= head <= cur <= hwtail for RX.
func (k *kring) prologue(head, cur uint32) string {
	lo, hi := k.hwcur, k.hwtail
	if k.tx {
		lo, hi = k.rhead, k.rtail
	}
	switch {
	case head >= k.n || cur >= k.n:
		return fmt.Sprintf("head %d / cur %d out of range (%d slots)", head, cur, k.n)
	case !between(lo, head, hi):
		return fmt.Sprintf("head %d outside [%d, %d]", head, lo, hi)
	case !between(head, cur, hi):
		return fmt.Sprintf("cur %d outside [head %d, %d]", cur, head, hi)
	}
	return ""
}

// reinit is netmap_ring_reinit after a bad user move: the ring goes back to
// the kernel's view.
func (k *kring) reinit() {
	atomic.StoreUint32(&k.hdr.Head, k.hwcur)
	atomic.StoreUint32(&k.hdr.Cur, k.hwcur)
	k.rhead = k.hwcur
	k.rtail = k.hwtail
	atomic.StoreUint32(&k.hdr.Tail, k.hwtail)
}

// release takes slots [hwcur, head) back from the user and checks them.
func (k *kring) release(head uint32) {
	for i := k.hwcur; i != head; i = k.next(i) {
		sl := &k.slots[i]
		if sl.BufIdx < 2 || sl.BufIdx >= k.sim.nbufs {
			k.sim.violate(k, "slot %d released with invalid buffer %d", i, sl.BufIdx)
			sl.BufIdx = k.shadow[i]
			sl.Len = 0
		} else if sl.BufIdx != k.shadow[i] && sl.Flags&NSBufChanged == 0 {
			k.sim.violate(k, "slot %d: buf_idx %d -> %d without NS_BUF_CHANGED", i, k.shadow[i], sl.BufIdx)
		}
		if k.tx && int(sl.Len) > k.sim.bufSize {
			k.sim.violate(k, "slot %d: len %d > buffer size", i, sl.Len)
			sl.Len = 0
		}
		k.shadow[i] = sl.BufIdx
		sl.Flags &^= NSBufChanged | NSReport
	}
	k.hwcur = head
}

// owned checks that a kernel-owned slot was left alone by the user.
func (k *kring) owned(i uint32) bool {
	if k.slots[i].BufIdx != k.shadow[i] {
		k.sim.violate(k, "slot %d changed (buffer %d -> %d) while owned by the kernel", i, k.shadow[i], k.slots[i].BufIdx)
		k.slots[i].BufIdx = k.shadow[i]
		return false
	}
	return true
}

func (k *kring) buf(idx uint32) []byte {
	o := k.sim.bufBase + int(idx)*k.sim.bufSize
	return k.sim.mem[o : o+k.sim.bufSize]
}

func (k *kring) txsync() {
	head, cur := atomic.LoadUint32(&k.hdr.Head), atomic.LoadUint32(&k.hdr.Cur)
	if v := k.prologue(head, cur); v != "" {
		k.sim.violate(k, "txsync: %s", v)
		k.reinit()
		return
	}
	k.release(head)
	k.rhead = head
	k.mu.Lock()
	if !k.stalled {
		for ; k.done != k.hwcur; k.done = k.next(k.done) {
			if !k.owned(k.done) {
				continue
			}
			sl := &k.slots[k.done]
			if int(sl.Len) > k.sim.bufSize {
				continue
			}
			k.sent++
			if k.discard {
				continue
			}
			k.out = append(k.out, append([]byte(nil), k.buf(sl.BufIdx)[:sl.Len]...))
		}
	}
	k.mu.Unlock()
	k.hwtail = k.prev(k.done)
	k.rtail = k.hwtail
	atomic.StoreUint32(&k.hdr.Tail, k.hwtail)
}

func (k *kring) rxsync() {
	head, cur := atomic.LoadUint32(&k.hdr.Head), atomic.LoadUint32(&k.hdr.Cur)
	if v := k.prologue(head, cur); v != "" {
		k.sim.violate(k, "rxsync: %s", v)
		k.reinit()
	} else {
		k.release(head)
		k.rhead = head
	}
	k.mu.Lock()
	for len(k.pending) > 0 && k.next(k.hwtail) != k.hwcur {
		pkt := k.pending[0]
		k.pending[0] = nil
		k.pending = k.pending[1:]
		i := k.hwtail
		k.owned(i)
		sl := &k.slots[i]
		b := k.buf(sl.BufIdx)
		if len(pkt) > len(b) {
			k.drops++
			continue
		}
		sl.Len = uint16(copy(b, pkt))
		sl.Flags = 0
		k.hwtail = k.next(i)
	}
	for len(k.replay) > 0 && k.next(k.hwtail) != k.hwcur {
		i := k.hwtail
		k.owned(i)
		sl := &k.slots[i]
		sl.Len = uint16(copy(k.buf(sl.BufIdx), k.replay))
		sl.Flags = 0
		k.hwtail = k.next(i)
	}
	k.mu.Unlock()
	k.rtail = k.hwtail
	atomic.StoreUint32(&k.hdr.Tail, k.hwtail)
}

func (k *kring) hasPending() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pending) > 0 || len(k.replay) > 0
}

// simFD is the simulated counterpart of one registered /dev/netmap fd.
type simFD struct {
	sim    *Sim
	tx, rx *kring
	closed atomic.Bool
}

var errSimClosed = errors.New("netmap sim: fd closed")

func (f *simFD) TxSync() error {
	if f.closed.Load() {
		return errSimClosed
	}
	f.tx.txsync()
	if h := f.sim.afterSync; h != nil {
		h(f.tx)
	}
	return nil
}

func (f *simFD) RxSync() error {
	if f.closed.Load() {
		return errSimClosed
	}
	f.rx.rxsync()
	if h := f.sim.afterSync; h != nil {
		h(f.rx)
	}
	return nil
}

func (f *simFD) Poll(timeout time.Duration) error {
	if f.closed.Load() {
		return errSimClosed
	}
	if f.rx.hasPending() {
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-f.rx.notify:
	case <-t.C:
	}
	return nil
}

func (f *simFD) Close() error { f.closed.Store(true); return nil }
