package netmap

// ioctl numbers as encoded by FreeBSD's sys/ioccom.h (_IO carries
// IOC_VOID, unlike Linux).
var (
	nioCtrl   = bsdIOWR(ioGroup, ioNumCtrl, sizeofReqHeader)  // NIOCCTRL
	nioTxSync = bsdIO(ioGroup, ioNumTxSync)                   // NIOCTXSYNC
	nioRxSync = bsdIO(ioGroup, ioNumRxSync)                   // NIOCRXSYNC
	nioRegIF  = bsdIOWR(ioGroup, ioNumRegIF, sizeofLegacyReq) // NIOCREGIF (legacy, unused)
)
