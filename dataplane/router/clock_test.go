package router

import (
	"strings"
	"testing"
	"time"
)

func TestClockWarning(t *testing.T) {
	if w := clockWarning("tsc", 25*time.Nanosecond); w != "" {
		t.Fatalf("a cheap clock warned: %q", w)
	}
	w := clockWarning("hpet", 1200*time.Nanosecond)
	if !strings.Contains(w, "clocksource hpet") || !strings.Contains(w, "1.2µs") {
		t.Fatalf("slow clock: %q", w)
	}
	if w := clockWarning("", time.Microsecond); !strings.Contains(w, "the system clock costs 1µs") {
		t.Fatalf("unknown source: %q", w)
	}
	if c := clockCost(100); c <= 0 || c > time.Millisecond {
		t.Fatalf("clockCost = %v", c)
	}
}
