package ifmtu

import (
	"encoding/binary"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Set sets interface name's MTU (SIOCSIFMTU; needs CAP_NET_ADMIN). The
// kernel refuses an MTU above the driver's maximum (Max) with EINVAL, as
// some drivers do for other reasons (a macvlan above its lower device's
// MTU).
func Set(name string, mtu int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	ifr.SetUint32(uint32(mtu))
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFMTU, ifr); err != nil {
		return fmt.Errorf("SIOCSIFMTU %s %d: %w", name, mtu, err)
	}
	return nil
}

// Max returns the largest MTU interface name's driver accepts
// (IFLA_MAX_MTU), or 0 when the kernel does not say (before Linux 4.19,
// or a device without a limit).
func Max(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if oe, ok := err.(*net.OpError); ok {
		return 0, oe.Err
	}
	if err != nil {
		return 0, err
	}
	rib, err := syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC)
	if err != nil {
		return 0, fmt.Errorf("rtnetlink: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return 0, fmt.Errorf("rtnetlink: %w", err)
	}
	return maxMTU(msgs, ifi.Index), nil
}

// maxMTU finds IFLA_MAX_MTU in the RTM_NEWLINK message of interface
// index among msgs (0 if absent).
func maxMTU(msgs []syscall.NetlinkMessage, index int) int {
	for i := range msgs {
		m := &msgs[i]
		// struct ifinfomsg: family u8, pad u8, type u16, index s32, ...
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg ||
			int(int32(binary.NativeEndian.Uint32(m.Data[4:]))) != index {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			return 0
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.IFLA_MAX_MTU && len(a.Value) >= 4 {
				return int(binary.NativeEndian.Uint32(a.Value))
			}
		}
		return 0
	}
	return 0
}
