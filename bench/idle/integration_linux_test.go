//go:build linux

package idle

import (
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// TestIntegrationIdleLightLoad runs the lab's router under a light ping
// load: every request is answered through it, and the run reports the
// load and the process's cost instead of the idle goals.
func TestIntegrationIdleLightLoad(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ping")
	r, err := Run(Options{Duration: 2 * time.Second, StraceFor: -1, Rate: 50, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if r.RatePPS != 50 || r.Sent < 100 || r.Echoes < r.Sent*99/100 || !r.SessionUp || !r.Pass {
		t.Fatalf("light load: %+v", r)
	}
	if r.Wakeups <= 0 || r.CPUShare <= 0 || r.GoalWakeups != 0 {
		t.Fatalf("light load figures: %+v", r)
	}
}
