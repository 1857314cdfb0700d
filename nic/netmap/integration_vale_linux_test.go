//go:build linux

package netmap_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/netmap"
)

// VALE ports (separate allocators): switch traffic, and Forward copy path
// between regions into a veth.
func TestIntegrationNetmapValeAndCopyForward(t *testing.T) {
	lab := need(t)
	ns, err := lab.NewNS("va")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("vea", ns, "veb", ns, 1); err != nil {
		t.Fatal(err)
	}
	var v1, v2, a, b *netmap.Port
	if err := ns.Do(func() (err error) {
		if v1, err = netmap.Open("vale0:p1", netmap.Config{}); err != nil {
			return err
		}
		if v2, err = netmap.Open("netmap:vale0:p2", netmap.Config{}); err != nil {
			return err
		}
		if a, err = netmap.Open("vea", netmap.Config{}); err != nil {
			return err
		}
		b, err = netmap.Open("veb", netmap.Config{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	defer v2.Close()
	defer a.Close()
	defer b.Close()
	t.Logf("memids v1=%d v2=%d a=%d b=%d queues v1=%d", v1.MemID(0), v2.MemID(0), a.MemID(0), b.MemID(0), v1.Queues())
	const count = 500
	out, in := nic.NewFrames(16), nic.NewFrames(64)
	sent, fwd, got := 0, 0, 0
	deadline := time.Now().Add(20 * time.Second)
	for got < count && time.Now().Before(deadline) {
		if sent < count && sent-got < 64 {
			k := min(16, count-sent)
			for i := 0; i < k; i++ {
				out[i].SetData(frame(sent+i, 60+(sent+i)%1400))
			}
			n, err := v1.Send(0, out[:k])
			if err != nil {
				t.Fatal(err)
			}
			sent += n
		}
		n, err := netmap.Forward(v2, 0, a, 0, 64, nil)
		if err != nil {
			t.Fatal(err)
		}
		fwd += n
		m, err := b.Recv(0, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range in[:m] {
			if !bytes.Equal(f.Data(), frame(got, 60+got%1400)) {
				t.Fatalf("frame %d differs", got)
			}
			got++
		}
		if n == 0 && m == 0 {
			_ = v2.Wait(0, time.Millisecond)
		}
	}
	t.Logf("sent %d forwarded %d received %d", sent, fwd, got)
	if got != count {
		t.Errorf("received %d of %d", got, count)
	}
	clean(t, v1, v2, a, b)
}

// Wait blocks on an idle ring and wakes when a frame arrives.
func TestIntegrationNetmapWait(t *testing.T) {
	lab := need(t)
	ns, err := lab.NewNS("wt")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("wta", ns, "wtb", ns, 1); err != nil {
		t.Fatal(err)
	}
	var a, b *netmap.Port
	if err := ns.Do(func() (err error) {
		if a, err = netmap.Open("wta", netmap.Config{}); err != nil {
			return err
		}
		b, err = netmap.Open("wtb", netmap.Config{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	t0 := time.Now()
	if err := b.Wait(0, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	idle := time.Since(t0)
	out := nic.NewFrames(1)
	out[0].SetData(frame(1, 100))
	done := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		a.Send(0, out)
		close(done)
	}()
	t0 = time.Now()
	if err := b.Wait(0, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	woke := time.Since(t0)
	<-done
	in := nic.NewFrames(4)
	n, err := b.Recv(0, in)
	t.Logf("idle wait %v, wake after %v, recv %d %v", idle, woke, n, err)
	if idle < 100*time.Millisecond || woke > time.Second || n != 1 {
		t.Errorf("idle %v woke %v n %d", idle, woke, n)
	}
}
