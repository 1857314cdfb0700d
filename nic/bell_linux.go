package nic

import (
	"time"

	"golang.org/x/sys/unix"
)

// NewBell returns a doorbell over an eventfd.
func NewBell() (*Bell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return &Bell{rfd: fd, wfd: fd}, nil
}

// poll waits with ppoll: a nanosecond timeout, so a shaper's release a
// few microseconds ahead is not rounded up to a millisecond.
func (s *WaitSet) poll(timeout time.Duration) (int, error) {
	var ts *unix.Timespec
	if timeout >= 0 {
		s.ts = unix.NsecToTimespec(int64(timeout))
		ts = &s.ts
	}
	return unix.Ppoll(s.fds, ts, nil)
}
