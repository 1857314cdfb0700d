package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pppfwd/pppfwd/bench/abvm"
)

// abLiveFlags are the live A/B's flags (--where vm).
type abLiveFlags struct {
	VCPUs, Runs, Size, Flows int
	Rates                    string
	Duration, Warmup         time.Duration
	Direction                string
	Shaped                   bool
	ShapeRate                uint64
	JSON                     bool
	Report                   string
	TCP                      bool
	TCPDuration              time.Duration
	TCPStreams               string
}

func abLiveFlagSet(fs *flag.FlagSet, l *abLiveFlags) {
	fs.IntVar(&l.VCPUs, "vcpus", 2, "live: the VM's vCPUs")
	fs.IntVar(&l.Runs, "runs", 3, "live: runs (each boots one VM per path); figures are medians with min and max")
	fs.IntVar(&l.Size, "size", 64, "live: LAN frame size in bytes, 64..1500")
	fs.IntVar(&l.Flows, "flows", 256, "live: UDP flows (both directions)")
	fs.StringVar(&l.Rates, "rates", "", "live: offered frames/s per direction, comma-separated (default: from 1000 doubling until twice what the path delivers)")
	fs.DurationVar(&l.Duration, "duration", 2*time.Second, "live: measured window of each step")
	fs.DurationVar(&l.Warmup, "warmup", 500*time.Millisecond, "live: load before each step's window")
	fs.StringVar(&l.Direction, "direction", "both", "live: the load: both (uplink and downlink at the offered rate each), down (a download: WAN to LAN only) or up")
	fs.BoolVar(&l.Shaped, "shaped", true, "live: also run the ladder shaped (FQ-CoDel: cake on the kernel path, pppfwd's shaper)")
	fs.Uint64Var(&l.ShapeRate, "shape-rate", 0, "live: the shaped steps' rate in bit/s each way (0: a quarter of the kernel path's peak Mbit/s, so that the shaper, not the router, is the bottleneck)")
	fs.BoolVar(&l.TCP, "tcp", true, "live: after each ladder, TCP bulk through the router with iperf3 (a LAN host to a server beyond the AC; both directions with --direction both), with the probe")
	fs.DurationVar(&l.TCPDuration, "tcp-duration", 10*time.Second, "live: each iperf3 transfer's measured time, whole seconds (after 1 s iperf3 omits)")
	fs.StringVar(&l.TCPStreams, "tcp-streams", "1,4", "live: the iperf3 transfers' parallel streams, comma-separated")
	fs.BoolVar(&l.JSON, "json", false, "live: print the report as one JSON object")
	fs.StringVar(&l.Report, "report", "", "live: write ab.json, ab.txt and the plots (PNG, SVG) into this directory")
}

// parseRates reads a comma-separated list of positive rates.
func parseRates(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 || v > 1e8 {
			return nil, fmt.Errorf("--rates %q: allowed: frames/s per direction, comma-separated, each 1..1e8", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseStreams reads a comma-separated list of stream counts, 1..128.
func parseStreams(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 || v > 128 {
			return nil, fmt.Errorf("--tcp-streams %q: allowed: stream counts, comma-separated, each 1..128", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// benchABLive is the live A/B (--where vm).
func benchABLive(f abFlags, stdout, stderr io.Writer) int {
	switch f.Where {
	case "vm":
	case "host":
		fmt.Fprintln(stderr, "pppfwd bench ab: --where host is not implemented yet; --where vm runs the router under test in the lab VM")
		return exitUsage
	default:
		fmt.Fprintln(stderr, "pppfwd bench ab: say --where vm for the live A/B, or --dry-run for the configurations (pppfwd bench ab -h)")
		return exitUsage
	}
	l := f.Live
	rates, err := parseRates(l.Rates)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd bench ab: %v\n", err)
		return exitUsage
	}
	if l.VCPUs < 1 || l.VCPUs > 16 || l.Runs < 1 || l.Size < 64 || l.Size > 1500 {
		fmt.Fprintln(stderr, "pppfwd bench ab: --vcpus 1..16, --runs >= 1, --size 64..1500")
		return exitUsage
	}
	streams, err := parseStreams(l.TCPStreams)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd bench ab: %v\n", err)
		return exitUsage
	}
	if l.TCPDuration < time.Second || l.TCPDuration%time.Second != 0 {
		fmt.Fprintf(stderr, "pppfwd bench ab: --tcp-duration %v: allowed: whole seconds, at least 1s\n", l.TCPDuration)
		return exitUsage
	}
	if f.Params.Shape.On() && l.ShapeRate == 0 {
		l.ShapeRate = f.Params.Shape.Down
	}
	if l.Report != "" {
		if err := os.MkdirAll(l.Report, 0o755); err != nil {
			fmt.Fprintf(stderr, "pppfwd bench ab: --report: %v\n", err)
			return exitFailure
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := abvm.Run(ctx, abvm.Options{VCPUs: l.VCPUs, Runs: l.Runs, Size: l.Size, Flows: l.Flows, Rates: rates,
		StepDuration: l.Duration, Warmup: l.Warmup, Direction: l.Direction, Shape: l.Shaped, ShapeBps: l.ShapeRate, Workers: f.Params.Workers,
		TCP: l.TCP, TCPDuration: l.TCPDuration, TCPStreams: streams,
		Progress: func(s string) { fmt.Fprintln(stderr, s) }})
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd bench ab: %v\n", err)
		return exitFailure
	}
	if l.Report != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		var tb strings.Builder
		rep.WriteTable(&tb)
		for name, body := range map[string][]byte{"ab.json": append(b, '\n'), "ab.txt": []byte(tb.String())} {
			if err := os.WriteFile(filepath.Join(l.Report, name), body, 0o644); err != nil {
				fmt.Fprintf(stderr, "pppfwd bench ab: %v\n", err)
				return exitFailure
			}
		}
		files, err := abvm.Plot(rep, l.Report)
		if err != nil {
			fmt.Fprintf(stderr, "pppfwd bench ab: plots: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stderr, "wrote %s/ab.json, ab.txt and %d plot files\n", l.Report, len(files))
	}
	if l.JSON {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return exitFailure
		}
		return exitOK
	}
	rep.WriteTable(stdout)
	return exitOK
}
