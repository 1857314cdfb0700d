package control

import (
	"context"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"go.uber.org/goleak"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// seqFrame is a LAN frame for the router's host stack (UDP to its
// address) numbered seq (in the source port).
func seqFrame(tb testing.TB, seq int) []byte {
	return lanFrame(tb, pkt{src: hostIP, dst: routerIP, sport: uint16(seq + 1), dport: 22, proto: layers.IPProtocolUDP, payload: 8})
}

// hostSeqs drains the host port and returns the numbers of the frames it
// got, in order.
func hostSeqs(host *memport.Port) []int {
	var got []int
	host.Drain(0, func(b []byte) { got = append(got, int(be16(b[14+20:]))-1) })
	return got
}

// TestExceptionQueueBoundAndOrder: exceptions wait for the exception
// goroutine in a queue of ExceptionQueue frame copies; beyond it they are
// dropped and counted (queue_full, ignored), never block Run or grow
// memory, and those queued reach the host stack in the order they came.
// Buffers come back: once handled, the queue takes as many again.
func TestExceptionQueueBoundAndOrder(t *testing.T) {
	host := memport.New("host", 1, 2*ExceptionQueue)
	c := New(memEngine(t, memport.New("lan", 1, 64), memport.New("wan", 1, 64)), Config{WANMAC: wanMAC, Host: host})
	const extra = 10
	for i := 0; i < ExceptionQueue+extra; i++ {
		c.dispatch(dataplane.FromLAN, seqFrame(t, i)) // nobody handles them yet
	}
	if st := c.Stats(); st.QueueFull != extra || st.Ignored != extra || st.ToHost != 0 {
		t.Fatalf("queue_full %d ignored %d to_host %d with the goroutine not running, want %d, %d, 0",
			st.QueueFull, st.Ignored, st.ToHost, extra, extra)
	}
	drain := func() {
		done := make(chan struct{})
		go c.exceptions(done)
		c.excQueue <- nil
		<-done
	}
	drain()
	got := hostSeqs(host)
	if len(got) != ExceptionQueue {
		t.Fatalf("%d frames reached the host, want %d", len(got), ExceptionQueue)
	}
	for i, s := range got {
		if s != i {
			t.Fatalf("host frame %d is #%d: the order changed (%v)", i, s, got[:i+1])
		}
	}
	for i := 0; i < ExceptionQueue; i++ {
		c.dispatch(dataplane.FromLAN, seqFrame(t, 1000+i))
	}
	drain()
	if st := c.Stats(); st.QueueFull != extra || st.ToHost != 2*ExceptionQueue {
		t.Fatalf("second round: queue_full %d to_host %d, want %d, %d (buffers not given back)", st.QueueFull, st.ToHost, extra, 2*ExceptionQueue)
	}
	if got := hostSeqs(host); len(got) != ExceptionQueue || got[0] != 1000 || got[len(got)-1] != 1000+ExceptionQueue-1 {
		t.Fatalf("second round at the host: %d frames", len(got))
	}
}

// TestRunHandlesQueuedThenStops: Run returns only once the exception
// goroutine handled what was queued, and leaves no goroutine behind; a
// second Run works as the first.
func TestRunHandlesQueuedThenStops(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	host := memport.New("host", 1, 64)
	c := New(memEngine(t, memport.New("lan", 1, 64), memport.New("wan", 1, 64)), Config{WANMAC: wanMAC, Host: host})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for round := 0; round < 2; round++ {
		for i := 0; i < 5; i++ {
			c.dispatch(dataplane.FromLAN, seqFrame(t, i))
		}
		if err := c.Run(ctx); err != context.Canceled {
			t.Fatalf("Run: %v", err)
		}
		if got := hostSeqs(host); len(got) != 5 || got[4] != 4 {
			t.Fatalf("round %d: the host got %v after Run returned, want #0..#4", round, got)
		}
	}
}

// TestExceptionsKeepOrderThroughEngine: frames from the LAN for the
// router's host stack (a TCP session to its SSH, say) pass the worker and
// the control plane in the order they came.
func TestExceptionsKeepOrderThroughEngine(t *testing.T) {
	lan, host := memport.New("lan", 1, 256), memport.New("host", 1, 256)
	e := memEngine(t, lan, memport.New("wan", 1, 64))
	c := New(e, Config{WANMAC: wanMAC, Host: host})
	startWith(t, e, c.Run)
	const n = 100
	for i := 0; i < n; i++ {
		for !lan.Inject(0, seqFrame(t, i)) {
		}
	}
	var got []int
	waitFor(t, "the frames at the host", 5*time.Second, func() bool { got = append(got, hostSeqs(host)...); return len(got) >= n })
	for i, s := range got {
		if s != i {
			t.Fatalf("host frame %d is #%d: the order changed", i, s)
		}
	}
}

// TestQueueExceptionAllocs: queueing an exception copies it into a
// buffer of the queue's own, without allocating.
func TestQueueExceptionAllocs(t *testing.T) {
	c := New(memEngine(t, memport.New("lan", 1, 64), memport.New("wan", 1, 64)), Config{WANMAC: wanMAC})
	b := seqFrame(t, 1)
	if n := testing.AllocsPerRun(100, func() {
		c.dispatchFn(dataplane.FromLAN, b)
		c.excFree <- <-c.excQueue
	}); n != 0 {
		t.Fatalf("%v allocations per exception", n)
	}
}
