//go:build linux

package ethtool

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq with ifr_data: name then a pointer.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

func ioctlValue(fd int, ifname string, cmd, data uint32) (uint32, error) {
	ev := ethtoolValue{cmd: cmd, data: data}
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&ev)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return 0, errno
	}
	return ev.data, nil
}

// drvinfo is struct ethtool_drvinfo.
type drvinfo struct {
	cmd                                        uint32
	driver, version, fw, bus, erom             [32]byte
	_                                          [12]byte
	nPriv, nStats, testLen, eedumpLen, regsLen uint32
}

func ioctlDriver(fd int, ifname string) (string, error) {
	di := drvinfo{cmd: unix.ETHTOOL_GDRVINFO}
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&di)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return "", errno
	}
	return unix.ByteSliceToString(di.driver[:]), nil
}
