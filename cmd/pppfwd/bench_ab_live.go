package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pppfwd/pppfwd/bench/abvm"
)

// abLiveFlags are the live A/B's flags (--where vm or host).
type abLiveFlags struct {
	Paths                    string
	HostCPUs                 string
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
	// set are the flags given on the command line.
	set map[string]bool
}

func abLiveFlagSet(fs *flag.FlagSet, l *abLiveFlags) {
	fs.StringVar(&l.Paths, "paths", "kernel,pppfwd", "live: the routers measured, comma-separated: kernel, pppfwd (the pppfwd path alone needs no PPPoE in the kernel)")
	fs.IntVar(&l.VCPUs, "vcpus", 2, "live, --where vm: the VM's vCPUs")
	fs.StringVar(&l.HostCPUs, "host-cpus", "", "live, --where host: the CPUs the router under test runs on, e.g. 1-3 or 2,3: its commands pinned there, its ports' receive work steered there, its per-core figures theirs; a CPU left over takes the generator (default: all, nothing pinned)")
	fs.IntVar(&l.Runs, "runs", 3, "live: runs (each boots one VM, or makes one namespace, per path); figures are medians with min and max")
	fs.IntVar(&l.Size, "size", 64, "live: LAN frame size in bytes, 64..1500")
	fs.IntVar(&l.Flows, "flows", 256, "live: UDP flows (both directions)")
	fs.StringVar(&l.Rates, "rates", "", "live: offered frames/s per direction, comma-separated (default: from 1000 doubling until twice what the path delivers)")
	fs.DurationVar(&l.Duration, "duration", 2*time.Second, "live: measured window of each step")
	fs.DurationVar(&l.Warmup, "warmup", 500*time.Millisecond, "live: load before each step's window")
	fs.StringVar(&l.Direction, "direction", "both", "live: the load: both (uplink and downlink at the offered rate each), down (a download: WAN to LAN only) or up")
	fs.BoolVar(&l.Shaped, "shaped", true, "live: also run the ladder shaped (FQ-CoDel: cake on the kernel path, pppfwd's shaper)")
	fs.Uint64Var(&l.ShapeRate, "shape-rate", 0, "live: the shaped steps' rate in bit/s each way (0: a quarter of the first path's peak Mbit/s, the kernel path's unless --paths leaves it out, so that the shaper, not the router, is the bottleneck)")
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

// parsePaths reads --paths: kernel and pppfwd, each at most once.
func parsePaths(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		p := strings.TrimSpace(f)
		if !slices.Contains(abvm.AllPaths, p) || slices.Contains(out, p) {
			return nil, fmt.Errorf("--paths %q: allowed: kernel, pppfwd, comma-separated, each at most once", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseCPUList reads CPU numbers and ranges, e.g. 1-3 or 0,2, each CPU
// at most once.
func parseCPUList(s string) ([]int, error) {
	bad := fmt.Errorf("--host-cpus %q: allowed: CPU numbers and ranges (e.g. 1-3 or 0,2), each CPU at most once", s)
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > 4095 {
			return nil, bad
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > 4095 {
				return nil, bad
			}
		}
		for n := a; n <= b; n++ {
			if slices.Contains(out, n) {
				return nil, bad
			}
			out = append(out, n)
		}
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

// abLiveOptions converts the live A/B's flags into abvm's options (no
// Progress). Its errors name the flag.
func abLiveOptions(f abFlags) (abvm.Options, error) {
	l := f.Live
	var o abvm.Options
	switch f.Where {
	case "vm", "host":
	default:
		return o, errors.New("say --where vm or --where host for the live A/B, or --dry-run for the configurations (pppfwd bench ab -h)")
	}
	if f.Where == "host" && l.set["vcpus"] {
		return o, errors.New("--vcpus is the VM's: --where host takes --host-cpus")
	}
	if f.Where == "vm" && l.set["host-cpus"] {
		return o, errors.New("--host-cpus is for --where host: --where vm takes --vcpus")
	}
	paths, err := parsePaths(l.Paths)
	if err != nil {
		return o, err
	}
	var cpus []int
	if l.HostCPUs != "" {
		if cpus, err = parseCPUList(l.HostCPUs); err != nil {
			return o, err
		}
	}
	rates, err := parseRates(l.Rates)
	if err != nil {
		return o, err
	}
	if l.VCPUs < 1 || l.VCPUs > 16 || l.Runs < 1 || l.Size < 64 || l.Size > 1500 {
		return o, errors.New("--vcpus 1..16, --runs >= 1, --size 64..1500")
	}
	streams, err := parseStreams(l.TCPStreams)
	if err != nil {
		return o, err
	}
	if l.TCPDuration < time.Second || l.TCPDuration%time.Second != 0 {
		return o, fmt.Errorf("--tcp-duration %v: allowed: whole seconds, at least 1s", l.TCPDuration)
	}
	if f.Params.Shape.On() && l.ShapeRate == 0 {
		l.ShapeRate = f.Params.Shape.Down
	}
	o = abvm.Options{Where: f.Where, Paths: paths, HostCPUs: cpus, VCPUs: l.VCPUs, Runs: l.Runs, Size: l.Size, Flows: l.Flows, Rates: rates,
		StepDuration: l.Duration, Warmup: l.Warmup, Direction: l.Direction, Shape: l.Shaped, ShapeBps: l.ShapeRate, Workers: f.Params.Workers,
		TCP: l.TCP, TCPDuration: l.TCPDuration, TCPStreams: streams}
	if f.Where == "host" {
		o.VCPUs = 0 // the host's CPUs, from HostCPUs
	}
	return o, nil
}

// benchABLive is the live A/B (--where vm or host).
func benchABLive(f abFlags, stdout, stderr io.Writer) int {
	o, err := abLiveOptions(f)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd bench ab: %v\n", err)
		return exitUsage
	}
	l := f.Live
	if l.Report != "" {
		if err := os.MkdirAll(l.Report, 0o755); err != nil {
			fmt.Fprintf(stderr, "pppfwd bench ab: --report: %v\n", err)
			return exitFailure
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Progress = func(s string) { fmt.Fprintln(stderr, s) }
	rep, err := abvm.Run(ctx, o)
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
