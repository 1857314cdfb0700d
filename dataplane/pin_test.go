package dataplane

import (
	"errors"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/nic/memport"
)

// TestPinFailureKeepsForwarding: a thread that cannot be pinned (a cgroup
// cpuset, taskset) runs unpinned and forwards; the failure is reported.
func TestPinFailureKeepsForwarding(t *testing.T) {
	lan := memport.New("lan", 1, 64)
	wan := memport.New("wan", 1, 64)
	var asked []int
	e, err := New(Config{Workers: 1, LAN: lan, WAN: wan, RouterMAC: routerMAC,
		RouterAddr: routerIP, LANNet: lanNet, LANBits: 24,
		Pin: func(n int) error { asked = append(asked, n); return errors.New("EINVAL (cpuset)") }})
	if err != nil {
		t.Fatal(err)
	}
	e.SetSession(testSession())
	e.Start()
	lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 5000, dport: 53, proto: layers.IPProtocolUDP, payload: 20}))
	deadline := time.Now().Add(2 * time.Second)
	sent := 0
	for sent == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		sent += wan.Drain(0, func([]byte) {})
	}
	if err := e.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if sent != 1 {
		t.Fatalf("uplink frames %d, want 1", sent)
	}
	if e.PinErr() == nil || len(asked) != 1 || asked[0] != 0 {
		t.Fatalf("PinErr %v, Pin called with %v (want worker index 0)", e.PinErr(), asked)
	}
}
