package lab

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/afpacket"
)

// Flows are long-lived UDP flows from the LAN host to the Internet host's
// echo service: each sends one datagram every interval and counts the
// echoes that come back, so a test sees which flows stall and when.
type Flows struct {
	conns  []net.Conn
	owner  []int
	echoes []atomic.Uint64
	last   []atomic.Int64 // time of the last echo (UnixNano), 0 = none yet
	stop   chan struct{}
	wg     sync.WaitGroup
}

// StartFlows opens n UDP flows and starts them.
func (l *Lab) StartFlows(n int, interval time.Duration) (*Flows, error) {
	f := &Flows{owner: make([]int, n), echoes: make([]atomic.Uint64, n), last: make([]atomic.Int64, n), stop: make(chan struct{})}
	err := l.LAN.Do(func() error {
		for i := 0; i < n; i++ {
			c, err := net.Dial("udp4", netip.AddrPortFrom(RemoteAddr, 7).String())
			if err != nil {
				return err
			}
			f.conns = append(f.conns, c)
		}
		return nil
	})
	if err != nil {
		f.Stop()
		return nil, err
	}
	for i, c := range f.conns {
		f.owner[i] = l.R.Engine().LANOwner(udpProbe(c.LocalAddr().(*net.UDPAddr).AddrPort()))
		f.wg.Add(1)
		go f.run(i, c, interval)
	}
	return f, nil
}

// udpProbe is the IPv4/UDP header the LAN host's first datagram of a
// flow from src to the echo service starts with (for the steering's
// owner).
func udpProbe(src netip.AddrPort) []byte {
	b := make([]byte, hdr.IPv4MinLen+8)
	b[0], b[8], b[9] = 0x45, 64, hdr.ProtoUDP
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	a := src.Addr().As4()
	copy(b[12:], a[:])
	copy(b[16:], RemoteAddr.AsSlice())
	var sum uint32
	for i := 0; i < hdr.IPv4MinLen; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[10:], ^uint16(sum))
	binary.BigEndian.PutUint16(b[20:], src.Port())
	binary.BigEndian.PutUint16(b[22:], 7)
	binary.BigEndian.PutUint16(b[24:], 8)
	return b
}

func (f *Flows) run(i int, c net.Conn, interval time.Duration) {
	defer f.wg.Done()
	buf := make([]byte, 256)
	prefix := fmt.Sprintf("flow %d ", i)
	for seq := 0; ; seq++ {
		select {
		case <-f.stop:
			return
		default:
		}
		next := time.Now().Add(interval)
		if _, err := c.Write([]byte(prefix + strconv.Itoa(seq))); err != nil {
			time.Sleep(interval)
			continue
		}
		// Any echo of this flow counts, a late one too.
		for {
			_ = c.SetReadDeadline(next)
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			if strings.HasPrefix(string(buf[:n]), prefix) {
				f.echoes[i].Add(1)
				f.last[i].Store(time.Now().UnixNano())
			}
		}
	}
}

// Len is the number of flows.
func (f *Flows) Len() int { return len(f.conns) }

// Owner is the worker that owns flow i (its NAT mapping and replies).
func (f *Flows) Owner(i int) int { return f.owner[i] }

// Echoes is how many echoes flow i has received.
func (f *Flows) Echoes(i int) uint64 { return f.echoes[i].Load() }

// Snapshot returns every flow's echo count.
func (f *Flows) Snapshot() []uint64 {
	out := make([]uint64, len(f.echoes))
	for i := range f.echoes {
		out[i] = f.echoes[i].Load()
	}
	return out
}

// Stop ends the flows and closes their sockets.
func (f *Flows) Stop() {
	select {
	case <-f.stop:
		return
	default:
	}
	close(f.stop)
	for _, c := range f.conns {
		c.Close() // ends a pending Read
	}
	f.wg.Wait()
}

// StormResult is what Storm sent.
type StormResult struct {
	Frames   uint64
	Duration time.Duration
	PPS      float64 // the rate reached
	Errors   uint64  // Send calls that failed
}

// stormFrames builds n frames cycling through an ARP broadcast, a PPPoE
// PADI (broadcast) and an LLDP frame (nearest-bridge group address), each
// from a different locally administered source MAC, padded to 60 bytes.
func stormFrames(n int) []*nic.Frame {
	fs := nic.NewFrames(n)
	bcast := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	lldp := []byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}
	for i, f := range fs {
		b := make([]byte, 60)
		src := []byte{0x02, 0x57, 0x0e, 0, byte(i >> 8), byte(i)}
		copy(b[6:], src)
		p := b[14:]
		switch i % 3 {
		case 0: // ARP who-has 100.64.0.99 tell 100.64.0.98 (broadcast)
			copy(b, bcast)
			binary.BigEndian.PutUint16(b[12:], hdr.EtherTypeARP)
			copy(p, []byte{0, 1, 8, 0, 6, 4, 0, 1})
			copy(p[8:], src)
			copy(p[14:], []byte{100, 64, 0, 98})
			copy(p[24:], []byte{100, 64, 0, 99})
		case 1: // PADI: ver/type 0x11, code 0x09, session 0, length 4, Service-Name ""
			copy(b, bcast)
			binary.BigEndian.PutUint16(b[12:], hdr.EtherTypePPPoEDisc)
			copy(p, []byte{0x11, 0x09, 0, 0, 0, 4, 0x01, 0x01, 0, 0})
		case 2: // LLDP: chassis id (MAC), port id (MAC), TTL 120, end
			copy(b, lldp)
			binary.BigEndian.PutUint16(b[12:], 0x88cc)
			copy(p, []byte{0x02, 0x07, 0x04})
			copy(p[3:], src)
			copy(p[9:], []byte{0x04, 0x07, 0x03})
			copy(p[12:], src)
			copy(p[18:], []byte{0x06, 0x02, 0x00, 120, 0, 0})
		}
		f.SetData(b)
	}
	return fs
}

// Storm sends broadcast, PADI and LLDP frames from the ISP's end of the
// WAN link towards the router at pps frames per second for d (or until
// ctx ends), from an AF_PACKET socket of its own (sendmmsg batches), and
// reports the rate it reached.
func (l *Lab) Storm(ctx context.Context, pps int, d time.Duration) (StormResult, error) {
	var p *afpacket.Port
	if err := l.ISP.Do(func() (err error) {
		p, err = afpacket.Open(ISPInterface, afpacket.Config{TxMode: afpacket.TxCopy, BlockSize: 1 << 16, Blocks: 2, KeepOffloads: true})
		return err
	}); err != nil {
		return StormResult{}, fmt.Errorf("storm socket: %w", err)
	}
	defer p.Close()
	// The socket's receive ring sees the ISP side's traffic too: drain it
	// now and then so the kernel does not freeze it.
	rx := nic.NewFrames(64)
	frames := stormFrames(255)
	var r StormResult
	start := time.Now()
	for ctx.Err() == nil {
		el := time.Since(start)
		if el >= d {
			break
		}
		due := uint64(el.Seconds() * float64(pps))
		if due <= r.Frames {
			_, _ = p.Recv(0, rx)
			time.Sleep(100 * time.Microsecond)
			continue
		}
		k := int(min(due-r.Frames, uint64(len(frames))))
		n, err := p.Send(0, frames[:k])
		r.Frames += uint64(n)
		if err != nil {
			r.Errors++
		}
		if n == 0 {
			runtime.Gosched()
		}
	}
	r.Duration = time.Since(start)
	r.PPS = float64(r.Frames) / r.Duration.Seconds()
	return r, nil
}

// FlapWAN takes the router's WAN veth down for d and up again.
func (l *Lab) FlapWAN(d time.Duration) error {
	if _, err := l.Router.Exec("ip", "link", "set", "dev", WANInterface, "down"); err != nil {
		return err
	}
	time.Sleep(d)
	_, err := l.Router.Exec("ip", "link", "set", "dev", WANInterface, "up")
	return err
}

// ReplugWAN deletes the WAN link (both veth ends) and makes it again
// with the same names and the router's WAN MAC, as a cable pulled and a
// new NIC of the same name appearing; the ISP's access concentrator is
// restarted on its new end (its sessions are gone). Call it from the
// goroutine that reads l.AC.
func (l *Lab) ReplugWAN(gap time.Duration) error {
	mac, err := l.Router.MAC(WANInterface)
	if err != nil {
		return err
	}
	if l.AC == nil {
		return fmt.Errorf("ReplugWAN: the lab runs without an AC (NoAC)")
	}
	l.acCancel()
	<-l.acDone
	l.acConn.Close()
	if err := l.Router.DelLink(WANInterface); err != nil {
		return err
	}
	time.Sleep(gap)
	q := strconv.Itoa(l.opt.Workers)
	if _, err := l.Router.Exec("ip", "link", "add", WANInterface, "address", mac, "numtxqueues", q, "numrxqueues", q,
		"type", "veth", "peer", "name", ISPInterface, "numtxqueues", q, "numrxqueues", q, "netns", l.ISP.Name); err != nil {
		return err
	}
	for _, e := range []struct {
		ns  *nettest.NS
		ifn string
	}{{l.Router, WANInterface}, {l.ISP, ISPInterface}} {
		if err := e.ns.SetUp(e.ifn); err != nil {
			return err
		}
		if err := e.ns.DisableOffloads(e.ifn); err != nil {
			return err
		}
		if err := e.ns.SetFeature(e.ifn, "tx", false); err != nil {
			return err
		}
	}
	if err := l.setISPMTU(); err != nil {
		return err
	}
	if err := l.newAC(); err != nil {
		return err
	}
	l.runAC()
	return nil
}
