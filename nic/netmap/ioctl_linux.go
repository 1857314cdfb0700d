package netmap

// ioctl numbers as encoded by Linux's asm-generic/ioctl.h.
var (
	nioCtrl   = linuxIOWR(ioGroup, ioNumCtrl, sizeofReqHeader)  // NIOCCTRL
	nioTxSync = linuxIO(ioGroup, ioNumTxSync)                   // NIOCTXSYNC
	nioRxSync = linuxIO(ioGroup, ioNumRxSync)                   // NIOCRXSYNC
	nioRegIF  = linuxIOWR(ioGroup, ioNumRegIF, sizeofLegacyReq) // NIOCREGIF (legacy, unused)
)
