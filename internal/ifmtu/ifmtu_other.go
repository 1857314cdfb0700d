//go:build !linux && !freebsd

package ifmtu

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

// Set is not supported on this GOOS.
func Set(name string, mtu int) error {
	return fmt.Errorf("ifmtu: not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}

// Max returns 0: not known on this GOOS.
func Max(name string) (int, error) { return 0, nil }
