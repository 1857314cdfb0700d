package pin

import (
	"runtime"
	"slices"
	"testing"
)

func TestPinNthStaysInAllowedSet(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skip("pinning not supported on", runtime.GOOS)
	}
	before := Allowed()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; n < 2*len(before)+1; n++ {
			if err := PinNth(n); err != nil {
				t.Errorf("PinNth(%d): %v", n, err)
				return
			}
			now := Allowed()
			if len(now) != 1 || !slices.Contains(before, now[0]) {
				t.Errorf("PinNth(%d) left the thread on %v; the process may use %v", n, now, before)
			}
			if err := Unpin(); err != nil {
				t.Error(err)
			}
		}
		runtime.UnlockOSThread()
	}()
	<-done
}
