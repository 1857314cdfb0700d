//go:build !linux

package pin

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

func moveThreads(cpus []int) (func(), int, error) {
	return func() {}, 0, fmt.Errorf("pin: moving threads not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}
