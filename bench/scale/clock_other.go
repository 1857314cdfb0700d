//go:build !linux && !freebsd

package scale

// cpuClock knows no clock here: pass --clock-ghz.
func cpuClock() (model string, ghz float64, source string) { return "", 0, "" }
