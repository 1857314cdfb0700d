package iobench

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic"
)

// Match classifies a frame a sink received: the flow index it belongs to,
// Bad for a frame of the expected kind that is wrong (bad checksum, wrong
// translation), or Other for unrelated traffic, which is not counted.
type Match func(b []byte) int

// Match results other than a flow index.
const (
	Bad   = -1
	Other = -2
)

// Load describes one generator run: A sends Up frames and receives what
// comes out on its side, B sends Down frames and receives the uplink.
type Load struct {
	A, B     nic.Port      // frames are sent on queue 0 and received on every queue
	Up, Down [][]byte      // pre-built frames, sent round robin
	MatchA   Match         // classifies frames received by A (downlink)
	MatchB   Match         // classifies frames received by B (uplink)
	Flows    int           // flow count, for per-flow counts (0: none)
	Rate     float64       // frames/s per direction; 0: as fast as the ports take them
	Count    uint64        // stop sending after this many frames per direction (0: Duration decides)
	Warmup   time.Duration // sent but not counted in the measured window
	Duration time.Duration // measured window (after Warmup)
	Drain    time.Duration // keep receiving this long after sending stopped (200ms)
	Batch    int           // frames per Send/Recv (64)
	CPU      int           // pin the generator thread to this CPU (-1: no pinning)
	// UpRate and DownRate, when positive, replace Rate for one direction;
	// a negative one turns that direction's sending off (its frames are
	// still needed: Run checks them).
	UpRate, DownRate float64
	// Nap is the sleep of a paced (Rate > 0) or draining generator with
	// nothing to do (default 20 µs): longer naps cost fewer wakeups and
	// send in larger bursts.
	Nap time.Duration
}

// Counts is the outcome of a Load.
type Counts struct {
	UpSent, DownSent uint64 // frames the ports accepted
	UpRecv, DownRecv uint64 // matching frames received at the far end
	UpBad, DownBad   uint64 // frames of the expected kind that failed the check
	// Received in the measured window and its length.
	UpWindow, DownWindow uint64
	UpSentWindow         uint64
	DownSentWindow       uint64
	Window               time.Duration
	PerFlowUp            []uint64 // by flow index (Flows > 0)
	PerFlowDown          []uint64
	GenCPU               time.Duration // the generator thread's CPU time
	Wall                 time.Duration // the whole run, warmup and drain included
}

// UpLoss and DownLoss are the frames sent but not received.
func (c *Counts) UpLoss() int64   { return int64(c.UpSent) - int64(c.UpRecv) }
func (c *Counts) DownLoss() int64 { return int64(c.DownSent) - int64(c.DownRecv) }

// PPS is the frames per second delivered at the far ends (both
// directions) during the measured window.
func (c *Counts) PPS() float64 {
	if c.Window <= 0 {
		return 0
	}
	return float64(c.UpWindow+c.DownWindow) / c.Window.Seconds()
}

// OfferedPPS is what the generator sent per second (both directions)
// during the measured window.
func (c *Counts) OfferedPPS() float64 {
	if c.Window <= 0 {
		return 0
	}
	return float64(c.UpSentWindow+c.DownSentWindow) / c.Window.Seconds()
}

// txSide sends pre-built frames round robin.
type txSide struct {
	port   nic.Port
	src    [][]byte
	frames []*nic.Frame // 2x the source list so any batch window is contiguous
	bufs   []*byte      // the buffer each frame was loaded into
	pos    int
	sent   uint64
}

func newTxSide(p nic.Port, src [][]byte, batch int) (*txSide, error) {
	if len(src) == 0 {
		return nil, fmt.Errorf("iobench: no frames to send on %s", p.Name())
	}
	for len(src) < batch {
		src = append(src, src...)
	}
	n := len(src)
	s := &txSide{port: p, src: src, frames: nic.NewFrames(2 * n), bufs: make([]*byte, 2*n)}
	for i, f := range s.frames {
		if !f.SetData(src[i%n]) {
			return nil, fmt.Errorf("iobench: frame of %d bytes too large", len(src[i%n]))
		}
		s.bufs[i] = &f.Buf[0]
	}
	return s, nil
}

// send offers up to want frames and returns how many were accepted.
func (s *txSide) send(want int) (int, error) {
	n := len(s.src)
	batch := s.frames[s.pos : s.pos+want]
	k, err := s.port.Send(0, batch)
	for i, f := range batch[:k] {
		// A backend that swaps buffers (memport) hands back another
		// buffer: load the frame again.
		if j := s.pos + i; &f.Buf[0] != s.bufs[j] {
			f.SetData(s.src[j%n])
			s.bufs[j] = &f.Buf[0]
		}
	}
	s.pos += k
	if s.pos >= n {
		s.pos -= n
	}
	s.sent += uint64(k)
	return k, err
}

// txFlusher is implemented by ports whose Send may leave frames queued
// after a transient kick failure (afpacket).
type txFlusher interface {
	Flush(q int) error
	TxPending(q int) int
}

// flushTX kicks queue 0 of p until nothing is pending (for up to ~100
// ms), so that no frame of one measurement leaks into the next.
func flushTX(p nic.Port) {
	f, ok := p.(txFlusher)
	if !ok {
		return
	}
	for i := 0; i < 1000 && f.TxPending(0) > 0; i++ {
		_ = f.Flush(0)
		time.Sleep(100 * time.Microsecond)
	}
}

// rxSide receives and classifies frames.
type rxSide struct {
	port    nic.Port
	match   Match
	frames  []*nic.Frame
	recv    uint64
	bad     uint64
	perFlow []uint64
}

// poll receives one batch from queue q.
func (r *rxSide) poll(q int) (int, error) {
	n, err := r.port.Recv(q, r.frames)
	for _, f := range r.frames[:n] {
		switch i := r.match(f.Data()); {
		case i >= 0:
			r.recv++
			if i < len(r.perFlow) {
				r.perFlow[i]++
			}
		case i == Bad:
			r.bad++
		}
		f.Reset()
	}
	return n, err
}

// Run runs the load on the calling goroutine (pinned to l.CPU for the
// duration) and returns the counts.
func (l Load) Run() (*Counts, error) {
	if l.Batch <= 0 {
		l.Batch = 64
	}
	if l.Drain <= 0 {
		l.Drain = 200 * time.Millisecond
	}
	if l.Nap <= 0 {
		l.Nap = 20 * time.Microsecond
	}
	if l.Duration <= 0 && l.Count == 0 {
		return nil, fmt.Errorf("iobench: a load needs a Duration or a Count")
	}
	if l.MatchA == nil || l.MatchB == nil {
		return nil, fmt.Errorf("iobench: a load needs MatchA and MatchB")
	}
	up, err := newTxSide(l.A, l.Up, l.Batch)
	if err != nil {
		return nil, err
	}
	down, err := newTxSide(l.B, l.Down, l.Batch)
	if err != nil {
		return nil, err
	}
	ra := &rxSide{port: l.A, match: l.MatchA, frames: nic.NewFrames(l.Batch)}
	rb := &rxSide{port: l.B, match: l.MatchB, frames: nic.NewFrames(l.Batch)}
	if l.Flows > 0 {
		ra.perFlow = make([]uint64, l.Flows)
		rb.perFlow = make([]uint64, l.Flows)
	}
	if l.CPU >= 0 {
		if err := pin.Pin(l.CPU); err != nil {
			return nil, err
		}
		defer func() { _ = pin.Unpin() }()
	} else {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	cpu0, _ := pin.ThreadCPUTime()

	c := &Counts{}
	start := time.Now()
	winStart, winEnd := start.Add(l.Warmup), start.Add(l.Warmup+l.Duration)
	var rb0, ra0, us0, ds0 uint64
	inWindow, windowDone := false, false
	stopSend := false
	var stopAt time.Time
	quietSince := time.Time{}
	for {
		now := time.Now()
		if !inWindow && !windowDone && !now.Before(winStart) {
			inWindow = true
			rb0, ra0, us0, ds0 = rb.recv, ra.recv, up.sent, down.sent
			winStart = now
		}
		if inWindow && l.Duration > 0 && !now.Before(winEnd) {
			inWindow, windowDone = false, true
			c.UpWindow, c.DownWindow = rb.recv-rb0, ra.recv-ra0
			c.UpSentWindow, c.DownSentWindow = up.sent-us0, down.sent-ds0
			c.Window = now.Sub(winStart)
		}
		if !stopSend {
			if (l.Duration > 0 && windowDone) || (l.Count > 0 && up.sent >= l.Count && down.sent >= l.Count) {
				flushTX(l.A)
				flushTX(l.B)
				stopSend, stopAt = true, time.Now()
			}
		}
		work := 0
		if !stopSend {
			el := now.Sub(start).Seconds()
			for i, s := range []*txSide{up, down} {
				rate := l.Rate
				if r := [2]float64{l.UpRate, l.DownRate}[i]; r != 0 {
					rate = r
				}
				if rate < 0 {
					continue
				}
				want := l.Batch
				if rate > 0 {
					allowed := int64(rate*el) - int64(s.sent)
					if allowed < int64(want) {
						want = int(max(allowed, 0))
					}
				}
				if l.Count > 0 && s.sent+uint64(want) > l.Count {
					want = int(l.Count - s.sent)
				}
				if want > 0 {
					k, err := s.send(want)
					if err != nil {
						return nil, err
					}
					work += k
				}
			}
		}
		for _, r := range []*rxSide{ra, rb} {
			for q := 0; q < r.port.Queues(); q++ {
				for {
					n, err := r.poll(q)
					if err != nil {
						return nil, err
					}
					work += n
					if n < len(r.frames) {
						break
					}
				}
			}
		}
		if stopSend {
			if work > 0 {
				quietSince = time.Time{}
			} else if quietSince.IsZero() {
				quietSince = now
			}
			if now.Sub(stopAt) > l.Drain && (!quietSince.IsZero() && now.Sub(quietSince) > l.Drain/4 || now.Sub(stopAt) > 5*l.Drain) {
				break
			}
			if rb.recv+rb.bad >= up.sent && ra.recv+ra.bad >= down.sent && now.Sub(stopAt) > l.Drain/4 {
				break
			}
		}
		if work == 0 && (l.Rate > 0 || l.UpRate != 0 || l.DownRate != 0 || stopSend) {
			time.Sleep(l.Nap)
		}
	}
	if !windowDone && c.Window == 0 {
		c.UpWindow, c.DownWindow = rb.recv-rb0, ra.recv-ra0
		c.UpSentWindow, c.DownSentWindow = up.sent-us0, down.sent-ds0
		c.Window = stopAt.Sub(winStart)
	}
	c.UpSent, c.DownSent = up.sent, down.sent
	c.UpRecv, c.DownRecv = rb.recv, ra.recv
	c.UpBad, c.DownBad = rb.bad, ra.bad
	c.PerFlowUp, c.PerFlowDown = rb.perFlow, ra.perFlow
	if cpu1, err := pin.ThreadCPUTime(); err == nil {
		c.GenCPU = cpu1 - cpu0
	}
	c.Wall = time.Since(start)
	return c, nil
}

// FastMatch returns a cheap classifier for benchmark sinks: a frame whose
// destination MAC starts with macPrefix, with EtherType etherType, whose
// IPv4 id is a flow index below flows. It checks no checksums (the
// integration tests do).
func FastMatch(macPrefix []byte, etherType uint16, flows int) Match {
	pfx := append([]byte(nil), macPrefix...)
	ipOff := hdr.EthernetLen
	if etherType == hdr.EtherTypePPPoESess {
		ipOff += hdr.PPPoELen + hdr.PPPLen
	}
	return func(b []byte) int {
		if len(b) < ipOff+hdr.IPv4MinLen || string(b[:len(pfx)]) != string(pfx) ||
			binary.BigEndian.Uint16(b[12:]) != etherType {
			return Other
		}
		id := int(binary.BigEndian.Uint16(b[ipOff+4:]))
		if id >= flows {
			return Bad
		}
		return id
	}
}
