package netmap

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

// fuzzReader hands out fuzz bytes; it returns zeros when exhausted.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) u8() byte {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *fuzzReader) u32() uint32 {
	var v [4]byte
	for i := range v {
		v[i] = r.u8()
	}
	return binary.LittleEndian.Uint32(v[:])
}

// corruptLayout lets a hostile kernel scribble over the netmap_if and ring
// headers before the port opens. Open must fail cleanly or produce a port
// that stays inside the region.
func corruptLayout(r *fuzzReader, s *Sim) {
	sp := s.ports["wan"]
	switch r.u8() % 8 {
	case 1:
		setRingOfs(s.mem, sp.ifOff, int(r.u8()%4), int64(int32(r.u32())))
	case 2:
		sp.krings[r.u8()%4].hdr.NumSlots = r.u32()
	case 3:
		sp.krings[r.u8()%4].hdr.BufOfs = int64(int32(r.u32()))
	case 4:
		viewIf(s.mem, sp.ifOff).TxRings = r.u32()
	case 5:
		viewIf(s.mem, sp.ifOff).HostRxRings = r.u32()
	case 6:
		sp.krings[r.u8()%4].hdr.BufSize = r.u32()
	case 7:
		sp.krings[r.u8()%4].hdr.Head = r.u32()
	}
}

// FuzzHostileKernel drives a port with arbitrary operations while the
// kernel side writes arbitrary tail, head/cur and slot values after every
// sync. The port may return errors and drop frames, but must never panic,
// never read or write outside the region (Go bounds checks would panic),
// and only return well-formed frames.
func FuzzHostileKernel(f *testing.F) {
	f.Add([]byte{0, 0, 10, 1, 0, 20, 1, 3, 2})
	f.Add([]byte{0, 5, 200, 3, 1, 5, 250, 0, 0, 0, 7, 64, 0, 0, 0, 99, 1, 2, 3})
	f.Add([]byte{1, 2, 0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{3, 1, 0, 0, 0, 0x80})
	f.Add([]byte{0, 0, 60, 0, 61, 5, 3, 0, 0, 0, 1, 0, 0, 0, 0, 4, 0, 1, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{b: data}
		s, err := NewSim(SimConfig{BufSize: 256, ExtraBufs: 2, PendingCap: 64, Ports: []SimPortConfig{
			{Name: "wan", Slots: 8}, {Name: "lan", Slots: 8}}})
		if err != nil {
			t.Fatal(err)
		}
		corruptLayout(r, s)
		wan, err := s.Open("wan", 1)
		if err != nil {
			return
		}
		lan, err := s.Open("lan", 1)
		if err != nil {
			t.Fatalf("untouched port failed to open: %v", err)
		}
		host, err := s.OpenHost("wan")
		if err != nil {
			host = nil
		}
		var hostile struct {
			on              bool
			tail, idx, slot uint32
			head            uint32
			len, flags      uint16
		}
		s.afterSync = func(k *kring) {
			if !hostile.on {
				return
			}
			k.hdr.Tail = hostile.tail
			if hostile.head != 0 {
				k.hdr.Head, k.hdr.Cur = hostile.head-1, hostile.head-1
			}
			sl := &k.slots[hostile.slot%k.n]
			sl.BufIdx, sl.Len, sl.Flags = hostile.idx, hostile.len, hostile.flags
		}
		frames := nic.NewFrames(4)
		check := func(n int, err error, max int) {
			if n < 0 || n > max {
				t.Fatalf("returned %d of %d", n, max)
			}
		}
		checkFrames := func(n int) {
			for _, f := range frames[:n] {
				if f.Off != nic.Headroom || f.Len < 0 || f.Len > nic.MaxData || len(f.Buf) != nic.BufSize {
					t.Fatalf("bad frame off %d len %d buf %d", f.Off, f.Len, len(f.Buf))
				}
			}
		}
		ports := []*Port{wan, lan, host}
		for steps := 0; len(r.b) > 0 && steps < 200; steps++ {
			p := ports[int(r.u8())%len(ports)]
			if p == nil {
				p = wan
			}
			switch op := r.u8() % 8; op {
			case 0:
				s.Inject("wan", 0, make([]byte, int(r.u8())*2))
			case 1:
				s.InjectHost("wan", make([]byte, int(r.u8())))
			case 2:
				n, err := p.Recv(0, frames)
				check(n, err, len(frames))
				checkFrames(n)
			case 3:
				for _, f := range frames {
					f.Off, f.Len = nic.Headroom, int(r.u8())*8
				}
				n, err := p.Send(0, frames)
				check(n, err, len(frames))
			case 4:
				dst := ports[int(r.u8())%len(ports)]
				if dst == nil {
					dst = lan
				}
				max := int(r.u8() % 16)
				n, err := Forward(p, 0, dst, 0, max, func(buf []byte, n int) int { return n + int(r.u8()) - 128 })
				check(n, err, max)
			case 5:
				hostile.on = true
				hostile.tail = r.u32() % 16
				hostile.idx = r.u32() % 1000
				hostile.slot = uint32(r.u8())
				hostile.head = uint32(r.u8() % 12)
				hostile.len = uint16(r.u32())
				hostile.flags = uint16(r.u8())
			case 6:
				hostile.on = false
			case 7:
				_ = p.Wait(0, time.Microsecond)
				_ = p.Flush(0)
			}
		}
	})
}
