package netmap

// Values from sys/net/netmap.h (netmap API 14).
const (
	APIVersion = 14 // NETMAP_API
	apiMin     = 14 // NETMAP_MIN_API
	apiMax     = 15 // NETMAP_MAX_API

	cacheAlign = 128 // NM_CACHE_ALIGN
	ifNameSize = 16  // IFNAMSIZ (netmap_if.ni_name)
	reqNameLen = 64  // NETMAP_REQ_IFNAMSIZ (nmreq_header.nr_name)

	// DeviceName is the netmap control device.
	DeviceName = "/dev/netmap"
)

// Slot flags (struct netmap_slot.flags).
const (
	NSBufChanged = 0x0001 // NS_BUF_CHANGED: buf_idx was changed by the user
	NSReport     = 0x0002 // NS_REPORT
	NSForward    = 0x0004 // NS_FORWARD
	NSNoLearn    = 0x0008 // NS_NO_LEARN
	NSIndirect   = 0x0010 // NS_INDIRECT
	NSMoreFrag   = 0x0020 // NS_MOREFRAG
	NSTxMon      = 0x0040 // NS_TXMON
)

// Ring flags (struct netmap_ring.flags).
const (
	NRTimestamp = 0x0002 // NR_TIMESTAMP
	NRForward   = 0x0004 // NR_FORWARD
)

// Request types for nmreq_header.nr_reqtype.
const (
	reqTypeRegister = 1 // NETMAP_REQ_REGISTER
	reqTypePortInfo = 2 // NETMAP_REQ_PORT_INFO_GET
)

// Registration modes (nmreq_register.nr_mode).
const (
	RegDefault = 0 // NR_REG_DEFAULT
	RegAllNIC  = 1 // NR_REG_ALL_NIC
	RegSW      = 2 // NR_REG_SW: host rings only
	RegNICSW   = 3 // NR_REG_NIC_SW: all NIC rings and the host rings
	RegOneNIC  = 4 // NR_REG_ONE_NIC: one NIC ring pair (nr_ringid)
	RegNull    = 7 // NR_REG_NULL
	RegOneSW   = 8 // NR_REG_ONE_SW: one host ring pair (nr_ringid)
)

// nmreq_register.nr_flags.
const (
	nrExclusive = 0x800   // NR_EXCLUSIVE
	nrDoRxPoll  = 0x10000 // NR_DO_RX_POLL
	nrNoTxPoll  = 0x20000 // NR_NO_TX_POLL
)

// Legacy API (netmap_legacy.h), for reference: struct nmreq + NIOCREGIF.
const (
	legacyHWRing  = 0x4000 // NETMAP_HW_RING
	legacySWRing  = 0x2000 // NETMAP_SW_RING
	legacyRingMsk = 0x0fff // NETMAP_RING_MASK
	legacyNoTxPol = 0x1000 // NETMAP_NO_TX_POLL
	legacyRegMask = 0xf    // NR_REG_MASK
)

// ioctl command numbers ('i' group), before OS-specific encoding.
const (
	ioGroup     = 'i'
	ioNumGInfo  = 145 // NIOCGINFO  _IOWR('i', 145, struct nmreq)
	ioNumRegIF  = 146 // NIOCREGIF  _IOWR('i', 146, struct nmreq)
	ioNumTxSync = 148 // NIOCTXSYNC _IO('i', 148)
	ioNumRxSync = 149 // NIOCRXSYNC _IO('i', 149)
	ioNumCtrl   = 151 // NIOCCTRL   _IOWR('i', 151, struct nmreq_header)
)

// Sizes of the request structs (checked against unsafe.Sizeof in tests).
const (
	sizeofReqHeader   = 88 // struct nmreq_header
	sizeofReqRegister = 56 // struct nmreq_register
	sizeofLegacyReq   = 60 // struct nmreq
)

// Linux asm-generic/ioctl.h encoding: dir<<30 | size<<16 | type<<8 | nr,
// with _IOC_WRITE=1, _IOC_READ=2.
func linuxIO(group, num uintptr) uintptr { return group<<8 | num }
func linuxIOWR(group, num, size uintptr) uintptr {
	return 3<<30 | (size&0x3fff)<<16 | group<<8 | num
}

// FreeBSD sys/ioccom.h encoding: inout | (len & IOCPARM_MASK)<<16 |
// group<<8 | num, with IOC_VOID=0x20000000, IOC_OUT=0x40000000,
// IOC_IN=0x80000000, IOCPARM_MASK=0x1fff.
func bsdIO(group, num uintptr) uintptr { return 0x20000000 | group<<8 | num }
func bsdIOWR(group, num, size uintptr) uintptr {
	return 0xc0000000 | (size&0x1fff)<<16 | group<<8 | num
}

// legacyRequest builds the struct nmreq a NIOCREGIF registration (the API
// before nmreq_header) would use for the same binding: nr_flags carries the
// NR_REG_* mode, nr_ringid the ring and, for old kernels, the
// NETMAP_HW_RING / NETMAP_SW_RING selectors and NETMAP_NO_TX_POLL.
func legacyRequest(name string, mode uint32, ring uint16, noTxPoll bool) legacyReq {
	var r legacyReq
	copy(r.Name[:ifNameSize-1], name)
	r.Version = APIVersion
	r.Flags = mode & legacyRegMask
	r.RingID = ring & legacyRingMsk
	switch mode {
	case RegOneNIC:
		r.RingID |= legacyHWRing
	case RegSW, RegOneSW:
		r.RingID |= legacySWRing
	}
	if noTxPoll {
		r.RingID |= legacyNoTxPol
	}
	return r
}
