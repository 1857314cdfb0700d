package nat

import (
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling thread's CPU time in ns.
func threadCPU(tb testing.TB) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return ts.Nano()
}

// BenchmarkTranslateCPU measures Outbound and Inbound on established UDP
// flows by the thread's CPU clock, which time spent descheduled on a
// shared machine does not inflate: every iteration copies a chunk of
// packets into their own buffers untimed (no copy right before the
// translation either, whose stores the header loads would wait for) and
// times the translation of the chunk. cpu-ns/pkt is the figure; with 256
// flows the table is cache resident, with 16384 it is not.
func BenchmarkTranslateCPU(b *testing.B) {
	const chunk = 512
	for _, n := range []int{256, 1 << 14} {
		tab, outs, ins := benchTable(b, n)
		for _, c := range []struct {
			name string
			f    func([]byte, int64) Verdict
			pkts [][]byte
		}{{"out", tab.Outbound, outs}, {"in", tab.Inbound, ins}} {
			b.Run(fmt.Sprintf("%s-%d", c.name, n), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				bufs := make([][]byte, chunk)
				for i := range bufs {
					bufs[i] = make([]byte, 256)
				}
				b.ReportAllocs()
				var cpu int64
				pkts, j := 0, 0
				for b.Loop() {
					for k := range bufs {
						bufs[k] = bufs[k][:copy(bufs[k][:cap(bufs[k])], c.pkts[j])]
						if j++; j == len(c.pkts) {
							j = 0
						}
					}
					t0 := threadCPU(b)
					for _, p := range bufs {
						if v := c.f(p, sec); v != Pass {
							b.Fatal(v)
						}
					}
					cpu += threadCPU(b) - t0
					pkts += chunk
				}
				b.ReportMetric(float64(cpu)/float64(pkts), "cpu-ns/pkt")
			})
		}
	}
}
