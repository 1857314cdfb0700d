//go:build linux

package tap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/nic"
)

type queue struct {
	fd      int
	pollfds [2]unix.PollFd
	waiters atomic.Int32

	rxPackets, rxBytes, txPackets, txBytes atomic.Uint64
	rxTrunc, txFull, txErr                 atomic.Uint64
	_                                      [64]byte
}

// Port is a TAP device as a nic.Port.
type Port struct {
	name   string
	q      []*queue
	efd    int
	closed atomic.Bool
}

// Open creates the TAP device name (the kernel picks one if name contains
// "%d", e.g. "pftap%d"); Name reports the result.
func Open(name string, cfg Config) (*Port, error) {
	if cfg.Queues <= 0 {
		cfg.Queues = 1
	}
	if len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("tap: interface name %q longer than %d bytes", name, unix.IFNAMSIZ-1)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("tap: eventfd: %w", err)
	}
	p := &Port{name: name, efd: efd}
	flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if cfg.Queues > 1 {
		flags |= unix.IFF_MULTI_QUEUE
	}
	for i := 0; i < cfg.Queues; i++ {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			p.release()
			return nil, fmt.Errorf("tap: open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(p.name)
		if err != nil {
			unix.Close(fd)
			p.release()
			return nil, fmt.Errorf("tap: %w", err)
		}
		ifr.SetUint16(flags)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			p.release()
			if errors.Is(err, unix.EPERM) {
				return nil, fmt.Errorf("tap: TUNSETIFF %s: %w (needs CAP_NET_ADMIN)", name, err)
			}
			return nil, fmt.Errorf("tap: TUNSETIFF %s: %w", name, err)
		}
		p.name = ifr.Name()
		q := &queue{fd: fd}
		q.pollfds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		q.pollfds[1] = unix.PollFd{Fd: int32(efd), Events: unix.POLLIN}
		p.q = append(p.q, q)
	}
	if cfg.MTU > 0 {
		if err := p.ifIoctl(unix.SIOCSIFMTU, func(ifr *unix.Ifreq) { ifr.SetUint32(uint32(cfg.MTU)) }); err != nil {
			p.release()
			return nil, fmt.Errorf("tap: set MTU %d on %s: %w", cfg.MTU, p.name, err)
		}
	}
	if cfg.Up {
		if err := p.SetUp(true); err != nil {
			p.release()
			return nil, err
		}
	}
	return p, nil
}

func (p *Port) ifIoctl(req uint, set func(*unix.Ifreq)) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq(p.name)
	if err != nil {
		return err
	}
	if req == unix.SIOCSIFFLAGS {
		if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
			return err
		}
	}
	set(ifr)
	return unix.IoctlIfreq(s, req, ifr)
}

// SetUp brings the interface up or down.
func (p *Port) SetUp(up bool) error {
	err := p.ifIoctl(unix.SIOCSIFFLAGS, func(ifr *unix.Ifreq) {
		f := ifr.Uint16()
		if up {
			f |= unix.IFF_UP
		} else {
			f &^= unix.IFF_UP
		}
		ifr.SetUint16(f)
	})
	if err != nil {
		return fmt.Errorf("tap: set %s up=%v: %w", p.name, up, err)
	}
	return nil
}

func (p *Port) release() {
	for _, q := range p.q {
		unix.Close(q.fd)
	}
	unix.Close(p.efd)
}

// Name implements nic.Port: the device's name.
func (p *Port) Name() string { return p.name }

// Queues implements nic.Port.
func (p *Port) Queues() int { return len(p.q) }

func (p *Port) queue(q int) (*queue, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if q < 0 || q >= len(p.q) {
		return nil, fmt.Errorf("tap: %s has no queue %d", p.name, q)
	}
	return p.q[q], nil
}

// Recv implements nic.Port: one read per frame until the device has
// nothing more or the batch is full.
func (p *Port) Recv(qi int, frames []*nic.Frame) (int, error) {
	q, err := p.queue(qi)
	if err != nil {
		return 0, err
	}
	n := 0
	var bytes, trunc uint64
	for n < len(frames) {
		f := frames[n]
		k, err := unix.Read(q.fd, f.Buf[nic.Headroom:nic.BufSize])
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR {
				break
			}
			q.count(n, bytes, trunc)
			return n, fmt.Errorf("tap: %s: read: %w", p.name, err)
		}
		if k >= nic.MaxData {
			// Filled the buffer: the frame may have been cut (keep the
			// TAP's MTU below nic.MaxData-18).
			trunc++
			continue
		}
		// The TAP has tx checksumming off (no IFF_VNET_HDR, no
		// TUNSETOFFLOAD): the host stack finishes every checksum first.
		f.Off, f.Len, f.Queue, f.Rx = nic.Headroom, k, uint16(qi), 0
		bytes += uint64(k)
		n++
	}
	q.count(n, bytes, trunc)
	return n, nil
}

func (q *queue) count(n int, bytes, trunc uint64) {
	if n > 0 {
		q.rxPackets.Add(uint64(n))
		q.rxBytes.Add(bytes)
	}
	if trunc > 0 {
		q.rxTrunc.Add(trunc)
	}
}

// Send implements nic.Port: one write per frame. A full device queue
// (EAGAIN) ends the batch; a frame the kernel refuses otherwise (e.g.
// shorter than an Ethernet header) is dropped, counted and accepted.
func (p *Port) Send(qi int, frames []*nic.Frame) (int, error) {
	q, err := p.queue(qi)
	if err != nil {
		return 0, err
	}
	n := 0
	var bytes, sent, errs uint64
	for _, f := range frames {
		if !f.InBounds() {
			errs++
			n++
			continue
		}
		_, err := unix.Write(q.fd, f.Buf[f.Off:f.Off+f.Len])
		if err == unix.EAGAIN || err == unix.EINTR {
			break
		}
		n++
		if err != nil {
			errs++
			continue
		}
		sent++
		bytes += uint64(f.Len)
	}
	if sent > 0 {
		q.txPackets.Add(sent)
		q.txBytes.Add(bytes)
	}
	if errs > 0 {
		q.txErr.Add(errs)
	}
	if r := len(frames) - n; r > 0 {
		q.txFull.Add(uint64(r))
	}
	return n, nil
}

// Wait implements nic.Port with poll(2) on the queue's descriptor.
func (p *Port) Wait(qi int, timeout time.Duration) error {
	if qi < 0 || qi >= len(p.q) {
		return fmt.Errorf("tap: %s has no queue %d", p.name, qi)
	}
	q := p.q[qi]
	q.waiters.Add(1)
	defer q.waiters.Add(-1)
	if p.closed.Load() {
		return ErrClosed
	}
	ms := 0
	if timeout > 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	q.pollfds[0].Revents, q.pollfds[1].Revents = 0, 0
	_, err := unix.Poll(q.pollfds[:], ms)
	if p.closed.Load() || q.pollfds[1].Revents != 0 {
		return ErrClosed
	}
	if err != nil && err != unix.EINTR {
		return fmt.Errorf("tap: %s: poll: %w", p.name, err)
	}
	return nil
}

// Stats implements nic.Port. RxDrops counts truncated frames; TxDrops
// frames refused with a full device queue or rejected by the kernel.
func (p *Port) Stats() nic.Stats {
	var s nic.Stats
	for _, q := range p.q {
		s.RxPackets += q.rxPackets.Load()
		s.RxBytes += q.rxBytes.Load()
		s.TxPackets += q.txPackets.Load()
		s.TxBytes += q.txBytes.Load()
		s.RxDrops += q.rxTrunc.Load()
		s.TxDrops += q.txFull.Load() + q.txErr.Load()
	}
	return s
}

// TapStats returns the counters nic.Stats has no room for.
func (p *Port) TapStats() Stats {
	var s Stats
	for _, q := range p.q {
		s.RxTruncated += q.rxTrunc.Load()
		s.TxErrors += q.txErr.Load()
	}
	return s
}

// Close wakes every Wait, waits for them, and closes the device (which
// removes the interface).
func (p *Port) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(p.efd, one[:])
	for _, q := range p.q {
		for q.waiters.Load() > 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	p.release()
	return nil
}
