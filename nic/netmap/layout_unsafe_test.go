package netmap

import (
	"testing"
	"unsafe"
)

// Offsets and sizes of sys/net/netmap.h and netmap_legacy.h (netmap API 14,
// LP64), worked out from the header's field list and C alignment rules.
func TestLayoutMatchesHeader(t *testing.T) {
	var (
		s  slot
		r  ringHdr
		i  ifHdr
		h  reqHeader
		g  reqRegister
		lg legacyReq
	)
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(netmap_slot)", unsafe.Sizeof(s), 16},
		{"netmap_slot.buf_idx", unsafe.Offsetof(s.BufIdx), 0},
		{"netmap_slot.len", unsafe.Offsetof(s.Len), 4},
		{"netmap_slot.flags", unsafe.Offsetof(s.Flags), 6},
		{"netmap_slot.ptr", unsafe.Offsetof(s.Ptr), 8},

		{"netmap_ring.buf_ofs", unsafe.Offsetof(r.BufOfs), 0},
		{"netmap_ring.num_slots", unsafe.Offsetof(r.NumSlots), 8},
		{"netmap_ring.nr_buf_size", unsafe.Offsetof(r.BufSize), 12},
		{"netmap_ring.ringid", unsafe.Offsetof(r.RingID), 16},
		{"netmap_ring.dir", unsafe.Offsetof(r.Dir), 18},
		{"netmap_ring.head", unsafe.Offsetof(r.Head), 20},
		{"netmap_ring.cur", unsafe.Offsetof(r.Cur), 24},
		{"netmap_ring.tail", unsafe.Offsetof(r.Tail), 28},
		{"netmap_ring.flags", unsafe.Offsetof(r.Flags), 32},
		{"netmap_ring.ts", unsafe.Offsetof(r.TS), 40},
		{"sizeof(struct timeval)", unsafe.Sizeof(r.TS), 16},
		{"netmap_ring.offset_mask", unsafe.Offsetof(r.OffsetMask), 56},
		{"netmap_ring.buf_align", unsafe.Offsetof(r.BufAlign), 64},
		{"netmap_ring.sem (aligned NM_CACHE_ALIGN)", unsafe.Offsetof(r.Sem), cacheAlign},
		{"netmap_ring.slot[]", unsafe.Sizeof(r), 256},

		{"netmap_if.ni_name", unsafe.Offsetof(i.Name), 0},
		{"netmap_if.ni_version", unsafe.Offsetof(i.Version), 16},
		{"netmap_if.ni_flags", unsafe.Offsetof(i.Flags), 20},
		{"netmap_if.ni_tx_rings", unsafe.Offsetof(i.TxRings), 24},
		{"netmap_if.ni_rx_rings", unsafe.Offsetof(i.RxRings), 28},
		{"netmap_if.ni_bufs_head", unsafe.Offsetof(i.BufsHead), 32},
		{"netmap_if.ni_host_tx_rings", unsafe.Offsetof(i.HostTxRings), 36},
		{"netmap_if.ni_host_rx_rings", unsafe.Offsetof(i.HostRxRings), 40},
		{"netmap_if.ni_spare1", unsafe.Offsetof(i.Spare1), 44},
		{"netmap_if.ring_ofs[]", unsafe.Sizeof(i), 56},

		{"nmreq_header.nr_version", unsafe.Offsetof(h.Version), 0},
		{"nmreq_header.nr_reqtype", unsafe.Offsetof(h.ReqType), 2},
		{"nmreq_header.nr_reserved", unsafe.Offsetof(h.Reserved), 4},
		{"nmreq_header.nr_name", unsafe.Offsetof(h.Name), 8},
		{"nmreq_header.nr_options", unsafe.Offsetof(h.Options), 72},
		{"nmreq_header.nr_body", unsafe.Offsetof(h.Body), 80},
		{"sizeof(nmreq_header)", unsafe.Sizeof(h), sizeofReqHeader},

		{"nmreq_register.nr_offset", unsafe.Offsetof(g.Offset), 0},
		{"nmreq_register.nr_memsize", unsafe.Offsetof(g.MemSize), 8},
		{"nmreq_register.nr_tx_slots", unsafe.Offsetof(g.TxSlots), 16},
		{"nmreq_register.nr_rx_slots", unsafe.Offsetof(g.RxSlots), 20},
		{"nmreq_register.nr_tx_rings", unsafe.Offsetof(g.TxRings), 24},
		{"nmreq_register.nr_rx_rings", unsafe.Offsetof(g.RxRings), 26},
		{"nmreq_register.nr_host_tx_rings", unsafe.Offsetof(g.HostTxRings), 28},
		{"nmreq_register.nr_host_rx_rings", unsafe.Offsetof(g.HostRxRings), 30},
		{"nmreq_register.nr_mem_id", unsafe.Offsetof(g.MemID), 32},
		{"nmreq_register.nr_ringid", unsafe.Offsetof(g.RingID), 34},
		{"nmreq_register.nr_mode", unsafe.Offsetof(g.Mode), 36},
		{"nmreq_register.nr_extra_bufs", unsafe.Offsetof(g.ExtraBufs), 40},
		{"nmreq_register.nr_flags", unsafe.Offsetof(g.Flags), 48},
		{"sizeof(nmreq_register)", unsafe.Sizeof(g), sizeofReqRegister},

		{"nmreq.nr_version", unsafe.Offsetof(lg.Version), 16},
		{"nmreq.nr_offset", unsafe.Offsetof(lg.Offset), 20},
		{"nmreq.nr_tx_rings", unsafe.Offsetof(lg.TxRings), 36},
		{"nmreq.nr_ringid", unsafe.Offsetof(lg.RingID), 40},
		{"nmreq.nr_cmd", unsafe.Offsetof(lg.Cmd), 42},
		{"nmreq.nr_arg3", unsafe.Offsetof(lg.Arg3), 48},
		{"nmreq.nr_flags", unsafe.Offsetof(lg.Flags), 52},
		{"sizeof(nmreq)", unsafe.Sizeof(lg), sizeofLegacyReq},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, header says %d", tt.name, tt.got, tt.want)
		}
	}
}

// Each encoding is checked against the value the C macros produce
// (_IOWR('i', 151, struct nmreq_header) etc.), written out by hand from
// asm-generic/ioctl.h and sys/ioccom.h.
func TestIoctlEncodings(t *testing.T) {
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"linux NIOCCTRL", linuxIOWR(ioGroup, ioNumCtrl, sizeofReqHeader), 0xc0586997},
		{"linux NIOCTXSYNC", linuxIO(ioGroup, ioNumTxSync), 0x6994},
		{"linux NIOCRXSYNC", linuxIO(ioGroup, ioNumRxSync), 0x6995},
		{"linux NIOCREGIF", linuxIOWR(ioGroup, ioNumRegIF, sizeofLegacyReq), 0xc03c6992},
		{"linux NIOCGINFO", linuxIOWR(ioGroup, ioNumGInfo, sizeofLegacyReq), 0xc03c6991},
		{"freebsd NIOCCTRL", bsdIOWR(ioGroup, ioNumCtrl, sizeofReqHeader), 0xc0586997},
		{"freebsd NIOCTXSYNC", bsdIO(ioGroup, ioNumTxSync), 0x20006994},
		{"freebsd NIOCRXSYNC", bsdIO(ioGroup, ioNumRxSync), 0x20006995},
		{"freebsd NIOCREGIF", bsdIOWR(ioGroup, ioNumRegIF, sizeofLegacyReq), 0xc03c6992},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %#x, want %#x", tt.name, tt.got, tt.want)
		}
	}
	// The platform's own table must be one of the two encodings.
	if nioCtrl != tests[0].want || (nioTxSync != tests[1].want && nioTxSync != tests[6].want) {
		t.Errorf("platform ioctl numbers %#x %#x do not match either encoding", nioCtrl, nioTxSync)
	}
	if nioRegIF != tests[3].want {
		t.Errorf("NIOCREGIF = %#x", nioRegIF)
	}
	if nioRxSync != nioTxSync+1 {
		t.Errorf("NIOCRXSYNC %#x != NIOCTXSYNC+1 %#x", nioRxSync, nioTxSync)
	}
}

func TestLegacyRequest(t *testing.T) {
	tests := []struct {
		name       string
		mode       uint32
		ring       uint16
		noTxPoll   bool
		wantRingID uint16
		wantFlags  uint32
	}{
		{"one nic", RegOneNIC, 3, false, 0x4003, RegOneNIC},
		{"one nic no tx poll", RegOneNIC, 7, true, 0x5007, RegOneNIC},
		{"host", RegSW, 0, false, 0x2000, RegSW},
		{"all nic", RegAllNIC, 0, false, 0, RegAllNIC},
		{"ring masked", RegOneNIC, 0x1fff, false, 0x4fff, RegOneNIC},
	}
	for _, tt := range tests {
		r := legacyRequest("em0", tt.mode, tt.ring, tt.noTxPoll)
		if r.RingID != tt.wantRingID || r.Flags != tt.wantFlags || r.Version != APIVersion {
			t.Errorf("%s: ringid %#x flags %d version %d, want %#x %d %d", tt.name, r.RingID, r.Flags, r.Version, tt.wantRingID, tt.wantFlags, APIVersion)
		}
		if string(r.Name[:3]) != "em0" || r.Name[3] != 0 {
			t.Errorf("%s: name %q", tt.name, r.Name[:])
		}
	}
	long := legacyRequest("a-very-long-interface-name", RegOneNIC, 0, false)
	if long.Name[ifNameSize-1] != 0 {
		t.Errorf("name not NUL-terminated: %q", long.Name[:])
	}
}
