//go:build linux

package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/ethtool"
)

var ne = binary.NativeEndian

// TPACKET_V3 layout (linux/if_packet.h).
const (
	// struct tpacket_block_desc: version, offset_to_priv, then
	// struct tpacket_hdr_v1.
	bdStatus   = 8
	bdNumPkts  = 12
	bdFirstPkt = 16

	// struct tpacket3_hdr.
	hNextOffset = 0
	hSnaplen    = 12
	hLen        = 16
	hStatus     = 20
	hMac        = 24
	hVlanTCI    = 32
	hVlanTPID   = 36
	hdrLen      = unix.SizeofTpacket3Hdr // 48, TPACKET_ALIGN'ed

	// TX data offset: TPACKET3_HDRLEN - sizeof(struct sockaddr_ll).
	txDataOff = hdrLen

	// struct tpacket2_hdr (RxFrames): status, len, snaplen, mac, net,
	// sec, nsec, vlan_tci, vlan_tpid; TPACKET2_HDRLEN - sizeof(struct
	// sockaddr_ll) is the TX data offset.
	h2Status   = 0
	h2Len      = 4
	h2Snaplen  = 8
	h2Mac      = 12
	h2VlanTCI  = 24
	h2VlanTPID = 26
	tx2DataOff = 32

	frameSize   = 2048
	txBlockSize = 1 << 16
)

type queue struct {
	fd   int
	efd  int // the port's eventfd, woken by Close
	mem  []byte
	rx   []byte
	tx   []byte
	bsz  int // RX block size
	nblk int

	// v2: the rings are TPACKET_V2 (RxFrames): RX slot nslot frames,
	// cursor slot; otherwise TPACKET_V3 blocks with cursor blk, left, off.
	v2    bool
	nslot int
	slot  int
	// RX cursor (consumer only).
	blk  int
	left uint32
	off  int
	// idle counts Recv calls that found the ring empty (consumer only):
	// every linkCheckEvery-th one asks whether the interface still exists.
	idle uint32
	// TX cursor (producer only).
	txHead  int
	txSlots int

	pollfds [2]unix.PollFd
	waiters atomic.Int32

	// RxAuto: blocks is the queue's TPACKET_V3 socket (receive only) in
	// the same fanout group; epfd an epoll set of both sockets (PollFD,
	// Wait); setMode tells the group's program which ring to fill. hi is
	// whether that is the block ring; full counts Recv calls in a row that
	// filled their batch from the frame ring; hold counts calls that left
	// the frame ring alone while the block ring had frames (see recvAuto).
	// sparse is set by recvBlocks on a block the timer retired with fewer
	// than sparseFrames frames.
	blocks  *queue
	epfd    int
	setMode func(hi bool) error
	hi      bool
	full    uint32
	hold    uint32
	sparse  bool
	sparseN uint32
	// switches counts setMode calls; modeErrs the failed ones.
	switches, modeErrs atomic.Uint64

	rxPackets, rxBytes, txPackets, txBytes atomic.Uint64
	kernelRx, kernelDrops, freezes         atomic.Uint64
	oversize, csumPartial, gso             atomic.Uint64
	txFull, txOversize, txWrong, kickErr   atomic.Uint64
	txDevDrops                             atomic.Uint64
	// TxCopy: sendmmsg's headers and one iovec per frame, made at Open.
	mm  []mmsghdr
	iov []unix.Iovec
	_   [64]byte
}

// mmsgBatch is how many frames one sendmmsg call takes (TxCopy).
const mmsgBatch = 256

// linkCheckEvery is how many empty Recv calls pass between two checks
// that the interface still exists (one getsockname each): Recv itself
// makes no system call and would not notice otherwise.
const linkCheckEvery = 1024

// Port is a nic.Port over TPACKET_V2 (RxFrames) or TPACKET_V3 (RxBlocks)
// packet sockets, or a pair of both per queue (RxAuto).
type Port struct {
	name    string
	ifindex int
	txMode  TxMode
	q       []*queue
	efd     int
	closed  atomic.Bool
	statsMu sync.Mutex
	// gone is set once the interface was found removed; from then on
	// Recv, Send and Wait return goneErr (nic.ErrLinkGone naming it).
	gone    atomic.Bool
	goneErr error
	// owner is whether the owner program steers the group; ownerErr why
	// not, when Config.FanoutOwner asked for it.
	owner    bool
	ownerErr error
	// ring is the RX ring in use; ringErr why it is not RxAuto when that
	// was asked for. mode is RxAuto's switch map (one uint32 per queue).
	ring    RxRing
	ringErr error
	mode    *ebpf.Map
}

var fanoutSeq atomic.Uint32

// Open opens cfg.Queues packet sockets on ifname. Call it inside the
// interface's network namespace (the sockets stay there).
func Open(ifname string, cfg Config) (*Port, error) {
	if cfg.Queues <= 0 {
		cfg.Queues = 1
	}
	if cfg.FanoutOwner != nil && cfg.FanoutWAN != nil {
		return nil, errors.New("afpacket: FanoutOwner and FanoutWAN both set")
	}
	if cfg.RxRing == RxAuto && cfg.Queues > 1 && cfg.FanoutOwner == nil && cfg.FanoutWAN == nil {
		// The program would have to spread frames as cfg.Fanout does.
		cfg.RxRing = RxFrames
		p, err := Open(ifname, cfg)
		if err == nil {
			p.ringErr = errors.New("afpacket: RX ring auto needs one queue or an owner program")
		}
		return p, err
	}
	if cfg.RxRing == RxAuto {
		p, err := openAuto(ifname, cfg)
		if err == nil || !errors.Is(err, errOwnerFanout) {
			return p, err
		}
		cfg.RxRing = RxFrames
		p, ferr := Open(ifname, cfg)
		if ferr != nil {
			return nil, ferr
		}
		p.ringErr = err
		return p, nil
	}
	if (cfg.FanoutOwner == nil && cfg.FanoutWAN == nil) || cfg.Queues == 1 {
		cfg.FanoutOwner, cfg.FanoutWAN = nil, nil
		return open(ifname, cfg, nil)
	}
	if err := cfg.checkSteering(); err != nil {
		return nil, err
	}
	var prog *ebpf.Program
	var err error
	if cfg.FanoutWAN != nil {
		prog, err = loadWAN(cfg.FanoutWAN)
	} else {
		prog, err = loadOwner(cfg.FanoutOwner)
	}
	if err == nil {
		var p *Port
		p, err = open(ifname, cfg, prog)
		prog.Close() // the group holds its own reference
		if err == nil || !errors.Is(err, errOwnerFanout) {
			return p, err
		}
	}
	cfg.FanoutOwner, cfg.FanoutWAN = nil, nil
	p, oerr := open(ifname, cfg, nil)
	if oerr != nil {
		return nil, oerr
	}
	p.ownerErr = err
	return p, nil
}

// checkSteering validates the steering program's spec, if any, against
// the queues.
func (cfg *Config) checkSteering() error {
	switch {
	case cfg.FanoutWAN != nil:
		if err := cfg.FanoutWAN.Validate(); err != nil {
			return err
		}
		if cfg.FanoutWAN.Workers != cfg.Queues {
			return fmt.Errorf("afpacket: WAN fanout for %d workers on %d queues", cfg.FanoutWAN.Workers, cfg.Queues)
		}
	case cfg.FanoutOwner != nil:
		if err := cfg.FanoutOwner.Validate(); err != nil {
			return err
		}
		if cfg.FanoutOwner.Workers != cfg.Queues {
			return fmt.Errorf("afpacket: owner fanout for %d workers on %d queues", cfg.FanoutOwner.Workers, cfg.Queues)
		}
	}
	return nil
}

// loadOwner loads the owner program (a variable for tests of the
// fallback).
var loadOwner = newOwnerProgram

// FanoutOwner reports whether the owner program (Config.FanoutOwner, or
// the WAN program of Config.FanoutWAN) steers the port's frames, and if
// it was asked for and does not, why (the group then uses Config.Fanout).
func (p *Port) FanoutOwner() (bool, error) { return p.owner, p.ownerErr }

// RxRing reports the RX ring in use and, when RxAuto was asked for and
// is not used, why.
func (p *Port) RxRing() (RxRing, error) { return p.ring, p.ringErr }

// openAuto opens an RxAuto port: per queue a frame ring (with the TX
// side) and a receive-only block ring, all in one PACKET_FANOUT_EBPF group
// whose program returns the owner's queue (or 0) plus Queues when that
// queue's switch says blocks. Failures to set the group up wrap
// errOwnerFanout (Open then uses RxFrames).
func openAuto(ifname string, cfg Config) (*Port, error) {
	if cfg.Queues == 1 {
		cfg.FanoutOwner, cfg.FanoutWAN = nil, nil
	}
	if err := cfg.checkSteering(); err != nil {
		return nil, err
	}
	mode, err := ebpf.NewMap(&ebpf.MapSpec{Name: "pppfwd_rxmode", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: uint32(cfg.Queues)})
	if err != nil {
		return nil, fmt.Errorf("%w: RX ring switch map: %w", errOwnerFanout, err)
	}
	// The steering program must load on its own (through the loaders
	// tests replace) before it is built into the switch's.
	var steer asm.Instructions
	var alone *ebpf.Program
	switch {
	case cfg.FanoutWAN != nil:
		steer = wanInsns(cfg.FanoutWAN)
		alone, err = loadWAN(cfg.FanoutWAN)
	case cfg.FanoutOwner != nil:
		steer = ownerInsns(cfg.FanoutOwner)
		alone, err = loadOwner(cfg.FanoutOwner)
	}
	if err != nil {
		mode.Close()
		return nil, err
	}
	if alone != nil {
		alone.Close()
	}
	prog, err := newAutoProgram(steer, cfg.Queues, mode)
	if err != nil {
		mode.Close()
		return nil, err
	}
	p, err := open(ifname, cfg, prog)
	prog.Close() // the group holds its own reference
	if err != nil {
		mode.Close()
		return nil, err
	}
	p.mode = mode
	for i, q := range p.q {
		key := uint32(i)
		var val uint32
		q.setMode = func(hi bool) error {
			val = 0
			if hi {
				val = 1
			}
			return updateWord(mode, &key, &val)
		}
	}
	return p, nil
}

// open opens the port; with prog, the sockets form a PACKET_FANOUT_EBPF
// group running prog (with cfg.RxRing RxAuto, also with one queue), and
// failures to do so wrap errOwnerFanout.
func open(ifname string, cfg Config, prog *ebpf.Program) (*Port, error) {
	if cfg.BlockSize <= 0 {
		cfg.BlockSize = 1 << 18
	}
	if cfg.Blocks <= 0 {
		cfg.Blocks = 64 // 16 MiB with the default block size: ~tens of ms of line rate
	}
	if cfg.BlockTimeout <= 0 {
		cfg.BlockTimeout = time.Millisecond
	}
	if cfg.TxFrames <= 0 {
		cfg.TxFrames = 1024
	}
	page := os.Getpagesize()
	if cfg.BlockSize%page != 0 || cfg.BlockSize < frameSize {
		return nil, fmt.Errorf("afpacket: BlockSize %d is not a multiple of the page size %d", cfg.BlockSize, page)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("afpacket: %w", err)
	}
	switch cfg.TxMode {
	case TxAuto:
		cfg.TxMode = TxRing
		if d, err := ethtool.Driver(ifname); err == nil && d == "veth" {
			cfg.TxMode = TxCopy
		}
	case TxRing, TxCopy:
	default:
		return nil, fmt.Errorf("afpacket: TxMode %d", cfg.TxMode)
	}
	if !cfg.KeepOffloads {
		if err := ethtool.DisableCoalescing(ifname); err != nil {
			return nil, fmt.Errorf("afpacket: %w (set Config.KeepOffloads to skip)", err)
		}
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("afpacket: eventfd: %w", err)
	}
	if prog != nil {
		cfg.Fanout = fanoutEBPF
	}
	p := &Port{name: ifname, ifindex: ifi.Index, efd: efd, txMode: cfg.TxMode, ring: cfg.RxRing,
		goneErr: fmt.Errorf("afpacket: %s: %w", ifname, nic.ErrLinkGone)}
	auto := cfg.RxRing == RxAuto
	// The group's members in join order: the frame rings of queues
	// 0..Queues-1, then (RxAuto) their block rings; the program's result
	// indexes this order.
	members := cfg.Queues
	if auto {
		members *= 2
	}
	fanoutArg := -1
	for i := 0; i < members; i++ {
		qcfg := cfg
		if auto {
			qcfg.RxRing = RxFrames
			if i >= cfg.Queues {
				qcfg.RxRing, qcfg.TxMode = RxBlocks, TxCopy // receive only: no TX ring
			}
		}
		q, err := openQueue(ifi.Index, qcfg, efd)
		if err != nil {
			p.release()
			return nil, err
		}
		if i < cfg.Queues {
			p.q = append(p.q, q)
		} else {
			pq := p.q[i-cfg.Queues]
			pq.blocks = q
			q.sparseN = sparseFrames
			if err := pq.openEpoll(); err != nil {
				p.release()
				return nil, err
			}
		}
		if i == 0 && cfg.Promisc {
			mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
			if err := unix.SetsockoptPacketMreq(q.fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
				p.release()
				return nil, fmt.Errorf("afpacket: promiscuous mode on %s: %w", ifname, err)
			}
		}
		if members > 1 {
			if fanoutArg, err = joinFanout(q.fd, cfg, fanoutArg); err != nil {
				p.release()
				if prog != nil && i == 0 {
					return nil, fmt.Errorf("%w: join a PACKET_FANOUT_EBPF group on %s: %w", errOwnerFanout, ifname, err)
				}
				return nil, fmt.Errorf("afpacket: fanout on %s: %w", ifname, err)
			}
			if prog != nil && i == 0 {
				// Before the other sockets join: until then the group
				// has one member, whatever the program says.
				if err := attachOwner(q.fd, prog); err != nil {
					p.release()
					return nil, err
				}
				p.owner = cfg.FanoutOwner != nil || cfg.FanoutWAN != nil
			}
		}
	}
	return p, nil
}

// joinFanout joins fd to a fanout group. arg < 0 creates the group: with
// cfg.FanoutID, or else a kernel-chosen unique id. It returns the argument
// the next sockets join with.
func joinFanout(fd int, cfg Config, arg int) (int, error) {
	typeFlags := int(cfg.Fanout) | unix.PACKET_FANOUT_FLAG_IGNORE_OUTGOING
	if arg >= 0 {
		return arg, unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT, arg)
	}
	if cfg.FanoutID != 0 {
		arg = int(cfg.FanoutID) | typeFlags<<16
		return arg, unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT, arg)
	}
	err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT, (typeFlags|unix.PACKET_FANOUT_FLAG_UNIQUEID)<<16)
	if err == nil {
		v, gerr := unix.GetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT)
		if gerr != nil {
			return 0, gerr
		}
		return (v & 0xffff) | typeFlags<<16, nil
	}
	// Kernels before 4.4 lack UNIQUEID: try ids derived from the pid.
	for i := 0; i < 32; i++ {
		id := (os.Getpid()*131 + int(fanoutSeq.Add(1))) & 0xffff
		arg = id | typeFlags<<16
		if err = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT, arg); err == nil {
			return arg, nil
		}
	}
	return 0, err
}

func openQueue(ifindex int, cfg Config, efd int) (q *queue, err error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("afpacket: packet socket: %w (needs CAP_NET_RAW)", err)
		}
		return nil, fmt.Errorf("afpacket: packet socket: %w", err)
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	opt := func(name string, o, v int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, o, v); err != nil {
			return fmt.Errorf("afpacket: setsockopt %s: %w", name, err)
		}
		return nil
	}
	version := unix.TPACKET_V3
	if cfg.RxRing == RxFrames {
		version = unix.TPACKET_V2
	}
	if err = opt("PACKET_VERSION", unix.PACKET_VERSION, version); err != nil {
		return nil, err
	}
	// Skip malformed TX frames instead of stopping the ring (must come
	// before the rings are set up).
	if err = opt("PACKET_LOSS", unix.PACKET_LOSS, 1); err != nil {
		return nil, err
	}
	rxReq := unix.TpacketReq3{
		Block_size:     uint32(cfg.BlockSize),
		Block_nr:       uint32(cfg.Blocks),
		Frame_size:     frameSize,
		Frame_nr:       uint32(cfg.Blocks * (cfg.BlockSize / frameSize)),
		Retire_blk_tov: uint32((cfg.BlockTimeout + time.Millisecond - 1) / time.Millisecond),
	}
	if cfg.RxRing == RxFrames {
		// A V2 socket reads the leading struct tpacket_req of req3.
		rxReq.Retire_blk_tov = 0
	}
	if err = unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &rxReq); err != nil {
		return nil, fmt.Errorf("afpacket: PACKET_RX_RING: %w", err)
	}
	// With a TX ring the kernel sends from it whatever sendmsg is given,
	// so TxCopy sockets have none.
	perBlock := txBlockSize / frameSize
	txBlocks := 0
	if cfg.TxMode == TxRing {
		txBlocks = (cfg.TxFrames + perBlock - 1) / perBlock
		txReq := unix.TpacketReq3{
			Block_size: txBlockSize,
			Block_nr:   uint32(txBlocks),
			Frame_size: frameSize,
			Frame_nr:   uint32(txBlocks * perBlock),
		}
		if err = unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &txReq); err != nil {
			return nil, fmt.Errorf("afpacket: PACKET_TX_RING: %w", err)
		}
	}
	if err = opt("PACKET_QDISC_BYPASS", unix.PACKET_QDISC_BYPASS, 1); err != nil {
		return nil, err
	}
	if err = opt("PACKET_IGNORE_OUTGOING", unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return nil, err
	}
	rxSize := cfg.BlockSize * cfg.Blocks
	txSize := txBlockSize * txBlocks
	mem, err := unix.Mmap(fd, 0, rxSize+txSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("afpacket: mmap rings (%d bytes): %w", rxSize+txSize, err)
	}
	defer func() {
		if err != nil {
			_ = unix.Munmap(mem)
		}
	}()
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}
	if err = unix.Bind(fd, sa); err != nil {
		return nil, fmt.Errorf("afpacket: bind to ifindex %d: %w", ifindex, err)
	}
	q = &queue{fd: fd, efd: efd, mem: mem, rx: mem[:rxSize:rxSize], tx: mem[rxSize:],
		bsz: cfg.BlockSize, nblk: cfg.Blocks, txSlots: txBlocks * perBlock,
		v2: cfg.RxRing == RxFrames, nslot: int(rxReq.Frame_nr)}
	if cfg.TxMode == TxCopy {
		q.mm, q.iov = make([]mmsghdr, mmsgBatch), make([]unix.Iovec, mmsgBatch)
		for i := range q.mm {
			q.mm[i].hdr.Iov, q.mm[i].hdr.Iovlen = &q.iov[i], 1
		}
	}
	q.pollfds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN | unix.POLLERR}
	q.pollfds[1] = unix.PollFd{Fd: int32(efd), Events: unix.POLLIN}
	return q, nil
}

// openEpoll makes q.epfd, an epoll set of q's two sockets (RxAuto).
func (q *queue) openEpoll() error {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("afpacket: epoll: %w", err)
	}
	for _, s := range []int{q.fd, q.blocks.fd} {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLERR, Fd: int32(s)}
		if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, s, &ev); err != nil {
			unix.Close(fd)
			return fmt.Errorf("afpacket: epoll: %w", err)
		}
	}
	q.epfd = fd
	q.pollfds[0].Fd = int32(fd)
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (q *queue) release() {
	_ = unix.Munmap(q.mem)
	q.mem, q.rx, q.tx = nil, nil, nil
	unix.Close(q.fd)
	if q.blocks != nil {
		q.blocks.release()
		unix.Close(q.epfd)
	}
}

func (p *Port) release() {
	for _, q := range p.q {
		q.release()
	}
	unix.Close(p.efd)
	if p.mode != nil {
		p.mode.Close()
	}
}

// Name implements nic.Port.
func (p *Port) Name() string { return p.name }

// Queues implements nic.Port.
func (p *Port) Queues() int { return len(p.q) }

func (p *Port) queue(q int) (*queue, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if p.gone.Load() {
		return nil, p.goneErr
	}
	if q < 0 || q >= len(p.q) {
		return nil, fmt.Errorf("afpacket: %s has no queue %d", p.name, q)
	}
	return p.q[q], nil
}

// Recv implements nic.Port: it copies up to len(frames) received frames
// into the caller's buffers, at nic.Headroom, without a system call. A VLAN
// tag the kernel stripped is put back into the frame.
func (p *Port) Recv(qi int, frames []*nic.Frame) (int, error) {
	q, err := p.queue(qi)
	if err != nil {
		return 0, err
	}
	var t rxTally
	if q.blocks != nil {
		q.recvAuto(&t, qi, frames)
	} else if q.v2 {
		q.recvFrames(&t, qi, frames)
	} else {
		q.recvBlocks(&t, qi, frames)
	}
	n := t.n
	if n > 0 {
		q.rxPackets.Add(uint64(n))
		q.rxBytes.Add(t.bytes)
	}
	if t.over != 0 {
		q.oversize.Add(t.over)
	}
	if t.csum != 0 {
		q.csumPartial.Add(t.csum)
	}
	if t.gso != 0 {
		q.gso.Add(t.gso)
	}
	if n == 0 {
		if q.idle++; q.idle%linkCheckEvery == 0 && p.linkGone(q) {
			return 0, p.goneErr
		}
	}
	return n, nil
}

// rxTally is one Recv's walk of a ring: frames delivered and their
// bytes, and the per-frame counts the queue publishes afterwards.
type rxTally struct {
	n                      int
	bytes, over, csum, gso uint64
}

// take counts ring frame of status st (snap of its plen bytes captured at
// rx[mac:], which must lie within [start, end)) and delivers it into
// frames[t.n] unless it is truncated or too long for a Frame.
func (t *rxTally) take(frames []*nic.Frame, qi int, rx []byte, st uint32, mac, snap, plen, start, end int, tci, tpid uint16) {
	if st&unix.TP_STATUS_CSUMNOTREADY != 0 {
		t.csum++
	}
	if st&unix.TP_STATUS_GSO_TCP != 0 {
		t.gso++
	}
	vlan := st&unix.TP_STATUS_VLAN_VALID != 0
	max := nic.MaxData
	if vlan {
		max -= 4
	}
	if snap != plen || snap > max || snap < 14 || mac < start || mac+snap > end {
		t.over++
		return
	}
	t.bytes += uint64(deliver(frames[t.n], qi, rx[mac:mac+snap], vlan, st, tci, tpid))
	t.n++
}

// recvBlocks is Recv over a TPACKET_V3 ring: blocks of frames, user
// space's from TP_STATUS_USER until releaseBlock.
func (q *queue) recvBlocks(t *rxTally, qi int, frames []*nic.Frame) {
	rx := q.rx
	for t.n < len(frames) {
		if q.left == 0 {
			b := q.blk * q.bsz
			st := loadStatus(rx, b+bdStatus)
			if st&unix.TP_STATUS_USER == 0 {
				break
			}
			q.left = ne.Uint32(rx[b+bdNumPkts:])
			if st&unix.TP_STATUS_BLK_TMO != 0 && q.left < q.sparseN {
				q.sparse = true
			}
			q.off = b + int(ne.Uint32(rx[b+bdFirstPkt:]))
			if q.left == 0 {
				q.releaseBlock()
				continue
			}
		}
		end := (q.blk + 1) * q.bsz
		h := q.off
		if h+hdrLen > end {
			// Corrupt block: give it back.
			t.over++
			q.releaseBlock()
			continue
		}
		next := int(ne.Uint32(rx[h+hNextOffset:]))
		q.left--
		q.off += next
		if next == 0 {
			// The kernel leaves tp_next_offset 0 only on a block's last
			// frame: never walk the same header twice.
			q.left = 0
		}
		t.take(frames, qi, rx, ne.Uint32(rx[h+hStatus:]), h+int(ne.Uint16(rx[h+hMac:])),
			int(ne.Uint32(rx[h+hSnaplen:])), int(ne.Uint32(rx[h+hLen:])), h, end,
			uint16(ne.Uint32(rx[h+hVlanTCI:])), ne.Uint16(rx[h+hVlanTPID:]))
		if q.left == 0 {
			q.releaseBlock()
		}
	}
}

// deliver copies the frame data (its VLAN tag put back when the kernel
// stripped it: vlan, with tci and, if st says it is valid, tpid) into f
// at nic.Headroom, marks an unfinished checksum (st's
// TP_STATUS_CSUMNOTREADY) in f.Rx and returns its length. The caller
// checked that the frame fits.
func deliver(f *nic.Frame, qi int, data []byte, vlan bool, st uint32, tci, tpid uint16) int {
	f.Off = nic.Headroom
	f.Queue = uint16(qi)
	f.Rx = 0
	if st&unix.TP_STATUS_CSUMNOTREADY != 0 {
		f.Rx = nic.RxCsumPartial
	}
	buf := f.Buf[nic.Headroom:]
	if !vlan {
		f.Len = copy(buf, data)
		return f.Len
	}
	if st&unix.TP_STATUS_VLAN_TPID_VALID == 0 {
		tpid = 0x8100
	}
	copy(buf[:12], data[:12])
	binary.BigEndian.PutUint16(buf[12:], tpid)
	binary.BigEndian.PutUint16(buf[14:], tci)
	copy(buf[16:], data[12:])
	f.Len = len(data) + 4
	return f.Len
}

// recvFrames is Recv over a TPACKET_V2 ring: each slot is one frame,
// user space's from TP_STATUS_USER until it stores TP_STATUS_KERNEL.
func (q *queue) recvFrames(t *rxTally, qi int, frames []*nic.Frame) {
	rx := q.rx
	for t.n < len(frames) {
		h := q.slot * frameSize
		st := loadStatus(rx, h+h2Status)
		if st&unix.TP_STATUS_USER == 0 {
			break
		}
		t.take(frames, qi, rx, st, h+int(ne.Uint16(rx[h+h2Mac:])),
			int(ne.Uint32(rx[h+h2Snaplen:])), int(ne.Uint32(rx[h+h2Len:])), h+h2VlanTPID+2, h+frameSize,
			ne.Uint16(rx[h+h2VlanTCI:]), ne.Uint16(rx[h+h2VlanTPID:]))
		storeStatus(rx, h+h2Status, unix.TP_STATUS_KERNEL)
		if q.slot++; q.slot == q.nslot {
			q.slot = 0
		}
	}
}

// linkGone reports whether the interface q's socket is bound to has been
// removed (the kernel then rebinds the socket to index -1), and latches
// it. The check asks the socket, not the calling thread's namespace.
func (p *Port) linkGone(q *queue) bool {
	if p.gone.Load() {
		return true
	}
	if idx, err := boundIfindex(q.fd); err == nil && idx != p.ifindex {
		p.gone.Store(true)
		return true
	}
	return false
}

// sendErr maps a send or kick failure to the error Send returns: the
// interface gone (ENXIO, ENODEV, or ENETDOWN with the socket unbound)
// becomes goneErr; anything else is returned naming the interface.
func (p *Port) sendErr(q *queue, err error) error {
	switch {
	case errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENODEV):
		p.gone.Store(true)
		return p.goneErr
	case errors.Is(err, unix.ENETDOWN) && p.linkGone(q):
		return p.goneErr
	}
	return fmt.Errorf("afpacket: %s: send: %w", p.name, err)
}

// releaseBlock hands the current RX block back to the kernel and moves on.
// It zeroes the block's frame count first: the kernel counts frames into
// a block it has opened from zero, so a non-zero count in a kernel-owned
// block means frames the timer has yet to hand over (pending).
func (q *queue) releaseBlock() {
	b := q.blk * q.bsz
	ne.PutUint32(q.rx[b+bdNumPkts:], 0)
	storeStatus(q.rx, b+bdStatus, unix.TP_STATUS_KERNEL)
	q.left = 0
	q.blk++
	if q.blk == q.nblk {
		q.blk = 0
	}
}

// rxReady reports whether Recv would find a frame (RxAuto: in either
// ring).
func (q *queue) rxReady() bool {
	if q.blocks != nil && q.blocks.rxReady() {
		return true
	}
	if q.v2 {
		return loadStatus(q.rx, q.slot*frameSize+h2Status)&unix.TP_STATUS_USER != 0
	}
	return q.left > 0 || loadStatus(q.rx, q.blk*q.bsz+bdStatus)&unix.TP_STATUS_USER != 0
}

// TxMode returns the TX mode in use (TxAuto resolved).
func (p *Port) TxMode() TxMode { return p.txMode }

// Send implements nic.Port. TxRing: it copies the frames into free TX
// slots, marks them for sending and kicks the kernel once (sendto with
// MSG_DONTWAIT); frames longer than a TX slot are dropped and counted (and
// count as accepted); the first frame that finds the ring full ends the
// batch. TxCopy: see sendCopy.
func (p *Port) Send(qi int, frames []*nic.Frame) (int, error) {
	q, err := p.queue(qi)
	if err != nil {
		return 0, err
	}
	if p.txMode == TxCopy {
		n, err := q.sendCopy(frames)
		if err != nil {
			return n, p.sendErr(q, err)
		}
		return n, nil
	}
	tx := q.tx
	var accepted, queued int
	var bytes, over, wrong uint64
	stOff, dataOff := q.txLayout()
	for _, f := range frames {
		slot := q.txHead * frameSize
		st := loadStatus(tx, slot+stOff)
		if st == unix.TP_STATUS_WRONG_FORMAT {
			wrong++
		} else if st != unix.TP_STATUS_AVAILABLE {
			break
		}
		accepted++
		if f.Len > frameSize-dataOff || f.Len == 0 || !f.InBounds() {
			over++
			continue
		}
		copy(tx[slot+dataOff:slot+frameSize], f.Buf[f.Off:f.Off+f.Len])
		if q.v2 {
			ne.PutUint32(tx[slot+h2Len:], uint32(f.Len))
			ne.PutUint32(tx[slot+h2Snaplen:], uint32(f.Len))
		} else {
			ne.PutUint32(tx[slot+hNextOffset:], 0)
			ne.PutUint32(tx[slot+hSnaplen:], uint32(f.Len))
			ne.PutUint32(tx[slot+hLen:], uint32(f.Len))
		}
		storeStatus(tx, slot+stOff, unix.TP_STATUS_SEND_REQUEST)
		bytes += uint64(f.Len)
		queued++
		q.txHead++
		if q.txHead == q.txSlots {
			q.txHead = 0
		}
	}
	q.tally(len(frames), accepted, bytes, over, 0)
	if wrong != 0 {
		q.txWrong.Add(wrong)
	}
	if queued > 0 || accepted < len(frames) {
		if err := q.kick(); err != nil {
			return accepted, p.sendErr(q, err)
		}
	}
	return accepted, nil
}

// txLayout returns the TX slot's status and data offsets.
func (q *queue) txLayout() (status, data int) {
	if q.v2 {
		return h2Status, tx2DataOff
	}
	return hStatus, txDataOff
}

// tally counts one Send: of offered frames, accepted were taken (sent,
// bytes in all, or dropped as oversize or by the device path) and the
// rest refused.
func (q *queue) tally(offered, accepted int, bytes, over, devDrops uint64) {
	if sent := uint64(accepted) - over - devDrops; sent > 0 {
		q.txPackets.Add(sent)
		q.txBytes.Add(bytes)
	}
	if over != 0 {
		q.txOversize.Add(over)
	}
	if devDrops != 0 {
		q.txDevDrops.Add(devDrops)
	}
	if refused := offered - accepted; refused > 0 {
		q.txFull.Add(uint64(refused))
	}
}

// sendCopy sends frames with sendmmsg, mmsgBatch at a time; the kernel
// copies each before the call returns. Frames the kernel takes count as
// accepted, and so do frames it drops: one it refuses as too long or
// malformed (EMSGSIZE, EINVAL), or that is out of its buffer's bounds, is
// counted as TxOversize; one the device path dropped after taking it
// (ENOBUFS: with PACKET_QDISC_BYPASS, a full driver queue or, on veth, the
// peer's full backlog) as TxDeviceDrops, as a TX ring's frames would be
// lost there silently. EAGAIN (the socket's send buffer is full) and
// EINTR end the batch: the rest is refused (TxFull), as is the rest after
// any other error, which Send returns.
func (q *queue) sendCopy(frames []*nic.Frame) (int, error) {
	var bytes, over, devDrops uint64
	accepted := 0
	defer func() { q.tally(len(frames), accepted, bytes, over, devDrops) }()
	for accepted < len(frames) {
		n := 0
		for _, f := range frames[accepted:min(len(frames), accepted+mmsgBatch)] {
			if f.Len == 0 || !f.InBounds() {
				break
			}
			q.iov[n].Base = &f.Buf[f.Off]
			q.iov[n].SetLen(f.Len)
			n++
		}
		if n == 0 { // frames[accepted] is malformed
			over++
			accepted++
			continue
		}
		sent, err := sendmmsg(q.fd, q.mm[:n])
		for _, f := range frames[accepted : accepted+sent] {
			bytes += uint64(f.Len)
		}
		accepted += sent
		switch err {
		case nil:
		case unix.EMSGSIZE, unix.EINVAL:
			over++
			accepted++
		case unix.ENOBUFS:
			devDrops++
			accepted++
		case unix.EAGAIN, unix.EINTR:
			q.kickErr.Add(1)
			return accepted, nil
		default:
			q.kickErr.Add(1)
			return accepted, err
		}
	}
	return accepted, nil
}

// kick asks the kernel to transmit every slot marked SEND_REQUEST.
// Transient errors leave the slots queued for the next kick.
func (q *queue) kick() error {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(q.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0:
		return nil
	case unix.EAGAIN, unix.ENOBUFS, unix.EINTR:
		q.kickErr.Add(1)
		return nil
	}
	q.kickErr.Add(1)
	return e
}

// Flush kicks queue q's TX ring once more, for callers that saw transient
// kick failures and have nothing new to send (TxCopy holds nothing back:
// Flush does nothing).
func (p *Port) Flush(qi int) error {
	q, err := p.queue(qi)
	if err != nil || p.txMode == TxCopy {
		return err
	}
	return q.kick()
}

// TxPending reports how many of queue q's TX slots the kernel has not yet
// finished with.
func (p *Port) TxPending(qi int) int {
	q, err := p.queue(qi)
	if err != nil {
		return 0
	}
	n := 0
	for i := 0; i < q.txSlots; i++ {
		stOff, _ := q.txLayout()
		if st := loadStatus(q.tx, i*frameSize+stOff); st == unix.TP_STATUS_SEND_REQUEST || st == unix.TP_STATUS_SENDING {
			n++
		}
	}
	return n
}

// Wait implements nic.Port. It returns at once when the RX ring holds a
// frame, and otherwise polls the socket (millisecond granularity) until a
// block is retired, the timeout passes or Close is called.
func (p *Port) Wait(qi int, timeout time.Duration) error {
	if qi < 0 || qi >= len(p.q) {
		return fmt.Errorf("afpacket: %s has no queue %d", p.name, qi)
	}
	q := p.q[qi]
	q.waiters.Add(1)
	defer q.waiters.Add(-1)
	if p.closed.Load() {
		return ErrClosed
	}
	if q.rxReady() {
		return nil
	}
	ms := 0
	if timeout > 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	if p.gone.Load() {
		return p.goneErr
	}
	q.pollfds[0].Revents, q.pollfds[1].Revents = 0, 0
	_, err := unix.Poll(q.pollfds[:], ms)
	if p.closed.Load() || q.pollfds[1].Revents != 0 {
		return ErrClosed
	}
	if q.pollfds[0].Revents&unix.POLLERR != 0 || (q.blocks != nil && q.pollfds[0].Revents != 0 && !q.rxReady()) {
		// A pending socket error (ENETDOWN when the interface went down
		// or was removed) keeps poll returning until it is read: read it,
		// so the next Wait sleeps again, and see whether the interface
		// is gone.
		// RxAuto's epoll set reports a socket's error as readable.
		_, _ = unix.GetsockoptInt(q.fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if q.blocks != nil {
			_, _ = unix.GetsockoptInt(q.blocks.fd, unix.SOL_SOCKET, unix.SO_ERROR)
		}
		if p.linkGone(q) {
			return p.goneErr
		}
	}
	if err != nil && err != unix.EINTR {
		return fmt.Errorf("afpacket: %s: poll: %w", p.name, err)
	}
	return nil
}

// refresh folds the kernel's PACKET_STATISTICS (which reset on read) into
// the queue's counters.
func (q *queue) refresh() {
	if q.blocks != nil {
		q.refreshFD(q.blocks.fd)
	}
	q.refreshFD(q.fd)
}

func (q *queue) refreshFD(fd int) {
	st, err := unix.GetsockoptTpacketStatsV3(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return
	}
	// tp_packets counts drops too.
	q.kernelRx.Add(uint64(st.Packets))
	q.kernelDrops.Add(uint64(st.Drops))
	q.freezes.Add(uint64(st.Freeze_q_cnt))
}

// QueueStats returns queue q's detailed counters.
func (p *Port) QueueStats(qi int) QueueStats {
	if qi < 0 || qi >= len(p.q) {
		return QueueStats{}
	}
	q := p.q[qi]
	p.statsMu.Lock()
	if !p.closed.Load() {
		q.refresh()
	}
	p.statsMu.Unlock()
	return QueueStats{
		RxPackets: q.rxPackets.Load(), RxBytes: q.rxBytes.Load(),
		TxPackets: q.txPackets.Load(), TxBytes: q.txBytes.Load(),
		KernelRx: q.kernelRx.Load(), KernelDrops: q.kernelDrops.Load(), Freezes: q.freezes.Load(),
		RxOversize: q.oversize.Load(), RxCsumPartial: q.csumPartial.Load(), RxGSO: q.gso.Load(),
		TxFull: q.txFull.Load(), TxOversize: q.txOversize.Load(), TxWrongFormat: q.txWrong.Load(),
		TxKickErrors: q.kickErr.Load(), TxDeviceDrops: q.txDevDrops.Load(),
		RingSwitches: q.switches.Load(),
	}
}

// Stats implements nic.Port. RxDrops counts kernel ring-full drops and
// frames Recv dropped; TxDrops counts frames refused (ring or send buffer
// full), too long, rejected by the kernel or dropped by the device path.
func (p *Port) Stats() nic.Stats {
	var s nic.Stats
	for i := range p.q {
		qs := p.QueueStats(i)
		s.RxPackets += qs.RxPackets
		s.RxBytes += qs.RxBytes
		s.TxPackets += qs.TxPackets
		s.TxBytes += qs.TxBytes
		s.RxDrops += qs.KernelDrops + qs.RxOversize
		s.TxDrops += qs.TxFull + qs.TxOversize + qs.TxWrongFormat + qs.TxDeviceDrops
	}
	return s
}

// Close wakes every Wait, waits for them to return, then unmaps the rings
// and closes the sockets. Recv and Send must have stopped.
func (p *Port) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	var one [8]byte
	ne.PutUint64(one[:], 1)
	_, _ = unix.Write(p.efd, one[:])
	for _, q := range p.q {
		for q.waiters.Load() > 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	p.statsMu.Lock()
	for _, q := range p.q {
		q.refresh()
	}
	p.release()
	p.statsMu.Unlock()
	return nil
}

// PollFD implements nic.Pollable: queue qi's socket, readable when a
// frame (RxFrames) or a block (RxBlocks: full or past its BlockTimeout)
// is handed to user space; RxAuto: the epoll set of its two sockets.
func (p *Port) PollFD(qi int) int {
	if qi < 0 || qi >= len(p.q) {
		return -1
	}
	if p.q[qi].blocks != nil {
		return p.q[qi].epfd
	}
	return p.q[qi].fd
}

// RxReady implements nic.Pollable.
func (p *Port) RxReady(qi int) bool {
	return qi >= 0 && qi < len(p.q) && p.q[qi].rxReady()
}
