package memport

import (
	"bytes"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

func TestRingBackPressureAndDrops(t *testing.T) {
	a, b := New("a", 1, 4), New("b", 1, 4)
	Pair(a, b)
	fs := nic.NewFrames(6)
	for i, f := range fs {
		f.SetData([]byte{byte(i), 1, 2, 3})
	}
	n, err := a.Send(0, fs)
	if err != nil || n != 4 {
		t.Fatalf("sent %d (%v), want the ring's 4", n, err)
	}
	if d := b.RxRing(0).Drops(); d != 2 {
		t.Fatalf("drops %d, want 2", d)
	}
	in := nic.NewFrames(8)
	got, _ := b.Recv(0, in)
	if got != 4 {
		t.Fatalf("received %d", got)
	}
	for i, f := range in[:got] {
		if f.Data()[0] != byte(i) || f.Len != 4 || f.Queue != 0 {
			t.Fatalf("frame %d: %x", i, f.Data())
		}
	}
	// Room again after the consumer took them.
	if n, _ := a.Send(0, fs[:2]); n != 2 {
		t.Fatalf("sent %d after drain", n)
	}
	// Buffers are swapped, never shared: every Buf stays BufSize long and
	// the sender's frames now hold other buffers.
	for _, f := range append(fs, in...) {
		if len(f.Buf) != nic.BufSize {
			t.Fatal("buffer size changed")
		}
	}
}

func TestInjectDrainReplaySink(t *testing.T) {
	p := New("p", 2, 8)
	if !p.Inject(1, []byte("hello")) {
		t.Fatal("inject")
	}
	in := nic.NewFrames(2)
	if n, _ := p.Recv(0, in); n != 0 {
		t.Fatal("frame on the wrong queue")
	}
	if n, _ := p.Recv(1, in); n != 1 || string(in[0].Data()) != "hello" || in[0].Queue != 1 {
		t.Fatalf("recv %q", in[0].Data())
	}
	p.Replay(0, [][]byte{[]byte("x"), []byte("yy")})
	fs := nic.NewFrames(5)
	n, _ := p.Recv(0, fs)
	var seq []string
	for _, f := range fs[:n] {
		seq = append(seq, string(f.Data()))
	}
	if n != 5 || seq[0] != "x" || seq[1] != "yy" || seq[4] != "x" {
		t.Fatalf("replay %v", seq)
	}
	out := nic.NewFrames(1)
	out[0].SetData([]byte("abc"))
	p.Send(1, out)
	var drained [][]byte
	p.Drain(1, func(b []byte) { drained = append(drained, bytes.Clone(b)) })
	if len(drained) != 1 || string(drained[0]) != "abc" {
		t.Fatalf("drained %q", drained)
	}
	var seen int
	p.Sink(0, func(q int, f *nic.Frame) { seen += f.Len })
	out[0].SetData([]byte("abc")) // the ring took the last buffer
	p.Send(0, out)
	if pk, by := p.SinkStats(0); pk != 1 || by != 3 || seen != 3 {
		t.Fatalf("sink %d %d %d", pk, by, seen)
	}
}

func TestConn(t *testing.T) {
	a, b := New("a", 1, 8), New("b", 1, 8)
	Pair(a, b)
	ca, cb := NewConn(a, 0, [6]byte{1}), NewConn(b, 0, [6]byte{2})
	if err := ca.WriteFrame([]byte("frame")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := cb.ReadFrame(buf, time.Second)
	if err != nil || string(buf[:n]) != "frame" {
		t.Fatalf("read %q %v", buf[:n], err)
	}
	if _, err := cb.ReadFrame(buf, 5*time.Millisecond); err == nil {
		t.Fatal("no timeout")
	}
}

func TestZeroAlloc(t *testing.T) {
	a, b := New("a", 1, 64), New("b", 1, 64)
	Pair(a, b)
	out, in := nic.NewFrames(32), nic.NewFrames(32)
	for _, f := range out {
		f.SetData(make([]byte, 64))
	}
	if n := testing.AllocsPerRun(100, func() {
		a.Send(0, out)
		b.Recv(0, in)
		for i := range out {
			out[i].Len = 64
		}
	}); n != 0 {
		t.Fatalf("%.1f allocs per batch", n)
	}
}
