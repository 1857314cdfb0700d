package pppoe

import (
	"errors"
	"sync"
)

// ErrNotRunning is Reconnect's error when the client's Run is not
// running (or is shutting down).
var ErrNotRunning = errors.New("pppoe: client not running")

// wakes holds the wake channel of every Client whose Run is running: an
// outside call that changes the client's timers (Reconnect) sends on it
// so that Run's loop re-reads them at once instead of sleeping until the
// timer it armed before.
var wakes sync.Map // *Client -> chan struct{} (capacity 1)

// wakeChan implements waker: it registers the channel Run's loop waits on.
func (cc *clientCore) wakeChan() <-chan struct{} {
	ch := make(chan struct{}, 1)
	wakes.Store((*Client)(cc), ch)
	return ch
}

// release implements waker: Run has ended.
func (cc *clientCore) release() { wakes.Delete((*Client)(cc)) }

// Reconnect ends the current session as an administrator asks to (the
// reconnect button of a GUI, or a daily forced reconnect), sending PADT
// to the access concentrator, and starts discovery again at once, without
// the holdoff a failure waits. Without a session it restarts discovery.
// reason becomes LastError (the last reason the session ended). It fails
// with ErrNotRunning when Run is not running or shutting down.
func (c *Client) Reconnect(reason string) error {
	v, ok := wakes.Load(c)
	if !ok {
		return ErrNotRunning
	}
	c.mu.Lock()
	if c.closing || c.done {
		c.mu.Unlock()
		return ErrNotRunning
	}
	now := c.cfg.Clock.Now()
	c.now = now
	c.st.LastError = reason
	c.logf("pppoe: %s", reason)
	if c.st.SessionID != 0 || c.link != nil {
		c.endSession(now, reason, false, true) // PADT, then holdoff
	}
	// An administrative reconnect is no failure: no backoff, and the
	// holdoff timer fires now (tick counts it in Counters.Reconnects).
	c.failStreak = 0
	c.st.State = StateHoldoff
	c.timer = now
	c.mu.Unlock()
	select {
	case v.(chan struct{}) <- struct{}{}:
	default: // a wake is already pending
	}
	return nil
}
