package netmap

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
)

// TestIntegrationNetmapVeth drives the real /dev/netmap over a veth pair in
// a namespace of its own (netmap's emulated adapter): frames sent on one end
// arrive on the other, and the host rings deliver to the host stack. It
// skips unless root and the netmap module is loaded (/dev/netmap).
func TestIntegrationNetmapVeth(t *testing.T) {
	nettest.RequireRoot(t)
	if _, err := os.Stat(DeviceName); err != nil {
		t.Skipf("needs the netmap kernel module (%s): %v", DeviceName, err)
	}
	lab := nettest.NewLab(t)
	ns, err := lab.NewNS("nm")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("nma", ns, "nmb", ns, 1); err != nil {
		t.Fatal(err)
	}
	var a, b, host *Port
	err = ns.Do(func() error {
		var err error
		if a, err = Open("nma", Config{}); err != nil {
			return err
		}
		if b, err = Open("netmap:nmb", Config{Queues: 1}); err != nil {
			return err
		}
		host, err = OpenHost("nmb")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	defer host.Close()

	const count = 200
	frame := func(i int) []byte {
		p := pkt(i, 60+i%1400)
		copy(p, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5}) // broadcast, local experimental ethertype
		p[14] = byte(i)
		return p
	}
	out := nic.NewFrames(16)
	in := nic.NewFrames(16)
	sent, got := 0, 0
	deadline := time.Now().Add(10 * time.Second)
	for got < count && time.Now().Before(deadline) {
		if sent < count {
			k := min(len(out), count-sent)
			for i := 0; i < k; i++ {
				out[i].SetData(frame(sent + i))
			}
			n, err := a.Send(0, out[:k])
			if err != nil {
				t.Fatal(err)
			}
			sent += n
		}
		if err := b.Wait(0, 10*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		n, err := b.Recv(0, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range in[:n] {
			if !bytes.Equal(f.Data(), frame(got)) {
				t.Fatalf("frame %d differs", got)
			}
			got++
		}
	}
	if got != count {
		t.Fatalf("received %d of %d frames", got, count)
	}
	// Host ring: a frame sent to the host stack of nmb must be accepted.
	out[0].SetData(frame(0))
	if n, err := host.Send(0, out[:1]); n != 1 || err != nil {
		t.Fatalf("host send: %d %v", n, err)
	}
}
