package netmap

import "unsafe"

// The structs below mirror sys/net/netmap.h and netmap_legacy.h for 64-bit
// targets (amd64, arm64): the field order, sizes and offsets are asserted in
// layout_unsafe_test.go against the header's values.

// slot mirrors struct netmap_slot.
type slot struct {
	BufIdx uint32 // buf_idx
	Len    uint16 // len
	Flags  uint16 // flags
	Ptr    uint64 // ptr (indirect buffers / offsets)
}

// timeval mirrors struct timeval on 64-bit FreeBSD and Linux.
type timeval struct {
	Sec  int64
	Usec int64
}

// ringHdr mirrors struct netmap_ring up to and including sem[]; the slots
// follow at offset unsafe.Sizeof(ringHdr{}) (256).
type ringHdr struct {
	BufOfs     int64  // buf_ofs: buffer region relative to this ring
	NumSlots   uint32 // num_slots
	BufSize    uint32 // nr_buf_size
	RingID     uint16 // ringid
	Dir        uint16 // dir: 0 tx, 1 rx
	Head       uint32 // head (user)
	Cur        uint32 // cur (user)
	Tail       uint32 // tail (kernel)
	Flags      uint32 // flags
	_          uint32
	TS         timeval // ts
	OffsetMask uint64  // offset_mask
	BufAlign   uint64  // buf_align
	_          [128 - 72]byte
	Sem        [128]byte // sem, aligned to NM_CACHE_ALIGN
}

// ifHdr mirrors struct netmap_if; ring_ofs[] (int64 each, tx rings, host
// tx rings, rx rings, host rx rings) follows at offset 56.
type ifHdr struct {
	Name        [ifNameSize]byte // ni_name
	Version     uint32           // ni_version
	Flags       uint32           // ni_flags
	TxRings     uint32           // ni_tx_rings
	RxRings     uint32           // ni_rx_rings
	BufsHead    uint32           // ni_bufs_head
	HostTxRings uint32           // ni_host_tx_rings
	HostRxRings uint32           // ni_host_rx_rings
	Spare1      [3]uint32        // ni_spare1
}

// reqHeader mirrors struct nmreq_header.
type reqHeader struct {
	Version  uint16           // nr_version
	ReqType  uint16           // nr_reqtype
	Reserved uint32           // nr_reserved
	Name     [reqNameLen]byte // nr_name
	Options  uint64           // nr_options
	Body     uint64           // nr_body (pointer)
}

// reqRegister mirrors struct nmreq_register.
type reqRegister struct {
	Offset      uint64 // nr_offset: nifp offset in the shared region
	MemSize     uint64 // nr_memsize
	TxSlots     uint32 // nr_tx_slots
	RxSlots     uint32 // nr_rx_slots
	TxRings     uint16 // nr_tx_rings
	RxRings     uint16 // nr_rx_rings
	HostTxRings uint16 // nr_host_tx_rings
	HostRxRings uint16 // nr_host_rx_rings
	MemID       uint16 // nr_mem_id
	RingID      uint16 // nr_ringid
	Mode        uint32 // nr_mode
	ExtraBufs   uint32 // nr_extra_bufs
	_           uint32
	Flags       uint64 // nr_flags
}

// legacyReq mirrors struct nmreq (NIOCREGIF), kept for reference and
// layout tests only.
type legacyReq struct {
	Name    [ifNameSize]byte
	Version uint32
	Offset  uint32
	MemSize uint32
	TxSlots uint32
	RxSlots uint32
	TxRings uint16
	RxRings uint16
	RingID  uint16
	Cmd     uint16
	Arg1    uint16
	Arg2    uint16
	Arg3    uint32
	Flags   uint32
	Spare2  [1]uint32
}

const (
	sizeofSlot    = int(unsafe.Sizeof(slot{}))
	sizeofRingHdr = int(unsafe.Sizeof(ringHdr{}))
	sizeofIfHdr   = int(unsafe.Sizeof(ifHdr{}))
	sizeofRingOfs = 8 // ssize_t
)

// The views below turn validated offsets of a mapped region into typed
// pointers. Callers check that off+size <= len(mem) and that off is
// suitably aligned before calling them; misaligned or short inputs panic
// (they are programming errors, never kernel input).

func aligned(mem []byte, off, align int) bool {
	return (uintptr(unsafe.Pointer(unsafe.SliceData(mem)))+uintptr(off))%uintptr(align) == 0
}

func viewIf(mem []byte, off int) *ifHdr {
	b := mem[off : off+sizeofIfHdr]
	if !aligned(mem, off, 8) {
		panic("netmap: misaligned netmap_if")
	}
	return (*ifHdr)(unsafe.Pointer(unsafe.SliceData(b)))
}

func viewRing(mem []byte, off int) *ringHdr {
	b := mem[off : off+sizeofRingHdr]
	if !aligned(mem, off, 8) {
		panic("netmap: misaligned netmap_ring")
	}
	return (*ringHdr)(unsafe.Pointer(unsafe.SliceData(b)))
}

func viewSlots(mem []byte, off, n int) []slot {
	if n == 0 {
		return nil
	}
	b := mem[off : off+n*sizeofSlot]
	if !aligned(mem, off, 8) {
		panic("netmap: misaligned slots")
	}
	return unsafe.Slice((*slot)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// ringOfs reads ring_ofs[i] of the netmap_if at ifOff. The caller checks
// bounds.
func ringOfs(mem []byte, ifOff, i int) int64 {
	off := ifOff + sizeofIfHdr + i*sizeofRingOfs
	b := mem[off : off+8]
	return *(*int64)(unsafe.Pointer(unsafe.SliceData(b)))
}

func setRingOfs(mem []byte, ifOff, i int, v int64) {
	off := ifOff + sizeofIfHdr + i*sizeofRingOfs
	b := mem[off : off+8]
	*(*int64)(unsafe.Pointer(unsafe.SliceData(b))) = v
}
