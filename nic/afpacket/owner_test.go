package afpacket

import (
	"math/rand/v2"
	"testing"
)

// TestOwnerSpecQueueAllocs checks that Queue allocates nothing.
func TestOwnerSpecQueueAllocs(t *testing.T) {
	s := &OwnerSpec{Workers: 4, Forwards: OwnerTestForwards(4)}
	r := rand.New(rand.NewPCG(9, 9))
	frames := make([][]byte, 256)
	for i := range frames {
		frames[i] = GenOwnerFrame(r)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		_ = s.Queue(frames[i%len(frames)])
		i++
	}); n != 0 {
		t.Fatalf("Queue allocates %v times per frame", n)
	}
}
