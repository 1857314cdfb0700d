//go:build linux

package nettest

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseLabPrefix(t *testing.T) {
	for _, tt := range []struct {
		name string
		want []int
	}{
		{labPrefix(4242, 1) + "-lan", []int{4242}},
		{labPrefix(4194304, 300) + "-vm-lab", []int{4194304}},
		{"pf3a0x2-isp", []int{3*36*36 + 10*36}},
		// pid 33 is "x" in base 36: "pfxx1" reads only as pid 33, seq 1
		// (pid "" is not a pid).
		{labPrefix(33, 1) + "-r", []int{33}},
		// "pf1x2x3" reads as pid 1 seq "2x3" or pid "1x2" seq 3.
		{"pf1x2x3-a", []int{1, 1*36*36 + 33*36 + 2}},
		{"pf0x1-a", nil},  // pid 0
		{"pf0ax1-a", nil}, // leading zero
		{"pfax01-a", nil}, // leading zero in the sequence number
		{"pfax0-a", []int{10}},
		{"pf0xzik0x0-0", nil}, // 0 or 0xzik0: both never written
		{"pf1x-a", nil},       // no sequence number
		{"pfx1-a", nil},       // no pid
		{"pf1X1-a", nil},      // upper case is not ours
		{"pf1x1", nil},        // no name after the prefix
		{"pf1y1-a", nil},      // no separator
		{"vmlab123-1", nil},   // vmlab's old names
		{"pfsense-x1", nil},
		{"pf" + strings.Repeat("z", 8) + "x1-a", nil}, // pid overflows 32 bits
		{"", nil},
	} {
		if got := parseLabPrefix(tt.name); !slices.Equal(got, tt.want) {
			t.Errorf("parseLabPrefix(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func FuzzParseLabPrefix(f *testing.F) {
	f.Add(4242, uint32(1), "lan")
	f.Add(33, uint32(33), "x-y")
	f.Add(1, uint32(1<<31), "")
	f.Fuzz(func(t *testing.T, pid int, seq uint32, rest string) {
		name := labPrefix(pid, seq) + "-" + rest
		got := parseLabPrefix(name)
		for _, p := range got {
			if p <= 0 {
				t.Fatalf("parseLabPrefix(%q) = %v: pid <= 0", name, got)
			}
			if !strings.HasPrefix(name, "pf"+strconv.FormatInt(int64(p), 36)+"x") {
				t.Fatalf("parseLabPrefix(%q) = %v: %d is not a prefix", name, got, p)
			}
		}
		if ok := pid > 0 && pid < 1<<31; ok != slices.Contains(got, pid) {
			t.Fatalf("parseLabPrefix(%q) = %v, pid %d (valid %v)", name, got, pid, ok)
		}
		// Any string: no panic, pids positive.
		for _, p := range parseLabPrefix(rest) {
			if p <= 0 {
				t.Fatalf("parseLabPrefix(%q): pid %d", rest, p)
			}
		}
	})
}

func TestStaleNames(t *testing.T) {
	const own = 500
	running := func(pid int) bool { return pid == 1 || pid == 7 }
	names := []string{
		labPrefix(own, 1) + "-a",  // this process
		labPrefix(1, 1) + "-a",    // running
		labPrefix(99, 4) + "-lan", // gone
		labPrefix(98, 1) + "-b",   // gone
		"pf7x1x1-a",               // pid 7 (running) or pid "7x1" (gone): kept
		"pfax1x1-a",               // pid "a" or "ax1", both gone
		"vmlab99-1",               // not a lab's
		"other",
	}
	got := staleNames(names, own, false, running)
	want := []string{labPrefix(99, 4) + "-lan", labPrefix(98, 1) + "-b", "pfax1x1-a"}
	if !slices.Equal(got, want) {
		t.Errorf("staleNames = %v, want %v", got, want)
	}
	got = staleNames(names, own, true, running)
	want = append([]string{labPrefix(own, 1) + "-a"}, want...)
	if !slices.Equal(got, want) {
		t.Errorf("staleNames(ownIsStale) = %v, want %v", got, want)
	}
}

// TestIntegrationRemoveStale leaves namespaces named as labs of a dead
// process, of pid 1 and of this process, and checks that only the first is
// removed.
func TestIntegrationRemoveStale(t *testing.T) {
	RequireRoot(t)
	RequireCmd(t, "ip")
	// A dead pid whose lab name reads one way only: a name like
	// pf4x6x1 could also be pid 4's, and a name is kept while any of its
	// pids runs.
	var stale string
	for try := 0; try < 100 && stale == ""; try++ {
		dead := exec.Command("true")
		if err := dead.Run(); err != nil {
			t.Fatal(err)
		}
		n := labPrefix(dead.Process.Pid, 1) + "-stale"
		if len(parseLabPrefix(n)) == 1 && !pidRunning(dead.Process.Pid) {
			stale = n
		}
	}
	if stale == "" {
		t.Skip("no dead pid with an unambiguous lab name found")
	}
	keep := []string{labPrefix(1, 1) + "-stalekeep" + strconv.Itoa(os.Getpid()), labPrefix(os.Getpid(), 1<<30) + "-stalekeep"}
	for _, n := range append([]string{stale}, keep...) {
		if _, err := run(nil, "ip", "netns", "add", n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := os.Stat(netnsDir + "/" + n); err == nil {
				_, _ = run(nil, "ip", "netns", "del", n)
			}
		})
	}
	removed := removeStale(netnsDir, false)
	if !slices.Contains(removed, stale) {
		t.Errorf("removeStale = %v, want %s among them", removed, stale)
	}
	if _, err := os.Stat(netnsDir + "/" + stale); err == nil {
		t.Errorf("%s still exists", stale)
	}
	for _, n := range keep {
		if slices.Contains(removed, n) {
			t.Errorf("removeStale removed %s", n)
		}
		if _, err := os.Stat(netnsDir + "/" + n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}
