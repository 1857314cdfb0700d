package nic

import (
	"context"
	"time"
)

// Pollable is implemented by ports whose queues can be waited on with
// poll(2) together with other descriptors: an idle worker sleeps on its
// LAN queue, the WAN queues it steers and its doorbell at once (WaitSet).
type Pollable interface {
	// PollFD returns a descriptor that poll reports readable (POLLIN)
	// when Recv on queue q may return frames, or -1 if the queue has
	// none (a simulated kernel side). Polling it may also make the
	// kernel move frames (netmap's rxsync, AF_XDP's wakeup).
	PollFD(q int) int
	// RxReady reports, without a system call, whether Recv on queue q
	// would return a frame now. A worker checks it after announcing that
	// it is about to sleep, so that no frame waits for a timeout.
	RxReady(q int) bool
}

// Drowsy is implemented by Pollable ports that change how they receive
// when their thread stops polling: a thread calls Drowse for each queue it
// waits on just before it sleeps, on its own thread (the consumer's).
// Drowse may make a system call; it must not lose or reorder frames.
type Drowsy interface {
	Drowse(q int)
}

// LinkChecker is implemented by ports whose removed interface shows only
// when probed (AF_XDP: a socket whose device is gone polls as idle
// forever). A thread that slept out its timeout calls CheckLink for the
// queues it serves; it returns an error wrapping ErrLinkGone once the
// interface is gone.
type LinkChecker interface {
	CheckLink(q int) error
}

// Notify sends on ready each time queue q of p may have frames to
// receive (Port.Wait returned), waiting for the receiver to take each
// signal before it waits again, until ctx ends. Wait wakes at least every
// poll (a signal then, harmless); after a Wait error (a closed or broken
// port) it looks again a second later rather than spin. It is for a
// goroutine that selects on ready beside other work (the control plane's
// host port, the lab's upstream TAP).
func Notify(ctx context.Context, p Port, q int, poll time.Duration, ready chan<- struct{}) {
	for ctx.Err() == nil {
		if err := p.Wait(q, poll); err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		select {
		case ready <- struct{}{}:
		case <-ctx.Done():
		}
	}
}
