package lab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/tap"
	"github.com/pppfwd/pppfwd/pppoe"
)

// acMAC is the MAC the access concentrator uses on its upstream TAP.
var acMAC = [6]byte{0x02, 0xac, 0, 0, 0, 1}

const upstreamIf = "up0"

// setupInternet builds the ISP's upstream side: a TAP in the ISP
// namespace (the AC's data path into its kernel), a veth to the Internet
// namespace, routes both ways, and the Internet host's UDP echo service.
func (l *Lab) setupInternet() error {
	if err := l.lab.Veth("isp1", l.ISP, "inet0", l.Inet, 1); err != nil {
		return err
	}
	for _, e := range []struct {
		ns  interface{ DisableOffloads(string) error }
		ifn string
	}{{l.ISP, "isp1"}, {l.Inet, "inet0"}} {
		if err := e.ns.DisableOffloads(e.ifn); err != nil {
			return err
		}
	}
	if err := l.ISP.AddAddr("isp1", ISPInet); err != nil {
		return err
	}
	if err := l.Inet.AddAddr("inet0", RemoteNet); err != nil {
		return err
	}
	if err := l.Inet.AddRoute("default", ISPInet.Addr()); err != nil {
		return err
	}
	if err := l.ISP.EnableForwarding(); err != nil {
		return err
	}
	err := l.ISP.Do(func() (e error) {
		l.up, e = tap.Open(upstreamIf, tap.Config{Up: true})
		return e
	})
	if err != nil {
		return fmt.Errorf("upstream tap: %w", err)
	}
	mac, err := l.ISP.MAC(upstreamIf)
	if err != nil {
		return err
	}
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return err
	}
	l.upMAC = [6]byte(hw)
	// The TAP stands for the BRAS's PPP side: its MTU is the session's,
	// so the ISP's kernel fragments what it sends there for it.
	if _, err := l.ISP.Exec("ip", "link", "set", "dev", upstreamIf, "mtu", strconv.Itoa(max(l.opt.MTU, 1492))); err != nil {
		return err
	}
	// The subscribers' pool is reached through the TAP; the AC answers ARP
	// for every pool address (proxy ARP).
	if _, err := l.ISP.Exec("ip", "route", "add", "100.64.0.0/24", "dev", upstreamIf); err != nil {
		return err
	}
	if l.echo, err = l.startEcho("udp4", RemoteAddr); err != nil {
		return err
	}
	return l.startTCPEcho()
}

// startTCPEcho opens the Internet host's TCP echo service (port 7): every
// connection gets back what it sends until it closes.
func (l *Lab) startTCPEcho() error {
	err := l.Inet.Do(func() (err error) {
		l.tcpEcho, err = net.Listen("tcp4", netip.AddrPortFrom(RemoteAddr, 7).String())
		return err
	})
	if err != nil {
		return err
	}
	go serveEcho(l.tcpEcho)
	return nil
}

// serveEcho answers every connection ln accepts with what it sends, until
// ln is closed.
func serveEcho(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}

// startEcho opens the Internet host's UDP echo service (port 7) on addr.
// An IPv6 address stays tentative until its veth has carrier (both ends
// up), so a bind refused with EADDRNOTAVAIL is retried for a while.
func (l *Lab) startEcho(network string, addr netip.Addr) (c *net.UDPConn, err error) {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err = l.Inet.Do(func() error {
			c, err = net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 7)))
			return err
		})
		if !errors.Is(err, syscall.EADDRNOTAVAIL) || time.Now().After(deadline) {
			break
		}
	}
	if err == nil {
		go udpEchoServer(c)
	}
	return c, err
}

// udpEchoServer answers every datagram with itself until the socket closes.
func udpEchoServer(c *net.UDPConn) {
	buf := make([]byte, 65536)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		_, _ = c.WriteToUDPAddrPort(buf[:n], from)
	}
}

// toUpstream is the AC's Deliver hook: a copy of the subscriber's packet
// goes to the forwarding goroutine, which owns the TAP.
func (l *Lab) toUpstream(s pppoe.SessionInfo, ip []byte) {
	l.v6.session.Store(uint32(s.ID))
	select {
	case l.upstream <- append([]byte(nil), ip...):
	default:
	}
}

// forwardUpstream moves packets between the AC and the ISP's kernel: the
// subscribers' packets into the TAP as Ethernet frames to the kernel, and
// the kernel's packets for the pool back into the session (answering the
// kernel's ARP for pool addresses).
func (l *Lab) forwardUpstream(ctx context.Context) {
	in := nic.NewFrames(32)
	out := nic.NewFrames(1)
	// An idle lab sleeps: a goroutine signals when the TAP may have a
	// frame, the session's packets come on l.upstream.
	tapReady := make(chan struct{})
	go nic.Notify(ctx, l.up, 0, 5*time.Second, tapReady)
	toTAP := func(ip []byte) {
		if len(ip) > 0 && ip[0]>>4 == 6 {
			l.upstream6(ip, out)
		} else {
			l.toTAP(out, hdr.EtherTypeIPv4, ip)
		}
	}
	for ctx.Err() == nil {
		busy := false
		for more := true; more; {
			select {
			case ip := <-l.upstream:
				toTAP(ip)
				busy = true
			default:
				more = false
			}
		}
		for _, f := range in {
			f.Reset()
		}
		n, err := l.up.Recv(0, in)
		if err != nil {
			return
		}
		for _, f := range in[:n] {
			l.fromKernel(f.Data())
		}
		if n > 0 {
			busy = true
		}
		if !busy {
			select {
			case <-ctx.Done():
			case ip := <-l.upstream:
				toTAP(ip)
			case <-tapReady:
			}
		}
	}
}

// toTAP sends ip into the ISP's kernel as an Ethernet frame from the AC.
func (l *Lab) toTAP(out []*nic.Frame, et uint16, ip []byte) {
	f := out[0]
	f.Reset()
	b := f.Extend(hdr.EthernetLen + len(ip))
	if b == nil {
		return
	}
	hdr.Ethernet(b).SetAddrs(l.upMAC, acMAC)
	hdr.Ethernet(b).SetType(et)
	copy(b[hdr.EthernetLen:], ip)
	_, _ = l.up.Send(0, out)
}

func (l *Lab) fromKernel(b []byte) {
	if len(b) < hdr.EthernetLen {
		return
	}
	eth := hdr.Ethernet(b)
	switch eth.Type() {
	case hdr.EtherTypeIPv6:
		l.fromKernel6(b)
	case hdr.EtherTypeIPv4:
		if ac := l.acp.Load(); ac != nil && [6]byte(eth.Dst()) == acMAC {
			_ = ac.SendIPv4(b[hdr.EthernetLen:])
		}
	case hdr.EtherTypeARP:
		if len(b) < hdr.ARPLen {
			return
		}
		a := b[hdr.EthernetLen:]
		tpa := binary.BigEndian.Uint32(a[24:])
		if binary.BigEndian.Uint16(a[6:]) != 1 || tpa < u32(PoolFirst) || tpa > u32(PoolLast) {
			return
		}
		out := nic.NewFrames(1)
		out[0].SetData(hdr.ARPReplyInPlace(b, acMAC, tpa)) // proxy ARP for the pool
		_, _ = l.up.Send(0, out)
	}
}
