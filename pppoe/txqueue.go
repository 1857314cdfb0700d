package pppoe

import (
	"errors"
	"os"
	"time"
)

// Bounds of the retry queue of frames a Conn refused.
const (
	txQueueLen = 16                     // frames kept for retry
	txRetryMin = 10 * time.Millisecond  // first retry after a failed write
	txRetryMax = 500 * time.Millisecond // retry delay cap (doubling per failure)
)

// permanentWriteErr reports whether a Conn write error means the Conn is
// gone (it was closed), as opposed to a transient refusal such as the
// dataplane's full injection ring.
func permanentWriteErr(err error) bool {
	return errors.Is(err, ErrClosed) || errors.Is(err, os.ErrClosed)
}

// txQueue writes the control frames of a client or an access
// concentrator to its Conn. A frame the Conn refuses with a transient
// error is copied into a bounded queue and retried, oldest first, on later
// turns of the run loop (after txRetryMin, doubling while the Conn
// refuses every frame, up to txRetryMax).
//
// Invariants: frames reach the Conn in the order they were written (while
// frames wait, a new one queues behind them, so LCP packets are never
// reordered); at most txQueueLen frames wait, and a full queue drops its
// oldest frame, a loss the PPP restart timers and discovery retries
// recover as they do loss on the wire; only a permanent error (the Conn is
// closed) is kept in err, and it ends Run. Not safe for concurrent use
// (its owner's lock guards it).
type txQueue struct {
	conn    Conn
	frames  [][]byte  // waiting, oldest first
	free    [][]byte  // buffers of sent frames, for reuse
	retry   time.Time // when frames[0] is tried again (zero: nothing waits)
	delay   time.Duration
	err     error  // permanent write error
	errors  uint64 // failed writes (each retry that fails counts)
	dropped uint64 // frames dropped from a full queue
	// onError, when set, is told of the transient error that starts a
	// streak (the queue was empty): never once per frame.
	onError func(err error)
}

// write sends b (b may be reused on return).
func (q *txQueue) write(b []byte, now time.Time) {
	if q.err != nil {
		return
	}
	if len(q.frames) > 0 {
		q.push(b)
		return
	}
	err := q.conn.WriteFrame(b)
	if err == nil {
		return
	}
	if q.failed(err, now) {
		q.push(b)
		if q.onError != nil {
			q.onError(err)
		}
	}
}

// failed records a write error and reports whether it is transient.
func (q *txQueue) failed(err error, now time.Time) bool {
	if permanentWriteErr(err) {
		q.err = err
		q.frames = q.frames[:0]
		q.retry = time.Time{}
		return false
	}
	q.errors++
	q.delay = min(max(2*q.delay, txRetryMin), txRetryMax)
	q.retry = now.Add(q.delay)
	return true
}

func (q *txQueue) push(b []byte) {
	if len(q.frames) == txQueueLen {
		q.free = append(q.free, q.frames[0][:0])
		copy(q.frames, q.frames[1:])
		q.frames = q.frames[:len(q.frames)-1]
		q.dropped++
	}
	var buf []byte
	if n := len(q.free); n > 0 {
		buf, q.free = q.free[n-1], q.free[:n-1]
	}
	q.frames = append(q.frames, append(buf, b...))
}

// next is when flush has work (zero: none).
func (q *txQueue) next() time.Time { return q.retry }

// pending reports whether frames wait.
func (q *txQueue) pending() bool { return len(q.frames) > 0 }

// flush retries the waiting frames, oldest first, if their time has
// come; it stops at the first that fails again.
func (q *txQueue) flush(now time.Time) {
	if !due(q.retry, now) {
		return
	}
	sent := 0
	for sent < len(q.frames) {
		if err := q.conn.WriteFrame(q.frames[sent]); err != nil {
			if sent > 0 {
				q.delay = 0 // the Conn took frames again: back off afresh
			}
			if !q.failed(err, now) {
				return
			}
			break
		}
		sent++
	}
	for _, b := range q.frames[:sent] {
		q.free = append(q.free, b[:0])
	}
	q.frames = q.frames[:copy(q.frames, q.frames[sent:])]
	if len(q.frames) == 0 {
		q.retry, q.delay = time.Time{}, 0
	}
}
