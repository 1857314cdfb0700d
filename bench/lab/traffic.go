package lab

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Ping runs the system ping in the LAN namespace.
func (l *Lab) Ping(dst string, count int) (string, error) {
	// -w: wait for every reply up to the deadline (-W alone gives up on
	// late replies after twice the largest RTT seen, flaky under load).
	return l.LAN.Exec("ping", "-c", fmt.Sprint(count), "-i", "0.2", "-w", "15", dst)
}

// UDPEcho opens flows UDP sockets in the LAN namespace, each sending per
// datagrams to the Internet host's echo service (203.0.113.7:7) (one at a time, waiting up to
// 2 s for each echo), and returns how many echoes came back intact.
func (l *Lab) UDPEcho(flows, per int) (got int, err error) {
	return l.udpEcho("udp4", netip.AddrPortFrom(RemoteAddr, 7), flows, per)
}

func (l *Lab) udpEcho(network string, to netip.AddrPort, flows, per int) (got int, err error) {
	conns := make([]net.Conn, 0, flows)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Sockets are opened on Do's thread, inside the namespace; the
	// goroutines using them may run on any thread.
	err = l.LAN.Do(func() error {
		for i := 0; i < flows; i++ {
			c, err := net.Dial(network, to.String())
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			n := echoFlow(c, per)
			mu.Lock()
			got += n
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	return got, nil
}

// UDPEchoLarge sends n datagrams of size bytes (more than an MTU: the LAN
// host's kernel fragments them, pppfwd refragments them for the session,
// the Internet host reassembles them and its answer comes back in
// fragments the ISP's kernel cut for the session) from one socket in the
// LAN namespace to the echo service, and returns how many came back
// intact.
func (l *Lab) UDPEchoLarge(n, size int) (got int, err error) {
	var c net.Conn
	err = l.LAN.Do(func() (err error) {
		c, err = net.Dial("udp4", netip.AddrPortFrom(RemoteAddr, 7).String())
		return err
	})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return udpEchoConn(c, n, size)
}

// udpEchoConn sends n datagrams of size bytes on c, one at a time, each
// waiting up to 2 s for its echo, and returns how many came back intact.
// A write error (EMSGSIZE when the socket forbids fragmenting and the
// path MTU is smaller) ends it.
func udpEchoConn(c net.Conn, n, size int) (got int, err error) {
	msg := make([]byte, size)
	buf := make([]byte, size+1)
	for i := 0; i < n; i++ {
		for j := range msg {
			msg[j] = byte(i + j*7)
		}
		if _, err := c.Write(msg); err != nil {
			return got, err
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if k, err := c.Read(buf); err == nil && bytes.Equal(buf[:k], msg) {
			got++
		}
	}
	return got, nil
}

// TCPEcho sends size bytes over a TCP connection from the LAN host to the
// Internet host's echo service (203.0.113.7:7) and checks that the same
// bytes come back (segments of the clamped MSS, both ways through the
// NAT).
func (l *Lab) TCPEcho(size int) error {
	var c net.Conn
	err := l.LAN.Do(func() (err error) {
		c, err = net.DialTimeout("tcp4", netip.AddrPortFrom(RemoteAddr, 7).String(), 5*time.Second)
		return err
	})
	if err != nil {
		return err
	}
	defer c.Close()
	return tcpEchoConn(c, size)
}

// tcpEchoConn writes size bytes to c, reads as many back (within 15 s)
// and checks they are the same.
func tcpEchoConn(c net.Conn, size int) error {
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte(i*7 + i>>8)
	}
	werr := make(chan error, 1)
	go func() { _, err := c.Write(msg); werr <- err }()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	got := make([]byte, size)
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("the echo differs")
	}
	return nil
}

func echoFlow(c net.Conn, n int) int {
	got := 0
	buf := make([]byte, 2048)
	for i := 0; i < n; i++ {
		msg := fmt.Sprintf("pppfwd %s %d", c.LocalAddr(), i)
		if _, err := c.Write([]byte(msg)); err != nil {
			return got
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		k, err := c.Read(buf)
		if err == nil && string(buf[:k]) == msg {
			got++
		}
	}
	return got
}
