package dataplane

import (
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/nic/memport"
)

// TestSendBeforeStopIsTransmitted: frames queued with Engine.Send just
// before Stop (the PADT the PPPoE client sends as its last act) still go
// out: worker 0 drains the injection ring on its way out.
func TestSendBeforeStopIsTransmitted(t *testing.T) {
	lost := 0
	const rounds = 20
	for i := 0; i < rounds; i++ {
		lan := memport.New("lan", 1, 64)
		wan := memport.New("wan", 1, 64)
		e := memEngine(t, lan, wan)
		e.Start()
		time.Sleep(5 * time.Millisecond) // the worker goes idle (backoff sleep)
		padt := make([]byte, 60)
		padt[12], padt[13], padt[15] = 0x88, 0x63, 0xa7
		if err := e.Send(ToWAN, padt); err != nil {
			t.Fatal(err)
		}
		if err := e.Stop(); err != nil {
			t.Fatal(err)
		}
		if wan.Drain(0, func([]byte) {}) == 0 {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d frames queued with Send right before Stop were never sent (PADT lost on shutdown)", lost, rounds)
	}
}
