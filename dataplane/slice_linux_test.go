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
	runIdleEngine(t, Config{Slice: want}, func(tid int) {
		s, _ := pin.ThreadSlice()
		mu.Lock()
		seen[tid] = s
		mu.Unlock()
	})
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

// runIdleEngine runs an idle 2-worker engine over memports, with cfg's
// Slice, RTPrio and Poll, for 100 ms (many naps, many publishes), calling
// note on a polling thread at each of its publishes (ThreadCPU), then
// stops it and checks that every thread pinned and set up cleanly.
func runIdleEngine(t *testing.T, cfg Config, note func(tid int)) {
	t.Helper()
	e, err := New(Config{Workers: 2, LAN: memport.New("lan", 2, 64), WAN: memport.New("wan", 2, 64),
		RouterMAC: routerMAC, RouterAddr: routerIP, LANNet: lanNet, LANBits: 24,
		Slice: cfg.Slice, RTPrio: cfg.RTPrio, Poll: cfg.Poll,
		ThreadCPU: func() int64 { note(unix.Gettid()); return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	e.SetSession(testSession())
	e.Start()
	time.Sleep(100 * time.Millisecond)
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if e.PinErr() != nil {
		t.Fatalf("PinErr: %v", e.PinErr())
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
