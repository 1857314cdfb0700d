package afxdp

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/nic"
)

// portSys holds the Linux resources of a port.
type portSys struct {
	xmap    *ebpf.Map
	prog    *ebpf.Program
	link    link.Link
	evfd    int // written by Close to wake Wait
	waiters atomic.Int32
	socks   []*sock
}

// sock is one AF_XDP socket with its mappings.
type sock struct {
	fd    int
	umem  []byte
	rings [4][]byte // fill, completion, rx, tx mmaps
	pfd   [2]unix.PollFd
	ts    unix.Timespec
}

// kickTX asks the kernel to transmit what the TX ring holds.
func (s *sock) kickTX() int {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0:
		return kickDone
	case unix.EAGAIN:
		return kickAgain
	}
	return kickError
}

// kickRX wakes the driver to refill from the fill ring.
func (s *sock) kickRX() {
	unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
}

// setBusyPoll sets the socket's busy-polling options (Options.BusyPoll).
func (s *sock) setBusyPoll() error {
	for _, o := range []struct {
		name string
		opt  int
		v    int
	}{{"SO_PREFER_BUSY_POLL", unix.SO_PREFER_BUSY_POLL, 1}, {"SO_BUSY_POLL", unix.SO_BUSY_POLL, busyPollUsec},
		{"SO_BUSY_POLL_BUDGET", unix.SO_BUSY_POLL_BUDGET, busyPollBudget}} {
		if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, o.opt, o.v); err != nil {
			return sysErr(o.name, err, "CAP_NET_ADMIN")
		}
	}
	return nil
}

func (s *sock) close() {
	for i, r := range s.rings {
		if r != nil {
			unix.Munmap(r)
			s.rings[i] = nil
		}
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	if s.umem != nil {
		unix.Munmap(s.umem)
		s.umem = nil
	}
}

// Open opens an AF_XDP port on interface ifname: it loads and attaches the
// XDP program, and binds one socket per queue.
func Open(ifname string, o Options) (*Port, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("afxdp: %w", err)
	}
	if o.Queues == 0 {
		o.Queues = 1
		if rx, _, comb, err := ethtoolChannels(ifname); err == nil {
			o.Queues = max(int(rx), int(comb), 1)
		}
	}
	p := &Port{name: ifname, sys: portSys{evfd: -1}, goneErr: fmt.Errorf("afxdp: %s: %w", ifname, nic.ErrLinkGone),
		rxIdle: make([]uint32, o.Queues), txCalls: make([]uint32, o.Queues)}
	ok := false
	defer func() {
		if !ok {
			p.sys.release()
		}
	}()
	p.sys.evfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("afxdp: eventfd: %w", err)
	}
	if p.sys.xmap, err = newXSKMap(o.Queues); err != nil {
		return nil, err
	}
	if p.sys.prog, err = newProgram(p.sys.xmap, o.EtherTypes); err != nil {
		return nil, err
	}
	if p.sys.link, p.mode, err = attach(p.sys.prog, ifname, ifi.Index, o.Mode); err != nil {
		return nil, err
	}
	zc := o.ZeroCopy
	if p.mode == ModeGeneric && zc == ZeroCopyAuto {
		// Generic XDP hands skbs to the socket: only copy mode fits.
		zc = ZeroCopyOff
	}
	p.zeroCopy = true
	for q := 0; q < o.Queues; q++ {
		s, x, err := openSock(ifname, ifi.Index, q, o, zc)
		if s != nil {
			p.sys.socks = append(p.sys.socks, s)
		}
		if err != nil {
			return nil, err
		}
		if v, err := getXDPOptions(s.fd); err != nil || v&unix.XDP_OPTIONS_ZEROCOPY == 0 {
			p.zeroCopy = false
		}
		p.qs = append(p.qs, x)
		if err := p.sys.xmap.Put(uint32(q), uint32(s.fd)); err != nil {
			return nil, sysErr(fmt.Sprintf("add queue %d socket to XSKMAP", q), err, "CAP_BPF (or CAP_SYS_ADMIN)")
		}
	}
	if !p.zeroCopy {
		for _, x := range p.qs {
			x.rxInfo = nic.RxCsumUnknown
		}
	}
	if o.BusyPoll && p.mode == ModeNative {
		for _, s := range p.sys.socks {
			if p.busyPollErr = s.setBusyPoll(); p.busyPollErr != nil {
				break
			}
		}
		p.busyPoll = p.busyPollErr == nil
		for _, x := range p.qs {
			x.busyPoll = p.busyPoll
		}
	}
	ok = true
	return p, nil
}

// openSock creates, maps and binds the socket of queue q.
func openSock(ifname string, ifindex, q int, o Options, zc ZeroCopy) (*sock, *xsk, error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EAFNOSUPPORT) {
			return nil, nil, fmt.Errorf("%w: %w", ErrNoAFXDP, err)
		}
		return nil, nil, sysErr("AF_XDP socket", err, "CAP_NET_RAW")
	}
	s := &sock{fd: fd}
	n := uint32(o.RingSize)
	umemLen := 2 * o.RingSize * o.FrameSize
	s.umem, err = unix.Mmap(-1, 0, umemLen, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return s, nil, fmt.Errorf("afxdp: mmap UMEM (%d bytes): %w", umemLen, err)
	}
	if err := setsockoptUmemReg(fd, s.umem, uint32(o.FrameSize), 0); err != nil {
		if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM) {
			return s, nil, fmt.Errorf("afxdp: XDP_UMEM_REG (%d bytes): %w (raise RLIMIT_MEMLOCK or grant CAP_IPC_LOCK)", umemLen, err)
		}
		return s, nil, sysErr("XDP_UMEM_REG", err, "CAP_NET_RAW")
	}
	for _, opt := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, opt, o.RingSize); err != nil {
			return s, nil, fmt.Errorf("afxdp: set ring size %d (option %d): %w", o.RingSize, opt, err)
		}
	}
	fr, cr, rxo, txo, err := getMmapOffsets(fd)
	if err != nil {
		return s, nil, fmt.Errorf("afxdp: XDP_MMAP_OFFSETS: %w", err)
	}
	mp := func(i int, pgoff int64, off ringOffset, ent uintptr) error {
		m, err := unix.Mmap(fd, pgoff, ringMapLen(off, n, ent), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("afxdp: mmap ring %d: %w", i, err)
		}
		s.rings[i] = m
		return nil
	}
	x := &xsk{}
	if err := mp(0, unix.XDP_UMEM_PGOFF_FILL_RING, fr, 8); err != nil {
		return s, nil, err
	}
	if err := mp(1, unix.XDP_UMEM_PGOFF_COMPLETION_RING, cr, 8); err != nil {
		return s, nil, err
	}
	if err := mp(2, unix.XDP_PGOFF_RX_RING, rxo, 16); err != nil {
		return s, nil, err
	}
	if err := mp(3, unix.XDP_PGOFF_TX_RING, txo, 16); err != nil {
		return s, nil, err
	}
	if err := errors.Join(mapAddrRing(&x.fill, s.rings[0], fr, n), mapAddrRing(&x.comp, s.rings[1], cr, n),
		mapDescRing(&x.rx, s.rings[2], rxo, n), mapDescRing(&x.tx, s.rings[3], txo, n)); err != nil {
		return s, nil, err
	}
	x.setup(uint16(q), s.umem, o.FrameSize, o.RingSize, !o.NoNeedWakeup, s)

	var flags uint16
	switch zc {
	case ZeroCopyOn:
		flags |= unix.XDP_ZEROCOPY
	case ZeroCopyOff:
		flags |= unix.XDP_COPY
	}
	if !o.NoNeedWakeup {
		flags |= unix.XDP_USE_NEED_WAKEUP
	}
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(ifindex), QueueID: uint32(q)}
	err = unix.Bind(fd, sa)
	// A socket closed just before on the same queue is torn down
	// asynchronously by the kernel: EBUSY for a short while.
	for try := 0; errors.Is(err, unix.EBUSY) && try < 100; try++ {
		time.Sleep(10 * time.Millisecond)
		err = unix.Bind(fd, sa)
	}
	if err != nil {
		switch {
		case zc == ZeroCopyOn && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)):
			return s, nil, fmt.Errorf("%w: bind %s queue %d: %w", ErrZeroCopy, ifname, q, err)
		case errors.Is(err, unix.EBUSY):
			return s, nil, fmt.Errorf("afxdp: bind %s queue %d: %w (another AF_XDP socket owns the queue)", ifname, q, err)
		case errors.Is(err, unix.EINVAL):
			return s, nil, fmt.Errorf("afxdp: bind %s queue %d: %w (does the interface have that many queues?)", ifname, q, err)
		}
		return s, nil, sysErr(fmt.Sprintf("bind %s queue %d", ifname, q), err, "CAP_NET_RAW")
	}
	// Let one copy-mode kick send a whole ring where the kernel has
	// XDP_MAX_TX_SKB_BUDGET; older kernels keep their budget of 32, which
	// flush copes with.
	_ = unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, o.RingSize)
	s.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	return s, x, nil
}

// Wait blocks until queue q has frames to receive, timeout passes or the
// port is closed. It first pushes out frames still in the TX ring.
func (p *Port) Wait(q int, timeout time.Duration) error {
	if uint(q) >= uint(len(p.qs)) {
		return ErrQueue
	}
	p.sys.waiters.Add(1)
	defer p.sys.waiters.Add(-1)
	if p.closed.Load() {
		return ErrClosed
	}
	if p.gone.Load() {
		return p.goneErr
	}
	x := p.qs[q]
	x.flush()
	if x.rx.consAvail(1) > 0 {
		return nil
	}
	s := p.sys.socks[q]
	s.pfd[1] = unix.PollFd{Fd: int32(p.sys.evfd), Events: unix.POLLIN}
	s.pfd[0].Revents, s.pfd[1].Revents = 0, 0
	var ts *unix.Timespec
	if timeout >= 0 {
		s.ts = unix.NsecToTimespec(int64(timeout))
		ts = &s.ts
	}
	_, err := unix.Ppoll(s.pfd[:], ts, nil)
	if p.closed.Load() {
		return ErrClosed
	}
	if err != nil && err != unix.EINTR {
		return fmt.Errorf("afxdp: poll: %w", err)
	}
	return nil
}

// Close detaches the XDP program and releases sockets and memory. Recv and
// Send must have stopped; a Wait in progress returns ErrClosed.
func (p *Port) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	var one = [8]byte{1}
	unix.Write(p.sys.evfd, one[:])
	for p.sys.waiters.Load() > 0 {
		runtime.Gosched()
	}
	return p.sys.release()
}

func (s *portSys) release() error {
	var errs []error
	if s.link != nil {
		errs = append(errs, s.link.Close())
		s.link = nil
	}
	if s.prog != nil {
		errs = append(errs, s.prog.Close())
		s.prog = nil
	}
	if s.xmap != nil {
		errs = append(errs, s.xmap.Close())
		s.xmap = nil
	}
	for _, k := range s.socks {
		k.close()
	}
	s.socks = nil
	if s.evfd >= 0 {
		unix.Close(s.evfd)
		s.evfd = -1
	}
	return errors.Join(errs...)
}

// kernelRxDrops sums the kernel's per-socket RX drop counters.
// unbound reports whether queue q's socket lost its binding: the kernel
// unbinds an AF_XDP socket whose interface is unregistered, and a
// recvfrom on it then fails with ENXIO (on a bound socket it is a no-op
// or an RX wakeup).
func (s *portSys) unbound(q int) bool {
	if q >= len(s.socks) || s.socks[q].fd < 0 {
		return false
	}
	_, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.socks[q].fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e == unix.ENXIO || e == unix.ENODEV
}

func (s *portSys) kernelRxDrops() uint64 {
	var n uint64
	for _, k := range s.socks {
		if k.fd < 0 {
			continue
		}
		if st, err := getXDPStats(k.fd); err == nil {
			n += st.Rx_dropped + st.Rx_ring_full + st.Rx_invalid_descs
		}
	}
	return n
}

// PollFD implements nic.Pollable: queue q's XDP socket.
func (p *Port) PollFD(q int) int {
	if uint(q) >= uint(len(p.sys.socks)) {
		return -1
	}
	return p.sys.socks[q].fd
}

// RxReady implements nic.Pollable.
func (p *Port) RxReady(q int) bool {
	return uint(q) < uint(len(p.qs)) && p.qs[q].rx.consAvail(1) > 0
}

// InterfaceQueues returns how many RX queues ifname's driver reports
// (ethtool channels; 1 when it reports none): an AF_XDP socket binds to
// one of them, so a port can have at most this many.
func InterfaceQueues(ifname string) int {
	if rx, _, comb, err := ethtoolChannels(ifname); err == nil {
		return max(int(rx), int(comb), 1)
	}
	return 1
}
