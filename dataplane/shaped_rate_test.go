package dataplane

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/shaper"
)

// TestShapedRateWorkers: flows spread over the workers, each worker with
// its own shaper on the engine's shared bucket per direction, the clock
// stepped late and irregularly, the flows pausing now and then so that
// queues run dry and refill: what leaves on each side stays within the
// rate (wire bytes: the IP packet plus the configured overhead) plus
// what the bucket may let a window start with (CatchUp of rate and a
// lease per worker, plus one), and every frame out went through a
// shaper.
func TestShapedRateWorkers(t *testing.T) {
	const (
		rate = 2e6
		warm = 200e6
		dur  = 4e9
		big  = 1492 // IP bytes: the session's MTU
	)
	ovh := shaper.Overhead{Bytes: 34}
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%dworkers", workers), func(t *testing.T) {
			r := newRig(t, workers, func(c *Config) {
				c.Up.Rate, c.Down.Rate = rate, rate
				c.Up.Config.Overhead, c.Down.Config.Overhead = ovh, ovh
			})
			rng := rand.New(rand.NewPCG(1, uint64(workers)))
			type flow struct {
				q        int
				up, down []byte
			}
			var fs []*flow
			for i := range 2 * workers {
				for _, size := range []int{big, 52} {
					sport := uint16(40000 + 16*i + len(fs))
					f := &flow{q: i % workers}
					f.up = lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: sport, dport: 5201, proto: layers.IPProtocolUDP, payload: size - 28})
					r.lan.Inject(f.q, f.up)
					r.clock.t += 50e6 // the shaper lets it out at once
					r.step()
					out := r.drainWAN()
					if len(out) != 1 {
						t.Fatalf("flow setup: %d frames out; drops %v", len(out), r.e.Totals().DropMap())
					}
					ext := be16(pppoePayload(t, out[0])[20:])
					f.down = wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 5201, dport: ext, proto: layers.IPProtocolUDP, payload: size - 28})
					fs = append(fs, f)
				}
			}
			dequeued := func() (n uint64) {
				for _, w := range r.e.workers {
					n += w.up.Stats().Dequeued + w.down.Stats().Dequeued
				}
				return n
			}
			before := dequeued()
			var upB, downB int64
			var frames uint64
			start := r.clock.t + warm
			paused := make([]bool, len(fs))
			for r.clock.t < start+dur {
				r.clock.t += 100_000 + rng.Int64N(4_900_000)
				for i, f := range fs {
					if rng.IntN(100) == 0 {
						paused[i] = !paused[i]
					}
					if paused[i] {
						continue
					}
					r.lan.Inject(f.q, f.up)
					r.wan.Inject(rng.IntN(workers), f.down)
				}
				r.step()
				for _, b := range r.drainWAN() {
					frames++
					if r.clock.t > start {
						upB += int64(ovh.WireLen(int(be16(b[22+2:]))))
					}
				}
				for _, b := range r.drainLAN() {
					frames++
					if r.clock.t > start {
						downB += int64(ovh.WireLen(int(be16(b[14+2:]))))
					}
				}
			}
			lease := max(r.e.upBucket.Chunk(), int64(ovh.WireLen(big)))
			limit := int64(rate / 8e9 * dur)
			bound := int64(rate/8e9*shaper.DefaultCatchUp) + int64(workers+1)*lease
			t.Logf("up %.4f, down %.4f Mbit/s on the wire (rate %.0f); drops %v", float64(upB*8)/dur*1e3, float64(downB*8)/dur*1e3, rate/1e6, r.e.Totals().DropMap())
			for _, c := range []struct {
				dir  string
				sent int64
			}{{"up", upB}, {"down", downB}} {
				if c.sent > limit+bound {
					t.Errorf("%s: %d wire bytes out in %.0f s, more than the rate's %d plus %d", c.dir, c.sent, dur/1e9, limit, bound)
				}
				if c.sent < limit*9/10 {
					t.Errorf("%s: %d wire bytes out in %.0f s, less than 90 %% of the rate's %d", c.dir, c.sent, dur/1e9, limit)
				}
			}
			if d := dequeued() - before; d != frames {
				t.Errorf("%d frames out, %d dequeued by the shapers", frames, d)
			}
		})
	}
}
