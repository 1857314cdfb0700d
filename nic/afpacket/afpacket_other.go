//go:build !linux

package afpacket

import (
	"fmt"
	"runtime"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

var errOS = fmt.Errorf("afpacket: AF_PACKET is not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)

// Port is not available on this GOOS.
type Port struct{}

// Open returns an error wrapping nic.ErrNotSupported on this GOOS.
func Open(ifname string, cfg Config) (*Port, error) { return nil, errOS }

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

// Flush is not supported on this GOOS.
func (p *Port) Flush(q int) error { return errOS }

// TxPending returns 0 on this GOOS.
func (p *Port) TxPending(q int) int { return 0 }

// QueueStats returns zeros on this GOOS.
func (p *Port) QueueStats(q int) QueueStats { return QueueStats{} }

// Stats implements nic.Port.
func (p *Port) Stats() nic.Stats { return nic.Stats{} }

// Close implements nic.Port.
func (p *Port) Close() error { return nil }

// FanoutOwner reports no owner steering on this GOOS.
func (p *Port) FanoutOwner() (bool, error) { return false, errOS }

// TxMode is TxAuto on this GOOS.
func (p *Port) TxMode() TxMode { return TxAuto }

// RxRing reports RxFrames and errOS on this GOOS.
func (p *Port) RxRing() (RxRing, error) { return RxFrames, errOS }
