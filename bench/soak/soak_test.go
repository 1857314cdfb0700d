package soak

import (
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// TestIntegrationSoak runs the lab for 2 minutes at 80 % of its measured
// capacity with flows opening and closing, and requires every resource
// trend to be flat, the session to stay and almost every echo to return.
func TestIntegrationSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("2-minute soak (-short)")
	}
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ip")
	res, err := Run(Options{Duration: 2 * time.Minute, Workers: 2, OnSample: func(s Sample) {
		t.Logf("t=%3.0fs rss %5.1f MiB goroutines %d fds %d nat %d rate %.0f/s sent %d lost %d late %d flows %d tcp %d/%d drops %v",
			s.T, float64(s.RSSBytes)/(1<<20), s.Goroutines, s.FDs, s.NATEntries, s.RatePPS, s.Sent, s.Lost, s.Late, s.FlowsOpen, s.TCPConns, s.TCPFailed, s.Drops)
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("capacity %.0f/s, target %.0f/s, achieved %.0f/s, loss %.5f, flows %d, tcp %d (%d failed), verdict %s",
		s.CapacityPPS, s.TargetPPS, s.AchievedPPS, s.LossRatio, s.FlowsOpened, s.TCPConns, s.TCPFailed, s.Verdict)
	for _, tr := range s.Trends {
		t.Logf("%-12s slope %10.3f/s growth %12.1f limit %12.1f mean %12.1f max %12.1f flat %v skipped %v",
			tr.Name, tr.Slope, tr.Growth, tr.Limit, tr.Mean, tr.Max, tr.Flat, tr.Skipped)
	}
	if !s.Flat {
		t.Errorf("verdict %q", s.Verdict)
	}
	// Echoes later than the senders' timeout are slow, not lost: on a
	// loaded machine a stalled sender sees many.
	if s.LossRatio > 0.01 {
		t.Errorf("lost %d of %d echoes (%d of them late; %.4f lost) at 80 %% of capacity", s.Lost, s.Sent, s.Late, s.LossRatio)
	}
	if s.TCPConns == 0 || s.TCPFailed > s.TCPConns/100 {
		t.Errorf("TCP connections: %d completed, %d failed", s.TCPConns, s.TCPFailed)
	}
}
