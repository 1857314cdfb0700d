//go:build !linux

package afxdp

import (
	"fmt"
	"runtime"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

type portSys struct{}

func (portSys) kernelRxDrops() uint64 { return 0 }

func (portSys) unbound(int) bool { return false }

var errGOOS = fmt.Errorf("afxdp: AF_XDP on %s: %w", runtime.GOOS, nic.ErrNotSupported)

// Open fails: AF_XDP exists only on Linux.
func Open(ifname string, o Options) (*Port, error) {
	if _, err := o.withDefaults(); err != nil {
		return nil, err
	}
	return nil, errGOOS
}

// Wait fails: AF_XDP exists only on Linux.
func (p *Port) Wait(q int, timeout time.Duration) error { return errGOOS }

// Close does nothing.
func (p *Port) Close() error { return nil }

// InterfaceQueues returns 1: AF_XDP exists only on Linux.
func InterfaceQueues(ifname string) int { return 1 }
