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
