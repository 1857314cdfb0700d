package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/bench/scale"
)

// TestBenchScaleSmoke runs two short points through the real pipeline
// with every output and checks the files' structure (no timing).
func TestBenchScaleSmoke(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "scale.csv")
	plots := filepath.Join(dir, "plots")
	var out, errb bytes.Buffer
	code := benchScale([]string{"--workers", "1,2", "--flows", "100", "--sizes", "64", "--steer", "inline",
		"--duration", "50ms", "--pin=false", "--model", "--clock-ghz", "2.5", "--json", "--csv", csvPath, "--plots", plots}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, errb.String())
	}
	for _, want := range []string{"[1/2] workers=1 flows=100 size=64 steer=inline: ", "[2/2] workers=2 flows=100 size=64 steer=inline: ", " Mpps"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}

	var rep scale.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out.String())
	}
	if rep.Bench != "scale" || len(rep.Points) != 2 || rep.Machine.ClockGHz != 2.5 {
		t.Fatalf("report: bench %q, %d points, clock %v", rep.Bench, len(rep.Points), rep.Machine.ClockGHz)
	}
	for i, p := range rep.Points {
		if !p.OK() || p.Workers != i+1 || len(p.PerWorker) != p.Workers || p.Mpps <= 0 {
			t.Fatalf("point %d: %+v", i, p)
		}
		// Inline steering: worker 0 steers, the others do not.
		if w0 := p.PerWorker[0]; w0.Steered == 0 || w0.SteerNs == 0 || w0.SteerNs > w0.CPUNs {
			t.Errorf("point %d worker 0: %+v", i, w0)
		}
		for _, w := range p.PerWorker[1:] {
			if w.Steered != 0 || w.SteerNs != 0 {
				t.Errorf("point %d worker %d steered: %+v", i, w.Worker, w)
			}
		}
		if p.SteerThread != nil {
			t.Errorf("point %d: a steering thread with --steer inline", i)
		}
	}
	md := rep.Model
	if md == nil || len(md.Fits) != 1 {
		t.Fatalf("model: %+v", md)
	}
	f := md.Fits[0]
	if len(f.Checks) != 2 || f.Costs.WorkNs <= 0 || f.Costs.SteerNs <= 0 {
		t.Fatalf("fit: %+v", f)
	}
	for _, c := range f.Checks {
		if want := scale.RelError(c.PredictedMpps, c.MeasuredMpps); math.Abs(c.RelError-want) > 1e-9 {
			t.Errorf("check %+v: error %v, want %v", c, c.RelError, want)
		}
	}
	if len(f.Targets) != 1+len(scale.Targets) {
		t.Errorf("%d targets, want this machine and %d", len(f.Targets), len(scale.Targets))
	}

	b, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v", err)
	}
	if len(rows) != 3 || strings.Join(rows[0], ",") != strings.Join(scale.CSVHeader, ",") {
		t.Fatalf("CSV: %d rows, header %q", len(rows), rows[0])
	}
	for _, r := range rows[1:] {
		if len(r) != len(scale.CSVHeader) {
			t.Errorf("CSV row of %d columns", len(r))
		}
	}
	if rows[2][0] != "2" || rows[2][3] != "inline" {
		t.Errorf("CSV row 2: %q", rows[2])
	}

	for _, name := range []string{scale.PlotMpps, scale.PlotNsPkt, scale.PlotCPU, scale.PlotModel} {
		fp, err := os.Open(filepath.Join(plots, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = png.Decode(fp)
		fp.Close()
		if err != nil {
			t.Errorf("%s.png: %v", name, err)
		}
		svg, err := os.ReadFile(filepath.Join(plots, name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		legend := map[string]string{scale.PlotMpps: ">flows=100 size=64", scale.PlotNsPkt: ">flows=100 size=64",
			scale.PlotCPU: ">steering", scale.PlotModel: ">measured (this machine)"}[name]
		if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte(legend)) {
			t.Errorf("%s.svg: no SVG with legend %q", name, legend)
		}
	}
}

// TestBenchScaleLocalSmoke runs local steering's two short points through
// the real pipeline: every worker steers its own WAN queue, the pipeline
// places each WAN frame on its owner's queue (h = 0, as the model's
// predictions take it), and the fit has no steering ceiling (no timing).
func TestBenchScaleLocalSmoke(t *testing.T) {
	var out, errb bytes.Buffer
	code := benchScale([]string{"--workers", "1,2", "--flows", "100", "--sizes", "64", "--steer", "local",
		"--duration", "50ms", "--pin=false", "--model", "--clock-ghz", "2.5", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "[2/2] workers=2 flows=100 size=64 steer=local: ") {
		t.Errorf("stderr:\n%s", errb.String())
	}
	var rep scale.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out.String())
	}
	if len(rep.Points) != 2 {
		t.Fatalf("%d points", len(rep.Points))
	}
	for i, p := range rep.Points {
		if !p.OK() || p.Steer != "local" || p.Threads != p.Workers || p.SteerThread != nil {
			t.Fatalf("point %d: %+v", i, p)
		}
		var steered uint64
		for _, w := range p.PerWorker {
			steered += w.Steered
			if w.WANRedirects != 0 {
				t.Errorf("point %d worker %d handed %d WAN frames over", i, w.Worker, w.WANRedirects)
			}
		}
		if steered == 0 || p.WANRedirectedShare != 0 {
			t.Errorf("point %d: %d steered, h %v", i, steered, p.WANRedirectedShare)
		}
	}
	md := rep.Model
	if md == nil || len(md.Fits) != 1 || md.Fits[0].Steer != "local" || len(md.Fits[0].Checks) != 2 {
		t.Fatalf("model: %+v", md)
	}
	for _, p := range md.Fits[0].Targets {
		if p.RidgeWorkers != nil || p.CeilingMpps != nil || p.SaturationCores != 0 || p.AllCoresMpps <= 0 {
			t.Errorf("target %s: %+v", p.Name, p)
		}
	}
}

// TestBenchScaleHelp: the steering modes' default is the three modes.
func TestBenchScaleHelp(t *testing.T) {
	var out, errb bytes.Buffer
	benchScale([]string{"--help"}, &out, &errb)
	if !strings.Contains(errb.String(), `(default "local,inline,thread")`) {
		t.Errorf("--help:\n%s", errb.String())
	}
}

// TestBenchScaleFlags: bad lists are refused before anything runs.
func TestBenchScaleFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--workers", "0"},
		{"--workers", "1,1"},
		{"--flows", "10,x"},
		{"--sizes", "63"},
		{"--sizes", "64x"},
		{"--steer", "kernel"},
		{"--repeat", "0"},
		{"--share", "1"},
		{"--duration", "0s"},
		{"--shape", "bandwidth fast"},
		{"extra"},
	} {
		var out, errb bytes.Buffer
		if code := benchScale(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
		if strings.Contains(errb.String(), "[1/") {
			t.Errorf("%q: ran a point", args)
		}
	}
}

// TestBenchScaleDispatch: `bench scale` is reachable from `bench`.
func TestBenchScaleDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	if code := benchMain([]string{"scale", "--steer", "kernel"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--steer") {
		t.Errorf("bench scale --steer kernel: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	benchMain([]string{"help"}, &out, &errb)
	if !strings.Contains(out.String(), "\n  scale ") {
		t.Errorf("bench usage lacks scale:\n%s", out.String())
	}
}

func TestStageShift(t *testing.T) {
	for every, want := range map[int]int{1: 0, 2: 1, 256: 8, 1 << 20: 20} {
		if got, err := stageShift(every); err != nil || got != want {
			t.Errorf("stageShift(%d) = %d, %v; want %d", every, got, err, want)
		}
	}
	for _, every := range []int{0, -4, 3, 255} {
		if _, err := stageShift(every); err == nil {
			t.Errorf("stageShift(%d): no error", every)
		}
	}
}
