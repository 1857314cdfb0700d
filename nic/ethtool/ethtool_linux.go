//go:build linux

package ethtool

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Legacy ethtool commands (linux/ethtool.h).
const (
	cmdGFLAGS = 0x25
	cmdSFLAGS = 0x26
	flagLRO   = 1 << 15
)

var getCmd = [numFeatures]uint32{TSO: 0x1e, GSO: 0x23, GRO: 0x2b, LRO: cmdGFLAGS, UFO: 0x21, TxCsum: 0x16}
var setCmd = [numFeatures]uint32{TSO: 0x1f, GSO: 0x24, GRO: 0x2c, LRO: cmdSFLAGS, UFO: 0x22, TxCsum: 0x17}

// Get reports whether feature f is on for ifname.
func Get(ifname string, f Feature) (bool, error) {
	if f < 0 || f >= numFeatures {
		return false, fmt.Errorf("ethtool: bad feature %d", int(f))
	}
	v, err := value(ifname, getCmd[f], 0)
	if err != nil {
		return false, fmt.Errorf("ethtool: get %s on %s: %w", f, ifname, err)
	}
	if f == LRO {
		return v&flagLRO != 0, nil
	}
	return v != 0, nil
}

// Set switches feature f on or off for ifname. It needs CAP_NET_ADMIN.
func Set(ifname string, f Feature, on bool) error {
	if f < 0 || f >= numFeatures {
		return fmt.Errorf("ethtool: bad feature %d", int(f))
	}
	var data uint32
	if on {
		data = 1
	}
	if f == LRO {
		flags, err := value(ifname, cmdGFLAGS, 0)
		if err != nil {
			return fmt.Errorf("ethtool: get flags on %s: %w", ifname, err)
		}
		data = flags &^ flagLRO
		if on {
			data |= flagLRO
		}
	}
	if _, err := value(ifname, setCmd[f], data); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("ethtool: set %s on %s: %w (needs CAP_NET_ADMIN)", f, ifname, err)
		}
		return fmt.Errorf("ethtool: set %s on %s: %w", f, ifname, err)
	}
	return nil
}

// Driver returns the name of ifname's driver ("veth", "igb", ...).
func Driver(ifname string) (string, error) {
	fd, err := ifSocket(ifname)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	d, err := ioctlDriver(fd, ifname)
	if err != nil {
		return "", fmt.Errorf("ethtool: driver of %s: %w", ifname, err)
	}
	return d, nil
}

// ifSocket checks ifname and opens a socket for ethtool ioctls.
func ifSocket(ifname string) (int, error) {
	if len(ifname) == 0 || len(ifname) >= unix.IFNAMSIZ {
		return -1, fmt.Errorf("bad interface name %q", ifname)
	}
	return unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
}

// value runs one struct ethtool_value command and returns its data field.
func value(ifname string, cmd, data uint32) (uint32, error) {
	fd, err := ifSocket(ifname)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return ioctlValue(fd, ifname, cmd, data)
}
