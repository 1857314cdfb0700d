package dataplane

import "github.com/pppfwd/pppfwd/nic"

// pipe joins two threads: full frames travel on Data, and the consumer
// gives back as many free frames on Ret, so neither side's pool drains
// and no frame is ever allocated or shared.
type pipe struct {
	Data *spscRing
	Ret  *spscRing
	// wake is the consumer's: push wakes it (frames given back on Ret
	// wake nobody).
	wake *waker
}

// push puts fs on Data, wakes the consumer if any went, and returns how
// many did (producer only).
func (l *pipe) push(fs []*nic.Frame) int {
	k := l.Data.Push(fs)
	if k > 0 {
		l.wake.wake()
	}
	return k
}

// newPipe returns a pipe whose data ring holds size frames, consumed by
// the thread wk wakes.
func newPipe(size int, wk *waker) *pipe {
	return &pipe{Data: newSPSCRing(size), Ret: newSPSCRing(2 * size), wake: wk}
}

// giveBack returns up to owed free frames from pool on l.Ret and returns
// how many are still owed.
func giveBack(l *pipe, pool *framePool, owed int, scratch []*nic.Frame) int {
	for owed > 0 {
		n := owed
		if n > len(scratch) {
			n = len(scratch)
		}
		n = pool.GetN(scratch[:n])
		if n == 0 {
			return owed
		}
		k := l.Ret.Push(scratch[:n])
		pool.PutN(scratch[k:n])
		owed -= k
		if k < n {
			return owed
		}
	}
	return owed
}
