//go:build !linux && !freebsd

package nic

import "time"

// Bell is a doorbell; on this GOOS it has no descriptor and a WaitSet
// sleeps out its timeout.
type Bell struct{}

// NewBell returns a bell without a descriptor.
func NewBell() (*Bell, error) { return &Bell{}, nil }

// Ring does nothing here.
func (b *Bell) Ring() {}

// Clear does nothing here.
func (b *Bell) Clear() {}

// FD returns -1.
func (b *Bell) FD() int { return -1 }

// Close does nothing.
func (b *Bell) Close() error { return nil }

// WaitSet sleeps for the timeout on this GOOS.
type WaitSet struct{}

// Add does nothing here.
func (s *WaitSet) Add(fd int) {}

// Len returns 0.
func (s *WaitSet) Len() int { return 0 }

// Ready returns false here.
func (s *WaitSet) Ready(i int) bool { return false }

// Wait sleeps for timeout (at most a second).
func (s *WaitSet) Wait(timeout time.Duration) (bool, error) {
	if timeout < 0 || timeout > time.Second {
		timeout = time.Second
	}
	time.Sleep(timeout)
	return false, nil
}
