package scale

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/dataplane"
)

// maxListItems bounds every list flag: a sweep of more points than this
// per axis is a typing error, not a plan.
const maxListItems = 64

// splitList splits a comma-separated list, trimming blanks; empty items
// and lists longer than maxListItems are errors.
func splitList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty list")
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxListItems {
		return nil, fmt.Errorf("%d items: at most %d", len(parts), maxListItems)
	}
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if parts[i] == "" {
			return nil, fmt.Errorf("empty item in %q", s)
		}
	}
	return parts, nil
}

// ParseInts reads a comma-separated list of distinct integers in
// [lo, hi] ("1,2,4"), in the order given.
func ParseInts(s string, lo, hi int) ([]int, error) {
	parts, err := splitList(s)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(parts))
	seen := map[int]bool{}
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("%q: not an integer", p)
		}
		if n < lo || n > hi {
			return nil, fmt.Errorf("%d: want %d..%d", n, lo, hi)
		}
		if seen[n] {
			return nil, fmt.Errorf("%d twice", n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// ParseSizes reads a comma-separated list of distinct frame size specs
// as bench/pipeline takes them ("64,imix,1500").
func ParseSizes(s string) ([]string, error) {
	parts, err := splitList(s)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, p := range parts {
		if _, err := pipeline.Sizes(p); err != nil {
			return nil, err
		}
		// pipeline.Sizes accepts what Sscanf reads, so "64x" would be
		// 64: keep the spec exact, as it names the point.
		if p != "imix" {
			if n, err := strconv.Atoi(p); err != nil || strconv.Itoa(n) != p {
				return nil, fmt.Errorf("size %q: want 64..1506 or imix", p)
			}
		}
		if seen[p] {
			return nil, fmt.Errorf("size %s twice", p)
		}
		seen[p] = true
	}
	return parts, nil
}

// SteerName is the word for a steering mode, as `bench pipeline --steer`
// takes it.
func SteerName(m dataplane.SteerMode) string {
	switch m {
	case dataplane.SteerThread:
		return "thread"
	case dataplane.SteerLocal:
		return "local"
	}
	return "inline"
}

// ParseSteer reads a comma-separated list of distinct steering modes
// (local, inline, thread).
func ParseSteer(s string) ([]dataplane.SteerMode, error) {
	parts, err := splitList(s)
	if err != nil {
		return nil, err
	}
	var out []dataplane.SteerMode
	seen := map[string]bool{}
	for _, p := range parts {
		var m dataplane.SteerMode
		switch p {
		case "local":
			m = dataplane.SteerLocal
		case "inline":
			m = dataplane.SteerInline
		case "thread":
			m = dataplane.SteerThread
		default:
			return nil, fmt.Errorf("steer %q: want local, inline or thread", p)
		}
		if seen[p] {
			return nil, fmt.Errorf("steer %s twice", p)
		}
		seen[p] = true
		out = append(out, m)
	}
	return out, nil
}

// CPUInfo is what ParseCPUInfo takes from /proc/cpuinfo.
type CPUInfo struct {
	Model string  // the first "model name"
	MHz   float64 // mean of the "cpu MHz" lines; 0 if none
	CPUs  int     // "cpu MHz" lines counted
}

// ParseCPUInfo reads /proc/cpuinfo's "model name" and "cpu MHz" lines.
// Lines it does not know, and values that are not positive finite
// numbers below 100 GHz, are skipped.
func ParseCPUInfo(r io.Reader) (CPUInfo, error) {
	var ci CPUInfo
	var sum float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name":
			if ci.Model == "" {
				ci.Model = v
			}
		case "cpu MHz":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0 && f < 1e5) {
				continue
			}
			sum += f
			ci.CPUs++
		}
	}
	if err := sc.Err(); err != nil {
		return CPUInfo{}, err
	}
	if ci.CPUs > 0 {
		ci.MHz = sum / float64(ci.CPUs)
	}
	return ci, nil
}
