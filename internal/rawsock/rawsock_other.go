//go:build !linux

package rawsock

import (
	"fmt"
	"runtime"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

// Conn is a raw Ethernet frame socket (Linux only).
type Conn struct{}

// Open is not supported on this GOOS.
func Open(ifname string, ethertypes ...uint16) (*Conn, error) {
	return nil, fmt.Errorf("rawsock: %w: GOOS=%s", nic.ErrNotSupported, runtime.GOOS)
}

// OpenPPPoEControl is not supported on this GOOS.
func OpenPPPoEControl(ifname string) (*Conn, error) { return Open(ifname) }

// OpenUDPPort is not supported on this GOOS.
func OpenUDPPort(ifname string, port uint16) (*Conn, error) { return Open(ifname) }

// OpenTCPPort is not supported on this GOOS.
func OpenTCPPort(ifname string, port uint16) (*Conn, error) { return Open(ifname) }

// ReadFrame is not supported on this GOOS.
func (c *Conn) ReadFrame(b []byte, timeout time.Duration) (int, error) {
	return 0, nic.ErrNotSupported
}

// WriteFrame is not supported on this GOOS.
func (c *Conn) WriteFrame(b []byte) error { return nic.ErrNotSupported }

// HardwareAddr returns the zero MAC.
func (c *Conn) HardwareAddr() [6]byte { return [6]byte{} }

// Close does nothing.
func (c *Conn) Close() error { return nil }
