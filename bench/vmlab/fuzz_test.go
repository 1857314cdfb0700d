package vmlab

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func FuzzParseDepends(f *testing.F) {
	for _, s := range []string{
		"libc6 (>= 2.34), ppp (>= 2.3.10-1)",
		"libsystemd0 | libelogind0, libssl3 (>= 3.0.0)",
		"perl:any, libfoo1:amd64 (= 1.0)",
		"", ",,|", "a|b|c (<< 1)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		deps := parseDepends(field)
		if len(deps) > strings.Count(field, ",")+1 {
			t.Fatalf("%d names from %d comma-separated entries", len(deps), strings.Count(field, ",")+1)
		}
		for _, d := range deps {
			if d == "" || strings.ContainsAny(d, ",|(: ") {
				t.Fatalf("bad package name %q from %q", d, field)
			}
			if !strings.Contains(field, d) {
				t.Fatalf("name %q not in %q", d, field)
			}
		}
	})
}

func FuzzParseTsharkFields(f *testing.F) {
	f.Add([]byte("1|eth:ethertype:pppoed||\n2|eth:ethertype:pppoes:ppp:lcp|8388608|Malformed Packet\n"))
	f.Add([]byte("3|eth:ethertype:pppoes:ppp:data||\n4|eth:ethertype:pppoes:ppp:ip:icmp:data|4194304;2097152|a;b\n"))
	f.Add([]byte("x\n"))
	f.Add([]byte("5|data|x;;8388608|\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		r, err := parseTsharkFields(out)
		if err != nil {
			return
		}
		lines := 0
		for _, l := range bytes.Split(out, []byte("\n")) {
			// bufio.ScanLines drops a CR before the newline (and at EOF).
			if l = bytes.TrimSuffix(l, []byte("\r")); len(l) > 0 {
				lines++
			}
		}
		if r.Frames != lines {
			t.Fatalf("Frames %d, input has %d lines", r.Frames, lines)
		}
		if len(r.Problems) > r.Frames {
			t.Fatalf("%d problems for %d frames", len(r.Problems), r.Frames)
		}
		for p, n := range r.Protocols {
			if n < 1 || n > r.Frames {
				t.Fatalf("protocol %q counted in %d of %d frames", p, n, r.Frames)
			}
		}
		for _, p := range r.Problems {
			if !strings.HasPrefix(p, "frame ") {
				t.Fatalf("problem %q does not name its frame", p)
			}
		}
	})
}

func FuzzParseProcStat(f *testing.F) {
	f.Add(procStat6_1)
	f.Add("cpu3 1 2 3 4 5 6 7 8\n")
	f.Add("cpu0 1 2 3 4 5 6 7\n")
	f.Add("cpu0 18446744073709551615 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0 0\n")
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseProcStat(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 {
			t.Fatal("no CPUs and no error")
		}
		seen := map[int]bool{}
		var again strings.Builder
		for _, c := range cpus {
			if c.CPU < 0 || seen[c.CPU] {
				t.Fatalf("CPU number %d negative or repeated in %+v", c.CPU, cpus)
			}
			seen[c.CPU] = true
			fmt.Fprintf(&again, "cpu%d %d %d %d %d %d %d %d %d\n", c.CPU, c.User, c.Nice, c.System,
				c.Idle, c.IOWait, c.IRQ, c.SoftIRQ, c.Steal)
		}
		// Every cpuN line of the input is one result.
		lines := 0
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "cpu") && f[0] != "cpu" {
				lines++
			}
		}
		if lines != len(cpus) {
			t.Fatalf("%d cpuN lines, %d results", lines, len(cpus))
		}
		round, err := ParseProcStat(again.String())
		if err != nil || !reflect.DeepEqual(round, cpus) {
			t.Fatalf("round trip: %+v, %v; want %+v", round, err, cpus)
		}
	})
}
