package ifmtu

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Set sets interface name's MTU (SIOCSIFMTU; needs root). A driver
// refuses an MTU above its maximum with EINVAL.
func Set(name string, mtu int) error {
	if len(name) >= unix.IFNAMSIZ {
		return fmt.Errorf("interface name %q too long", name)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	var ifr ifreqMTU
	copy(ifr.name[:], name)
	ifr.mtu = int32(mtu)
	if err := ioctlIfreq(fd, unix.SIOCSIFMTU, &ifr); err != nil {
		return fmt.Errorf("SIOCSIFMTU %s %d: %w", name, mtu, err)
	}
	return nil
}

// Max returns 0: FreeBSD does not tell a driver's largest MTU.
func Max(name string) (int, error) { return 0, nil }
