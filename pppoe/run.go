package pppoe

import (
	"context"
	"sync"
	"time"
)

// core is the event-driven state machine of a Client or Server. All
// methods except lock/unlock are called with the lock held.
type core interface {
	lock()
	unlock()
	start(now time.Time)
	input(frame []byte, now time.Time)
	tick(now time.Time)
	next() time.Time // earliest timer, zero if none
	shutdown(now time.Time)
	finished() bool
	err() error // first Conn write error
}

// waker is a core whose timers outside calls may change: wakeChan is
// called once when the loop starts and returns the channel such calls
// signal; release is called when the loop ends.
type waker interface {
	wakeChan() <-chan struct{}
	release()
}

// readPoll bounds each ReadFrame so the reader notices shutdown on a
// Conn that is not a ReaderWaker (one that is is woken at once).
const readPoll = time.Second

// runLoop drives c from conn and clock until ctx is done, then lets the
// core shut down gracefully for at most grace (on the clock) before
// returning.
func runLoop(ctx context.Context, conn Conn, clock Clock, grace time.Duration, c core) error {
	rctx, cancel := context.WithCancel(context.Background())
	frames := make(chan []byte, 64)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, err := conn.ReadFrame(buf, readPoll)
			if rctx.Err() != nil {
				return
			}
			if err != nil {
				if isTimeout(err) {
					continue
				}
				errc <- err
				return
			}
			f := append([]byte(nil), buf[:n]...)
			select {
			case frames <- f:
			case <-rctx.Done():
				return
			}
		}
	}()
	defer func() {
		cancel()
		if w, ok := conn.(ReaderWaker); ok {
			w.WakeReader()
		}
		wg.Wait()
	}()

	// A core that outside calls can change between events (Client's
	// Reconnect) wakes the loop to re-read its timers.
	var wake <-chan struct{}
	if w, ok := c.(waker); ok {
		wake = w.wakeChan()
		defer w.release()
	}
	c.lock()
	c.start(clock.Now())
	c.unlock()
	stopping := false
	var hardStop <-chan time.Time
	for {
		c.lock()
		if err := c.err(); err != nil {
			c.unlock()
			return err
		}
		if stopping && c.finished() {
			c.unlock()
			return nil
		}
		var tc <-chan time.Time
		if t := c.next(); !t.IsZero() {
			tc = clock.After(max(t.Sub(clock.Now()), 0))
		}
		c.unlock()
		done := ctx.Done()
		if stopping {
			done = nil
		}
		select {
		case <-done:
			stopping = true
			hardStop = clock.After(grace + time.Second)
			c.lock()
			c.shutdown(clock.Now())
			c.unlock()
		case f := <-frames:
			c.lock()
			c.input(f, clock.Now())
			c.unlock()
		case <-tc:
			c.lock()
			c.tick(clock.Now())
			c.unlock()
		case <-wake: // the timers changed: the loop re-reads them
		case err := <-errc:
			return err
		case <-hardStop:
			return nil
		}
	}
}
