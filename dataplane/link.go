package dataplane

import "github.com/pppfwd/pppfwd/nic"

// Link joins two threads: full frames travel on Data, and the consumer
// gives back as many free frames on Ret, so neither side's pool drains
// and no frame is ever allocated or shared.
type Link struct {
	Data *Ring
	Ret  *Ring
}

// NewLink returns a link whose data ring holds size frames.
func NewLink(size int) *Link { return &Link{Data: NewRing(size), Ret: NewRing(2 * size)} }

// giveBack returns up to owed free frames from pool on l.Ret and returns
// how many are still owed.
func giveBack(l *Link, pool *Pool, owed int, scratch []*nic.Frame) int {
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
