//go:build linux

package ethtool

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// flowSpec is struct ethtool_rx_flow_spec; h and m hold the union
// ethtool_flow_union (52 bytes), hExt and mExt struct ethtool_flow_ext.
type flowSpec struct {
	flowType   uint32
	h          [52]byte
	hExt       [20]byte
	m          [52]byte
	mExt       [20]byte
	ringCookie uint64
	location   uint32
}

// rxnfc is struct ethtool_rxnfc without its trailing rule_locs.
type rxnfc struct {
	cmd      uint32
	flowType uint32
	data     uint64
	fs       flowSpec
	ruleCnt  uint32
}

// ioctlRule inserts (cmdSRXCLSRLINS) rule r of flow type ft at loc, or
// deletes (cmdSRXCLSRLDEL) the rule at loc. In the kernel's masks a set
// bit is a bit compared (ethtool's command line inverts them).
func ioctlRule(fd int, ifname string, cmd, ft uint32, r PortRule, loc uint32) error {
	n := rxnfc{cmd: cmd}
	n.fs.location = loc
	if cmd == cmdSRXCLSRLINS {
		n.flowType = ft
		n.fs.flowType = ft
		// struct ethtool_tcpip4_spec: ip4src, ip4dst, psrc, pdst, tos.
		binary.BigEndian.PutUint32(n.fs.h[0:], r.Addr)
		binary.BigEndian.PutUint16(n.fs.h[8:], r.Port&r.Mask)
		if r.Addr != 0 {
			binary.BigEndian.PutUint32(n.fs.m[0:], 0xffffffff)
		}
		binary.BigEndian.PutUint16(n.fs.m[8:], r.Mask)
		n.fs.ringCookie = uint64(r.Queue)
	}
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&n)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return errno
	}
	return nil
}
