package dataplane

import (
	"reflect"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/nic/memport"
)

// TestStartedEngineCountersSettle: a running engine's published counters
// reach the exact figures once it is quiet, for a burst that arrives while
// the worker is busy and for one that arrives while it sleeps.
func TestStartedEngineCountersSettle(t *testing.T) {
	lan := memport.New("lan", 1, 1024)
	wan := memport.New("wan", 1, 64)
	e := memEngine(t, lan, wan)
	e.Start()
	defer e.Stop()
	frame := make([]byte, 60)
	frame[0], frame[5] = 0x02, 0x77 // unicast to another MAC: dropped
	frame[12], frame[13] = 0x08, 0x00
	want := uint64(0)
	for _, burst := range []int{700, 3} {
		time.Sleep(20 * time.Millisecond) // the worker is asleep
		for i := 0; i < burst; i++ {
			if !lan.Inject(0, frame) {
				t.Fatalf("inject %d of %d failed", i, burst)
			}
		}
		want += uint64(burst)
		var c Counters
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if c = e.Totals(); c.RxLAN == want && c.Drops[DropNotOurMAC] == want {
				break
			}
		}
		if c.RxLAN != want || c.Drops[DropNotOurMAC] != want {
			t.Fatalf("after %d frames the published counters say RxLAN %d, not-our-MAC drops %d", want, c.RxLAN, c.Drops[DropNotOurMAC])
		}
	}
}

// TestCountersPublishRoundTrip: every counter field survives publish and
// load, and Add sums every one (a field added to Counters but not to the
// published words, or to Add, fails here).
func TestCountersPublishRoundTrip(t *testing.T) {
	var c Counters
	v := reflect.ValueOf(&c).Elem()
	n := uint64(1)
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.Uint64:
			f.SetUint(n)
			n++
		case reflect.Array:
			for j := 0; j < f.Len(); j++ {
				f.Index(j).SetUint(n)
				n++
			}
		}
	}
	var cell counterCell
	cell.publish(&c)
	cell.cpu.Store(c.CPUNanos) // the CPU clock is published on its own
	if got := cell.load(); got != c {
		t.Fatalf("published %+v, loaded %+v", c, got)
	}
	var sum Counters
	sum.Add(&c)
	sum.Add(&c)
	sv := reflect.ValueOf(sum)
	for i := 0; i < v.NumField(); i++ {
		f, s := v.Field(i), sv.Field(i)
		switch f.Kind() {
		case reflect.Uint64:
			if s.Uint() != 2*f.Uint() {
				t.Errorf("Add: %s = %d, want %d", v.Type().Field(i).Name, s.Uint(), 2*f.Uint())
			}
		case reflect.Array:
			for j := 0; j < f.Len(); j++ {
				if s.Index(j).Uint() != 2*f.Index(j).Uint() {
					t.Errorf("Add: %s[%d]", v.Type().Field(i).Name, j)
				}
			}
		}
	}
}
