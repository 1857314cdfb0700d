//go:build freebsd

package ifmtu

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifreqMTU is struct ifreq (net/if.h) as SIOCSIFMTU reads it: the name,
// then ifru_mtu at the start of the 16-byte union.
type ifreqMTU struct {
	name [unix.IFNAMSIZ]byte
	mtu  int32
	_    [12]byte
}

func ioctlIfreq(fd int, req uint, ifr *ifreqMTU) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(ifr)))
	if e != 0 {
		return e
	}
	return nil
}
