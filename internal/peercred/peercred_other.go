//go:build !linux && !freebsd

package peercred

func fdUID(int) (uint32, error) { return 0, ErrUnsupported }
