//go:build !linux

package abvm

import (
	"context"
	"fmt"
	"runtime"
)

// Available reports what the live A/B lacks here: it runs on Linux.
func Available() error {
	return fmt.Errorf("abvm: the live A/B runs on Linux (GOOS=%s): use --dry-run for this system's configuration", runtime.GOOS)
}

// HostAvailable reports what the live A/B lacks here: it runs on Linux.
func HostAvailable(paths []string) error { return Available() }

// Run is not supported on this GOOS.
func Run(ctx context.Context, o Options) (*Report, error) { return nil, Available() }
