package vmlab

import (
	"reflect"
	"testing"
)

const procStat6_1 = `cpu  1497 0 7395 33780 51 0 460 0 0 0
cpu0 752 0 3690 16874 23 0 301 0 0 0
cpu1 745 0 3705 16906 28 0 159 3 0 0
intr 304915 15 9 0 0 0 0 0 0 0 0 0 0 101 0 0 0 0 0 0 0 0 0
ctxt 420411
btime 1733125000
processes 1098
procs_running 1
procs_blocked 0
softirq 142361 1 56402 0 3063 0 0 1 43549 0 39345
`

func TestParseProcStat(t *testing.T) {
	got, err := ParseProcStat(procStat6_1)
	if err != nil {
		t.Fatal(err)
	}
	want := []CPUTimes{
		{CPU: 0, User: 752, System: 3690, Idle: 16874, IOWait: 23, SoftIRQ: 301},
		{CPU: 1, User: 745, System: 3705, Idle: 16906, IOWait: 28, SoftIRQ: 159, Steal: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseProcStat =\n %+v\nwant\n %+v", got, want)
	}
	if tot, busy := got[1].Total(), got[1].Busy(); tot != 745+3705+16906+28+159+3 || busy != 745+3705+159+3 {
		t.Errorf("cpu1 Total %d Busy %d", tot, busy)
	}
	later := want[1]
	later.User += 10
	later.Idle += 90
	if d := later.Sub(want[1]); d != (CPUTimes{CPU: 1, User: 10, Idle: 90}) {
		t.Errorf("Sub = %+v", d)
	}
	// An old kernel's line without guest fields still has steal.
	if got, err := ParseProcStat("cpu3 1 2 3 4 5 6 7 8\n"); err != nil ||
		!reflect.DeepEqual(got, []CPUTimes{{3, 1, 2, 3, 4, 5, 6, 7, 8}}) {
		t.Errorf("8 fields: %+v, %v", got, err)
	}
	for name, in := range map[string]string{
		"empty":          "",
		"aggregate only": "cpu  1 2 3 4 5 6 7 8 9 10\n",
		"short line":     "cpu0 1 2 3 4 5 6 7\n",
		"not a number":   "cpu0 1 2 3 4 5 6 x 8\n",
		"negative":       "cpu0 1 2 3 4 -5 6 7 8\n",
		"bad name":       "cpux 1 2 3 4 5 6 7 8\n",
		"leading zero":   "cpu01 1 2 3 4 5 6 7 8\n",
		"sign in name":   "cpu+1 1 2 3 4 5 6 7 8\n",
		"twice":          "cpu0 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n",
	} {
		if got, err := ParseProcStat(in); err == nil {
			t.Errorf("%s: %q parsed as %+v", name, in, got)
		}
	}
}
