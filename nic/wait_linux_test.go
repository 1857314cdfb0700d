//go:build linux

package nic

import (
	"testing"
	"time"
)

// Ready tells which descriptors ended a Wait, and none after a timeout.
func TestWaitSetReady(t *testing.T) {
	var bells [2]*Bell
	var s WaitSet
	for i := range bells {
		b, err := NewBell()
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		bells[i] = b
		s.Add(-1) // not counted
		s.Add(b.FD())
	}
	if ready, err := s.Wait(time.Millisecond); ready || err != nil || s.Ready(0) || s.Ready(1) {
		t.Fatalf("timeout: ready %v (%v), Ready %v %v", ready, err, s.Ready(0), s.Ready(1))
	}
	bells[1].Ring()
	if ready, err := s.Wait(time.Second); !ready || err != nil || s.Ready(0) || !s.Ready(1) {
		t.Fatalf("second rung: ready %v (%v), Ready %v %v", ready, err, s.Ready(0), s.Ready(1))
	}
	bells[1].Clear()
	bells[0].Ring()
	if ready, _ := s.Wait(time.Second); !ready || !s.Ready(0) || s.Ready(1) || s.Ready(2) || s.Ready(-1) {
		t.Fatalf("first rung: ready %v, Ready %v %v %v %v", ready, s.Ready(0), s.Ready(1), s.Ready(2), s.Ready(-1))
	}
}
