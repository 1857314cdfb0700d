//go:build !linux

package pin

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

// IdleLoops is not supported on this GOOS.
func IdleLoops(cpus []int) (stop func(), pids []int, err error) {
	return func() {}, nil, fmt.Errorf("pin: idle loops not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}
