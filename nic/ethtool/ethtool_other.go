//go:build !linux

package ethtool

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

// Get is not supported on this GOOS.
func Get(ifname string, f Feature) (bool, error) {
	return false, fmt.Errorf("ethtool: not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}

// Set is not supported on this GOOS.
func Set(ifname string, f Feature, on bool) error {
	return fmt.Errorf("ethtool: not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}

// Driver is not supported on this GOOS.
func Driver(ifname string) (string, error) {
	return "", fmt.Errorf("ethtool: not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}
