//go:build linux

package pin

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// tids returns the process's thread ids.
func tids() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out, nil
}

func moveThreads(cpus []int) (func(), int, error) {
	var to unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= len(to)*64 {
			return func() {}, 0, fmt.Errorf("pin: bad cpu %d", c)
		}
		to.Set(c)
	}
	if to.Count() == 0 {
		return func() {}, 0, fmt.Errorf("pin: no CPU to move threads to")
	}
	if startErr != nil {
		return func() {}, 0, fmt.Errorf("pin: start affinity unknown: %w", startErr)
	}
	ids, err := tids()
	if err != nil {
		return func() {}, 0, err
	}
	pinned := map[int]bool{}
	moved := 0
	for _, tid := range ids {
		var cur unix.CPUSet
		if unix.SchedGetaffinity(tid, &cur) != nil {
			continue // gone
		}
		if cur.Count() == 1 {
			pinned[tid] = true // a worker's, a generator's: left alone
			continue
		}
		if unix.SchedSetaffinity(tid, &to) == nil {
			moved++
		}
	}
	return func() {
		ids, _ := tids()
		for _, tid := range ids {
			var cur unix.CPUSet
			if pinned[tid] || unix.SchedGetaffinity(tid, &cur) != nil || cur != to {
				continue
			}
			s := startSet
			_ = unix.SchedSetaffinity(tid, &s)
		}
	}, moved, nil
}
