package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/pppfwd/pppfwd/bench/scale"
	"github.com/pppfwd/pppfwd/shaper"
)

// benchScale is `pppfwd bench scale`: the in-memory pipeline swept over
// workers, flows, sizes and steering modes, with the per-core model.
func benchScale(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd bench scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workers := fs.String("workers", "", "worker counts, comma-separated (default 1..the CPUs)")
	flows := fs.String("flows", "1,100,10000", "flow counts, comma-separated")
	sizes := fs.String("sizes", "64,imix,1500", "LAN frame sizes, comma-separated: 64..1506 or imix")
	steer := fs.String("steer", "local,inline,thread", "steering modes, comma-separated: local (each worker its own WAN queue), inline (worker 0 for all), thread (a steering thread)")
	dur := fs.Duration("duration", 2*time.Second, "measured window of each run")
	repeat := fs.Int("repeat", 1, "runs per point; the point is the median run")
	shape := fs.String("shape", "bandwidth 100gbit", "shaper of each direction in tc-cake words, or off (as bench pipeline)")
	pinCPU := fs.Bool("pin", true, "pin workers to CPUs")
	batch := fs.Int("batch", 64, "frames per batch")
	ipv6 := fs.Bool("ipv6", false, "IPv6 flows instead of IPv4")
	model := fs.Bool("model", false, "fit the per-core model and predict for this machine, a Celeron J4105 and a 16-core box")
	clock := fs.Float64("clock-ghz", 0, "this machine's clock for the model (default: what the OS reports)")
	share := fs.Float64("share", 0.5, "steered (WAN->LAN) share of packets for the model's predictions")
	asJSON := fs.Bool("json", false, "print one JSON object: the points and the model")
	csvPath := fs.String("csv", "", "write one CSV row per point to this file")
	plots := fs.String("plots", "", "write the figures (PNG and SVG) into this directory")
	stages := fs.Bool("stages", true, "sample each run's per-stage costs (as bench pipeline --stages)")
	stageEvery := fs.Int("stage-every", 256, "with --stages, sample one step in this many (a power of two)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pppfwd bench scale: unexpected arguments %q\n", fs.Args())
		return 2
	}
	shift, err := stageShift(*stageEvery)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd bench scale: %v\n", err)
		return 2
	}
	o := scale.Options{Duration: *dur, Repeat: *repeat, Pin: *pinCPU, Batch: *batch, IPv6: *ipv6, Progress: stderr,
		Stages: *stages, StageShift: shift}
	bad := func(flag string, err error) int {
		fmt.Fprintf(stderr, "pppfwd: --%s: %v\n", flag, err)
		return 2
	}
	if *workers != "" {
		if o.Workers, err = scale.ParseInts(*workers, 1, 1024); err != nil {
			return bad("workers", err)
		}
	}
	if o.Flows, err = scale.ParseInts(*flows, 1, 1<<24); err != nil {
		return bad("flows", err)
	}
	if o.Sizes, err = scale.ParseSizes(*sizes); err != nil {
		return bad("sizes", err)
	}
	if o.Steer, err = scale.ParseSteer(*steer); err != nil {
		return bad("steer", err)
	}
	if *repeat < 1 || *repeat > 1000 {
		return bad("repeat", fmt.Errorf("%d: want 1..1000", *repeat))
	}
	if *dur <= 0 {
		return bad("duration", fmt.Errorf("%v: want > 0", *dur))
	}
	if !(*share > 0 && *share < 1) {
		return bad("share", fmt.Errorf("%v: want between 0 and 1", *share))
	}
	if *clock < 0 || *clock > 100 {
		return bad("clock-ghz", fmt.Errorf("%v: want 0..100", *clock))
	}
	if *shape != "off" {
		sp, err := shaper.ParseSpec(*shape)
		if err != nil {
			return bad("shape", err)
		}
		o.Shape = sp
	}
	if *plots != "" {
		if err := os.MkdirAll(*plots, 0o755); err != nil {
			fmt.Fprintf(stderr, "pppfwd: --plots: %v\n", err)
			return 1
		}
	}
	ws := o.Workers
	if len(ws) == 0 {
		for n := 1; n <= runtime.NumCPU(); n++ {
			ws = append(ws, n)
		}
	}
	if over := scale.Oversubscribed(ws, o.Steer, runtime.NumCPU()); len(over) > 0 {
		fmt.Fprintf(stderr, "pppfwd bench scale: warning: workers %s need more threads than the %d CPUs: those points measure the scheduler as much as pppfwd\n",
			joinInts(over), runtime.NumCPU())
	}

	pts, sweepErr := scale.Sweep(o)
	rep := &scale.Report{Bench: "scale", Machine: scale.ThisMachine(*clock), DurationSec: dur.Seconds(), Repeat: *repeat, Points: pts}
	if *model {
		rep.Model = scale.BuildModel(pts, rep.Machine, scale.ModelOptions{Share: *share})
	}
	code := 0
	if sweepErr != nil {
		fmt.Fprintf(stderr, "pppfwd bench scale: %v\n", sweepErr)
		code = 1
	}
	if *csvPath != "" {
		if err := writeScaleCSV(*csvPath, pts); err != nil {
			fmt.Fprintf(stderr, "pppfwd: --csv: %v\n", err)
			code = 1
		}
	}
	if *plots != "" {
		files, err := scale.Plot(rep, *plots)
		if err != nil {
			fmt.Fprintf(stderr, "pppfwd: --plots: %v\n", err)
			code = 1
		}
		for _, f := range files {
			fmt.Fprintf(stderr, "wrote %s\n", f)
		}
	}
	if c := emit(stdout, stderr, *asJSON, rep, func(tw io.Writer) { scale.WriteTable(tw, rep) }); c != 0 {
		return c
	}
	return code
}

func writeScaleCSV(path string, pts []scale.Point) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := scale.WriteCSV(f, pts); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
