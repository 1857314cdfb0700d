//go:build !linux

package vmlab

import (
	"fmt"
	"runtime"
)

// Do is not supported outside Linux.
func (n *Netns) Do(fn func() error) error {
	return fmt.Errorf("vmlab: network namespaces not supported on %s", runtime.GOOS)
}
