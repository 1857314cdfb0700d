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
	ns := vethNS(t, need(t), "va", 1, [2]string{"vea", "veb"})
	ps := openIn(t, ns, "vale0:p1", "netmap:vale0:p2", "vea", "veb")
	v1, v2, a, b := ps[0], ps[1], ps[2], ps[3]
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
	ns := vethNS(t, need(t), "wt", 1, [2]string{"wta", "wtb"})
	ps := openIn(t, ns, "wta", "wtb")
	a, b := ps[0], ps[1]
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
