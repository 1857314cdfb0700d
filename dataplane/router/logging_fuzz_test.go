package router

import "testing"

// FuzzDescribeFrame: the protocol trace renders any frame the wire
// brings without panicking, and never more of it than a line.
func FuzzDescribeFrame(f *testing.F) {
	// PADO with an AC-Name; LCP ConfReq <mru 1492> <magic>; PAP AuthReq.
	f.Add([]byte("\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\x63\x11\x07\x00\x00\x00\x06\x01\x02\x00\x02ac"))
	f.Add([]byte("\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\x64\x11\x00\x00\x01\x00\x10\xc0\x21\x01\x01\x00\x0e\x01\x04\x05\xd4\x05\x06\x1a\x2b\x3c\x4d"))
	f.Add([]byte("\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\x64\x11\x00\x00\x01\x00\x0e\xc0\x23\x01\x01\x00\x0c\x01u\x06secret"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s := DescribeFrame(b); len(s) > 64+8*len(b) {
			t.Fatalf("%d bytes described in %d", len(b), len(s))
		}
	})
}

// FuzzDescribeDHCP6: any DHCPv6 payload renders without panicking.
func FuzzDescribeDHCP6(f *testing.F) {
	f.Add([]byte{7, 0x1a, 0x2b, 0x3c})
	f.Add([]byte{7, 0, 0, 1, 0, 25, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) { _ = DescribeDHCP6(b) })
}
