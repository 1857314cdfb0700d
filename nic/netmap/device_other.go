//go:build !linux && !freebsd

package netmap

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

// Open is not available on this GOOS.
func Open(name string, cfg Config) (*Port, error) {
	return nil, fmt.Errorf("netmap: %w (GOOS=%s)", nic.ErrNotSupported, runtime.GOOS)
}

// OpenHost is not available on this GOOS.
func OpenHost(name string) (*Port, error) {
	return nil, fmt.Errorf("netmap: %w (GOOS=%s)", nic.ErrNotSupported, runtime.GOOS)
}
