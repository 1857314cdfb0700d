//go:build linux || freebsd

package nic

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Bell is a doorbell a thread can sleep on in a WaitSet: Ring makes its
// descriptor readable until Clear. A Linux eventfd; elsewhere a pipe.
// Ring and Clear never block and may run on any thread.
type Bell struct {
	rfd, wfd int
}

// WaitSet is a set of descriptors one thread waits on; not safe for
// concurrent use. Wait allocates nothing.
type WaitSet struct {
	fds []unix.PollFd
	ts  unix.Timespec
}

// Add adds fd (ignored if negative) to the set.
func (s *WaitSet) Add(fd int) {
	if fd >= 0 {
		s.fds = append(s.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
}

// Len returns the number of descriptors in the set.
func (s *WaitSet) Len() int { return len(s.fds) }

// Wait blocks until a descriptor of the set is readable (or reports an
// error or hang-up), timeout passes (timeout < 0: no timeout), or a
// signal interrupts it. It reports which, and errors only when poll
// itself fails.
func (s *WaitSet) Wait(timeout time.Duration) (ready bool, err error) {
	for i := range s.fds {
		s.fds[i].Revents = 0
	}
	n, err := s.poll(timeout)
	if err != nil {
		if errors.Is(err, unix.EINTR) {
			return false, nil
		}
		return false, fmt.Errorf("nic: ppoll: %w", err)
	}
	return n > 0, nil
}

// Ready reports whether the i-th descriptor added to the set (in Add
// order, negative ones not counted) was readable, in error or hung up
// when the last Wait returned; false after a timeout or an interrupt.
func (s *WaitSet) Ready(i int) bool { return i >= 0 && i < len(s.fds) && s.fds[i].Revents != 0 }

// Ring makes the bell's descriptor readable.
func (b *Bell) Ring() {
	var one = [8]byte{1}
	unix.Write(b.wfd, one[:]) // EAGAIN: already rung (the counter is full)
}

// Clear empties the bell.
func (b *Bell) Clear() {
	var buf [64]byte
	for {
		n, err := unix.Read(b.rfd, buf[:])
		if err != nil || n < len(buf) {
			return
		}
	}
}

// FD returns the descriptor to wait on.
func (b *Bell) FD() int { return b.rfd }

// Close releases the bell.
func (b *Bell) Close() error {
	err := unix.Close(b.rfd)
	if b.wfd != b.rfd {
		err = errors.Join(err, unix.Close(b.wfd))
	}
	return err
}
