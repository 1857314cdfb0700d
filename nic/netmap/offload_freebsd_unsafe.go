//go:build freebsd

package netmap

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Interface capabilities of FreeBSD's net/if.h that DisableHostOffloads
// clears.
const (
	ifcapTxCsum     = 0x00002  // IFCAP_TXCSUM
	ifcapTSO4       = 0x00100  // IFCAP_TSO4
	ifcapTSO6       = 0x00200  // IFCAP_TSO6
	ifcapLRO        = 0x00400  // IFCAP_LRO
	ifcapVLANHWTSO  = 0x40000  // IFCAP_VLAN_HWTSO
	ifcapTxCsumIPv6 = 0x400000 // IFCAP_TXCSUM_IPV6

	hostOffloads = ifcapTxCsum | ifcapTxCsumIPv6 | ifcapTSO4 | ifcapTSO6 | ifcapVLANHWTSO | ifcapLRO
)

// ifreqCap is struct ifreq with ifr_reqcap and ifr_curcap (ifru_cap[2]),
// padded to sizeof(struct ifreq), which SIOCGIFCAP's number encodes.
type ifreqCap struct {
	name   [unix.IFNAMSIZ]byte
	reqcap int32
	curcap int32
	_      [8]byte
}

// sizeof(struct ifreq) on FreeBSD, both ways.
var (
	_ [32 - unsafe.Sizeof(ifreqCap{})]byte
	_ [unsafe.Sizeof(ifreqCap{}) - 32]byte
)

// DisableHostOffloads clears transmit checksum offload (IPv4 and IPv6),
// TSO (also on VLANs) and LRO on interface name (see offload.go), as
// `ifconfig NAME -txcsum -txcsum6 -tso -vlanhwtso -lro` does.
func DisableHostOffloads(name string) error {
	name = portName(name)
	if len(name) >= unix.IFNAMSIZ {
		return fmt.Errorf("netmap: bad interface name %q", name)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netmap: socket: %w", err)
	}
	defer unix.Close(fd)
	var req ifreqCap
	copy(req.name[:], name)
	if err := ioctl(fd, unix.SIOCGIFCAP, unsafe.Pointer(&req)); err != nil {
		return fmt.Errorf("netmap: %s: SIOCGIFCAP: %w", name, err)
	}
	on := req.curcap & hostOffloads
	if on == 0 {
		return nil
	}
	req.reqcap = req.curcap &^ hostOffloads
	if err := ioctl(fd, unix.SIOCSIFCAP, unsafe.Pointer(&req)); err != nil {
		return fmt.Errorf("netmap: %s: cannot switch offloads %#x off (ifconfig %s -txcsum -txcsum6 -tso -vlanhwtso -lro): %w", name, on, name, err)
	}
	return nil
}
