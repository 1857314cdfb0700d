//go:build !linux && !freebsd

package netmap

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

// DisableHostOffloads is not available on this GOOS.
func DisableHostOffloads(name string) error {
	return fmt.Errorf("netmap: %w (GOOS=%s)", nic.ErrNotSupported, runtime.GOOS)
}
