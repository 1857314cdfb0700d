//go:build linux

package afpacket

import (
	"sync/atomic"
	"unsafe"
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
