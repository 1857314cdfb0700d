//go:build linux

package afpacket

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/nic"
)

// RxAuto's switching rule (recvAuto).
const (
	// fullBatches: Recv calls in a row that fill their batch from the
	// frame ring before the queue switches to blocks.
	fullBatches = 8
	// sparseFrames: a block the timer retires with fewer frames than this
	// switches the queue back to frames.
	sparseFrames = 32
	// maxHold bounds the Recv calls that leave the frame ring alone while
	// the block ring still has frames after a switch to frames: the
	// block timer hands those over within BlockTimeout, so this is only a
	// guard against a block that never comes.
	maxHold = 1 << 16
)

// recvAuto is Recv over an RxAuto queue. Each frame is in one ring, and
// the rings are read so that a flow's frames keep their order across a
// switch: after a switch to blocks, the frame ring (which the kernel no
// longer fills) is drained before the block ring; after a switch to
// frames, the frame ring waits until the block ring's last block, which
// holds the older frames, is handed over.
func (q *queue) recvAuto(t *rxTally, qi int, frames []*nic.Frame) {
	b := q.blocks
	if q.hi {
		q.recvFrames(t, qi, frames)
		b.sparse = false
		b.recvBlocks(t, qi, frames)
		if b.sparse {
			q.switchRing(false)
		}
		return
	}
	if b.pendingBlocks() {
		b.recvBlocks(t, qi, frames)
		if b.pendingBlocks() && q.hold < maxHold {
			q.hold++
			return
		}
	}
	q.hold = 0
	start := t.n
	q.recvFrames(t, qi, frames)
	if t.n == len(frames) && t.n > start {
		if q.full++; q.full >= fullBatches {
			q.switchRing(true)
		}
	} else {
		q.full = 0
	}
}

// Drowse implements nic.Drowsy: a queue on blocks whose rings hold
// nothing, not even a frame counted into the open block, switches back to
// frames before its thread sleeps. The kernel's block timer closes only a
// block that holds frames, so a queue left on blocks over a pause would
// hold the first frame after it for the block timeout; with nothing in
// the block ring no frame's order is at stake (a frame racing into the
// block ring as the switch lands is read before newer ones, recvAuto).
func (p *Port) Drowse(qi int) {
	if qi < 0 || qi >= len(p.q) {
		return
	}
	q := p.q[qi]
	if q.blocks == nil || !q.hi || q.blocks.pendingBlocks() || q.rxReady() {
		return
	}
	q.switchRing(false)
}

// switchRing tells the fanout program to fill the block ring (hi) or the
// frame ring of q.
func (q *queue) switchRing(hi bool) {
	q.hi, q.full = hi, 0
	q.switches.Add(1)
	if err := q.setMode(hi); err != nil {
		// The kernel keeps filling the ring it filled; recvAuto reads
		// both, so nothing is lost.
		q.modeErrs.Add(1)
	}
}

// pendingBlocks reports whether the block ring holds frames: a block
// handed to user space, or frames counted into the kernel's open block
// (releaseBlock zeroes the count of every block it hands back).
func (q *queue) pendingBlocks() bool {
	if q.left > 0 {
		return true
	}
	b := q.blk * q.bsz
	return loadStatus(q.rx, b+bdStatus)&unix.TP_STATUS_USER != 0 || loadStatus(q.rx, b+bdNumPkts) != 0
}

// rxModeSlot is the program's stack slot for the switch map's key.
const rxModeSlot = -48

// newAutoProgram loads RxAuto's fanout program: the queue steer (the
// owner or WAN program's instructions, validated; queue 0 when nil)
// returns, plus queues when mode[queue] is non-zero: the index of that
// queue's block ring in the group.
func newAutoProgram(steer asm.Instructions, queues int, mode *ebpf.Map) (*ebpf.Program, error) {
	var in asm.Instructions
	if steer != nil {
		// Every exit of the steering program goes to "rxmode" instead.
		for _, ins := range steer {
			if ins.OpCode.JumpOp() == asm.Exit {
				// The jump keeps the exit's symbol (a label may name
				// it) and gets its own reference.
				j := asm.Ja.Label("rxmode")
				if sym := ins.Symbol(); sym != "" {
					j = j.WithSymbol(sym)
				}
				ins = j
			}
			in = append(in, ins)
		}
	} else {
		in = append(in, asm.Mov.Imm(asm.R0, 0))
	}
	in = append(in,
		// R7 = queue; key = queue; R0 = lookup(mode, &key).
		asm.Mov.Reg(asm.R7, asm.R0).WithSymbol("rxmode"),
		asm.StoreMem(asm.R10, rxModeSlot, asm.R7, asm.Word),
		asm.LoadMapPtr(asm.R1, mode.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, rxModeSlot),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "frames"),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.Word),
		asm.JEq.Imm(asm.R0, 0, "frames"),
		asm.Mov.Reg(asm.R0, asm.R7),
		asm.Add.Imm(asm.R0, int32(queues)),
		asm.Return(),
		asm.Mov.Reg(asm.R0, asm.R7).WithSymbol("frames"),
		asm.Return(),
	)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "pppfwd_rxauto",
		Type:         ebpf.SocketFilter,
		License:      "Dual MIT/GPL",
		Instructions: in,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: load RX ring program: %w", errOwnerFanout, err)
	}
	return p, nil
}
