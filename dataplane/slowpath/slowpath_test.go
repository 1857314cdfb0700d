package slowpath

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pppfwd/pppfwd/nic"
)

// ants starts a default pool (purge and ticktock goroutines) at package
// init; IgnoreCurrent leaves those out, so every goroutine of our pools
// must be gone at the end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

func mustNew(t *testing.T, cfg Config) *Pool {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func TestSubmitRunsEveryKind(t *testing.T) {
	type rec struct {
		kind  Kind
		queue uint16
		arg   uint64
		data  []byte
	}
	var mu sync.Mutex
	var got []rec
	h := func(j *Job) {
		if j.Frame.Off != nic.Headroom || j.Frame.Queue != j.Queue {
			panic("bad frame in job")
		}
		mu.Lock()
		got = append(got, rec{j.Kind, j.Queue, j.Arg, append([]byte(nil), j.Frame.Data()...)})
		mu.Unlock()
	}
	p := mustNew(t, Config{Workers: 3, Queue: 64, Handlers: [NumKinds]Handler{Exception: h, ICMPError: h}})
	const n = 200
	want := map[uint64]rec{}
	for i := 0; i < n; i++ {
		k := Kind(i % 2)
		data := bytes.Repeat([]byte{byte(i)}, 14+i)
		want[uint64(i)] = rec{k, uint16(i % 4), uint64(i), data}
		for !p.Submit(k, uint16(i%4), uint64(i), data) {
			time.Sleep(100 * time.Microsecond) // queue full: let workers catch up
		}
	}
	var ran atomic.Bool
	// Do is refused like Submit while the queue is full (the workers may
	// not have caught up with the last submissions yet).
	for tries := 0; !p.Do(func() { ran.Store(true) }); tries++ {
		if tries == 10000 {
			t.Fatal("Do refused for a second with the workers running")
		}
		time.Sleep(100 * time.Microsecond)
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == n && ran.Load() })
	for _, r := range got {
		w := want[r.arg]
		if r.kind != w.kind || r.queue != w.queue || !bytes.Equal(r.data, w.data) {
			t.Fatalf("job %d: got kind %v queue %d len %d, want %v %d %d", r.arg, r.kind, r.queue, len(r.data), w.kind, w.queue, len(w.data))
		}
	}
	s := p.Stats()
	if s.Submitted[Exception]+s.Submitted[ICMPError] != n || s.Done[Exception]+s.Done[ICMPError] != n || s.Done[Control] != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestDropReasons(t *testing.T) {
	p := mustNew(t, Config{Workers: 1, Queue: 1, Handlers: [NumKinds]Handler{Exception: func(*Job) {}}})
	cases := []struct {
		name   string
		submit func() bool
		reason DropReason
	}{
		{"too big", func() bool { return p.Submit(Exception, 0, 0, make([]byte, nic.MaxData+1)) }, DropTooBig},
		{"no handler", func() bool { return p.Submit(ICMPError, 0, 0, []byte{1}) }, DropNoHandler},
		{"bad kind", func() bool { return p.Submit(NumKinds, 0, 0, []byte{1}) }, DropNoHandler},
		{"nil func", func() bool { return p.Do(nil) }, DropNoHandler},
	}
	for _, c := range cases {
		before := p.Stats().Drops[c.reason]
		if c.submit() {
			t.Errorf("%s: accepted", c.name)
		}
		if after := p.Stats().Drops[c.reason]; after != before+1 {
			t.Errorf("%s: drops[%v] %d -> %d", c.name, c.reason, before, after)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p.Submit(Exception, 0, 0, []byte{1}) || p.Do(func() {}) {
		t.Fatal("accepted after Close")
	}
	if d := p.Stats().Drops[DropClosed]; d != 2 {
		t.Fatalf("closed drops = %d, want 2", d)
	}
}

// TestFlood blocks every worker, floods Submit from several goroutines and
// checks that exactly Workers+Queue jobs are accepted, the rest dropped and
// counted, and that no goroutines or jobs were added.
func TestFlood(t *testing.T) {
	const workers, queue, senders, perSender = 2, 8, 4, 5000
	gate := make(chan struct{})
	var handled atomic.Int64
	h := func(*Job) { <-gate; handled.Add(1) }
	base := runtime.NumGoroutine()
	p := mustNew(t, Config{Workers: workers, Queue: queue, Handlers: [NumKinds]Handler{Exception: h}})
	var accepted atomic.Int64
	var maxG atomic.Int64
	var wg sync.WaitGroup
	frame := make([]byte, 1500)
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perSender; i++ {
				if p.Submit(Exception, 0, 0, frame) {
					accepted.Add(1)
				}
				if i%500 == 0 {
					if g := int64(runtime.NumGoroutine()); g > maxG.Load() {
						maxG.Store(g)
					}
				}
			}
		}()
	}
	wg.Wait()
	if a := accepted.Load(); a != workers+queue {
		t.Errorf("accepted %d jobs during the flood, want exactly %d (workers+queue)", a, workers+queue)
	}
	s := p.Stats()
	if got, want := s.Drops[DropFull], uint64(senders*perSender)-uint64(accepted.Load()); got != want {
		t.Errorf("full drops = %d, want %d", got, want)
	}
	if g := maxG.Load(); g > int64(base+workers+senders+2) {
		t.Errorf("%d goroutines during the flood, want <= %d", g, base+workers+senders+2)
	}
	if r := p.Running(); r != workers {
		t.Errorf("Running = %d, want %d", r, workers)
	}
	close(gate)
	waitFor(t, func() bool { return handled.Load() == workers+queue })
	// Every job came back to the free list: the pool accepts again.
	waitFor(t, func() bool { return len(p.free) == workers+queue })
	if !p.Submit(Exception, 0, 0, frame) {
		t.Error("Submit dropped after the flood drained")
	}
}

func TestPanicRecovered(t *testing.T) {
	var ok atomic.Int64
	h := func(j *Job) {
		if j.Arg == 1 {
			panic("boom")
		}
		ok.Add(1)
	}
	p := mustNew(t, Config{Workers: 1, Queue: 4, Handlers: [NumKinds]Handler{Exception: h}})
	p.Submit(Exception, 0, 1, []byte{1})
	p.Submit(Exception, 0, 2, []byte{2})
	waitFor(t, func() bool { return ok.Load() == 1 })
	if s := p.Stats(); s.Panics != 1 || s.Done[Exception] != 1 {
		t.Fatalf("stats %+v, want 1 panic and 1 done", s)
	}
}

func TestCloseFinishesQueued(t *testing.T) {
	var n atomic.Int64
	p, err := New(Config{Workers: 1, Queue: 16, Handlers: [NumKinds]Handler{Exception: func(*Job) {
		time.Sleep(time.Millisecond)
		n.Add(1)
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		p.Submit(Exception, 0, 0, []byte{1})
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 10 {
		t.Fatalf("%d of 10 queued jobs ran before Close returned", n.Load())
	}
}

func TestSubmitAllocs(t *testing.T) {
	gate := make(chan struct{})
	p := mustNew(t, Config{Workers: 1, Queue: 1000, Handlers: [NumKinds]Handler{Exception: func(*Job) { <-gate }}})
	defer close(gate)
	data := make([]byte, 64)
	// Accepted path (the queue has room for every run) ...
	if a := testing.AllocsPerRun(500, func() { p.Submit(Exception, 0, 0, data) }); a != 0 {
		t.Errorf("Submit (accepted) allocates %v", a)
	}
	// ... and the drop path once the queue is full.
	for p.Submit(Exception, 0, 0, data) {
	}
	if a := testing.AllocsPerRun(500, func() { p.Submit(Exception, 0, 0, data) }); a != 0 {
		t.Errorf("Submit (dropped) allocates %v", a)
	}
}

func BenchmarkSubmit(b *testing.B) {
	p, err := New(Config{Workers: 2, Queue: 1024, Handlers: [NumKinds]Handler{Exception: func(*Job) {}}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	data := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		p.Submit(Exception, 0, 0, data)
	}
}
