//go:build linux

package dataplane

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// TestWorkerSlice: every polling thread runs with Config.Slice, and the
// threads give the kernel's default back when the engine stops.
func TestWorkerSlice(t *testing.T) {
	if !customSlices() {
		var u unix.Utsname
		_ = unix.Uname(&u)
		t.Skipf("no custom scheduling slices on Linux %s", unix.ByteSliceToString(u.Release[:]))
	}
	const want = 300 * time.Microsecond
	var mu sync.Mutex
	seen := map[int]time.Duration{} // thread id -> slice on it
	lan := memport.New("lan", 2, 64)
	wan := memport.New("wan", 2, 64)
	e, err := New(Config{Workers: 2, LAN: lan, WAN: wan, RouterMAC: routerMAC,
		RouterAddr: routerIP, LANNet: lanNet, LANBits: 24, Slice: want,
		ThreadCPU: func() int64 {
			s, _ := pin.ThreadSlice()
			mu.Lock()
			seen[unix.Gettid()] = s
			mu.Unlock()
			return 0
		}})
	if err != nil {
		t.Fatal(err)
	}
	e.SetSession(testSession())
	e.Start()
	deadline := time.Now().Add(2 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if e.PinErr() != nil {
		t.Fatalf("PinErr: %v", e.PinErr())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("%d polling threads seen, want 2 workers", len(seen))
	}
	for tid, s := range seen {
		if s != want {
			t.Errorf("thread %d ran with slice %v, want %v", tid, s, want)
		}
	}
}

// customSlices reports whether the kernel keeps a fair thread's slice
// (Linux 6.12+): a thread asks for 200 µs and reads it back.
func customSlices() bool {
	ok := make(chan bool)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		restore, err := pin.ShortSlice(200 * time.Microsecond)
		s, _ := pin.ThreadSlice()
		restore()
		ok <- err == nil && s == 200*time.Microsecond
	}()
	return <-ok
}
