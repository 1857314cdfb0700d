package abvm

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/bench/iobench"
	"github.com/pppfwd/pppfwd/internal/rawsock"
)

// probeResult is one step's round trips.
type probeResult struct {
	sent, lost    int
	p50, p99, max float64 // ms
}

// probePort is the probe flow's remote port: the probe sockets admit
// only UDP frames from or to it (rawsock.OpenUDPPort), so the load costs
// the probe nothing on the host.
const probePort = 7

// probe sends a probe frame every probeEvery for d from the LAN tap; the
// WAN side reflects each (iobench.Reply, in the session it came in) and
// the LAN side times its return. A probe not back within probeTimeout is
// lost.
func (g *gen) probe(ctx context.Context, d time.Duration) *probeResult {
	var sentAt, backAt [probeIDs]atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	read := func(c *rawsock.Conn, handle func(b []byte)) {
		defer wg.Done()
		buf := make([]byte, 2048)
		for ctx.Err() == nil {
			n, err := c.ReadFrame(buf, 20*time.Millisecond)
			if errors.Is(err, rawsock.ErrTimeout) {
				continue
			}
			if err != nil {
				return
			}
			if id, ok := ipID(buf[:n]); ok && id >= probeBase && id < probeBase+probeIDs {
				handle(buf[:n])
			}
		}
	}
	// The WAN side answers probes in their session.
	go read(g.pb, func(b []byte) {
		if r, err := iobench.Reply(b); err == nil {
			_ = g.pb.WriteFrame(r)
		}
	})
	// The LAN side notes their return (to the LAN host's MAC; what the
	// probe itself sent towards the router is skipped).
	go read(g.pa, func(b []byte) {
		if b[0] == 0x02 {
			id, _ := ipID(b)
			backAt[id-probeBase].CompareAndSwap(0, time.Now().UnixNano())
		}
	})
	r := &probeResult{}
	start := time.Now()
	for i := 0; time.Since(start) < d && i < probeIDs && ctx.Err() == nil; i++ {
		sentAt[i].Store(time.Now().UnixNano())
		if err := g.pa.WriteFrame(g.probeUp[i]); err != nil {
			sentAt[i].Store(0)
		} else {
			r.sent++
		}
		if w := time.Until(start.Add(time.Duration(i+1) * probeEvery)); w > 0 {
			time.Sleep(w)
		}
	}
	// Wait for the last probes (or their timeout).
	deadline := time.Now().Add(probeTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		done := true
		for i := range sentAt {
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
