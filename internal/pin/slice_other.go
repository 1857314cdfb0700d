//go:build !linux

package pin

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

func shortSlice(int64) (func(), error) {
	return func() {}, fmt.Errorf("pin: scheduling slice not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}

func threadSlice() (int64, error) { return 0, nic.ErrNotSupported }
