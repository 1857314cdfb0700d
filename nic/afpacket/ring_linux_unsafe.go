//go:build linux

package afpacket

import (
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The kernel and the port hand ring slots to each other through 32-bit
// status words; they are read and written only with atomics (acquire /
// release), the payload around them with plain loads and stores.

func loadStatus(mem []byte, off int) uint32 {
	_ = mem[off+3]
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&mem[off])))
}

func storeStatus(mem []byte, off int, v uint32) {
	_ = mem[off+3]
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&mem[off])), v)
}

// mmsghdr is struct mmsghdr: Go's alignment pads it as the C compiler
// does (64 bytes on 64-bit, 32 on 32-bit systems).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// sendmmsg sends one datagram per header (MSG_DONTWAIT) and returns how
// many went out; err is the error of the first that did not (nil when
// all did).
func sendmmsg(fd int, mm []mmsghdr) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&mm[0])), uintptr(len(mm)), unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	if int(r) < len(mm) {
		// The kernel stopped early: ask again from there to learn why.
		r2, err := sendmmsg(fd, mm[r:])
		return int(r) + r2, err
	}
	return int(r), nil
}

// boundIfindex returns the interface index packet socket fd is bound to
// (getsockname's sll_ifindex): -1 once that interface was unregistered.
// It allocates nothing.
func boundIfindex(fd int) (int, error) {
	var sa unix.RawSockaddrLinklayer
	l := uint32(unsafe.Sizeof(sa))
	_, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l)))
	if e != 0 {
		return 0, e
	}
	return int(sa.Ifindex), nil
}

// updateWord stores *val at *key in an array map of 32-bit words, passing
// pointers so that the map's marshalling allocates nothing.
func updateWord(m *ebpf.Map, key, val *uint32) error {
	return m.Update(unsafe.Pointer(key), unsafe.Pointer(val), ebpf.UpdateAny)
}
