//go:build !unix

package shaper

func cpuNanos() int64 { return 0 }
