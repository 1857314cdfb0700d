package dataplane

import (
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// TestSmallRingSteersWAN: with the smallest ring the config accepts
// (2*Batch), the control link still holds whole batches and steering runs.
func TestSmallRingSteersWAN(t *testing.T) {
	r := newRig(t, 1, func(c *Config) { c.Batch, c.RingSize = 64, 128 })
	ext := r.outbound(t, pkt{src: hostIP, dst: remoteIP, sport: 5000, dport: 53, proto: layers.IPProtocolUDP, payload: 20})
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 40}))
	for i := 0; i < 4; i++ {
		r.step()
	}
	if got := len(r.drainLAN()); got != 1 {
		t.Errorf("RingSize %d, Batch %d: WAN frames delivered %d, want 1", 128, 64, got)
	}
}
