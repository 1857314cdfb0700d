package pppoe

import (
	"crypto/rand"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// Conn carries raw Ethernet frames (header included, 802.1Q tag included
// when the WAN is tagged) between the control plane and the wire.
//
// In production the dataplane hands control frames (EtherType 0x8863, and
// 0x8864 frames whose PPP protocol is not IPv4/IPv6 data) to the control
// plane through a Conn adapter; labs use internal/rawsock; tests use Pipe.
type Conn interface {
	// ReadFrame copies the next frame into b and returns its length. It
	// returns an error matching ErrTimeout when no frame arrives within
	// timeout. A frame longer than b is truncated.
	ReadFrame(b []byte, timeout time.Duration) (int, error)
	// WriteFrame sends one complete frame. b may be reused on return.
	WriteFrame(b []byte) error
	// HardwareAddr is the local MAC used as the source of every frame.
	HardwareAddr() [6]byte
	// Close releases the Conn; blocked ReadFrame calls return.
	Close() error
}

// ReaderWaker is implemented by Conns whose ReadFrame can be cut short:
// WakeReader makes a ReadFrame in progress (or, if none is, possibly the
// next one) return at once with an error matching ErrTimeout. A client
// or server that stops wakes its reader with it, so the reader can wait
// long between frames (no wakeups while idle) and still end at once.
type ReaderWaker interface {
	WakeReader()
}

// ErrTimeout is returned (possibly wrapped) by Conn.ReadFrame when no frame
// arrived in time. It is os.ErrDeadlineExceeded, so Conns built on the Go
// runtime poller (internal/rawsock) match it with errors.Is without importing
// this package.
var ErrTimeout = os.ErrDeadlineExceeded

// ErrClosed is returned by a closed Conn.
var ErrClosed = net.ErrClosed

func isTimeout(err error) bool {
	if errors.Is(err, ErrTimeout) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// pipeDepth is the number of frames a Pipe end buffers; further frames are
// dropped like on a congested wire.
const pipeDepth = 256

type pipeEnd struct {
	mac    [6]byte
	in     chan []byte
	wake   chan struct{}
	peer   *pipeEnd
	done   chan struct{}
	closed sync.Once
}

// Pipe returns two connected in-memory Conns with distinct locally
// administered MACs, for tests. Frames are copied; a full receive buffer
// drops the frame. Closing one end makes its reads fail with ErrClosed and
// silently discards frames written to it.
func Pipe() (Conn, Conn) {
	a := &pipeEnd{in: make(chan []byte, pipeDepth), wake: make(chan struct{}, 1), done: make(chan struct{})}
	b := &pipeEnd{in: make(chan []byte, pipeDepth), wake: make(chan struct{}, 1), done: make(chan struct{})}
	a.peer, b.peer = b, a
	a.mac, b.mac = randomMAC(), randomMAC()
	for a.mac == b.mac {
		b.mac = randomMAC()
	}
	return a, b
}

func randomMAC() [6]byte {
	var m [6]byte
	_, _ = rand.Read(m[:])
	m[0] = m[0]&^1 | 2 // unicast, locally administered
	return m
}

func (p *pipeEnd) ReadFrame(b []byte, timeout time.Duration) (int, error) {
	select {
	case <-p.done:
		return 0, ErrClosed
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case f := <-p.in:
		return copy(b, f), nil
	case <-p.done:
		return 0, ErrClosed
	case <-t.C:
		return 0, ErrTimeout
	case <-p.wake:
		return 0, ErrTimeout
	}
}

// WakeReader implements ReaderWaker.
func (p *pipeEnd) WakeReader() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pipeEnd) WriteFrame(b []byte) error {
	select {
	case <-p.done:
		return ErrClosed
	default:
	}
	f := append([]byte(nil), b...)
	select {
	case <-p.peer.done:
	case p.peer.in <- f:
	default: // full: dropped on the wire
	}
	return nil
}

func (p *pipeEnd) HardwareAddr() [6]byte { return p.mac }

func (p *pipeEnd) Close() error {
	p.closed.Do(func() { close(p.done) })
	return nil
}

// Clock is the time source of the client and server state machines.
// Tests inject a manual clock to make timers deterministic.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SystemClock is the real-time Clock used when a config leaves Clock nil.
var SystemClock Clock = systemClock{}
