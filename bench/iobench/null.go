package iobench

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic"
)

// NullForwarder moves frames between two ports unchanged, LAN queue k to
// WAN queue k and back, with one pinned thread per queue pair that works
// like an engine worker (batches of 64, flush when idle, the same idle
// back-off) but does none of the packet work: no steering, PPPoE, NAT or
// shaping. Measured beside pppfwd and the kernel it is the floor the
// backend's I/O puts under any userspace forwarder on that topology.
type NullForwarder struct {
	LAN, WAN nic.Port
	stop     atomic.Bool
	wg       sync.WaitGroup
	threads  []*nullThread
	undo     func() // NIC settings of the ports
}

type nullThread struct {
	packets, drops, cpuNs atomic.Uint64
}

// nullBatch is the batch size of a null-forwarder thread (the engine's
// default batch).
const nullBatch = 64

// StartNull starts one thread per queue (min of the two ports' queues),
// thread k pinned to cpus[k%len(cpus)] unless cpus is empty. Stop closes
// the ports.
func StartNull(lan, wan nic.Port, cpus []int) *NullForwarder {
	n := &NullForwarder{LAN: lan, WAN: wan}
	q := min(lan.Queues(), wan.Queues())
	var ready sync.WaitGroup
	for k := 0; k < q; k++ {
		t := &nullThread{}
		n.threads = append(n.threads, t)
		n.wg.Add(1)
		ready.Add(1)
		go func(k int) {
			defer n.wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if len(cpus) > 0 {
				_ = pin.Pin(cpus[k%len(cpus)]) // unpinned on failure: the figures show it
			}
			ready.Done()
			n.run(k, t)
		}(k)
	}
	ready.Wait()
	return n
}

func (n *NullForwarder) run(q int, t *nullThread) {
	cpu0, _ := pin.ThreadCPUTime()
	storeCPU := func() {
		if c, err := pin.ThreadCPUTime(); err == nil {
			t.cpuNs.Store(uint64(c - cpu0))
		}
	}
	frames := nic.NewFrames(nullBatch)
	lanF, _ := n.LAN.(nic.Flusher)
	wanF, _ := n.WAN.(nic.Flusher)
	move := func(from, to nic.Port) int {
		got, _ := from.Recv(q, frames)
		if got == 0 {
			return 0
		}
		sent, _ := to.Send(q, frames[:got])
		t.packets.Add(uint64(sent))
		if sent < got {
			t.drops.Add(uint64(got - sent))
		}
		return got
	}
	// Idle as pppfwd's adaptive workers do: spin a while, then sleep on
	// both queues' descriptors (a short timeout sees stop).
	var ws nic.WaitSet
	for _, p := range []nic.Port{n.LAN, n.WAN} {
		if pp, ok := p.(nic.Pollable); ok {
			ws.Add(pp.PollFD(q))
		}
	}
	idle := 0
	for iter := 0; !n.stop.Load(); iter++ {
		if move(n.LAN, n.WAN)+move(n.WAN, n.LAN) == 0 {
			if idle == 0 {
				if lanF != nil {
					_ = lanF.Flush(q)
				}
				if wanF != nil {
					_ = wanF.Flush(q)
				}
			}
			if idle++; idle >= 64 {
				ws.Wait(10 * time.Millisecond)
			}
		} else {
			idle = 0
		}
		if iter&255 == 0 {
			storeCPU()
		}
	}
	storeCPU()
}

// Workers returns each thread's figures so far: frames sent, CPU time.
func (n *NullForwarder) Workers() []pipeline.WorkerResult {
	out := make([]pipeline.WorkerResult, len(n.threads))
	for i, t := range n.threads {
		out[i] = pipeline.WorkerResult{Worker: i, Packets: t.packets.Load(), CPUNs: t.cpuNs.Load()}
	}
	return out
}

// Drops returns the frames Send refused, all threads.
func (n *NullForwarder) Drops() uint64 {
	var d uint64
	for _, t := range n.threads {
		d += t.drops.Load()
	}
	return d
}

// Stop stops the threads and closes the ports.
func (n *NullForwarder) Stop() error {
	n.stop.Store(true)
	n.wg.Wait()
	err := errors.Join(n.LAN.Close(), n.WAN.Close())
	if n.undo != nil {
		n.undo()
	}
	return err
}
