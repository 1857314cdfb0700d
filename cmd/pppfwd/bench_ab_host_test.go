package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/bench/abvm"
	"github.com/pppfwd/pppfwd/internal/nettest"
)

// TestIntegrationBenchABHost runs `pppfwd bench ab --where host` (the
// binary, as a user would): on a kernel without PPPoE the default paths
// fail at once naming what is missing, and the pppfwd path alone runs a
// short ladder through a namespace of this host: it comes up against the
// AC, delivers the light step, answers the probe, and has this host's
// per-core figures.
func TestIntegrationBenchABHost(t *testing.T) {
	nettest.RequireRoot(t)
	for _, c := range []string{"ip", "taskset"} {
		if _, err := exec.LookPath(c); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal(err)
			}
			t.Skip(err)
		}
	}
	if testing.Short() {
		t.Skip("runs the A/B")
	}
	bin := filepath.Join(t.TempDir(), "pppfwd")
	build := exec.Command("go", "build", "-o", bin, "github.com/pppfwd/pppfwd/cmd/pppfwd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building pppfwd: %v\n%s", err, out)
	}
	ab := func(args ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"bench", "ab", "--where", "host"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}

	if err := abvm.HostAvailable([]string{"kernel"}); err != nil {
		// No PPPoE here: both paths are refused before anything runs.
		start := time.Now()
		code, out, errOut := ab("--tcp=false")
		if code != 1 || out != "" || !strings.Contains(errOut, "missing: ") || !strings.Contains(errOut, "--paths pppfwd") ||
			time.Since(start) > 30*time.Second {
			t.Errorf("kernel path without PPPoE: exit %d after %v, stdout %q, stderr %q", code, time.Since(start), out, errOut)
		}
	} else {
		t.Log("this host's kernel has PPPoE: not checking the refusal")
	}

	code, out, errOut := ab("--paths", "pppfwd", "--rates", "1000,4000", "--runs", "1", "--duration", "1s", "--warmup", "300ms",
		"--flows", "16", "--shaped=false", "--tcp=false", "--json")
	t.Logf("stderr:\n%s", errOut)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var rep abvm.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	cpus, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	ncpu := strings.Count(string(cpus), "\ncpu") // the cpuN lines
	if rep.Where != "host" || rep.Emulated || !slices.Equal(rep.Paths, []string{"pppfwd"}) || rep.VCPUs != ncpu || len(rep.CPUs) != ncpu {
		t.Errorf("report where %q emulated %v paths %q vcpus %d cpus %v, want host, false, [pppfwd], %d", rep.Where, rep.Emulated, rep.Paths,
			rep.VCPUs, rep.CPUs, ncpu)
	}
	if len(rep.Kernel.Steps) != 0 {
		t.Errorf("the kernel path ran: %+v", rep.Kernel.Steps)
	}
	if len(rep.PPPFWD.Steps) != 2 {
		t.Fatalf("pppfwd: %d steps, want 2", len(rep.PPPFWD.Steps))
	}
	light := rep.PPPFWD.Steps[0]
	if light.OfferedPPS != 1000 || light.PPS < 0.95*2*light.OfferedPPS || light.LossPct > 5 {
		t.Errorf("the light step delivered %.0f of %.0f pps (loss %.1f%%)", light.PPS, 2*light.OfferedPPS, light.LossPct)
	}
	if light.Probes == 0 || light.ProbesLost > light.Probes/10 || light.LatencyP50Ms <= 0 {
		t.Errorf("probes %d lost %d p50 %.2f ms", light.Probes, light.ProbesLost, light.LatencyP50Ms)
	}
	busy := 0.0
	for _, s := range rep.PPPFWD.Steps {
		if len(s.PerCoreBusy) != ncpu || len(s.PerCoreSoftirq) != ncpu || len(s.HostCoreBusy) != ncpu {
			t.Errorf("per-core figures %v %v %v, want %d CPUs", s.PerCoreBusy, s.PerCoreSoftirq, s.HostCoreBusy, ncpu)
		}
		for _, x := range s.PerCoreBusy {
			busy += x
		}
	}
	if busy <= 0 {
		t.Errorf("no CPU busy while pppfwd forwarded: %v", rep.PPPFWD.Steps)
	}
	if rep.RatioPPS != 0 {
		t.Errorf("a ratio with one path: %v", rep.RatioPPS)
	}
}
