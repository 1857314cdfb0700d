//go:build linux

package afpacket

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestMmsghdrLayout checks struct mmsghdr's size against the kernel's:
// the msghdr, a 32-bit length, padded to the pointer alignment.
func TestMmsghdrLayout(t *testing.T) {
	want := uintptr(64)
	if unsafe.Sizeof(uintptr(0)) == 4 {
		want = 32
	}
	if got := unsafe.Sizeof(mmsghdr{}); got != want {
		t.Fatalf("sizeof(mmsghdr) = %d, want %d", got, want)
	}
	if off := unsafe.Offsetof(mmsghdr{}.n); off != unsafe.Sizeof(unix.Msghdr{}) {
		t.Fatalf("msg_len at %d, want %d", off, unsafe.Sizeof(unix.Msghdr{}))
	}
}
