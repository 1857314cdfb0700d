//go:build !linux

package pin

import (
	"fmt"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

type rtAttrs struct{}

func newPolicy(prio int) (*Policy, error) {
	return nil, fmt.Errorf("pin: realtime priority not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)
}

func (p *Policy) set(rt bool) error { return nil }
