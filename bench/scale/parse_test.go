package scale

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane"
)

func TestParseInts(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"1", []int{1}},
		{"1,2,4", []int{1, 2, 4}},
		{" 4 , 2 ", []int{4, 2}},
		{"1000000", []int{1000000}},
	} {
		got, err := ParseInts(c.in, 1, 1<<24)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseInts(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", " ", "0", "1,,2", "1,", "a", "1,1", "-1", "1.5", "99999999", "0x10", strings.Repeat("1,", 64) + "1"} {
		if got, err := ParseInts(in, 1, 1<<24); err == nil {
			t.Errorf("ParseInts(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseSizesAndSteer(t *testing.T) {
	got, err := ParseSizes("64, imix,1500")
	if err != nil || !slices.Equal(got, []string{"64", "imix", "1500"}) {
		t.Errorf("ParseSizes = %v, %v", got, err)
	}
	for _, in := range []string{"63", "1507", "64x", "064", "IMIX", "64,64", "", "+64"} {
		if got, err := ParseSizes(in); err == nil {
			t.Errorf("ParseSizes(%q) = %v, want an error", in, got)
		}
	}
	m, err := ParseSteer("inline,thread")
	if err != nil || !slices.Equal(m, []dataplane.SteerMode{dataplane.SteerInline, dataplane.SteerThread}) {
		t.Errorf("ParseSteer = %v, %v", m, err)
	}
	m, err = ParseSteer("local, inline,thread")
	if err != nil || !slices.Equal(m, []dataplane.SteerMode{dataplane.SteerLocal, dataplane.SteerInline, dataplane.SteerThread}) {
		t.Errorf("ParseSteer = %v, %v", m, err)
	}
	for _, in := range []string{"kernel", "inline,inline", "", "Inline", "local,thread,local", "auto"} {
		if got, err := ParseSteer(in); err == nil {
			t.Errorf("ParseSteer(%q) = %v, want an error", in, got)
		}
	}
	if SteerName(dataplane.SteerThread) != "thread" || SteerName(dataplane.SteerInline) != "inline" || SteerName(dataplane.SteerLocal) != "local" {
		t.Error("SteerName")
	}
	// A point's mode is the word's.
	for _, m := range []dataplane.SteerMode{dataplane.SteerLocal, dataplane.SteerInline, dataplane.SteerThread} {
		if p := (Point{Steer: SteerName(m)}); p.Mode() != m {
			t.Errorf("Point{Steer: %q}.Mode() = %v", p.Steer, p.Mode())
		}
	}
}

func TestParseCPUInfo(t *testing.T) {
	in := "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2000.000\n\nprocessor\t: 1\nmodel name\t: other\ncpu MHz\t\t: 3000.000\ncpu MHz : bogus\nflags : fpu\n"
	ci, err := ParseCPUInfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if ci.Model != "AMD EPYC" || ci.CPUs != 2 || ci.MHz != 2500 {
		t.Errorf("%+v, want the first model and the mean of 2000 and 3000 MHz", ci)
	}
	ci, err = ParseCPUInfo(strings.NewReader("processor : 0\nBogoMIPS : 100\n"))
	if err != nil || ci.MHz != 0 || ci.CPUs != 0 {
		t.Errorf("no cpu MHz (arm64): %+v, %v", ci, err)
	}
}

// FuzzParseInts: a list that parses holds distinct values in bounds, one
// per comma-separated item, and parses the same when printed back.
func FuzzParseInts(f *testing.F) {
	for _, s := range []string{"1", "1,2,4", " 3 ,4", "1,,2", "0", "-5,5", "1e3", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseInts(s, 1, 1<<24)
		if err != nil {
			return
		}
		if len(got) != strings.Count(s, ",")+1 {
			t.Fatalf("%q: %d values", s, len(got))
		}
		seen := map[int]bool{}
		for _, n := range got {
			if n < 1 || n > 1<<24 || seen[n] {
				t.Fatalf("%q: %v", s, got)
			}
			seen[n] = true
		}
		back := strings.Trim(strings.ReplaceAll(fmt.Sprint(got), " ", ","), "[]")
		again, err := ParseInts(back, 1, 1<<24)
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, got, back, again, err)
		}
	})
}

// FuzzParseSizes: a size list that parses names sizes bench/pipeline
// builds, distinct and exact.
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"64,imix,1500", "64x", "1506", "65,65"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSizes(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, sz := range got {
			fb, err := WANFrameBytes(sz)
			if err != nil || fb < 64+8 || fb > 1506+8 || seen[sz] || strings.TrimSpace(sz) != sz {
				t.Fatalf("%q: %q (%v, %v)", s, sz, fb, err)
			}
			seen[sz] = true
		}
	})
}

// FuzzParseSteer: only the three words, each once.
func FuzzParseSteer(f *testing.F) {
	for _, s := range []string{"inline", "inline,thread", "thread,thread", "x", "local,inline,thread", "local,local"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSteer(s)
		if err != nil {
			return
		}
		if len(got) < 1 || len(got) > 3 {
			t.Fatalf("%q: %v", s, got)
		}
		seen := map[dataplane.SteerMode]bool{}
		for _, m := range got {
			if seen[m] || (m != dataplane.SteerLocal && m != dataplane.SteerInline && m != dataplane.SteerThread) {
				t.Fatalf("%q: %v", s, got)
			}
			seen[m] = true
		}
		names := make([]string, len(got))
		for i, m := range got {
			names[i] = SteerName(m)
		}
		if again, err := ParseSteer(strings.Join(names, ",")); err != nil || !slices.Equal(again, got) {
			t.Fatalf("%q: round trip %v, %v", s, again, err)
		}
	})
}

// FuzzParseCPUInfo: any input gives a clock of 0 or a positive one below
// 100 GHz, never an error for text of short lines, and never a panic.
func FuzzParseCPUInfo(f *testing.F) {
	f.Add("model name\t: X\ncpu MHz\t\t: 2596.120\n")
	f.Add("cpu MHz : NaN\ncpu MHz : Inf\ncpu MHz : -1\ncpu MHz : 1e300\n")
	f.Add(":\n::\ncpu MHz:\n")
	f.Fuzz(func(t *testing.T, s string) {
		ci, err := ParseCPUInfo(strings.NewReader(s))
		if err != nil {
			if len(s) < 1<<16 {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if ci.CPUs < 0 || (ci.CPUs == 0) != (ci.MHz == 0) || ci.MHz < 0 || ci.MHz >= 1e5 || ci.MHz != ci.MHz {
			t.Fatalf("%q: %+v", s, ci)
		}
	})
}
