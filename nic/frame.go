package nic

import "errors"

const (
	// BufSize is the size of every frame buffer. It never changes after
	// allocation, so buffers can be recycled between ports and workers.
	BufSize = 2048
	// Headroom is reserved in front of received data so that PPPoE (8 B),
	// VLAN (4 B) and Ethernet (14 B) headers can be pushed in place.
	Headroom = 128
	// MaxData is the largest frame a Frame can carry after Headroom.
	MaxData = BufSize - Headroom
)

// ErrNotSupported is returned (wrapped) by backends unavailable on this GOOS.
var ErrNotSupported = errors.New("not supported on this platform")

// Frame is one packet buffer. Data lives at Buf[Off:Off+Len]. Buf has length
// BufSize and is owned by whoever holds the *Frame; a frame is never shared.
type Frame struct {
	Buf []byte
	Off int
	Len int
	// Queue is the queue the frame was received on (set by Recv).
	Queue uint16
	// Rx is what the receiving port knows of the frame beyond its bytes
	// (RxCsumPartial, RxCsumUnknown). Every Recv sets it on each frame
	// it fills; Reset clears it.
	Rx RxInfo
	// The pipeline's fields: ports neither read nor preserve them, Reset
	// clears them. L3 is the offset from Off of the network header a
	// classifier found (0: not parsed), valid until the frame's Off moves;
	// Kind says where a frame on an inter-thread link goes or came from,
	// Flags how it got there (both defined by the pipeline).
	L3    uint16
	Kind  uint8
	Flags uint8
	// Frames move between cores: a frame takes a cache line of its own
	// so neighbours in one allocation never share one.
	_ [64 - 48]byte
}

// RxInfo is a port's receive metadata of one frame: a set of bits.
type RxInfo uint8

const (
	// RxCsumPartial: the frame's TCP or UDP checksum is unfinished. A
	// sender that leaves checksums to an offload (Linux CHECKSUM_PARTIAL:
	// a local stack or a VM behind a veth or tap whose tx checksum
	// offload is on) stores only the sum of the pseudo-header in the
	// checksum field; the offload would sum the segment from the
	// transport header on, that field included, and store the
	// complement. A port that forwards the frame must do that first: the
	// frame does not verify as it is. AF_PACKET reports it per frame
	// (TP_STATUS_CSUMNOTREADY).
	RxCsumPartial RxInfo = 1 << iota
	// RxCsumUnknown: the port has no checksum state to report, and its
	// frames may come from such a sender (AF_XDP in copy mode: on a
	// veth, a tap, in generic XDP). A TCP or UDP checksum field holding exactly the sum of the
	// pseudo-header in a segment that does not verify is an unfinished
	// one.
	RxCsumUnknown
)

// NewFrame allocates a frame with a BufSize buffer and Headroom offset.
func NewFrame() *Frame {
	return &Frame{Buf: make([]byte, BufSize), Off: Headroom}
}

// NewFrames allocates n frames backed by one contiguous allocation.
func NewFrames(n int) []*Frame {
	mem := make([]byte, n*BufSize)
	fs := make([]Frame, n)
	out := make([]*Frame, n)
	for i := range fs {
		fs[i] = Frame{Buf: mem[i*BufSize : (i+1)*BufSize : (i+1)*BufSize], Off: Headroom}
		out[i] = &fs[i]
	}
	return out
}

// Data returns the frame's bytes. The slice aliases Buf and stays valid until
// the frame is reset, pushed, pulled or handed to another owner.
func (f *Frame) Data() []byte { return f.Buf[f.Off : f.Off+f.Len] }

// InBounds reports whether Off and Len describe bytes inside Buf (a
// backend checks a frame handed to Send before it reads it).
func (f *Frame) InBounds() bool { return f.Off >= 0 && f.Len >= 0 && f.Off+f.Len <= len(f.Buf) }

// Reset empties the frame and restores the default headroom.
func (f *Frame) Reset() { f.Off, f.Len, f.L3, f.Kind, f.Flags, f.Rx = Headroom, 0, 0, 0, 0, 0 }

// SetData copies b into the frame after the default headroom. It returns
// false (and leaves the frame empty) if b does not fit.
func (f *Frame) SetData(b []byte) bool {
	f.Off = Headroom
	if len(b) > MaxData {
		f.Len = 0
		return false
	}
	f.Len = copy(f.Buf[Headroom:], b)
	return true
}

// Push grows the frame by n bytes at the front and returns the new front
// n bytes. It returns nil if the headroom is too small.
func (f *Frame) Push(n int) []byte {
	if n < 0 || n > f.Off {
		return nil
	}
	f.Off -= n
	f.Len += n
	return f.Buf[f.Off : f.Off+n]
}

// Pull removes n bytes from the front. It returns false if the frame is shorter.
func (f *Frame) Pull(n int) bool {
	if n < 0 || n > f.Len {
		return false
	}
	f.Off += n
	f.Len -= n
	return true
}

// Truncate shortens the frame to n bytes (n <= Len).
func (f *Frame) Truncate(n int) {
	if n >= 0 && n < f.Len {
		f.Len = n
	}
}

// Extend grows the frame by n bytes at the tail and returns them, or nil if
// the buffer is too small.
func (f *Frame) Extend(n int) []byte {
	if n < 0 || f.Off+f.Len+n > len(f.Buf) {
		return nil
	}
	f.Len += n
	return f.Buf[f.Off+f.Len-n : f.Off+f.Len]
}
