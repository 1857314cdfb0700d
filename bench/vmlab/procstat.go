package vmlab

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// CPUTimes is one CPU's line of /proc/stat: the time it has spent in each
// state since boot, in USER_HZ ticks ("jiffies"; 100 per second on
// Debian's kernel). Guest and guest_nice time are already counted in User
// and Nice and are not repeated here.
type CPUTimes struct {
	CPU     int // N of the cpuN line
	User    uint64
	Nice    uint64
	System  uint64
	Idle    uint64
	IOWait  uint64
	IRQ     uint64
	SoftIRQ uint64
	Steal   uint64
}

// Total is the sum of all the states.
func (c CPUTimes) Total() uint64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// Busy is Total less Idle and IOWait.
func (c CPUTimes) Busy() uint64 { return c.Total() - c.Idle - c.IOWait }

// Sub returns the time spent in each state between old and c, two
// readings of the same CPU (old first).
func (c CPUTimes) Sub(old CPUTimes) CPUTimes {
	return CPUTimes{c.CPU, c.User - old.User, c.Nice - old.Nice, c.System - old.System,
		c.Idle - old.Idle, c.IOWait - old.IOWait, c.IRQ - old.IRQ, c.SoftIRQ - old.SoftIRQ,
		c.Steal - old.Steal}
}

// ProcStat reads the guest's /proc/stat and returns its per-CPU lines in
// the file's order (the kernel lists online CPUs by ascending number).
func (v *VM) ProcStat(ctx context.Context) ([]CPUTimes, error) {
	out, err := v.RunContext(ctx, "cat /proc/stat")
	if err != nil {
		return nil, err
	}
	return ParseProcStat(out)
}

// ParseProcStat parses the cpuN lines of a /proc/stat text (the aggregate
// "cpu" line and the other lines are skipped). Each needs at least the
// eight fields user..steal; later fields are ignored. CPU numbers must be
// distinct, and at least one cpuN line is required.
func ParseProcStat(s string) ([]CPUTimes, error) {
	var out []CPUTimes
	seen := map[int]bool{}
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		num, ok := strings.CutPrefix(f[0], "cpu")
		if !ok || num == "" {
			continue
		}
		cpu, err := strconv.Atoi(num)
		if err != nil || cpu < 0 || strconv.Itoa(cpu) != num {
			return nil, fmt.Errorf("vmlab: /proc/stat: bad CPU name %q", f[0])
		}
		if seen[cpu] {
			return nil, fmt.Errorf("vmlab: /proc/stat: %s twice", f[0])
		}
		seen[cpu] = true
		if len(f) < 9 {
			return nil, fmt.Errorf("vmlab: /proc/stat: %s has %d fields, want at least 8", f[0], len(f)-1)
		}
		var v [8]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(f[1+i], 10, 64); err != nil {
				return nil, fmt.Errorf("vmlab: /proc/stat: %s: %w", f[0], err)
			}
		}
		out = append(out, CPUTimes{cpu, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vmlab: /proc/stat: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("vmlab: /proc/stat has no cpuN lines")
	}
	return out, nil
}
