//go:build !linux

package tap

import (
	"fmt"
	"runtime"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

var errOS = fmt.Errorf("tap: TAP devices via /dev/net/tun are not supported on %s (use netmap host rings): %w", runtime.GOOS, nic.ErrNotSupported)

// Port is not available on this GOOS.
type Port struct{}

// Open returns an error wrapping nic.ErrNotSupported on this GOOS.
func Open(name string, cfg Config) (*Port, error) { return nil, errOS }

// SetUp is not supported on this GOOS.
func (p *Port) SetUp(up bool) error { return errOS }

// Name implements nic.Port.
func (p *Port) Name() string { return "" }

// Queues implements nic.Port.
func (p *Port) Queues() int { return 0 }

// Recv implements nic.Port.
func (p *Port) Recv(q int, frames []*nic.Frame) (int, error) { return 0, errOS }

// Send implements nic.Port.
func (p *Port) Send(q int, frames []*nic.Frame) (int, error) { return 0, errOS }

// Wait implements nic.Port.
func (p *Port) Wait(q int, timeout time.Duration) error { return errOS }

// Stats implements nic.Port.
func (p *Port) Stats() nic.Stats { return nic.Stats{} }

// TapStats returns zeros on this GOOS.
func (p *Port) TapStats() Stats { return Stats{} }

// Close implements nic.Port.
func (p *Port) Close() error { return nil }
