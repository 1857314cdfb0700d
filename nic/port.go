package nic

import (
	"errors"
	"time"
)

// Port is a multi-queue packet port. Implementations need no locks
// between queues: two Recv calls on the same queue must not run
// concurrently, nor two Send calls; a Recv and a Send on the same queue
// may (a steering thread receives while the queue's worker sends).
//
// Buffers are caller-owned, in the style of wireguard-go's tun.Device: Recv
// fills the caller's frames, Send reads them. A backend may copy, or may swap
// Frame.Buf with a buffer of its own of the same size (zero-copy backends);
// either way the caller still owns every *Frame it passed in.
type Port interface {
	// Name identifies the port in logs and counters.
	Name() string
	// Queues returns the number of RX/TX queue pairs.
	Queues() int
	// Recv fills up to len(frames) frames from queue q without blocking
	// and returns how many it filled. Each filled frame has Off, Len,
	// Queue and Rx set. 0 means nothing is ready.
	Recv(q int, frames []*Frame) (int, error)
	// Send queues frames for transmission on queue q and returns how many
	// were accepted, in order. Frames past the returned count were not
	// sent (ring full); the caller decides whether to retry or drop.
	Send(q int, frames []*Frame) (int, error)
	// Wait blocks until queue q may have frames to receive, the timeout
	// passes, or the port closes. Busy-polling workers need not call it.
	Wait(q int, timeout time.Duration) error
	// Stats reports port counters.
	Stats() Stats
	// Close releases the port. Concurrent Recv/Send must have stopped.
	Close() error
}

// Stats are a port's counters (monotonic).
type Stats struct {
	RxPackets, RxBytes uint64
	TxPackets, TxBytes uint64
	RxDrops            uint64 // dropped by the port before Recv (ring full)
	TxDrops            uint64 // refused by Send (ring full)
}

// Flusher is implemented by ports that may hold accepted TX frames back
// (e.g. after a transient kick failure); workers call Flush when idle.
type Flusher interface {
	Flush(q int) error
}

// ErrLinkGone is wrapped by a port's Recv and Send (with the interface
// name) once the interface the port was opened on has been removed: the
// port cannot recover, whatever appears under the same name later; the
// caller ends or reopens it.
var ErrLinkGone = errors.New("nic: interface gone")
