//go:build !linux

package iobench

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

// Run needs Linux network namespaces, veth and AF_PACKET/AF_XDP.
func Run(o Options) (*Result, error) {
	return nil, fmt.Errorf("iobench: veth/netns benchmark not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}
