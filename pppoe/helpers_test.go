package pppoe

import "github.com/pppfwd/pppfwd/nic"

func newTestFrame(b []byte) *nic.Frame {
	f := nic.NewFrame()
	f.SetData(b)
	return f
}
