package scale

import "syscall"

// cpuClock reads the CPU's model (hw.model) and clock (hw.clockrate,
// MHz).
func cpuClock() (model string, ghz float64, source string) {
	model, _ = syscall.Sysctl("hw.model")
	mhz, err := syscall.SysctlUint32("hw.clockrate")
	if err != nil || mhz == 0 {
		return model, 0, ""
	}
	return model, float64(mhz) / 1000, "sysctl hw.clockrate"
}
