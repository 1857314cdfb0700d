//go:build !unix

package shaperbench

// cpuNanos is not supported on this GOOS: CPU time is reported as 0.
func cpuNanos() int64 { return 0 }
