package dataplane

import (
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// TestControlBacklogDoesNotStallData: non-session frames on the WAN
// (LLDP, ARP, other subscribers' PADI) filling the control link while the
// control plane lags are dropped and counted; session data keeps flowing.
func TestControlBacklogDoesNotStallData(t *testing.T) {
	r := newRig(t, 1, nil)
	ext := r.outbound(t, pkt{src: hostIP, dst: remoteIP, sport: 5000, dport: 53, proto: layers.IPProtocolUDP, payload: 20})
	lldp := make([]byte, 60)
	copy(lldp, []byte{0x01, 0x80, 0xc2, 0, 0, 0x0e})
	lldp[12], lldp[13] = 0x88, 0xcc
	for i := 0; i < 250; i++ {
		r.wan.Inject(0, lldp)
	}
	for i := 0; i < 8; i++ {
		r.step() // the control plane is slow: nobody polls it yet
	}
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 40}))
	for i := 0; i < 8; i++ {
		r.step()
	}
	if got := len(r.drainLAN()); got != 1 {
		t.Errorf("session data frames delivered %d, want 1: a control-plane backlog blocks the data path (drops %v)",
			got, r.e.Totals().DropMap())
	}
}
