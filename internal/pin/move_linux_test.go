//go:build linux

package pin

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// MoveThreads moves the unpinned threads onto its CPUs, leaves pinned
// ones alone, and restore gives the moved ones the start affinity back.
func TestMoveThreads(t *testing.T) {
	a := Allowed()
	if len(a) < 2 {
		t.Skip("needs 2 CPUs")
	}
	target, other := a[len(a)-1], a[0]
	var start unix.CPUSet
	if err := unix.SchedGetaffinity(0, &start); err != nil {
		t.Fatal(err)
	}
	// A pinned thread, and an unpinned one parked on a locked goroutine
	// so that its id stays valid.
	type th struct {
		tid  chan int
		done chan struct{}
	}
	run := func(pinTo int) th {
		x := th{make(chan int), make(chan struct{})}
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if pinTo >= 0 {
				if err := Pin(pinTo); err != nil {
					t.Error(err)
				}
				defer func() { _ = Unpin() }()
			}
			x.tid <- unix.Gettid()
			<-x.done
		}()
		return x
	}
	pinned, free := run(other), run(-1)
	pt, ft := <-pinned.tid, <-free.tid
	defer close(pinned.done)
	defer close(free.done)
	mask := func(tid int) unix.CPUSet {
		var s unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	restore, moved, err := MoveThreads([]int{target})
	if err != nil || moved == 0 {
		t.Fatalf("MoveThreads: %d moved, %v", moved, err)
	}
	if m := mask(ft); m.Count() != 1 || !m.IsSet(target) {
		t.Errorf("unpinned thread's mask %v, want CPU %d only", m, target)
	}
	if m := mask(pt); m.Count() != 1 || !m.IsSet(other) {
		t.Errorf("pinned thread moved: mask %v, want CPU %d", m, other)
	}
	restore()
	if m := mask(ft); m != start {
		t.Errorf("restore: unpinned thread's mask %v, want %v", m, start)
	}
	if m := mask(pt); m.Count() != 1 || !m.IsSet(other) {
		t.Errorf("restore touched the pinned thread: %v", m)
	}
	if _, _, err := MoveThreads(nil); err == nil {
		t.Error("MoveThreads(nil): no error")
	}
}
