package router

import (
	"os"
	"strings"
	"time"
)

// clockSourceFile names the kernel's clocksource (Linux).
const clockSourceFile = "/sys/devices/system/clocksource/clocksource0/current_clocksource"

// slowClock is what a clock read costs above which the router says so at
// start: a vDSO read costs tens of ns, a system call (hpet, acpi_pm) a
// microsecond or more.
const slowClock = 300 * time.Nanosecond

// clockCost returns the mean cost of one time.Now over n reads.
func clockCost(n int) time.Duration {
	t0 := time.Now()
	for i := 0; i < n; i++ {
		_ = time.Now()
	}
	return time.Since(t0) / time.Duration(n)
}

// clockWarning returns the start-up line for a clock costing cost per
// read from the clocksource src ("" when unknown), or "" when it is cheap.
func clockWarning(src string, cost time.Duration) string {
	if cost < slowClock {
		return ""
	}
	from := "the system clock"
	if src != "" {
		from = "clocksource " + src
	}
	return "pppfwd: " + from + " costs " + cost.Round(10*time.Nanosecond).String() +
		" a read (a system call, not the vDSO): workers read it only while their queues have frames, so expect more system time under load; a TSC clocksource (clocksource=tsc, where the CPU's TSC is stable) avoids it"
}

// checkClock logs clockWarning for this machine.
func checkClock(logf func(string, ...any)) {
	src := ""
	if b, err := os.ReadFile(clockSourceFile); err == nil {
		src = strings.TrimSpace(string(b))
	}
	if w := clockWarning(src, clockCost(2000)); w != "" {
		logf("%s", w)
	}
}
