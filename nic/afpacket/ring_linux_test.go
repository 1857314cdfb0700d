//go:build linux

package afpacket

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/nic"
)

// These tests drive Recv over a synthetic RX ring in ordinary memory laid
// out as the kernel lays out TPACKET_V3 blocks; no socket, no root.

const testBlock = 4096

type pkt struct {
	data   []byte
	status uint32
	tci    uint16
	tpid   uint16
}

// buildBlock writes pkts into block blk of rx as the kernel would and
// marks the block TP_STATUS_USER.
func buildBlock(rx []byte, blk int, pkts []pkt) {
	b := blk * testBlock
	clear(rx[b : b+testBlock])
	off := 48 // after the block descriptor
	ne.PutUint32(rx[b+bdNumPkts:], uint32(len(pkts)))
	ne.PutUint32(rx[b+bdFirstPkt:], uint32(off))
	for i, p := range pkts {
		h := b + off
		mac := 80 // hdrLen + sockaddr_ll, aligned
		ne.PutUint32(rx[h+hSnaplen:], uint32(len(p.data)))
		ne.PutUint32(rx[h+hLen:], uint32(len(p.data)))
		ne.PutUint32(rx[h+hStatus:], p.status|unix.TP_STATUS_USER)
		ne.PutUint16(rx[h+hMac:], uint16(mac))
		ne.PutUint32(rx[h+hVlanTCI:], uint32(p.tci))
		ne.PutUint16(rx[h+hVlanTPID:], p.tpid)
		copy(rx[h+mac:], p.data)
		next := (mac + len(p.data) + 15) &^ 15
		if i < len(pkts)-1 {
			ne.PutUint32(rx[h+hNextOffset:], uint32(next))
		}
		off += next
	}
	storeStatus(rx, b+bdStatus, unix.TP_STATUS_USER)
}

func synthPort(blocks int) (*Port, []byte) {
	rx := make([]byte, blocks*testBlock)
	return &Port{name: "synth", q: []*queue{{fd: -1, rx: rx, bsz: testBlock, nblk: blocks}}}, rx
}

func TestRecvSyntheticRing(t *testing.T) {
	p, rx := synthPort(3)
	f1 := bytes.Repeat([]byte{0xaa}, 60)
	f2 := bytes.Repeat([]byte{0xbb}, 1514)
	f3 := append(bytes.Repeat([]byte{0xcc}, 12), 0x08, 0x00, 1, 2, 3)
	buildBlock(rx, 0, []pkt{{data: f1}, {data: f2}})
	buildBlock(rx, 1, []pkt{
		{data: f3, status: unix.TP_STATUS_VLAN_VALID, tci: 0x2005},
		{data: f3, status: unix.TP_STATUS_VLAN_VALID | unix.TP_STATUS_VLAN_TPID_VALID, tci: 7, tpid: 0x88a8},
		{data: make([]byte, nic.MaxData+1)}, // oversize: dropped
		{data: f1, status: unix.TP_STATUS_CSUMNOTREADY},
	})
	frames := nic.NewFrames(8)
	// A batch of one stops mid-block; the next call resumes there.
	if n, _ := p.Recv(0, frames[:1]); n != 1 || !bytes.Equal(frames[0].Data(), f1) {
		t.Fatalf("first Recv: n=%d data %x", n, frames[0].Data())
	}
	if st := loadStatus(rx, bdStatus); st != unix.TP_STATUS_USER {
		t.Fatalf("block 0 released with a frame left")
	}
	for _, f := range frames {
		f.Rx = nic.RxCsumPartial | nic.RxCsumUnknown // stale: Recv sets it
	}
	n, _ := p.Recv(0, frames)
	if n != 4 {
		t.Fatalf("Recv = %d frames, want 4", n)
	}
	vlan := func(tpid, tci uint16) []byte {
		b := append([]byte(nil), f3[:12]...)
		b = binary.BigEndian.AppendUint16(b, tpid)
		b = binary.BigEndian.AppendUint16(b, tci)
		return append(b, f3[12:]...)
	}
	want := [][]byte{f2, vlan(0x8100, 0x2005), vlan(0x88a8, 7), f1}
	for i, w := range want {
		if !bytes.Equal(frames[i].Data(), w) || frames[i].Off != nic.Headroom {
			t.Errorf("frame %d = %x, want %x", i, frames[i].Data(), w)
		}
		// Only the last came with TP_STATUS_CSUMNOTREADY.
		if want := map[bool]nic.RxInfo{true: nic.RxCsumPartial}[i == 3]; frames[i].Rx != want {
			t.Errorf("frame %d: Rx %b, want %b", i, frames[i].Rx, want)
		}
	}
	for blk := 0; blk < 2; blk++ {
		if st := loadStatus(rx, blk*testBlock+bdStatus); st != unix.TP_STATUS_KERNEL {
			t.Errorf("block %d not handed back (status %#x)", blk, st)
		}
	}
	if n, _ := p.Recv(0, frames); n != 0 {
		t.Fatalf("empty ring gave %d frames", n)
	}
	qs := p.QueueStats(0)
	if qs.RxPackets != 5 || qs.RxOversize != 1 || qs.RxCsumPartial != 1 {
		t.Fatalf("stats %+v", qs)
	}
	// The cursor wraps: block 2, then block 0 again.
	buildBlock(rx, 2, []pkt{{data: f1}})
	buildBlock(rx, 0, []pkt{{data: f2}})
	if n, _ := p.Recv(0, frames); n != 2 || !bytes.Equal(frames[1].Data(), f2) {
		t.Fatalf("after wrap: n=%d", n)
	}
}

func TestRecvSyntheticAllocs(t *testing.T) {
	p, rx := synthPort(2)
	frames := nic.NewFrames(32)
	pk := make([]pkt, 20)
	for i := range pk {
		pk[i].data = make([]byte, 64)
	}
	a := testing.AllocsPerRun(100, func() {
		buildBlock(rx, p.q[0].blk, pk)
		if n, _ := p.Recv(0, frames); n != len(pk) {
			panic("short Recv")
		}
	})
	if a != 0 {
		t.Fatalf("Recv allocates %v per block", a)
	}
}

// FuzzRecvBlock feeds arbitrary block contents to Recv: it must never
// panic, never hand out a frame outside [14, nic.MaxData] bytes, and
// always give the block back.
func FuzzRecvBlock(f *testing.F) {
	rx := make([]byte, testBlock)
	buildBlock(rx, 0, []pkt{{data: make([]byte, 60)}, {data: make([]byte, 100), status: unix.TP_STATUS_VLAN_VALID}})
	f.Add(rx[:512])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, rx := synthPort(1)
		copy(rx, data)
		storeStatus(rx, bdStatus, unix.TP_STATUS_USER)
		frames := nic.NewFrames(8)
		for i := 0; i < 10000; i++ {
			n, err := p.Recv(0, frames)
			if err != nil {
				t.Fatal(err)
			}
			for _, fr := range frames[:n] {
				if fr.Len < 14 || fr.Len > nic.MaxData || fr.Off != nic.Headroom {
					t.Fatalf("bad frame off %d len %d", fr.Off, fr.Len)
				}
			}
			if n == 0 {
				break
			}
		}
		if st := loadStatus(rx, bdStatus); st != unix.TP_STATUS_KERNEL {
			t.Fatalf("block not handed back: status %#x", st)
		}
	})
}

// buildSlot writes p into TPACKET_V2 slot i of rx as the kernel would
// and marks it TP_STATUS_USER.
func buildSlot(rx []byte, i int, p pkt) {
	h := i * frameSize
	clear(rx[h : h+frameSize])
	mac := 66 // TPACKET_ALIGN(TPACKET2_HDRLEN) + 16 - 14, as the kernel places it
	ne.PutUint32(rx[h+h2Len:], uint32(len(p.data)))
	ne.PutUint32(rx[h+h2Snaplen:], uint32(min(len(p.data), frameSize-mac)))
	ne.PutUint16(rx[h+h2Mac:], uint16(mac))
	ne.PutUint16(rx[h+h2VlanTCI:], p.tci)
	ne.PutUint16(rx[h+h2VlanTPID:], p.tpid)
	copy(rx[h+mac:h+frameSize], p.data)
	storeStatus(rx, h+h2Status, p.status|unix.TP_STATUS_USER)
}

// TestRecvSyntheticFrameRing: Recv over a TPACKET_V2 ring takes slots in
// order, puts stripped VLAN tags back, drops (and counts) a truncated
// frame, gives every slot it read back to the kernel, wraps around, and
// stops at the first slot the kernel still owns.
func TestRecvSyntheticFrameRing(t *testing.T) {
	const slots = 4
	rx := make([]byte, slots*frameSize)
	p := &Port{name: "synth", q: []*queue{{fd: -1, rx: rx, v2: true, nslot: slots}}}
	f1 := bytes.Repeat([]byte{0xaa}, 60)
	f3 := append(bytes.Repeat([]byte{0xcc}, 12), 0x08, 0x00, 1, 2, 3)
	buildSlot(rx, 0, pkt{data: f1})
	buildSlot(rx, 1, pkt{data: f3, status: unix.TP_STATUS_VLAN_VALID | unix.TP_STATUS_VLAN_TPID_VALID, tci: 7, tpid: 0x88a8})
	buildSlot(rx, 2, pkt{data: make([]byte, 2000)}) // longer than the slot holds: truncated, dropped
	frames := nic.NewFrames(8)
	if !p.RxReady(0) {
		t.Fatal("RxReady false with a frame in the current slot")
	}
	n, err := p.Recv(0, frames)
	if err != nil || n != 2 {
		t.Fatalf("Recv: %d frames, %v; want 2", n, err)
	}
	if !bytes.Equal(frames[0].Data(), f1) {
		t.Fatalf("frame 0: %x", frames[0].Data())
	}
	want := append(append(append([]byte{}, f3[:12]...), 0x88, 0xa8, 0, 7), f3[12:]...)
	if !bytes.Equal(frames[1].Data(), want) {
		t.Fatalf("frame 1: %x, want %x", frames[1].Data(), want)
	}
	for i := 0; i < 3; i++ {
		if st := loadStatus(rx, i*frameSize+h2Status); st != unix.TP_STATUS_KERNEL {
			t.Fatalf("slot %d status %#x after Recv, want kernel's", i, st)
		}
	}
	if p.RxReady(0) {
		t.Fatal("RxReady true on a kernel-owned slot")
	}
	if s := p.Stats(); s.RxPackets != 2 {
		t.Fatalf("RxPackets %d", s.RxPackets)
	}
	if got := p.q[0].oversize.Load(); got != 1 {
		t.Fatalf("oversize %d, want 1", got)
	}
	// Slots 3 and 0 (wrapped around) come next.
	buildSlot(rx, 3, pkt{data: f1})
	buildSlot(rx, 0, pkt{data: f3})
	if n, _ := p.Recv(0, frames[:1]); n != 1 || !bytes.Equal(frames[0].Data(), f1) {
		t.Fatalf("slot 3: n=%d %x", n, frames[0].Data())
	}
	if n, _ := p.Recv(0, frames); n != 1 || !bytes.Equal(frames[0].Data(), f3) {
		t.Fatalf("slot 0 after the wrap: n=%d %x", n, frames[0].Data())
	}
	if a := testing.AllocsPerRun(100, func() { buildSlot(rx, 1, pkt{data: f1}); p.Recv(0, frames) }); a != 0 {
		t.Fatalf("Recv allocates %.1f", a)
	}
}
