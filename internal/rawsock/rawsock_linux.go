package rawsock

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is an AF_PACKET SOCK_RAW socket bound to one interface. ReadFrame
// and WriteFrame may be called from different goroutines; concurrent
// ReadFrames are serialized.
type Conn struct {
	f       *os.File
	rc      syscall.RawConn
	mac     [6]byte
	ifindex int

	rmu sync.Mutex
	oob []byte
}

// Open opens a raw frame socket on interface ifname. When ethertypes are
// given, a classic BPF filter admits only frames of those EtherTypes
// (checked after any VLAN tag the kernel stripped, and also admitting
// 802.1Q frames that kept their tag); otherwise every frame is received.
func Open(ifname string, ethertypes ...uint16) (*Conn, error) {
	var prog []unix.SockFilter
	if len(ethertypes) > 0 {
		prog = filter(ethertypes)
	}
	return open(ifname, prog)
}

// OpenPPPoEControl opens a raw frame socket on ifname that receives PPPoE
// discovery frames and those PPPoE session frames whose PPP protocol is
// not IPv4 or IPv6 (LCP, authentication, IPCP, IPv6CP, ...): an access
// concentrator whose session data takes another path. Only untagged
// frames are admitted.
func OpenPPPoEControl(ifname string) (*Conn, error) {
	return open(ifname, controlFilter())
}

// controlFilter builds: ldh [12]; jeq 0x8863 accept; jeq 0x8864 else
// drop; ldh [20]; jeq 0x0021 drop; jeq 0x0057 drop; accept.
func controlFilter() []unix.SockFilter {
	ldh := func(k uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: k}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	return []unix.SockFilter{
		ldh(12),
		jeq(0x8863, 5, 0), // -> accept
		jeq(0x8864, 0, 3), // -> drop
		ldh(20),
		jeq(0x0021, 1, 0), // -> drop
		jeq(0x0057, 0, 1), // -> accept
		ret(0),            // drop
		ret(0x40000),      // accept
	}
}

// OpenUDPPort opens a raw frame socket on ifname that receives only
// IPv4 UDP frames from or to port, untagged, plain or in a PPPoE session
// (IPv4 headers without options): a probe's own socket beside a load.
func OpenUDPPort(ifname string, port uint16) (*Conn, error) {
	return open(ifname, portFilter(17, port))
}

// OpenTCPPort is OpenUDPPort for TCP: a socket that sees one TCP
// service's segments (e.g. a benchmark's transfer) and not the load
// beside it.
func OpenTCPPort(ifname string, port uint16) (*Conn, error) {
	return open(ifname, portFilter(6, port))
}

// portFilter builds the filter of OpenUDPPort and OpenTCPPort: the IPv4
// header at 14 (EtherType IPv4) or 22 (PPPoE session, PPP protocol
// IPv4), protocol proto, then either port equal to port.
func portFilter(proto uint8, port uint16) []unix.SockFilter {
	ld := func(size uint16, k uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | size | unix.BPF_ABS, K: k}
	}
	// jeq takes jump targets as absolute indices, resolved below.
	type ins struct {
		f      unix.SockFilter
		jt, jf int // absolute targets of a jump (-1: the next instruction)
	}
	const drop, accept = 17, 18
	p := []ins{
		{ld(unix.BPF_H, 12), 0, 0},                                           // 0
		{jeqK(0x0800), 11, -1},                                               // 1: IPv4 at 14
		{jeqK(0x8864), -1, drop},                                             // 2
		{ld(unix.BPF_H, 20), 0, 0},                                           // 3
		{jeqK(0x0021), -1, drop},                                             // 4
		{ld(unix.BPF_B, 22+9), 0, 0},                                         // 5
		{jeqK(uint32(proto)), -1, drop},                                      // 6
		{ld(unix.BPF_H, 22+20), 0, 0},                                        // 7
		{jeqK(uint32(port)), accept, -1},                                     // 8
		{ld(unix.BPF_H, 22+22), 0, 0},                                        // 9
		{jeqK(uint32(port)), accept, drop},                                   // 10
		{ld(unix.BPF_B, 14+9), 0, 0},                                         // 11
		{jeqK(uint32(proto)), -1, drop},                                      // 12
		{ld(unix.BPF_H, 14+20), 0, 0},                                        // 13
		{jeqK(uint32(port)), accept, -1},                                     // 14
		{ld(unix.BPF_H, 14+22), 0, 0},                                        // 15
		{jeqK(uint32(port)), accept, drop},                                   // 16
		{unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: 0}, 0, 0},       // 17: drop
		{unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: 0x40000}, 0, 0}, // 18: accept
	}
	out := make([]unix.SockFilter, len(p))
	for i, in := range p {
		f := in.f
		if f.Code&0x07 == unix.BPF_JMP {
			rel := func(t int) uint8 {
				if t < 0 {
					return 0
				}
				return uint8(t - i - 1)
			}
			f.Jt, f.Jf = rel(in.jt), rel(in.jf)
		}
		out[i] = f
	}
	return out
}

func jeqK(k uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k}
}

func open(ifname string, prog []unix.SockFilter) (*Conn, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("rawsock: %w", err)
	}
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("rawsock: %s is not an Ethernet interface", ifname)
	}
	// Protocol 0 receives nothing until bind, so no frame slips past the
	// filter or arrives from another interface.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("rawsock: socket: %w", err)
	}
	fail := func(what string, err error) (*Conn, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("rawsock: %s: %w", what, err)
	}
	if len(prog) > 0 {
		if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
			&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
			return fail("attach filter", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return fail("PACKET_AUXDATA", err)
	}
	// Best effort (Linux >= 4.20); ReadFrame also skips PACKET_OUTGOING.
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	f := os.NewFile(uintptr(fd), "rawsock:"+ifname)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("rawsock: %w", err)
	}
	c := &Conn{f: f, rc: rc, ifindex: ifi.Index, oob: make([]byte, unix.CmsgSpace(32))}
	copy(c.mac[:], ifi.HardwareAddr)
	return c, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// filter builds: ldh [12]; jeq t1 accept; ...; jeq 0x8100 accept; ret 0;
// accept: ret 0x40000.
func filter(types []uint16) []unix.SockFilter {
	types = append(append([]uint16(nil), types...), 0x8100)
	m := len(types)
	p := []unix.SockFilter{{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 12}}
	for i, t := range types {
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K,
			Jt: uint8(m - i), K: uint32(t)})
	}
	return append(p, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: 0},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: 0x40000})
}

// ReadFrame reads one frame into b (truncated if longer), waiting at most
// timeout; on timeout the error matches ErrTimeout.
func (c *Conn) ReadFrame(b []byte, timeout time.Duration) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if err := c.f.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	for {
		var n, oobn int
		var from unix.Sockaddr
		var rerr error
		err := c.rc.Read(func(fd uintptr) bool {
			n, oobn, _, from, rerr = unix.Recvmsg(int(fd), b, c.oob, 0)
			return rerr != unix.EAGAIN
		})
		if err != nil {
			return 0, err
		}
		if rerr != nil {
			return 0, fmt.Errorf("rawsock: recvmsg: %w", rerr)
		}
		if sll, ok := from.(*unix.SockaddrLinklayer); ok && sll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if n > len(b) {
			n = len(b)
		}
		return c.restoreVLAN(b, n, c.oob[:oobn]), nil
	}
}

// WakeReader makes a ReadFrame in progress return with ErrTimeout (the
// method set of pppoe.ReaderWaker).
func (c *Conn) WakeReader() { _ = c.f.SetReadDeadline(time.Now()) }

// restoreVLAN re-inserts a tag that the kernel moved into PACKET_AUXDATA.
func (c *Conn) restoreVLAN(b []byte, n int, oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || n < 12 {
		return n
	}
	for _, m := range msgs {
		// struct tpacket_auxdata: status u32, len u32, snaplen u32,
		// mac u16, net u16, vlan_tci u16, vlan_tpid u16.
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < 20 {
			continue
		}
		status := binary.NativeEndian.Uint32(m.Data[0:])
		tci := binary.NativeEndian.Uint16(m.Data[16:])
		tpid := binary.NativeEndian.Uint16(m.Data[18:])
		if status&unix.TP_STATUS_VLAN_VALID == 0 && tci == 0 {
			return n
		}
		if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 || tpid == 0 {
			tpid = 0x8100
		}
		end := min(n+4, len(b))
		copy(b[16:end], b[12:n])
		binary.BigEndian.PutUint16(b[12:], tpid)
		binary.BigEndian.PutUint16(b[14:], tci)
		return end
	}
	return n
}

// WriteFrame sends one complete Ethernet frame on the bound interface.
func (c *Conn) WriteFrame(b []byte) error {
	var werr error
	err := c.rc.Write(func(fd uintptr) bool {
		_, werr = unix.Write(int(fd), b)
		return werr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("rawsock: write: %w", werr)
	}
	return nil
}

// HardwareAddr returns the interface's MAC address.
func (c *Conn) HardwareAddr() [6]byte { return c.mac }

// Close closes the socket; a blocked ReadFrame returns.
func (c *Conn) Close() error { return c.f.Close() }
