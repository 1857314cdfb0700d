package abvm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestIntegrationAB runs a short live A/B through the VM: both paths come
// up against the host-side AC, every flow is primed (translation
// checked), the light step is delivered with little loss and a round
// trip, and the guest's per-vCPU figures are there; the TCP step moves
// data through both paths in both directions with 1 and 4 streams, and
// shaped it stays within the shaper's rate.
func TestIntegrationAB(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("boots two VMs")
	}
	if err := checkIperf3(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bin := filepath.Join(t.TempDir(), "pppfwd")
	build := exec.Command("go", "build", "-o", bin, "github.com/pppfwd/pppfwd/cmd/pppfwd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building pppfwd: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The heavy step is well above the load at which the guest's CPU
	// leaves its floor on either path: the kernel path's forwarding cost
	// is lost in the guest's noise (5-12 % a core) up to about 8000
	// frames/s each way, and one CI run saw 300 -> 3000 lower it.
	rep, err := Run(ctx, Options{VCPUs: 2, Runs: 1, Flows: 16, Rates: []float64{300, 20000},
		StepDuration: 1500 * time.Millisecond, Warmup: 300 * time.Millisecond, Shape: true, ShapeBps: 2_000_000,
		// 4 s transfers: a 2 Mbit/s shaped goodput measured over 2 s
		// came out at 1.7-2.25 Mbit/s on either path (a few tens of
		// kilobytes either way), too coarse for the 10 % bound below.
		TCP: true, TCPDuration: 4 * time.Second, TCPStreams: []int{1, 4},
		Binary: bin, Progress: func(s string) { t.Log(s) }, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(rep, "", " ")
	t.Logf("report:\n%s", b)
	for _, p := range []struct {
		name string
		p    Path
	}{{"kernel", rep.Kernel}, {"pppfwd", rep.PPPFWD}} {
		if len(p.p.Steps) != 2 || len(p.p.ShapedSteps) != 2 {
			t.Fatalf("%s: %d steps and %d shaped, want 2 and 2", p.name, len(p.p.Steps), len(p.p.ShapedSteps))
		}
		light := p.p.Steps[0]
		if light.PPS < 0.9*2*light.OfferedPPS || light.LossPct > 5 {
			t.Errorf("%s: the light step delivered %.0f of %.0f pps (loss %.1f%%)", p.name, light.PPS, 2*light.OfferedPPS, light.LossPct)
		}
		if light.Probes == 0 || light.ProbesLost > light.Probes/10 || light.LatencyP50Ms <= 0 {
			t.Errorf("%s: probes %d lost %d p50 %.2f ms", p.name, light.Probes, light.ProbesLost, light.LatencyP50Ms)
		}
		if len(light.PerCoreBusy) != 2 || len(light.PerCoreSoftirq) != 2 {
			t.Errorf("%s: per-core figures %v %v, want 2 vCPUs", p.name, light.PerCoreBusy, light.PerCoreSoftirq)
		}
		heavy := p.p.Steps[1]
		if heavy.PerCoreBusy[0]+heavy.PerCoreBusy[1] <= light.PerCoreBusy[0]+light.PerCoreBusy[1] {
			t.Errorf("%s: 66x the load did not raise the guest's CPU: %v -> %v", p.name, light.PerCoreBusy, heavy.PerCoreBusy)
		}
		if len(p.p.TCP) != 8 {
			t.Fatalf("%s: %d TCP transfers, want 8 (up and down, 1 and 4 streams, unshaped and shaped)", p.name, len(p.p.TCP))
		}
		for _, x := range p.p.TCP {
			s := x.Runs[0]
			what := fmt.Sprintf("%s: TCP %s x%d shaped %v", p.name, x.Direction, x.Streams, x.Shaped)
			if (s.Error == "" && s.Seconds < 3.5) || s.Probes == 0 || len(s.PerCoreBusy) != 2 || len(s.HostCoreBusy) == 0 {
				t.Errorf("%s: %+v", what, s)
			}
			if x.Shaped {
				// The shaper holds the transfer to its rate (goodput
				// is below the wire rate it shapes). How much gets
				// through a shaper the ladder just overloaded is a
				// figure, not a pass mark.
				if s.Mbps > 1.1*2 {
					t.Errorf("%s: %.2f Mbit/s through a 2 Mbit/s shaper", what, s.Mbps)
				}
				continue
			}
			// Unshaped, both routers carry TCP both ways (translated,
			// checksums intact) with the probe answered.
			if s.Mbps <= 0 || s.Error != "" || s.ProbesLost > s.Probes/2 {
				t.Errorf("%s: %.2f Mbit/s (%s), %d of %d probes lost", what, s.Mbps, s.Error, s.ProbesLost, s.Probes)
			}
		}
	}
	if len(rep.TCPRatios) != 8 || rep.TCPSeconds != 4 {
		t.Errorf("TCP ratios %v, seconds %v", rep.TCPRatios, rep.TCPSeconds)
	}
	if rep.RatioPPS <= 0 || rep.Where != "vm" || !rep.Emulated {
		t.Errorf("report ratio %v where %q emulated %v", rep.RatioPPS, rep.Where, rep.Emulated)
	}
}
