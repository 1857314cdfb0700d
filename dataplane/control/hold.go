package control

import (
	"sync"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

// Frames for a LAN host whose MAC is not known yet are held while ARP
// resolves it and sent when it answers, as Linux (unres_qlen) and FreeBSD
// (net.link.ether.inet.maxhold) do, so the first packets of a connection
// to a quiet LAN host (a port-forwarded SYN, a ping) are not lost. The
// queue is bounded: HoldPerHost frames per address (the oldest goes
// first), HoldHosts addresses, HoldTimeout at most.
const (
	HoldPerHost = 4
	HoldHosts   = 128
	HoldTimeout = 3 * time.Second
)

// holdQueue is the control plane's queue of frames awaiting resolution.
// Buffers are made on first use and reused, at most HoldPerHost*HoldHosts.
// K is the address type: uint32 for IPv4 (ARP), hdr.Addr6 for IPv6 (ND).
type holdQueue[K comparable] struct {
	mu   sync.Mutex
	m    map[K]*holdEntry
	free [][]byte
	// held: frames offered; dropped: frames given up (refused with
	// HoldHosts addresses waiting, pushed out by newer ones, timed out,
	// or not sent). held = sent + dropped + waiting.
	held, dropped uint64
}

type holdEntry struct {
	since  time.Time
	frames [][]byte
}

// add queues a copy of frame for ip. It returns false if the frame was
// dropped (too many addresses waiting already).
func (h *holdQueue[K]) add(ip K, frame []byte, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[K]*holdEntry{}
	}
	h.expireLocked(now)
	h.held++
	e := h.m[ip]
	if e == nil {
		if len(h.m) >= HoldHosts {
			h.dropped++
			return false
		}
		e = &holdEntry{since: now}
		h.m[ip] = e
	}
	if len(e.frames) == HoldPerHost {
		h.dropped++
		h.recycle(e.frames[:1])
		copy(e.frames, e.frames[1:])
		e.frames = e.frames[:HoldPerHost-1]
	}
	var buf []byte
	if n := len(h.free); n > 0 {
		buf, h.free = h.free[n-1], h.free[:n-1]
	} else {
		buf = make([]byte, 0, nic.BufSize)
	}
	e.frames = append(e.frames, append(buf[:0], frame...))
	return true
}

// waiting reports whether frames for ip are held already.
func (h *holdQueue[K]) waiting(ip K) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.m[ip]
	return ok
}

// expire gives up the frames of addresses that waited longer than
// HoldTimeout.
func (h *holdQueue[K]) expire(now time.Time) {
	h.mu.Lock()
	h.expireLocked(now)
	h.mu.Unlock()
}

func (h *holdQueue[K]) expireLocked(now time.Time) {
	for a, e := range h.m {
		if now.Sub(e.since) > HoldTimeout {
			h.dropped += uint64(len(e.frames))
			h.recycle(e.frames)
			delete(h.m, a)
		}
	}
}

// take removes and returns ip's held frames, oldest first, unless they
// waited longer than HoldTimeout (then they are given up). Give them back
// with giveBack once sent.
func (h *holdQueue[K]) take(ip K, now time.Time) [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.m[ip]
	if e == nil {
		return nil
	}
	delete(h.m, ip)
	if now.Sub(e.since) > HoldTimeout {
		h.dropped += uint64(len(e.frames))
		h.recycle(e.frames)
		return nil
	}
	return e.frames
}

// notSent counts n taken frames that could not be sent.
func (h *holdQueue[K]) notSent(n int) {
	h.mu.Lock()
	h.dropped += uint64(n)
	h.mu.Unlock()
}

// giveBack returns buffers from take.
func (h *holdQueue[K]) giveBack(frames [][]byte) {
	h.mu.Lock()
	h.recycle(frames)
	h.mu.Unlock()
}

func (h *holdQueue[K]) recycle(frames [][]byte) {
	for _, b := range frames {
		if len(h.free) < HoldPerHost*HoldHosts {
			h.free = append(h.free, b[:0])
		}
	}
}

// counts returns frames held and dropped so far, and how many wait now.
func (h *holdQueue[K]) counts() (held, dropped uint64, waiting int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.m {
		waiting += len(e.frames)
	}
	return h.held, h.dropped, waiting
}
