package abvm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/bench/vmlab"
)

// TestVMCommands: the VM's commands are as they were before the box
// could be a namespace of the host.
func TestVMCommands(t *testing.T) {
	b := &bench{paths: vmPaths}
	if got, want := b.paths.startPppfwd(b.paths.dir, false), "PPPFWD=/usr/local/sbin/pppfwd sh /etc/ab/run-ab.sh pppfwd >/tmp/pppfwd.log 2>&1 &"; got != want {
		t.Errorf("start\n got %q\nwant %q", got, want)
	}
	want := "kill $(pidof pppfwd); i=0; while pidof pppfwd >/dev/null; do i=$((i+1)); [ $i -le 100 ] || exit 1; sleep 0.1; done; " +
		"PPPFWD=/usr/local/sbin/pppfwd sh /etc/abs/run-ab.sh pppfwd >>/tmp/pppfwd.log 2>&1 & sleep 1; tail -n 5 /tmp/pppfwd.log"
	if got := b.shapeCmd("pppfwd"); got != want {
		t.Errorf("shape pppfwd\n got %q\nwant %q", got, want)
	}
	if got, want := b.shapeCmd("kernel"), "sh /etc/abs/tc-cake.sh || sh /etc/abs/tc-fq_codel.sh"; got != want {
		t.Errorf("shape kernel %q", got)
	}
	if got, want := b.paths.status(), "/usr/local/sbin/pppfwd status"; got != want {
		t.Errorf("status %q", got)
	}
	if got := b.paths.adjust("pppfwd.conf", "x\n"); got != "x\n" {
		t.Errorf("the VM's pppfwd.conf changed: %q", got)
	}
}

// TestHostCommands: a host box keeps pppfwd's pid, control socket,
// output and pppd's log in its own directory, and stops only the pppfwd
// it started.
func TestHostCommands(t *testing.T) {
	b := &bench{o: Options{Workers: 1, VCPUs: 2}, paths: hostPaths("/tmp/abx", "/opt/pppfwd")}
	if got, want := b.paths.startPppfwd(b.paths.dir, false),
		"PPPFWD=/opt/pppfwd sh /tmp/abx/ab/run-ab.sh pppfwd >/tmp/abx/pppfwd.log 2>&1 & echo $! >/tmp/abx/pppfwd.pid;"; got != want {
		t.Errorf("start\n got %q\nwant %q", got, want)
	}
	sh := b.shapeCmd("pppfwd")
	if strings.Contains(sh, "pidof") || !strings.HasPrefix(sh, "kill $(cat /tmp/abx/pppfwd.pid); i=0; while kill -0 $(cat /tmp/abx/pppfwd.pid) 2>/dev/null;") ||
		!strings.Contains(sh, "/tmp/abx/abs/run-ab.sh pppfwd >>/tmp/abx/pppfwd.log 2>&1 & echo $! >/tmp/abx/pppfwd.pid; sleep 1;") {
		t.Errorf("shape pppfwd: %q", sh)
	}
	if got := b.paths.status(); got != "/opt/pppfwd status -s /tmp/abx/pppfwd.sock" {
		t.Errorf("status %q", got)
	}
	files, err := b.guestFiles(b.paths.dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Path] = true
		body := string(f.Body)
		switch f.Path {
		case "/tmp/abx/ab/pppfwd.conf":
			if !strings.HasSuffix(body, "\ncontrol.socket /tmp/abx/pppfwd.sock\n") || !strings.Contains(body, "\nlan.interface eth0\n") {
				t.Errorf("pppfwd.conf:\n%s", body)
			}
		case "/tmp/abx/ab/pppd.peer":
			if !strings.HasSuffix(body, "\nlogfile /tmp/abx/pppd.log\n") || !strings.Contains(body, "\nnic-eth1\n") {
				t.Errorf("pppd.peer:\n%s", body)
			}
		}
	}
	if !seen["/tmp/abx/ab/pppfwd.conf"] || !seen["/tmp/abx/ab/run-ab.sh"] {
		t.Errorf("files %v", seen)
	}
}

func TestPickCPUs(t *testing.T) {
	all := []vmlab.CPUTimes{{CPU: 0, User: 1}, {CPU: 1, User: 2}, {CPU: 3, User: 4}}
	got, err := pickCPUs(all, []int{3, 0})
	if err != nil || len(got) != 2 || got[0].User != 4 || got[1].User != 1 {
		t.Fatalf("pickCPUs = %+v, %v", got, err)
	}
	if _, err := pickCPUs(all, []int{2}); err == nil {
		t.Fatal("an offline CPU accepted")
	}
}

func TestHostCPUs(t *testing.T) {
	all, err := hostStat()
	if err != nil {
		t.Fatal(err)
	}
	cpus, pin, gen, err := hostCPUs(nil)
	if err != nil || pin || gen != -1 || len(cpus) != len(all) || cpus[0] != all[0].CPU {
		t.Fatalf("all CPUs: %v pin %v gen %d, %v", cpus, pin, gen, err)
	}
	last := all[len(all)-1].CPU
	cpus, pin, gen, err = hostCPUs([]int{last})
	if err != nil || !pin || len(cpus) != 1 || cpus[0] != last {
		t.Fatalf("CPU %d: %v pin %v, %v", last, cpus, pin, err)
	}
	if want := -1; len(all) > 1 {
		if gen != all[0].CPU {
			t.Errorf("generator on %d, want %d", gen, all[0].CPU)
		}
	} else if gen != want {
		t.Errorf("generator on %d with one CPU", gen)
	}
	for _, bad := range [][]int{{last + 1}, {last, last}} {
		if _, _, _, err := hostCPUs(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// statBox is a box whose /proc/stat advances by a scripted busy share per
// read pair: busy[i] for the i-th window, the last one ever after.
type statBox struct {
	box
	busy  []float64
	reads int
	cpu   [2]vmlab.CPUTimes
}

func (s *statBox) ProcStat(context.Context) ([]vmlab.CPUTimes, error) {
	if s.reads%2 == 1 { // the window's end: advance each core by 1000 jiffies
		w := min(s.reads/2, len(s.busy)-1)
		for i := range s.cpu {
			busy := uint64(1000 * s.busy[w])
			s.cpu[i].User += busy
			s.cpu[i].Idle += 1000 - busy
		}
	}
	s.reads++
	return []vmlab.CPUTimes{s.cpu[0], s.cpu[1]}, nil
}

// TestSettle: a ladder starts once every core is quiet over a window, and
// gives up (saying so) when they stay busy.
func TestSettle(t *testing.T) {
	b := &bench{}
	sb := &statBox{busy: []float64{0.4, 0.2, 0.08}}
	busy, ok, err := b.settle(context.Background(), sb, 10*time.Millisecond, settleMax)
	if err != nil || !ok || sb.reads != 6 || busy[0] > settleBusy || busy[1] > settleBusy {
		t.Fatalf("settle: %v %v %v after %d reads", busy, ok, err, sb.reads)
	}
	sb = &statBox{busy: []float64{0.5}}
	start := time.Now()
	busy, ok, err = b.settle(context.Background(), sb, 10*time.Millisecond, 200*time.Millisecond)
	if err != nil || ok || busy[0] < 0.49 || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("busy box: %v %v %v after %v", busy, ok, err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok, err := b.settle(ctx, &statBox{busy: []float64{0.5}}, settleWindow, settleMax); ok || err == nil {
		t.Fatalf("cancelled: %v %v", ok, err)
	}
}
