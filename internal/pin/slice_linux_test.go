//go:build linux

package pin

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// kernelAtLeast reports whether the running kernel is major.minor or later.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	f := strings.FieldsFunc(unix.ByteSliceToString(u.Release[:]), func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		t.Fatalf("kernel release %q", u.Release)
	}
	ma, _ := strconv.Atoi(f[0])
	mi, _ := strconv.Atoi(f[1])
	return ma > major || ma == major && mi >= minor
}

// ShortSlice sets the calling thread's slice (clamped to the kernel's
// bounds), leaves other threads alone, and restore puts the default back.
func TestShortSlice(t *testing.T) {
	if !kernelAtLeast(t, 6, 12) {
		t.Skip("custom slices need Linux 6.12")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	def, err := ThreadSlice()
	if err != nil || def <= 0 {
		t.Fatalf("default slice %v (%v)", def, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for _, c := range []struct{ ask, want time.Duration }{
			{200 * time.Microsecond, 200 * time.Microsecond},
			{time.Microsecond, 100 * time.Microsecond},
			{time.Second, 100 * time.Millisecond},
		} {
			restore, err := ShortSlice(c.ask)
			if err != nil {
				t.Error(err)
				return
			}
			if got, err := ThreadSlice(); err != nil || got != c.want {
				t.Errorf("slice %v: thread has %v (%v), want %v", c.ask, got, err, c.want)
			}
			restore()
			if got, err := ThreadSlice(); err != nil || got != def {
				t.Errorf("after restore: %v (%v), want the default %v", got, err, def)
			}
		}
	}()
	<-done
	// This test's thread kept the default.
	if got, err := ThreadSlice(); err != nil || got != def {
		t.Errorf("another thread: %v (%v), want %v", got, err, def)
	}
}
