package afxdp

import (
	"fmt"
	"unsafe"
)

// ringOffset mirrors struct xdp_ring_offset: where a ring's producer,
// consumer, flags and descriptor array sit in its mmap'd area.
type ringOffset struct {
	Producer, Consumer, Desc, Flags uint64
}

// ringMapLen is the length of the mmap for a ring of size entries of
// entSize bytes.
func ringMapLen(off ringOffset, size uint32, entSize uintptr) int {
	return int(off.Desc + uint64(size)*uint64(entSize))
}

// mapRing points r at the indices inside mem and returns a pointer to the
// descriptor array. It checks bounds and alignment so a bad offset from the
// kernel (or a test) fails cleanly instead of faulting.
func mapRing(r *ringIdx, mem []byte, off ringOffset, size uint32, entSize uintptr) (unsafe.Pointer, error) {
	if size == 0 || size&(size-1) != 0 {
		return nil, fmt.Errorf("afxdp: ring size %d not a power of two", size)
	}
	if len(mem) == 0 {
		return nil, fmt.Errorf("afxdp: empty ring map")
	}
	base := unsafe.Pointer(unsafe.SliceData(mem))
	words := [3]uint64{off.Producer, off.Consumer, off.Flags}
	for _, w := range words {
		if w+4 > uint64(len(mem)) || (uintptr(base)+uintptr(w))&3 != 0 {
			return nil, fmt.Errorf("afxdp: ring index offset %d bad for %d-byte map", w, len(mem))
		}
	}
	if uint64(ringMapLen(off, size, entSize)) > uint64(len(mem)) {
		return nil, fmt.Errorf("afxdp: ring of %d entries at %d overflows %d-byte map", size, off.Desc, len(mem))
	}
	if (uintptr(base)+uintptr(off.Desc))&7 != 0 {
		return nil, fmt.Errorf("afxdp: ring descriptors at %d misaligned", off.Desc)
	}
	r.init((*uint32)(unsafe.Add(base, off.Producer)),
		(*uint32)(unsafe.Add(base, off.Consumer)),
		(*uint32)(unsafe.Add(base, off.Flags)), size)
	return unsafe.Add(base, off.Desc), nil
}

// mapAddrRing maps a fill or completion ring over mem.
func mapAddrRing(r *addrRing, mem []byte, off ringOffset, size uint32) error {
	p, err := mapRing(&r.ringIdx, mem, off, size, unsafe.Sizeof(uint64(0)))
	if err != nil {
		return err
	}
	r.ents = unsafe.Slice((*uint64)(p), size)
	return nil
}

// mapDescRing maps an RX or TX ring over mem.
func mapDescRing(r *descRing, mem []byte, off ringOffset, size uint32) error {
	p, err := mapRing(&r.ringIdx, mem, off, size, unsafe.Sizeof(desc{}))
	if err != nil {
		return err
	}
	r.ents = unsafe.Slice((*desc)(p), size)
	return nil
}
