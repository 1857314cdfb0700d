package abvm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pppfwd/pppfwd/bench/ab"
	"github.com/pppfwd/pppfwd/bench/iobench"
	"github.com/pppfwd/pppfwd/bench/vmlab"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/internal/rawsock"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/afpacket"
	"github.com/pppfwd/pppfwd/pppoe"
)

// The lab's fixed parts.
const (
	lanTap, wanTap = "ablan", "abwan"
	guestLAN       = "eth0" // on lanTap
	guestWAN       = "eth1" // on wanTap
	acUser, acPass = "ab", "ab-secret"
	guestDir       = "/etc/ab"  // the unshaped configuration
	guestShaped    = "/etc/abs" // the shaped one
	guestBinary    = "/usr/local/sbin/pppfwd"
	probeEvery     = 10 * time.Millisecond
	probeTimeout   = time.Second
	maxLadder      = 12
)

var (
	acAddr   = netip.MustParseAddr("100.64.0.1")
	poolAddr = netip.MustParseAddr("100.64.0.2")
	lanNet   = netip.MustParsePrefix("192.168.0.0/24") // pipeline.LANNet's hosts
	routerIP = netip.MustParseAddr("192.168.0.1")
)

func u32(a netip.Addr) uint32 { return binary.BigEndian.Uint32(a.AsSlice()) }

// Available reports what the live A/B with the router under test in the
// lab VM (Where "vm") lacks here.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("abvm: needs root (namespaces, taps, qemu)")
	}
	return vmlab.Available()
}

// HostAvailable reports what the live A/B with the router under test in
// a namespace of this host (Where "host") lacks here for paths: the
// kernel path needs PPPoE in this host's kernel (see kernelPPPoE).
func HostAvailable(paths []string) error {
	if slices.Contains(paths, "kernel") {
		if err := kernelPPPoE(hostProbes); err != nil {
			return err
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("abvm: needs root (network namespaces, veth)")
	}
	for _, c := range []string{"ip", "taskset"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("abvm: %s not found: %w", c, err)
		}
	}
	return nil
}

// hostProbes ask this host.
var hostProbes = pppoeProbes{
	exists: func(path string) bool { _, err := os.Stat(path); return err == nil },
	lookPath: func(name string) error {
		_, err := exec.LookPath(name)
		return err
	},
	modprobe: func(module string) error {
		out, err := exec.Command("modprobe", module).CombinedOutput()
		if err != nil {
			if s := strings.TrimSpace(string(out)); s != "" {
				return fmt.Errorf("%v: %s", err, s)
			}
		}
		return err
	},
	glob: func(pattern string) []string {
		m, _ := filepath.Glob(pattern)
		return m
	},
}

// hostCPUs resolves Options.HostCPUs against this host's CPUs: the
// router's CPUs, whether to pin to them, and the generator's CPU (-1:
// not pinned).
func hostCPUs(want []int) (cpus []int, pin bool, gen int, err error) {
	all, err := hostStat()
	if err != nil {
		return nil, false, -1, err
	}
	var online []int
	for _, c := range all {
		online = append(online, c.CPU)
	}
	if len(want) == 0 {
		return online, false, -1, nil
	}
	for i, c := range want {
		if !slices.Contains(online, c) {
			return nil, false, -1, fmt.Errorf("abvm: host CPU %d: allowed: this host's, %s", c, cpuList(online))
		}
		if slices.Contains(want[:i], c) {
			return nil, false, -1, fmt.Errorf("abvm: host CPU %d given twice", c)
		}
	}
	gen = -1
	for _, c := range online {
		if !slices.Contains(want, c) {
			gen = c
			break
		}
	}
	return want, true, gen, nil
}

// Run runs the A/B and returns its report.
func Run(ctx context.Context, o Options) (*Report, error) {
	workers := o.Workers
	if err := o.defaults(); err != nil {
		return nil, err
	}
	b := &bench{o: o, paths: vmPaths, genCPU: -1}
	if o.Where == "host" {
		if err := HostAvailable(o.Paths); err != nil {
			return nil, err
		}
		var err error
		if b.cpus, b.pin, b.genCPU, err = hostCPUs(o.HostCPUs); err != nil {
			return nil, err
		}
		o.VCPUs = len(b.cpus)
		if workers <= 0 {
			o.Workers = o.VCPUs
		}
		b.o = o
		root, err := os.MkdirTemp("", "pppfwd-ab-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(root)
		b.paths = hostPaths(root, o.Binary)
	} else if err := Available(); err != nil {
		return nil, err
	}
	if o.TCP {
		if err := checkIperf3(); err != nil {
			return nil, err
		}
	}
	lab := nettest.New()
	defer lab.Close()
	ns, err := lab.NewNS("ab")
	if err != nil {
		return nil, err
	}
	if err := ns.DisableIPv6(); err != nil {
		return nil, err
	}
	b.ns = ns
	if o.TCP {
		if b.inet, err = startInet(lab); err != nil {
			return nil, fmt.Errorf("the TCP step's Internet side: %w", err)
		}
		defer b.inet.close()
	}
	rep := &Report{Bench: "ab", Where: o.Where, Emulated: o.Where == "vm", Paths: o.Paths, CPUs: b.cpus, VCPUs: o.VCPUs, Runs: o.Runs, Size: o.Size, Direction: o.Direction,
		Flows: o.Flows, Workers: o.Workers, Backend: "afpacket"}
	var kRuns, pRuns, kShaped, pShaped [][]Step
	var kTCP, pTCP [][]TCPStep
	ladders := map[string][]float64{}
	for run := 0; run < o.Runs; run++ {
		for _, path := range o.Paths {
			rates := o.Rates
			if rates == nil {
				rates = ladders[path] // nil in the first run: grow it
			}
			res, err := b.runPath(ctx, run, path, rates)
			if err != nil {
				return nil, fmt.Errorf("run %d, %s path: %w", run+1, path, err)
			}
			if ladders[path] == nil {
				for _, s := range res.steps {
					ladders[path] = append(ladders[path], s.OfferedPPS)
				}
			}
			if path == "kernel" {
				kRuns, kShaped = append(kRuns, res.steps), appendNonNil(kShaped, res.shaped)
				kTCP = append(kTCP, res.tcp)
			} else {
				pRuns, pShaped = append(pRuns, res.steps), appendNonNil(pShaped, res.shaped)
				pTCP = append(pTCP, res.tcp)
			}
		}
	}
	rep.ShapeBps = b.shapeBps
	rep.Kernel, rep.PPPFWD = summarize(kRuns, kShaped), summarize(pRuns, pShaped)
	rep.Kernel.TCP, rep.PPPFWD.TCP = summarizeTCP(kTCP), summarizeTCP(pTCP)
	if o.TCP {
		rep.TCPSeconds = o.TCPDuration.Seconds()
	}
	rep.finish()
	if o.Where == "vm" {
		rep.Notes = append(rep.Notes,
			"the router under test runs in a qemu TCG VM; the generator, the access concentrator and the probe run natively on the host side of its taps",
			"a step whose sent_pct is below 99 or whose gen_cpu_share is near 1 was limited by the host, not the router")
		if o.TCP {
			rep.Notes = append(rep.Notes, "the TCP step's iperf3 client and server and the relay between the WAN tap and the server's namespace run on the host too: their CPU shows in host_core_busy")
		}
	} else {
		rep.Notes = append(rep.Notes,
			"the router under test runs in a network namespace of this host, on veth pairs, its ports' receive work steered to CPUs "+cpuList(b.cpus)+
				" (RPS); per_core_busy are those CPUs' shares, from this host's /proc/stat",
			"a step whose sent_pct is below 99 or whose gen_cpu_share is near 1 was limited by the generator, not the router")
		if b.genCPU >= 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("the router's commands ran pinned to its CPUs (taskset), the generator on CPU %d", b.genCPU))
		} else {
			rep.Notes = append(rep.Notes, "the generator, the access concentrator and the probe share the router's CPUs: their work is in per_core_busy too")
		}
	}
	if len(o.Paths) < len(AllPaths) {
		rep.Notes = append(rep.Notes, "only the "+strings.Join(o.Paths, " and ")+" path ran: no ratios")
	}
	return rep, nil
}

func appendNonNil(xs [][]Step, s []Step) [][]Step {
	if s == nil {
		return xs
	}
	return append(xs, s)
}

type bench struct {
	o     Options
	ns    *nettest.NS
	paths boxPaths // where the router under test's files are
	// Where "host": the router's CPUs, whether its commands are pinned
	// to them, and the generator's CPU (-1: not pinned).
	cpus   []int
	pin    bool
	genCPU int
	inet   *inet // the TCP step's Internet side (nil without it)
	// relaySess is the session the TCP step's relay serves (pppfwd's
	// changes when it restarts shaped).
	relaySess atomic.Pointer[pppoe.SessionInfo]
	shapeBps  uint64
}

type pathResult struct {
	steps, shaped []Step
	tcp           []TCPStep // unshaped, then shaped
}

// params are the A/B settings of both paths, shaped at bps (0: off).
func (b *bench) params(bps uint64) ab.Params {
	p := ab.Params{WAN: guestWAN, LAN: guestLAN, User: acUser, Password: acPass,
		LANNet: lanNet, Router: routerIP, Workers: b.o.Workers, CPUs: b.o.VCPUs}
	if bps > 0 {
		p.Shape = ab.Shape{Down: bps, Up: bps}
	}
	return p
}

// files are the A/B's files shaped at bps (0: off), as the box runs them.
func (b *bench) files(bps uint64) ([]ab.File, error) {
	files, err := ab.Files("linux", b.params(bps), "afpacket")
	if err != nil {
		return nil, err
	}
	for i := range files {
		files[i].Body = b.paths.adjust(files[i].Path, files[i].Body)
	}
	return files, nil
}

// guestFiles are the A/B's files for the box under dir.
func (b *bench) guestFiles(dir string, bps uint64) ([]vmlab.ExtraFile, error) {
	files, err := b.files(bps)
	if err != nil {
		return nil, err
	}
	var out []vmlab.ExtraFile
	for _, f := range files {
		out = append(out, vmlab.ExtraFile{Path: filepath.Join(dir, f.Path), Mode: f.Mode, Body: []byte(f.Body)})
	}
	return out, nil
}

// openBox starts the box the router under test runs in, for path, with
// extra files: the lab VM (booted; pppfwd's binary copied into it) or a
// namespace of this host.
func (b *bench) openBox(ctx context.Context, path string, extra []vmlab.ExtraFile) (box, error) {
	o := b.o
	if o.Where == "host" {
		return openHostBox(hostBoxConfig{Lab: b.ns, Root: filepath.Dir(b.paths.dir), Paths: b.paths, Files: extra,
			CPUs: b.cpus, Pin: b.pin, GenCPU: b.genCPU, Kernel: path == "kernel"})
	}
	if path == "pppfwd" {
		extra = append(extra, vmlab.ExtraFile{Path: guestBinary, Mode: 0o755, Src: o.Binary})
	}
	bootCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	vm, err := vmlab.Start(bootCtx, vmlab.Options{Netns: b.ns, NICs: []vmlab.NIC{{Tap: lanTap}, {Tap: wanTap}},
		VCPUs: o.VCPUs, MemoryMB: o.MemoryMB, CacheDir: o.CacheDir, Extra: extra, Logf: o.Logf})
	if err != nil {
		return nil, err
	}
	return vm, nil
}

// runPath starts a box, brings path up in it and runs its steps.
func (b *bench) runPath(ctx context.Context, run int, path string, rates []float64) (*pathResult, error) {
	o := b.o
	extra, err := b.guestFiles(b.paths.dir, 0)
	if err != nil {
		return nil, err
	}
	vm, err := b.openBox(ctx, path, extra)
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	for _, tap := range []string{lanTap, wanTap} {
		if err := b.ns.DisableOffloads(tap); err != nil {
			return nil, err
		}
	}

	actx, acancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { acancel(); wg.Wait() }()
	ac, err := b.startAC(actx, &wg)
	if err != nil {
		return nil, err
	}
	flows := iobench.Flows(o.Flows, 0, 0)
	if err := b.startARP(actx, &wg, flows); err != nil {
		return nil, err
	}

	o.Progress(fmt.Sprintf("run %d/%d: %s path: bringing it up", run+1, o.Runs, path))
	if err := b.bringUp(ctx, vm, path); err != nil {
		return nil, err
	}
	sess, err := waitSession(ctx, ac, 0, 90*time.Second)
	if err != nil {
		out, _ := vm.Run(fmt.Sprintf("tail -n 30 %s; cat %s 2>/dev/null | tail -n 30", b.paths.kernelLog, b.paths.log))
		return nil, fmt.Errorf("%w; guest log:\n%s", err, out)
	}
	o.Logf("%s path: session %#x, address %s", path, sess.ID, ipStr(sess.Addr))

	g, err := b.openGen(flows)
	if err != nil {
		return nil, err
	}
	defer g.close()
	down, err := iobench.Prime(g.a, g.b, g.up, flows, checkUp(flows, sess), iobench.CheckDown(flows), 2*time.Second, 10)
	if err != nil {
		return nil, fmt.Errorf("priming the flows: %w", err)
	}
	g.down = down

	res := &pathResult{}
	if res.steps, err = b.ladder(ctx, vm, g, run, path, "unshaped", rates); err != nil {
		return nil, err
	}
	if o.TCP {
		if err := b.tcpLAN(); err != nil {
			return nil, fmt.Errorf("the TCP step's LAN host: %w", err)
		}
		b.relaySess.Store(&sess)
		if err := b.startRelay(actx, &wg); err != nil {
			return nil, err
		}
		if res.tcp, err = b.tcpSteps(ctx, vm, g, run, path, false); err != nil {
			return nil, err
		}
	}
	if !o.Shape {
		return res, nil
	}
	if b.shapeBps == 0 {
		b.shapeBps = o.ShapeBps
		if b.shapeBps == 0 {
			// A quarter of the first path's peak (the kernel path's
			// unless it is not run), in bits of the frames one
			// direction carries.
			peak := 0.0
			for _, s := range res.steps {
				peak = max(peak, s.Mbps)
			}
			b.shapeBps = max(uint64(peak*1e6/4), ab.MinRate)
		}
	}
	if path == "pppfwd" {
		// No TCP stragglers while the flows are primed again.
		b.relaySess.Store(nil)
	}
	if err := b.shape(vm, path); err != nil {
		return nil, err
	}
	if path == "pppfwd" {
		// pppfwd was restarted shaped: a new session, the flows primed
		// again in it.
		old := sess.ID
		if sess, err = waitSession(ctx, ac, old, 90*time.Second); err != nil {
			out, _ := vm.Run("tail -n 30 " + b.paths.log)
			return nil, fmt.Errorf("shaped: %w; guest log:\n%s", err, out)
		}
		o.Logf("%s path shaped: session %#x, address %s", path, sess.ID, ipStr(sess.Addr))
		g.drain()
		if g.down, err = iobench.Prime(g.a, g.b, g.up, flows, checkUp(flows, sess), iobench.CheckDown(flows), 2*time.Second, 10); err != nil {
			return nil, fmt.Errorf("priming the flows in the shaped session: %w", err)
		}
		b.relaySess.Store(&sess)
	}
	shapedRates := rates
	if shapedRates == nil {
		for _, s := range res.steps {
			shapedRates = append(shapedRates, s.OfferedPPS)
		}
	}
	if res.shaped, err = b.ladder(ctx, vm, g, run, path, "shaped", shapedRates); err != nil {
		return nil, err
	}
	if o.TCP {
		tcp, err := b.tcpSteps(ctx, vm, g, run, path, true)
		if err != nil {
			return nil, err
		}
		res.tcp = append(res.tcp, tcp...)
	}
	return res, nil
}

// bringUp starts the path's router in the box.
func (b *bench) bringUp(ctx context.Context, vm box, path string) error {
	var cmd string
	switch path {
	case "kernel":
		cmd = "sh " + b.paths.dir + "/run-ab.sh kernel"
	case "pppfwd":
		cmd = b.paths.startPppfwd(b.paths.dir, false)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := vm.RunContext(rctx, cmd)
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", cmd, err, out)
	}
	return nil
}

// shape switches the running path to the shaped configuration: the
// kernel path adds its tc shaper; pppfwd, which cannot switch shaping on
// while it runs (a reload only changes the rates), stops (ending its
// session) and starts again with the shaped pppfwd.conf, so the caller
// waits for the new session.
func (b *bench) shape(vm box, path string) error {
	files, err := b.files(b.shapeBps)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := vm.WriteFile(b.paths.shaped+"/"+f.Path, []byte(f.Body), f.Mode); err != nil {
			return err
		}
	}
	cmd := b.shapeCmd(path)
	out, err := vm.Run(cmd)
	if err != nil {
		return fmt.Errorf("shaping the %s path: %w\n%s", path, err, out)
	}
	b.o.Logf("%s path shaped at %d bit/s: %s", path, b.shapeBps, strings.TrimSpace(out))
	return nil
}

// shapeCmd is the command that switches path to the shaped
// configuration.
func (b *bench) shapeCmd(path string) string {
	p := b.paths
	if path == "kernel" {
		return fmt.Sprintf("sh %s/tc-cake.sh || sh %s/tc-fq_codel.sh", p.shaped, p.shaped)
	}
	return p.stopPppfwd() + p.startPppfwd(p.shaped, true) + " sleep 1; tail -n 5 " + p.log
}

// ladder runs the steps at rates, or, with rates nil, from 1000 frames/s
// per direction doubling until the offer is twice the most delivered.
func (b *bench) ladder(ctx context.Context, vm box, g *gen, run int, path, what string, rates []float64) ([]Step, error) {
	if busy, quiet, err := b.settle(ctx, vm, settleWindow, settleMax); err != nil {
		return nil, fmt.Errorf("the router's /proc/stat: %w", err)
	} else if !quiet {
		b.o.Progress(fmt.Sprintf("run %d/%d: %s %s: the router's cores stayed busy (%s) for %v before the first step",
			run+1, b.o.Runs, path, what, pcts(busy), settleMax))
	}
	var steps []Step
	grow := rates == nil
	rate := 1000.0
	for i := 0; ; i++ {
		if !grow {
			if i == len(rates) {
				break
			}
			rate = rates[i]
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := b.step(ctx, vm, g, rate)
		if errors.Is(err, errStalled) {
			b.o.Progress("the generator stalled (the host is overloaded?): repeating the step")
			s, err = b.step(ctx, vm, g, rate)
		}
		if err != nil {
			return nil, err
		}
		steps = append(steps, *s)
		b.o.Progress(fmt.Sprintf("run %d/%d: %s %s: offered %.0f/s per direction ("+b.o.Direction+"), delivered %.0f/s, loss %.1f%%, p99 %.1f ms, cores %s",
			run+1, b.o.Runs, path, what, rate, s.PPS, s.LossPct, s.LatencyP99Ms, pcts(s.PerCoreBusy)))
		if grow {
			peak := 0.0
			dirs := 2.0
			if b.o.Direction != "both" {
				dirs = 1
			}
			for _, x := range steps {
				peak = max(peak, x.PPS/dirs)
			}
			if rate >= 2*peak || len(steps) == maxLadder {
				break
			}
			rate *= 2
		}
	}
	return steps, nil
}

// Settling before a ladder: a path's first step must not measure its
// bring-up (pppd's scripts, the nftables and tc set-up, pppfwd's start,
// the flows' priming), which the router's cores still show for a while
// after the session is up.
// The window is long enough that reading the guest's /proc/stat (a
// command run in the emulated guest) weighs little in it.
const (
	settleBusy   = 0.10 // each core at most this busy over a window
	settleWindow = 2 * time.Second
	settleMax    = 12 * time.Second
)

// settle waits until each of the box's cores is at most settleBusy busy
// over one window, for at most limit; it reports the last window's shares
// and whether they were quiet.
func (b *bench) settle(ctx context.Context, vm box, window, limit time.Duration) ([]float64, bool, error) {
	var busy []float64
	for end := time.Now().Add(limit); time.Now().Before(end); {
		s0, err := vm.ProcStat(ctx)
		if err != nil {
			return nil, false, err
		}
		if !sleepCtx(ctx, window) {
			return nil, false, ctx.Err()
		}
		s1, err := vm.ProcStat(ctx)
		if err != nil {
			return nil, false, err
		}
		busy, _ = coreShares(s0, s1)
		if settled(busy) {
			return busy, true, nil
		}
	}
	return busy, false, nil
}

// settled reports whether every share is at most settleBusy.
func settled(busy []float64) bool {
	for _, x := range busy {
		if x > settleBusy {
			return false
		}
	}
	return len(busy) > 0
}

// step offers rate frames/s each way for a step, with the probe and the
// guest's CPU figures.
func (b *bench) step(ctx context.Context, vm box, g *gen, rate float64) (*Step, error) {
	o := b.o
	load := iobench.Load{A: g.a, B: g.b, Up: g.up, Down: g.down,
		MatchA: skipProbes(iobench.FastMatch([]byte{0x02, 0x60, 0, 0}, hdr.EtherTypeIPv4, o.Flows)),
		MatchB: skipProbes(iobench.FastMatch(nil, hdr.EtherTypePPPoESess, o.Flows)),
		Flows:  o.Flows, Rate: rate, Warmup: o.Warmup, Duration: o.StepDuration, CPU: b.genCPU, Nap: 200 * time.Microsecond}
	dirs := 2.0
	switch o.Direction {
	case "down":
		load.UpRate, dirs = -1, 1
	case "up":
		load.DownRate, dirs = -1, 1
	}

	// The guest's CPU and the probe cover the measured window.
	smp := b.sample(ctx, vm, g, o.Warmup, o.StepDuration)
	var ru0, ru1 syscall.Rusage
	host0, _ := hostStat()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	c, err := load.Run()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	host1, _ := hostStat()
	serr := smp.wait()
	if err != nil {
		return nil, err
	}
	s := &Step{OfferedPPS: rate}
	win := c.Window.Seconds()
	if win <= 0 {
		// One pass of the generator's loop outlasted the window: its
		// thread was descheduled that long.
		return nil, errStalled
	}
	s.UpPPS, s.DownPPS = float64(c.UpWindow)/win, float64(c.DownWindow)/win
	s.PPS = s.UpPPS + s.DownPPS
	upBits, downBits := float64(len(g.up[0])*8), float64(len(g.down[0])*8)
	s.Mbps = (s.UpPPS*upBits + s.DownPPS*downBits) / 1e6
	// Loss is against the offer: a tap the VM does not drain refuses
	// frames (SentPct below 100), and those are the router's loss too.
	s.LossPct = 100 * max(1-s.PPS/(dirs*rate), 0)
	s.SentPct = 100 * float64(c.UpSentWindow+c.DownSentWindow) / (dirs * rate * win)
	if host0 != nil && host1 != nil {
		s.HostCoreBusy, _ = coreShares(host0, host1)
	}
	wall := c.Wall.Seconds()
	s.GenCPUShare = c.GenCPU.Seconds() / wall
	proc := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) - c.GenCPU
	s.HostCPUShare = max(proc.Seconds(), 0) / wall
	if serr != nil {
		return nil, fmt.Errorf("the router's /proc/stat: %w", serr)
	}
	s.PerCoreBusy, s.PerCoreSoftirq, _ = smp.shares()
	if p := smp.probe; p != nil {
		s.Probes, s.ProbesLost = p.sent, p.lost
		s.LatencyP50Ms, s.LatencyP99Ms, s.LatencyMaxMs = p.p50, p.p99, p.max
	}
	return s, nil
}

// sampler measures a window that opens delay after it starts and lasts
// d: the guest's and the host's /proc/stat at both ends, and the probe
// throughout.
type sampler struct {
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	guest, host [2][]vmlab.CPUTimes
	err         error // the guest's /proc/stat
	probe       *probeResult
}

func (b *bench) sample(ctx context.Context, vm box, g *gen, delay, d time.Duration) *sampler {
	s := &sampler{}
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if !sleepCtx(ctx, delay) {
			return
		}
		for i := range s.guest {
			s.host[i], _ = hostStat()
			if s.guest[i], s.err = vm.ProcStat(ctx); s.err != nil {
				return
			}
			if i == 0 && !sleepCtx(ctx, d) {
				return
			}
		}
	}()
	go func() {
		defer s.wg.Done()
		if sleepCtx(ctx, delay) {
			s.probe = g.probe(ctx, d)
		}
	}()
	return s
}

// wait waits for the window's end and returns the guest's /proc/stat
// error, if any.
func (s *sampler) wait() error {
	s.wg.Wait()
	s.cancel()
	return s.err
}

// shares returns each vCPU's busy and softirq shares and each host
// CPU's busy share over the window (nil when a snapshot is missing).
func (s *sampler) shares() (busy, softirq, host []float64) {
	if s.guest[0] != nil && s.guest[1] != nil {
		busy, softirq = coreShares(s.guest[0], s.guest[1])
	}
	if s.host[0] != nil && s.host[1] != nil {
		host, _ = coreShares(s.host[0], s.host[1])
	}
	return busy, softirq, host
}

// sleepCtx sleeps d unless ctx ends first (false then).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// errStalled: the generator was descheduled for longer than a step's
// window, so the step measured nothing.
var errStalled = errors.New("abvm: the generator stalled for longer than the step's window: the host is overloaded")

// hostStat reads this machine's /proc/stat.
func hostStat() ([]vmlab.CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	return vmlab.ParseProcStat(string(b))
}

// coreShares returns each CPU's busy and softirq shares between two
// /proc/stat snapshots.
func coreShares(a, b []vmlab.CPUTimes) (busy, softirq []float64) {
	for i := 0; i < len(a) && i < len(b); i++ {
		d := b[i].Sub(a[i])
		t := float64(d.Total())
		if t == 0 {
			busy, softirq = append(busy, 0), append(softirq, 0)
			continue
		}
		busy, softirq = append(busy, float64(d.Busy())/t), append(softirq, float64(d.SoftIRQ)/t)
	}
	return busy, softirq
}

// checkUp: the uplink left in the session, from its address, TTL 63.
func checkUp(flows []iobench.Flow, s pppoe.SessionInfo) iobench.Check {
	return func(i int, p iobench.Packet) error {
		f := flows[i]
		if !p.PPPoE || p.Session != s.ID {
			return fmt.Errorf("flow %d: not in session %#x (pppoe %v, session %#x)", i, s.ID, p.PPPoE, p.Session)
		}
		if p.Src != s.Addr || p.Dst != f.Remote || p.Proto != f.Proto || p.DstPort != f.DstPort || p.TTL != 63 {
			return fmt.Errorf("flow %d: uplink %s -> %s:%d proto %d TTL %d, want %s -> %s:%d proto %d TTL 63",
				i, ipStr(p.Src), ipStr(p.Dst), p.DstPort, p.Proto, p.TTL, ipStr(s.Addr), ipStr(f.Remote), f.DstPort, f.Proto)
		}
		return nil
	}
}

func ipStr(a uint32) string {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}).String()
}

// startAC runs pppfwd's access concentrator on the WAN tap.
func (b *bench) startAC(ctx context.Context, wg *sync.WaitGroup) (*pppoe.Server, error) {
	var conn *rawsock.Conn
	if err := b.ns.Do(func() (err error) { conn, err = rawsock.OpenPPPoEControl(wanTap); return }); err != nil {
		return nil, fmt.Errorf("AC socket: %w", err)
	}
	last := poolAddr.Next().Next()
	ac := pppoe.NewServer(pppoe.ServerConfig{ACName: "pppfwd-ab", Auth: pppoe.AuthCHAPMD5 | pppoe.AuthPAP,
		Users: map[string]string{acUser: acPass}, LocalAddr: u32(acAddr), PoolFirst: u32(poolAddr), PoolLast: u32(last),
		Logf: b.o.Logf}, conn)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer conn.Close()
		_ = ac.Run(ctx)
	}()
	return ac, nil
}

// waitSession waits for a session whose IPCP is open, other than session
// not (0: any).
func waitSession(ctx context.Context, ac *pppoe.Server, not uint16, d time.Duration) (pppoe.SessionInfo, error) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, s := range ac.Sessions() {
			if s.Up && s.Addr != 0 && s.ID != not {
				return s, nil
			}
		}
		select {
		case <-ctx.Done():
			return pppoe.SessionInfo{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return pppoe.SessionInfo{}, fmt.Errorf("no PPPoE session up after %v (AC counters %+v)", d, ac.Counters())
}

// startARP answers ARP requests on the LAN tap for the flows' hosts.
func (b *bench) startARP(ctx context.Context, wg *sync.WaitGroup, flows []iobench.Flow) error {
	hosts := map[uint32][6]byte{}
	for _, f := range flows {
		hosts[f.Host] = f.HostMAC
	}
	var conn *rawsock.Conn
	if err := b.ns.Do(func() (err error) { conn, err = rawsock.Open(lanTap, hdr.EtherTypeARP); return }); err != nil {
		return fmt.Errorf("ARP socket: %w", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer conn.Close()
		buf := make([]byte, 2048)
		for ctx.Err() == nil {
			n, err := conn.ReadFrame(buf, 200*time.Millisecond)
			if err != nil {
				if errors.Is(err, rawsock.ErrTimeout) {
					continue
				}
				return
			}
			if reply, ok := arpReply(buf[:n], hosts); ok {
				_ = conn.WriteFrame(reply)
			}
		}
	}()
	return nil
}

// gen is the generator's ports and the probe's sockets on the taps.
type gen struct {
	a, b     nic.Port      // load: LAN tap, WAN tap
	pa, pb   *rawsock.Conn // probe: LAN tap, WAN tap
	up, down [][]byte
	probeUp  [][]byte // by IPv4 id - probeBase
}

func (b *bench) openGen(flows []iobench.Flow) (*gen, error) {
	g := &gen{}
	cfg := afpacket.Config{BlockSize: 64 << 10, Blocks: 64}
	err := b.ns.Do(func() (err error) {
		if g.a, err = afpacket.Open(lanTap, cfg); err != nil {
			return err
		}
		if g.b, err = afpacket.Open(wanTap, cfg); err != nil {
			return err
		}
		if g.pa, err = rawsock.OpenUDPPort(lanTap, probePort); err != nil {
			return err
		}
		g.pb, err = rawsock.OpenUDPPort(wanTap, probePort)
		return err
	})
	if err != nil {
		g.close()
		return nil, err
	}
	dst := vmlab.DefaultMAC(0)
	for i, f := range flows {
		fr, err := iobench.Uplink(f, i, b.o.Size, dst)
		if err != nil {
			g.close()
			return nil, err
		}
		g.up = append(g.up, fr)
	}
	// Probe frames: a flow of their own from the first host.
	pf := flows[0]
	pf.SrcPort, pf.DstPort, pf.Remote = 40000, probePort, u32(netip.MustParseAddr("203.0.113.250"))
	for i := 0; i < probeIDs; i++ {
		fr, err := iobench.Uplink(pf, probeBase+i, b.o.Size, dst)
		if err != nil {
			g.close()
			return nil, err
		}
		g.probeUp = append(g.probeUp, fr)
	}
	return g, nil
}

// drain discards the frames the generator's ports hold unread (the TCP
// step's, which they saw too).
func (g *gen) drain() {
	fs := nic.NewFrames(64)
	for _, p := range []nic.Port{g.a, g.b} {
		for q := 0; q < p.Queues(); q++ {
			for {
				n, err := p.Recv(q, fs)
				if err != nil || n == 0 {
					break
				}
			}
		}
	}
}

func (g *gen) close() {
	for _, p := range []nic.Port{g.a, g.b} {
		if p != nil {
			p.Close()
		}
	}
	for _, c := range []*rawsock.Conn{g.pa, g.pb} {
		if c != nil {
			c.Close()
		}
	}
}
