package shaper

import "testing"

type zeroOps struct{ dropped *int }

func (zeroOps) Len(int) int     { return 0 }
func (zeroOps) MarkCE(int) bool { return false }
func (o zeroOps) Drop(int)      { *o.dropped++ }

// TestFullOfZeroLengthPackets: a queue full of packets the rate counts as
// zero bytes still frees a slot (or refuses) when another packet comes.
func TestFullOfZeroLengthPackets(t *testing.T) {
	var dropped int
	s := New[int](Config{Limit: 4}, nil, NewManualClock(1), zeroOps{&dropped})
	for i := 0; i < 10; i++ {
		s.Enqueue(i, 1, 1)
	}
	if s.Len() > 4 || dropped != 10-s.Len() {
		t.Fatalf("len %d, dropped %d", s.Len(), dropped)
	}
}
