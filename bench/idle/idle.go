package idle

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pppfwd/pppfwd/bench/lab"
	"github.com/pppfwd/pppfwd/dataplane"
)

// Goals of the idle router (issue of record: an idle router costs
// nothing).
const (
	GoalCPUShare = 0.005 // of one core
	GoalWakeups  = 200   // context switches per second
)

// Options configure a run.
type Options struct {
	Backend  string // afpacket (default) or afxdp
	Workers  int    // default 1
	Poll     dataplane.PollMode
	Duration time.Duration // measured window (default 60 s)
	// StraceFor is the window in which system calls are counted with
	// strace -c -f, after the measured one (tracing perturbs what it
	// traces); 0: 10 s; negative: not counted. Skipped without strace.
	StraceFor time.Duration
	// EchoInterval is the router's LCP keepalive (default 10 s, the
	// client's own default).
	EchoInterval time.Duration
	// Rate, when above 0, is a light load during the measured window (and
	// the strace window): the system ping in the LAN namespace sends this
	// many echo requests a second to the Internet host through the router.
	// The idle goals apply to Rate 0 only; a light load reports the cost
	// of the traffic it brings (its sender runs in its own process).
	Rate float64
	Logf func(string, ...any)
}

// Result is one run's figures. The process measured holds the router and
// the lab's access concentrator and upstream forwarder (one process):
// the figures are an upper bound for the router alone.
type Result struct {
	Bench        string  `json:"bench"`
	Backend      string  `json:"backend"`
	Workers      int     `json:"workers"`
	Poll         string  `json:"poll"`
	Seconds      float64 `json:"seconds"`
	EchoInterval float64 `json:"echo_interval_s"`
	Scope        string  `json:"scope"`
	// CPUShare is user+system CPU time over wall time (1.0: one core).
	CPUShare  float64 `json:"cpu_share"`
	UserShare float64 `json:"user_share"`
	SysShare  float64 `json:"sys_share"`
	// Wakeups are voluntary plus involuntary context switches per second.
	Wakeups     float64 `json:"wakeups_per_s"`
	Voluntary   float64 `json:"voluntary_per_s"`
	Involuntary float64 `json:"involuntary_per_s"`
	// Syscalls per second from strace -c -f over StraceSeconds (0 and
	// SyscallsSkipped when not counted), with the top calls.
	Syscalls        float64            `json:"syscalls_per_s"`
	StraceSeconds   float64            `json:"strace_s,omitempty"`
	SyscallsTop     map[string]float64 `json:"syscalls_top,omitempty"`
	SyscallsSkipped string             `json:"syscalls_skipped,omitempty"`
	// RatePPS is Options.Rate; Echoes how many of the ping's requests
	// were answered (both directions crossed the router) out of Sent.
	RatePPS      float64 `json:"rate_pps,omitempty"`
	Sent         int     `json:"sent,omitempty"`
	Echoes       int     `json:"echoes,omitempty"`
	SessionUp    bool    `json:"session_up"`
	GoalCPUShare float64 `json:"goal_cpu_share"`
	GoalWakeups  float64 `json:"goal_wakeups_per_s"`
	Pass         bool    `json:"pass"`
}

// Run starts the lab, waits for the session, lets it settle, and
// measures the idle process.
func Run(o Options) (*Result, error) {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Backend == "" {
		o.Backend = "afpacket"
	}
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if o.StraceFor == 0 {
		o.StraceFor = 10 * time.Second
	}
	if o.EchoInterval == 0 {
		o.EchoInterval = 10 * time.Second
	}
	l, err := lab.Start(lab.Options{Backend: o.Backend, Workers: o.Workers, Poll: o.Poll, EchoInterval: o.EchoInterval, Logf: o.Logf})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if err := l.WaitUp(30 * time.Second); err != nil {
		return nil, err
	}
	// Settle: DHCPv6-PD, router advertisements and the first echoes.
	time.Sleep(3 * time.Second)
	r := &Result{Bench: "idle", Backend: o.Backend, Workers: o.Workers, Poll: o.Poll.String(),
		EchoInterval: o.EchoInterval.Seconds(), GoalCPUShare: GoalCPUShare, GoalWakeups: GoalWakeups,
		Scope: "process: the router, the lab's access concentrator and its upstream forwarder"}
	var load *lightLoad
	if o.Rate > 0 {
		r.RatePPS = o.Rate
		if load, err = startLoad(l, o.Rate); err != nil {
			return nil, err
		}
		defer load.stop()
		time.Sleep(time.Second) // ping's start-up and the first flows' NAT entries
	}
	u0, t0 := rusage(), time.Now()
	time.Sleep(o.Duration)
	u1, t1 := rusage(), time.Now()
	wall := t1.Sub(t0).Seconds()
	r.Seconds = wall
	r.UserShare = (u1.user - u0.user).Seconds() / wall
	r.SysShare = (u1.sys - u0.sys).Seconds() / wall
	r.CPUShare = r.UserShare + r.SysShare
	r.Voluntary = float64(u1.nvcsw-u0.nvcsw) / wall
	r.Involuntary = float64(u1.nivcsw-u0.nivcsw) / wall
	r.Wakeups = r.Voluntary + r.Involuntary
	if o.StraceFor > 0 {
		r.Syscalls, r.SyscallsTop, err = straceCount(o.StraceFor)
		if err != nil {
			r.SyscallsSkipped = err.Error()
		} else {
			r.StraceSeconds = o.StraceFor.Seconds()
		}
	} else {
		r.SyscallsSkipped = "not asked for"
	}
	if load != nil {
		if r.Sent, r.Echoes, err = load.stop(); err != nil {
			return nil, err
		}
	}
	r.SessionUp = l.WaitUp(time.Second) == nil
	if o.Rate > 0 {
		// The goals are an idle router's; a loaded one passes when its
		// traffic crossed it.
		r.Pass = r.SessionUp && r.Sent > 0 && r.Echoes >= r.Sent*99/100
		r.GoalCPUShare, r.GoalWakeups = 0, 0
	} else {
		r.Pass = r.SessionUp && r.CPUShare <= GoalCPUShare && r.Wakeups <= GoalWakeups
	}
	return r, nil
}

// lightLoad is the system ping sending through the router.
type lightLoad struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	done   bool
	sent   int
	echoes int
	err    error
}

// startLoad starts ping in the LAN namespace at rate requests a second to
// the Internet host.
func startLoad(l *lab.Lab, rate float64) (*lightLoad, error) {
	if rate > 5000 {
		return nil, fmt.Errorf("idle: rate %.0f/s: a light load is at most 5000/s", rate)
	}
	ld := &lightLoad{}
	ld.cmd = l.LAN.Command(context.Background(), "ping", "-q", "-n", "-i", strconv.FormatFloat(1/rate, 'f', 6, 64), lab.RemoteAddr.String())
	ld.cmd.Stdout, ld.cmd.Stderr = &ld.out, &ld.out
	if err := ld.cmd.Start(); err != nil {
		return nil, fmt.Errorf("idle: ping: %w", err)
	}
	return ld, nil
}

// stop ends ping (once) and returns what it sent and got back.
func (ld *lightLoad) stop() (sent, echoes int, err error) {
	if !ld.done {
		ld.done = true
		_ = ld.cmd.Process.Signal(syscall.SIGINT)
		_ = ld.cmd.Wait()
		ld.sent, ld.echoes, ld.err = parsePing(ld.out.String())
	}
	return ld.sent, ld.echoes, ld.err
}

// parsePing reads ping's summary line ("N packets transmitted, M
// received, ...").
func parsePing(out string) (sent, received int, err error) {
	for _, line := range strings.Split(out, "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "%d packets transmitted, %d received", &sent, &received); err == nil {
			return sent, received, nil
		}
	}
	return 0, 0, fmt.Errorf("idle: no summary in ping's output: %q", out)
}

type usage struct {
	user, sys     time.Duration
	nvcsw, nivcsw int64
}

// rusage reads the process's CPU time and context switches (all threads,
// exited ones included).
func rusage() usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return usage{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano()),
		nvcsw: ru.Nvcsw, nivcsw: ru.Nivcsw}
}

// straceCount counts this process's system calls (every thread) for d
// with strace -c -f and returns calls per second and the top five.
func straceCount(d time.Duration) (float64, map[string]float64, error) {
	path, err := exec.LookPath("strace")
	if err != nil {
		return 0, nil, errors.New("strace not installed")
	}
	out, err := os.CreateTemp("", "pppfwd-idle-strace")
	if err != nil {
		return 0, nil, err
	}
	defer os.Remove(out.Name())
	out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-c", "-f", "-q", "-o", out.Name(), "-p", strconv.Itoa(os.Getpid()))
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	time.Sleep(d)
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	b, err := os.ReadFile(out.Name())
	if err != nil {
		return 0, nil, err
	}
	total, top, err := parseStrace(b)
	if err != nil {
		return 0, nil, err
	}
	sec := d.Seconds()
	for k, v := range top {
		top[k] = v / sec
	}
	return float64(total) / sec, top, nil
}

// parseStrace reads strace -c's summary table: the total of the calls
// column and the five syscalls with the most calls.
func parseStrace(b []byte) (int64, map[string]float64, error) {
	type row struct {
		name  string
		calls int64
	}
	var rows []row
	var total int64 = -1
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || strings.HasPrefix(f[0], "%") || strings.HasPrefix(f[0], "-") {
			continue
		}
		calls, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			continue
		}
		name := f[len(f)-1]
		if name == "total" {
			total = calls
			continue
		}
		rows = append(rows, row{name, calls})
	}
	if total < 0 {
		return 0, nil, fmt.Errorf("no total in strace's summary (%d bytes)", len(b))
	}
	top := map[string]float64{}
	for i := 0; i < 5 && len(rows) > 0; i++ {
		best := 0
		for j := range rows {
			if rows[j].calls > rows[best].calls {
				best = j
			}
		}
		top[rows[best].name] = float64(rows[best].calls)
		rows = append(rows[:best], rows[best+1:]...)
	}
	return total, top, nil
}
