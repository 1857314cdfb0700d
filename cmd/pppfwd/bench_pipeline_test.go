package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/bench/scale"
)

// TestBenchPipelineOneCount: one worker count and one round is one
// pipeline run, its result as bench/pipeline gives it.
func TestBenchPipelineOneCount(t *testing.T) {
	var out, errb bytes.Buffer
	code := benchPipeline([]string{"--workers", "2", "--flows", "100", "--duration", "30ms", "--pin=false", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, errb.String())
	}
	var res pipeline.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out.String())
	}
	if res.Bench != "pipeline" || res.Workers != 2 || len(res.PerWorker) != 2 || res.Packets == 0 {
		t.Errorf("result: %+v", res)
	}
	if strings.Contains(errb.String(), "round") {
		t.Errorf("a single run reported rounds:\n%s", errb.String())
	}
}

// TestBenchPipelineRounds: a list of worker counts runs each count once
// per round (every other round backwards) and reports each count's
// median run with its speedup over 1 worker, paired round by round.
func TestBenchPipelineRounds(t *testing.T) {
	var out, errb bytes.Buffer
	code := benchPipeline([]string{"--workers", "1,2", "--rounds", "3", "--flows", "100", "--duration", "30ms", "--pin=false", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, errb.String())
	}
	for _, line := range []string{
		"[1/6] round 1/3 workers=1 flows=100 size=64 steer=local: ",
		"[3/6] round 2/3 workers=2 flows=100 size=64 steer=local: ",
		"[6/6] round 3/3 workers=2 flows=100 size=64 steer=local: ",
	} {
		if !strings.Contains(errb.String(), line) {
			t.Errorf("stderr lacks %q:\n%s", line, errb.String())
		}
	}
	var rep scale.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out.String())
	}
	if rep.Bench != "pipeline" || rep.Repeat != 3 || len(rep.Points) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	for i, p := range rep.Points {
		if !p.OK() || p.Workers != i+1 || p.Runs != 3 || p.Flows != 100 || p.Steer != "local" {
			t.Errorf("point %d: %+v", i, p)
		}
		if p.Speedup <= 0 || p.SpeedupMin > p.Speedup || p.Speedup > p.SpeedupMax || p.MppsMin > p.Mpps || p.Mpps > p.MppsMax {
			t.Errorf("point %d: speedup %v [%v..%v], Mpps %v [%v..%v]", i, p.Speedup, p.SpeedupMin, p.SpeedupMax, p.Mpps, p.MppsMin, p.MppsMax)
		}
	}
	if p := rep.Points[0]; p.Speedup != 1 {
		t.Errorf("1 worker's speedup %v", p.Speedup)
	}

	// The default is five rounds with a list; the table names the speedup.
	out.Reset()
	errb.Reset()
	if code := benchPipeline([]string{"--workers", "1,2", "--flows", "10", "--duration", "10ms", "--pin=false"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "[10/10] round 5/5 workers=2 ") || !strings.Contains(out.String(), "speedup") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}

// TestBenchPipelineFlags: bad worker lists and rounds are refused before
// anything runs.
func TestBenchPipelineFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--workers", "0"},
		{"--workers", "1,1"},
		{"--workers", "two"},
		{"--rounds", "-1"},
		{"--rounds", "1001"},
		{"--steer", "kernel"},
	} {
		var out, errb bytes.Buffer
		if code := benchPipeline(append(args, "--duration", "10ms"), &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
		if out.Len() > 0 || strings.Contains(errb.String(), "[1/") {
			t.Errorf("%q: ran: %s", args, out.String())
		}
	}
}

// TestBenchIOFlags: --latency-out without probes to write, and
// interleaved probes without probes or without the kernel's side, are
// refused before anything runs.
func TestBenchIOFlags(t *testing.T) {
	var out, errb bytes.Buffer
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--latency-out", t.TempDir()}, "--latency-out needs --latency"},
		{[]string{"--latency-interleave"}, "--latency-interleave needs --latency"},
		{[]string{"--latency-interleave", "--latency", "10", "--skip-kernel"}, "--latency-interleave needs --latency and the kernel's side"},
	} {
		out.Reset()
		errb.Reset()
		if code := benchIO(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) || out.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, out.String(), errb.String())
		}
	}
}
