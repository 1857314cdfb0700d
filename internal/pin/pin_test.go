package pin

import (
	"runtime"
	"testing"
	"time"
)

func TestPinEachCPU(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skipf("pinning not supported on %s", runtime.GOOS)
	}
	cpus := Allowed()
	if len(cpus) == 0 {
		t.Fatal("Allowed returned no CPUs")
	}
	for _, c := range cpus {
		done := make(chan []int)
		go func() {
			if err := Pin(c); err != nil {
				t.Errorf("Pin(%d): %v", c, err)
				done <- nil
				return
			}
			got := Allowed()
			if err := Unpin(); err != nil {
				t.Errorf("Unpin: %v", err)
			}
			done <- got
		}()
		if got := <-done; len(got) != 1 || got[0] != c {
			t.Errorf("pinned to %d: thread allowed %v, want [%d]", c, got, c)
		}
	}
	// After Unpin the thread runs anywhere again.
	done := make(chan []int)
	go func() {
		_ = Pin(cpus[0])
		_ = Unpin()
		done <- Allowed()
	}()
	if got := <-done; len(got) != len(cpus) {
		t.Errorf("after Unpin allowed %v, want %v", got, cpus)
	}
}

func TestPinBadCPU(t *testing.T) {
	for _, c := range []int{-1, 1 << 20} {
		if err := Pin(c); err == nil {
			_ = Unpin()
			t.Errorf("Pin(%d) succeeded", c)
		}
	}
}

func spin(d time.Duration) uint64 {
	var x uint64
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func TestThreadCPUTime(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skipf("thread CPU time not supported on %s", runtime.GOOS)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, err := ThreadCPUTime()
	if err != nil {
		t.Fatal(err)
	}
	w0 := time.Now()
	_ = spin(30 * time.Millisecond)
	t1, _ := ThreadCPUTime()
	wall := time.Since(w0)
	if d := t1 - t0; d <= 0 || d > wall+time.Millisecond {
		t.Errorf("spin: thread CPU %v over wall %v; want 0 < cpu <= wall", d, wall)
	}
	// Sleeping costs (almost) no CPU: well under the sleep itself.
	time.Sleep(50 * time.Millisecond)
	t2, _ := ThreadCPUTime()
	if d := t2 - t1; d >= 25*time.Millisecond {
		t.Errorf("sleep 50ms used %v of thread CPU", d)
	}
}

func TestThreadCPUTimeAllocs(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skip("not supported")
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = ThreadCPUTime() }); a != 0 {
		t.Errorf("ThreadCPUTime allocates %v per call", a)
	}
}

func BenchmarkThreadCPUTime(b *testing.B) {
	for b.Loop() {
		_, _ = ThreadCPUTime()
	}
}
