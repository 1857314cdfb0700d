//go:build !linux

package ethtool

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

// Steering is a set of rules installed on one interface.
type Steering struct{}

// SteerPorts is not supported on this GOOS: the NIC's RSS spreads frames.
func SteerPorts(ifname string, rules []PortRule) (*Steering, error) {
	return nil, fmt.Errorf("ethtool: flow steering rules not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}

// Remove does nothing.
func (s *Steering) Remove() error { return nil }
