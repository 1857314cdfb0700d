//go:build linux

package afxdp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The socket options below take structs that x/sys/unix has no typed
// wrapper for; they are the only raw pointer syscalls of the package.

func setsockoptUmemReg(fd int, umem []byte, frameSize, headroom uint32) error {
	reg := unix.XDPUmemReg{
		Addr:     uint64(uintptr(unsafe.Pointer(unsafe.SliceData(umem)))),
		Len:      uint64(len(umem)),
		Size:     frameSize,
		Headroom: headroom,
	}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockopt(fd, opt int, p unsafe.Pointer, size uintptr) (uintptr, error) {
	l := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt),
		uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return uintptr(l), nil
}

// getMmapOffsets returns the fill, completion, RX and TX ring offsets.
func getMmapOffsets(fd int) (fr, cr, rx, tx ringOffset, err error) {
	var off unix.XDPMmapOffsets
	n, err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off))
	if err != nil {
		return
	}
	if n != unsafe.Sizeof(off) {
		// Kernels before 5.4 return offsets without the flags word.
		err = unix.EOPNOTSUPP
		return
	}
	conv := func(o unix.XDPRingOffset) ringOffset {
		return ringOffset{Producer: o.Producer, Consumer: o.Consumer, Desc: o.Desc, Flags: o.Flags}
	}
	return conv(off.Fr), conv(off.Cr), conv(off.Rx), conv(off.Tx), nil
}

func getXDPStats(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	_, err := getsockopt(fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
	return st, err
}

// getXDPOptions returns the XDP_OPTIONS flags (XDP_OPTIONS_ZEROCOPY).
func getXDPOptions(fd int) (uint32, error) {
	var v uint32
	_, err := getsockopt(fd, unix.XDP_OPTIONS, unsafe.Pointer(&v), unsafe.Sizeof(v))
	return v, err
}

// ethtoolChannels asks the driver for its channel counts (ETHTOOL_GCHANNELS).
func ethtoolChannels(ifname string) (rx, tx, combined uint32, err error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	defer unix.Close(fd)
	var ch struct {
		cmd                                         uint32
		maxRx, maxTx, maxOther, maxCombined         uint32
		rxCount, txCount, otherCount, combinedCount uint32
	}
	ch.cmd = unix.ETHTOOL_GCHANNELS
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = unsafe.Pointer(&ch)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if e != 0 {
		return 0, 0, 0, e
	}
	return ch.rxCount, ch.txCount, ch.combinedCount, nil
}
