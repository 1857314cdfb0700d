package share

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/bench/lab"
	"github.com/pppfwd/pppfwd/dataplane"
)

// Options configure a run.
type Options struct {
	Workers  int                  // router workers (default 1)
	Polls    []dataplane.PollMode // default adaptive and busy
	Duration time.Duration        // each measurement (default 5 s)
	Hogs     int                  // busy-loop processes (default one per CPU)
	Logf     func(string, ...any)
}

// Result is one policy's figures.
type Result struct {
	Bench   string  `json:"bench"`
	Poll    string  `json:"poll"`
	Workers int     `json:"workers"`
	Hogs    int     `json:"hogs"`
	Seconds float64 `json:"seconds"`
	// TCP goodput through the router alone and with the busy loops.
	TCPAloneMbps  float64 `json:"tcp_alone_mbps"`
	TCPSharedMbps float64 `json:"tcp_shared_mbps"`
	// HogAlone and HogShared are the CPUs the busy loops got (1.0: one
	// CPU) alone and while the router forwarded the bulk TCP.
	HogAlone  float64 `json:"hog_alone_cpus"`
	HogShared float64 `json:"hog_shared_cpus"`
	// TCPKept and HogKept are shared over alone.
	TCPKept float64 `json:"tcp_kept"`
	HogKept float64 `json:"hog_kept"`
	Kernel  string  `json:"kernel"`
}

// sinkPort is the Internet host's TCP discard port.
const sinkPort = 9

// Run measures each policy in o.Polls.
func Run(o Options) ([]Result, error) {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if len(o.Polls) == 0 {
		o.Polls = []dataplane.PollMode{dataplane.PollAdaptive, dataplane.PollBusy}
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Hogs <= 0 {
		o.Hogs = runtime.NumCPU()
	}
	hogAlone, err := hogShare(o.Hogs, o.Duration, nil)
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, mode := range o.Polls {
		r, err := runPoll(o, mode)
		if err != nil {
			return nil, err
		}
		r.HogAlone = hogAlone
		r.HogKept = r.HogShared / hogAlone
		out = append(out, *r)
	}
	return out, nil
}

func runPoll(o Options, mode dataplane.PollMode) (*Result, error) {
	l, err := lab.Start(lab.Options{Workers: o.Workers, Poll: mode, EchoInterval: 10 * time.Second, Logf: o.Logf})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if err := l.WaitUp(30 * time.Second); err != nil {
		return nil, err
	}
	var ln net.Listener
	if err := l.Inet.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(lab.RemoteAddr, sinkPort).String())
		return err
	}); err != nil {
		return nil, err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	r := &Result{Bench: "share", Poll: mode.String(), Workers: o.Workers, Hogs: o.Hogs, Seconds: o.Duration.Seconds(),
		Kernel: "none here: this kernel has no PPPoE (bench ab runs the kernel path in the VM)"}
	if _, err := bulk(l, time.Second); err != nil { // warm up: ARP, NAT, TCP windows
		return nil, err
	}
	if r.TCPAloneMbps, err = bulk(l, o.Duration); err != nil {
		return nil, err
	}
	var shared float64
	r.HogShared, err = hogShare(o.Hogs, o.Duration, func(d time.Duration) error {
		shared, err = bulk(l, d)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.TCPSharedMbps = shared
	if r.TCPAloneMbps > 0 {
		r.TCPKept = r.TCPSharedMbps / r.TCPAloneMbps
	}
	return r, nil
}

// bulk sends TCP from the LAN host to the sink for d and returns the
// goodput in Mbit/s.
func bulk(l *lab.Lab, d time.Duration) (float64, error) {
	var c net.Conn
	if err := l.LAN.Do(func() (err error) {
		c, err = net.DialTimeout("tcp4", netip.AddrPortFrom(lab.RemoteAddr, sinkPort).String(), 5*time.Second)
		return err
	}); err != nil {
		return 0, fmt.Errorf("share: dial the sink: %w", err)
	}
	defer c.Close()
	buf := make([]byte, 64<<10)
	var sent atomic.Int64
	t0 := time.Now()
	_ = c.SetWriteDeadline(t0.Add(d))
	for {
		n, err := c.Write(buf)
		sent.Add(int64(n))
		if err != nil {
			break
		}
	}
	return float64(sent.Load()) * 8 / time.Since(t0).Seconds() / 1e6, nil
}

// hogShare runs n busy-loop processes for d (while during, if set, runs)
// and returns the CPUs they got together.
func hogShare(n int, d time.Duration, during func(time.Duration) error) (float64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cmds []*exec.Cmd
	for i := 0; i < n; i++ {
		c := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			return 0, err
		}
		cmds = append(cmds, c)
	}
	defer func() {
		cancel()
		for _, c := range cmds {
			_ = c.Wait()
		}
	}()
	time.Sleep(200 * time.Millisecond)
	cpu0, t0 := hogCPU(cmds), time.Now()
	var err error
	if during != nil {
		err = during(d)
	} else {
		time.Sleep(d)
	}
	return (hogCPU(cmds) - cpu0).Seconds() / time.Since(t0).Seconds(), err
}

// hogCPU sums the processes' user and system time from /proc.
func hogCPU(cmds []*exec.Cmd) time.Duration {
	var ticks int64
	for _, c := range cmds {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which ends with ')'): utime is
		// the 12th, stime the 13th.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + st
		}
	}
	return time.Duration(ticks) * time.Second / clkTck
}

// clkTck is USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clkTck = 100
