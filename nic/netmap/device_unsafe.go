//go:build linux || freebsd

package netmap

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/pppfwd/pppfwd/nic"
	"golang.org/x/sys/unix"
)

// regions shares one mapping per netmap memory allocator between every fd
// (queues, ports and host ports) registered on it, as nm_open's
// NM_OPEN_NO_MMAP does: buffer indices are global to an allocator, which is
// what makes zero-copy Forward between ports possible.
var regions = struct {
	sync.Mutex
	m map[uint16]*region
}{m: map[uint16]*region{}}

type region struct {
	mem  []byte
	refs int
}

func acquireRegion(fd int, id uint16, size uint64) ([]byte, error) {
	regions.Lock()
	defer regions.Unlock()
	if r := regions.m[id]; r != nil {
		if uint64(len(r.mem)) != size {
			return nil, fmt.Errorf("netmap: memory %d size changed (%d -> %d)", id, len(r.mem), size)
		}
		r.refs++
		return r.mem, nil
	}
	if size == 0 || size > 1<<40 {
		return nil, fmt.Errorf("netmap: kernel reported region size %d", size)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("netmap: mmap %d bytes: %w", size, err)
	}
	regions.m[id] = &region{mem: mem, refs: 1}
	return mem, nil
}

func releaseRegion(id uint16) {
	regions.Lock()
	defer regions.Unlock()
	r := regions.m[id]
	if r == nil {
		return
	}
	if r.refs--; r.refs == 0 {
		_ = unix.Munmap(r.mem)
		delete(regions.m, id)
	}
}

// devFD is one registered /dev/netmap file descriptor.
type devFD struct {
	fd  int
	pfd [1]unix.PollFd
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

func (d *devFD) TxSync() error {
	if err := ioctl(d.fd, nioTxSync, nil); err != nil {
		return fmt.Errorf("netmap: NIOCTXSYNC: %w", err)
	}
	return nil
}

func (d *devFD) RxSync() error {
	if err := ioctl(d.fd, nioRxSync, nil); err != nil {
		return fmt.Errorf("netmap: NIOCRXSYNC: %w", err)
	}
	return nil
}

func (d *devFD) Poll(timeout time.Duration) error {
	d.pfd[0] = unix.PollFd{Fd: int32(d.fd), Events: unix.POLLIN}
	ms := int(timeout / time.Millisecond)
	if ms == 0 && timeout > 0 {
		ms = 1
	}
	_, err := unix.Poll(d.pfd[:], ms)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("netmap: poll: %w", err)
	}
	return nil
}

func (d *devFD) Close() error { return unix.Close(d.fd) }

// portName strips the "netmap:" prefix nm_open accepts; the kernel wants
// the bare name (em0, vale0:1, ...).
func portName(name string) string { return strings.TrimPrefix(name, "netmap:") }

// register opens /dev/netmap and binds it with NIOCCTRL /
// NETMAP_REQ_REGISTER (the legacy equivalent is NIOCREGIF with struct
// nmreq, nr_flags = mode, nr_ringid = ringid).
func register(name string, mode uint32, ringid uint16, flags uint64) (int, reqRegister, error) {
	var reg reqRegister
	if strconv.IntSize != 64 {
		return -1, reg, fmt.Errorf("netmap: %w: the netmap.h layout is mirrored for 64-bit targets only", nic.ErrNotSupported)
	}
	if len(name) == 0 || len(name) >= reqNameLen {
		return -1, reg, fmt.Errorf("netmap: bad port name %q", name)
	}
	fd, err := unix.Open(DeviceName, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return -1, reg, fmt.Errorf("netmap: %s missing (netmap module not loaded): %w", DeviceName, err)
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			return -1, reg, fmt.Errorf("netmap: open %s needs root: %w", DeviceName, err)
		}
		return -1, reg, fmt.Errorf("netmap: open %s: %w", DeviceName, err)
	}
	// The header points at the body: both live in one pinned heap object
	// so the address stays valid during the ioctl.
	req := new(struct {
		hdr reqHeader
		reg reqRegister
	})
	var pin runtime.Pinner
	pin.Pin(req)
	defer pin.Unpin()
	req.hdr.Version = APIVersion
	req.hdr.ReqType = reqTypeRegister
	copy(req.hdr.Name[:], name)
	req.reg.Mode = mode
	req.reg.RingID = ringid
	req.reg.Flags = flags
	req.hdr.Body = uint64(uintptr(unsafe.Pointer(&req.reg)))
	if err := ioctl(fd, nioCtrl, unsafe.Pointer(&req.hdr)); err != nil {
		unix.Close(fd)
		return -1, reg, fmt.Errorf("netmap: register %s (mode %d ring %d): %w", name, mode, ringid, err)
	}
	return fd, req.reg, nil
}

// bind registers one fd and builds its queue over the shared mapping.
func bind(name string, mode uint32, sel ringIndex, flags uint64, q int) (*queue, reqRegister, error) {
	fd, reg, err := register(name, mode, uint16(sel.id), flags)
	if err != nil {
		return nil, reg, err
	}
	mem, err := acquireRegion(fd, reg.MemID, reg.MemSize)
	if err != nil {
		unix.Close(fd)
		return nil, reg, err
	}
	qu, err := newQueue(mem, reg.MemID, int64(reg.Offset), sel, &devFD{fd: fd}, q)
	if err != nil {
		unix.Close(fd)
		releaseRegion(reg.MemID)
		return nil, reg, err
	}
	return qu, reg, nil
}

func (p *Port) closeQueues() {
	for _, qu := range p.queues {
		qu.k.Close()
		releaseRegion(qu.memID)
	}
	p.queues = nil
}

// Open binds the NIC rings of a netmap port (an interface name such as
// "em0", optionally prefixed "netmap:"): queue q is NIC ring pair q on its
// own fd (NR_REG_ONE_NIC), for one worker each.
func Open(name string, cfg Config) (*Port, error) {
	name = portName(name)
	flags := uint64(nrNoTxPoll)
	if cfg.Exclusive {
		flags |= nrExclusive
	}
	p := &Port{name: "netmap:" + name}
	qu, reg, err := bind(name, RegOneNIC, ringIndex{id: 0}, flags, 0)
	if err != nil {
		return nil, err
	}
	p.queues = append(p.queues, qu)
	n := int(min(reg.TxRings, reg.RxRings))
	if cfg.Queues > 0 {
		if cfg.Queues > n {
			p.closeQueues()
			return nil, fmt.Errorf("netmap: %s has %d ring pairs, %d queues requested", name, n, cfg.Queues)
		}
		n = cfg.Queues
	}
	for q := 1; q < n; q++ {
		qu, _, err := bind(name, RegOneNIC, ringIndex{id: q}, flags, q)
		if err != nil {
			p.closeQueues()
			return nil, err
		}
		p.queues = append(p.queues, qu)
	}
	p.release = p.releaseAll
	return p, nil
}

// OpenHost binds the host rings of a netmap port (NR_REG_SW, host ring
// pair 0): Recv returns frames the host stack transmits on the interface,
// Send delivers frames to the host stack as if received on it.
func OpenHost(name string) (*Port, error) {
	name = portName(name)
	qu, _, err := bind(name, RegSW, ringIndex{host: true}, nrNoTxPoll, 0)
	if err != nil {
		return nil, err
	}
	p := &Port{name: "netmap:" + name + "^", host: true, queues: []*queue{qu}}
	p.release = p.releaseAll
	return p, nil
}

func (p *Port) releaseAll() {
	for _, qu := range p.queues {
		releaseRegion(qu.memID)
	}
}

func (d *devFD) pollFD() int { return d.fd }
