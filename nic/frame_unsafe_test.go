package nic

import (
	"testing"
	"unsafe"
)

func TestFrameIsOneCacheLine(t *testing.T) {
	if s := unsafe.Sizeof(Frame{}); s != 64 {
		t.Fatalf("Frame is %d bytes, want 64 (one cache line)", s)
	}
}
