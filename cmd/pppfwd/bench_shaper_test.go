package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchShaperJSON(t *testing.T) {
	for _, args := range [][]string{
		{"--rate", "100mbit", "--duration", "1500ms", "--cost-packets", "4096", "--json"},
		{"--rate", "100mbit", "--duration", "1500ms", "--cost-packets", "4096", "--json", "--dir", "up", "--spec", "pppoe-ptm"},
		{"--rate", "100mbit", "--duration", "1500ms", "--cost-packets", "4096", "--json", "--path", "shaper"},
		{"--rate", "100mbit", "--duration", "1500ms", "--cost-packets", "4096", "--json", "--line-buffer", "50ms", "--workers", "1"},
	} {
		var out, errb bytes.Buffer
		if rc := benchShaper(args, &out, &errb); rc != 0 {
			t.Fatalf("%v: exit %d: %s", args, rc, errb.String())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out.String())
		}
		for _, k := range []string{"rate_error_pct", "p50_added_delay_ms", "p99_added_delay_ms", "p99_added_delay_ms_off", "ns_per_pkt", "pipeline", "path"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%v: JSON lacks %q: %s", args, k, out.String())
			}
		}
		wantPipe := !strings.Contains(strings.Join(args, " "), "--path shaper")
		if m["pipeline"] != wantPipe {
			t.Errorf("%v: pipeline = %v", args, m["pipeline"])
		}
		if p99, off := m["p99_added_delay_ms"].(float64), m["p99_added_delay_ms_off"].(float64); p99 < 0 || p99*10 > off {
			t.Errorf("%v: p99 on %.3f ms, off %.3f ms", args, p99, off)
		}
	}
}

func TestBenchShaperTableAndFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := benchShaper([]string{"--rate", "50mbit", "--duration", "1500ms", "--cost-packets", "1024"}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	for _, s := range []string{"p99 added delay", "pipeline (dataplane, down, 1 worker(s))", "shaped rate"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
	for _, bad := range [][]string{
		{"--rate", "0"}, {"--rate", "fast"}, {"--spec", "bogus"}, {"--path", "kernel"}, {"--dir", "sideways"},
		{"--load", "0"}, {"--line-buffer", "0s"}, {"--line", "nope"}, {"--size", "1500"}, {"extra"},
	} {
		args := append([]string{"--duration", "1500ms", "--cost-packets", "64"}, bad...)
		if rc := benchShaper(args, &out, &errb); rc == 0 {
			t.Errorf("%v accepted", bad)
		}
	}
}
