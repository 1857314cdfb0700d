package abvm

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/bench/iobench"
	"github.com/pppfwd/pppfwd/nic"
)

// probeResult is one step's round trips.
type probeResult struct {
	sent, lost    int
	p50, p99, max float64 // ms
}

// probe sends a probe frame every probeEvery for d from the LAN tap; the
// WAN side reflects each (iobench.Reply, in the session it came in) and
// the LAN side times its return. A probe not back within probeTimeout is
// lost. It runs beside the load, on ports of its own.
func (g *gen) probe(ctx context.Context, d time.Duration) *probeResult {
	var sentAt, backAt [probeIDs]atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	// The WAN side: answer probes.
	go func() {
		defer wg.Done()
		rx, tx := nic.NewFrames(64), nic.NewFrames(1)
		for ctx.Err() == nil {
			n, err := g.pb.Recv(0, rx)
			if err != nil {
				return
			}
			for _, f := range rx[:n] {
				if id, ok := ipID(f.Data()); ok && id >= probeBase && id < probeBase+probeIDs {
					if r, err := iobench.Reply(f.Data()); err == nil {
						tx[0].Reset()
						tx[0].SetData(r)
						_, _ = g.pb.Send(0, tx)
						flush(g.pb)
					}
				}
				f.Reset()
			}
			if n == 0 {
				_ = g.pb.Wait(0, 5*time.Millisecond)
			}
		}
	}()
	// The LAN side: note their return.
	go func() {
		defer wg.Done()
		rx := nic.NewFrames(64)
		for ctx.Err() == nil {
			n, err := g.pa.Recv(0, rx)
			if err != nil {
				return
			}
			now := time.Now().UnixNano()
			for _, f := range rx[:n] {
				b := f.Data()
				// Downlink frames reach the LAN host's MAC, not the router's.
				if id, ok := ipID(b); ok && id >= probeBase && id < probeBase+probeIDs && b[0] == 0x02 {
					backAt[id-probeBase].CompareAndSwap(0, now)
				}
				f.Reset()
			}
			if n == 0 {
				_ = g.pa.Wait(0, 5*time.Millisecond)
			}
		}
	}()
	tx := nic.NewFrames(1)
	r := &probeResult{}
	start := time.Now()
	for i := 0; time.Since(start) < d && i < probeIDs; i++ {
		if ctx.Err() != nil {
			break
		}
		tx[0].Reset()
		tx[0].SetData(g.probeUp[i])
		sentAt[i].Store(time.Now().UnixNano())
		if n, err := g.pa.Send(0, tx); err != nil || n != 1 {
			sentAt[i].Store(0)
		} else {
			flush(g.pa)
			r.sent++
		}
		next := start.Add(time.Duration(i+1) * probeEvery)
		if w := time.Until(next); w > 0 {
			time.Sleep(w)
		}
	}
	// Wait for the last probes (or their timeout).
	deadline := time.Now().Add(probeTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		done := true
		for i := 0; i < r.sent; i++ {
			if sentAt[i].Load() != 0 && backAt[i].Load() == 0 {
				done = false
				break
			}
		}
		if done {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	var rtts []float64
	for i := range sentAt {
		s, b := sentAt[i].Load(), backAt[i].Load()
		if s == 0 {
			continue
		}
		if b == 0 || time.Duration(b-s) > probeTimeout {
			r.lost++
			continue
		}
		rtts = append(rtts, float64(b-s)/1e6)
	}
	if len(rtts) > 0 {
		slices.Sort(rtts)
		r.p50 = rtts[len(rtts)/2]
		r.p99 = rtts[min(len(rtts)-1, len(rtts)*99/100)]
		r.max = rtts[len(rtts)-1]
	}
	return r
}

// flush hands queued TX frames to the kernel on ports that batch them.
func flush(p nic.Port) {
	if f, ok := p.(interface{ Flush(int) error }); ok {
		_ = f.Flush(0)
	}
}
