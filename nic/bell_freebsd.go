package nic

import (
	"time"

	"golang.org/x/sys/unix"
)

// NewBell returns a doorbell over a non-blocking pipe.
func NewBell() (*Bell, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, err
	}
	return &Bell{rfd: p[0], wfd: p[1]}, nil
}

// poll waits with poll(2): the timeout is rounded up to a millisecond.
func (s *WaitSet) poll(timeout time.Duration) (int, error) {
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	return unix.Poll(s.fds, ms)
}
