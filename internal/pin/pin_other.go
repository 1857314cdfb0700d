//go:build !linux && !freebsd

package pin

import (
	"fmt"
	"runtime"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

var errOS = fmt.Errorf("pin: CPU pinning not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)

func pin(cpu int) error { return errOS }

func unpin() error { return errOS }

// Allowed returns nil on this GOOS.
func Allowed() []int { return nil }

// ThreadCPUTime is not supported on this GOOS.
func ThreadCPUTime() (time.Duration, error) { return 0, errOS }

// ThreadSleep sleeps with the Go runtime's timer on this GOOS.
func ThreadSleep(d time.Duration) { time.Sleep(d) }
