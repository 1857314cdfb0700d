package scale

import "os"

// cpuClock reads the CPU's model and mean clock from /proc/cpuinfo.
func cpuClock() (model string, ghz float64, source string) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "", 0, ""
	}
	defer f.Close()
	ci, err := ParseCPUInfo(f)
	if err != nil || ci.MHz == 0 {
		return ci.Model, 0, ""
	}
	return ci.Model, ci.MHz / 1000, "/proc/cpuinfo cpu MHz"
}
