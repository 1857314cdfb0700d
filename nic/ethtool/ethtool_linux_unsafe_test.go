//go:build linux

package ethtool

import (
	"testing"
	"unsafe"
)

// TestDrvinfoLayout checks struct ethtool_drvinfo's size and the driver
// name's offset against linux/ethtool.h.
func TestDrvinfoLayout(t *testing.T) {
	if got := unsafe.Sizeof(drvinfo{}); got != 196 {
		t.Fatalf("sizeof(drvinfo) = %d, want 196", got)
	}
	if off := unsafe.Offsetof(drvinfo{}.driver); off != 4 {
		t.Fatalf("driver at %d, want 4", off)
	}
	if off := unsafe.Offsetof(drvinfo{}.nPriv); off != 176 {
		t.Fatalf("n_priv_flags at %d, want 176", off)
	}
}

// TestRxnfcLayout checks struct ethtool_rxnfc and ethtool_rx_flow_spec
// against linux/ethtool.h on 64-bit Linux.
func TestRxnfcLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("layout checked on 64-bit only")
	}
	var n rxnfc
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(rxnfc)", unsafe.Sizeof(n), 192},
		{"fs", unsafe.Offsetof(n.fs), 16},
		{"rule_cnt", unsafe.Offsetof(n.ruleCnt), 184},
		{"sizeof(flow_spec)", unsafe.Sizeof(n.fs), 168},
		{"m_u", unsafe.Offsetof(n.fs.m), 76},
		{"ring_cookie", unsafe.Offsetof(n.fs.ringCookie), 152},
		{"location", unsafe.Offsetof(n.fs.location), 160},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}
