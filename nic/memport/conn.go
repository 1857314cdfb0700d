package memport

import (
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

// Conn is a frame conn over one queue of a port, with the method set of
// pppoe.Conn (ReadFrame, WriteFrame, HardwareAddr, Close), for tests and
// labs that run a PPPoE peer on the far side of a memport pair. Timeouts
// return os.ErrDeadlineExceeded. One goroutine may read and one write.
type Conn struct {
	p      *Port
	q      int
	mac    [6]byte
	rx, tx []*nic.Frame
	woken  atomic.Bool
}

// NewConn returns a Conn on queue q of p with source MAC mac.
func NewConn(p *Port, q int, mac [6]byte) *Conn {
	return &Conn{p: p, q: q, mac: mac, rx: nic.NewFrames(1), tx: nic.NewFrames(1)}
}

// ReadFrame copies the next frame into b, waiting up to timeout.
func (c *Conn) ReadFrame(b []byte, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		c.rx[0].Reset()
		n, err := c.p.Recv(c.q, c.rx)
		if err != nil {
			return 0, net.ErrClosed
		}
		if n == 1 {
			return copy(b, c.rx[0].Data()), nil
		}
		if !time.Now().Before(deadline) || c.woken.Swap(false) {
			return 0, os.ErrDeadlineExceeded
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// WakeReader makes a ReadFrame in progress return os.ErrDeadlineExceeded
// (the method set of pppoe.ReaderWaker).
func (c *Conn) WakeReader() { c.woken.Store(true) }

// WriteFrame sends one frame.
func (c *Conn) WriteFrame(b []byte) error {
	if !c.tx[0].SetData(b) {
		return os.ErrInvalid
	}
	n, err := c.p.Send(c.q, c.tx)
	if err != nil {
		return net.ErrClosed
	}
	if n == 0 {
		return os.ErrDeadlineExceeded // ring full
	}
	return nil
}

// HardwareAddr returns the conn's MAC.
func (c *Conn) HardwareAddr() [6]byte { return c.mac }

// Close closes the underlying port.
func (c *Conn) Close() error { return c.p.Close() }
