//go:build linux

package iobench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic/afpacket"
	"github.com/pppfwd/pppfwd/nic/afxdp"
	"github.com/pppfwd/pppfwd/shaper"
)

// TestIntegrationPipelineAFPacket forwards 256 UDP, 8 TCP and 8 ICMP flows
// in both directions between namespace A (LAN hosts) and namespace B (the
// BRAS side, answering in the PPPoE session what it received) through
// pppfwd in namespace R on AF_PACKET ports, two workers (fanout), PPPoE,
// NAT and FQ-CoDel, and requires every frame at the far end, translated
// and with valid checksums.
func TestIntegrationPipelineAFPacket(t *testing.T) {
	testPipelineVeth(t, "afpacket", afxdp.ModeAuto, afpacket.TxAuto)
}

// TestIntegrationPipelineAFPacketTxRing is the same with the mapped TX
// ring (TxAuto picks sendmmsg on veth).
func TestIntegrationPipelineAFPacketTxRing(t *testing.T) {
	testPipelineVeth(t, "afpacket", afxdp.ModeAuto, afpacket.TxRing)
}

// TestIntegrationPipelineAFXDP is the same over AF_XDP ports (the driver's
// native XDP if veth takes it, else generic).
func TestIntegrationPipelineAFXDP(t *testing.T) {
	testPipelineVeth(t, "afxdp", afxdp.ModeAuto, 0)
}

// TestIntegrationPipelineAFXDPGeneric forces generic (skb) XDP, the mode
// `pppfwd bench io` measures.
func TestIntegrationPipelineAFXDPGeneric(t *testing.T) {
	testPipelineVeth(t, "afxdp", afxdp.ModeGeneric, 0)
}

func testPipelineVeth(t *testing.T, backend string, mode afxdp.Mode, tx afpacket.TxMode) {
	const workers = 2
	ln := nettest.MustLine(t, nettest.LineConfig{Queues: workers})
	topo, err := NewTopo(ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topo.Close() })
	flows := Flows(256, 8, 8)
	sp, err := shaper.ParseSpec("bandwidth 10gbit")
	if err != nil {
		t.Fatal(err)
	}
	fw, err := topo.StartForwarder(FwdConfig{Backend: backend, Workers: workers, XDPMode: mode, AFPacketTx: tx, Shape: sp, Flows: flows, RingSize: 4096})
	if err != nil {
		for _, e := range []error{afxdp.ErrNoAFXDP, afxdp.ErrXDPRefused, afxdp.ErrPermission} {
			if errors.Is(err, e) {
				t.Skipf("AF_XDP unavailable: %v", err)
			}
		}
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			fw.Stop()
		}
	})
	if fw.XDPMode != "" {
		t.Logf("XDP mode %s", fw.XDPMode)
	}
	if backend == "afpacket" {
		want := "copy" // TxAuto on veth
		if tx == afpacket.TxRing {
			want = "ring"
		}
		if fw.TxMode != want {
			t.Fatalf("afpacket TX mode %q, want %q", fw.TxMode, want)
		}
	}
	checkPipeline(t, fw, topo.A, topo.B, flows)
	if backend == "afpacket" {
		// The owner fanout delivers every LAN frame to its flow's owner:
		// no hand-over between workers.
		if f := fw.LANOwner; f != "fanout-ebpf" {
			t.Fatalf("LAN owner delivery %q, want fanout-ebpf", f)
		}
		var redirected uint64
		for _, w := range fw.Engine.Workers() {
			redirected += w.Counters().Redirected
		}
		if redirected != 0 {
			t.Fatalf("%d LAN frames handed to another worker", redirected)
		}
		// The WAN fanout program delivers every reply to its owner's
		// queue, whose worker steers and handles it: none handed over.
		if f, m := fw.WANOwner, fw.Engine.Steering(); f != "fanout-ebpf" || m != dataplane.SteerLocal {
			t.Fatalf("WAN owner delivery %q, steering %v; want fanout-ebpf, local", f, m)
		}
		var wanRx, handed uint64
		for _, w := range fw.Engine.Workers() {
			c := w.Counters()
			wanRx, handed = wanRx+c.RxWAN, handed+c.SteerRedirected
		}
		if wanRx == 0 || handed != 0 {
			t.Fatalf("%d of %d WAN frames handed to another worker", handed, wanRx)
		}
	}
	stopped = true
	if err := fw.Stop(); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationRunInterleaved runs `bench io` with an interleaved probe
// series: both paths probed, every probe of each arriving but a few, the
// deltas pppfwd's minus the kernel's, pppfwd's workers woken about once
// a probe, and the CSV holding the series.
func TestIntegrationRunInterleaved(t *testing.T) {
	nettest.RequireRoot(t)
	const probes = 40
	res, err := Run(Options{Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, Rate: 20000,
		Latency: probes, Rounds: 1, Interleave: true, Search: false})
	if err != nil {
		t.Fatal(err)
	}
	il := res.Interleaved
	if il == nil || il.Kernel == nil || il.PPPFWD == nil {
		t.Fatalf("interleaved %+v", il)
	}
	for name, l := range map[string]*Latency{"kernel": il.Kernel, "pppfwd": il.PPPFWD} {
		if l.Probes != probes || l.Lost > probes/10 || l.P50Us <= 0 || l.P99Us < l.P50Us || len(l.series) != probes {
			t.Errorf("%s: %+v", name, l)
		}
	}
	if il.P50DeltaUs != il.PPPFWD.P50Us-il.Kernel.P50Us || il.P99DeltaUs != il.PPPFWD.P99Us-il.Kernel.P99Us {
		t.Errorf("deltas %v %v for %+v, %+v", il.P50DeltaUs, il.P99DeltaUs, il.PPPFWD, il.Kernel)
	}
	if w := il.PPPFWD.Workers; w == nil || w.Wakeups+4 < uint64(probes-il.PPPFWD.Lost) {
		t.Errorf("pppfwd's workers while probing: %+v", w)
	}
	var csv bytes.Buffer
	if err := res.WriteLatencyCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(csv.String(), "-interleaved,1,"); n != 2*probes {
		t.Errorf("csv: %d interleaved rows, want %d", n, 2*probes)
	}
	if _, err := Run(Options{Latency: 0, Interleave: true}); err == nil {
		t.Error("interleaved probes without latency probes ran")
	}
}

// TestIntegrationRunLatencyPooled runs `bench io` with latency probes over
// two rounds and the floor: each side's latency pools both rounds'
// probes, each round keeps its own figures, the reported deltas are
// pppfwd's (and the floor's) pooled percentiles minus the kernel's, and
// the CSV holds every probe.
func TestIntegrationRunLatencyPooled(t *testing.T) {
	nettest.RequireRoot(t)
	const probes = 30
	res, err := Run(Options{Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, Rate: 20000,
		Latency: probes, Rounds: 2, Awake: true, Floor: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Awake {
		t.Error("the result does not say the probes ran with the CPUs awake")
	}
	k, p := res.Kernel.Latency, res.PPPFWD.Latency
	if k == nil || p == nil || res.Floor == nil || res.Floor.Latency == nil {
		t.Fatalf("latency missing: kernel %v, pppfwd %v, floor %+v", k, p, res.Floor)
	}
	f := res.Floor.Latency
	for name, l := range map[string]*Latency{"kernel": k, "pppfwd": p, "floor": f} {
		if l.Probes != 2*probes || l.Rounds != 2 || l.Lost > probes/10 || l.P50Us <= 0 || l.P99Us < l.P50Us {
			t.Errorf("%s pooled latency %+v", name, l)
		}
	}
	if len(res.Rounds) != 2 {
		t.Fatalf("%d rounds", len(res.Rounds))
	}
	for i, r := range res.Rounds {
		for name, l := range map[string]*Latency{"kernel": r.KernelLatency, "pppfwd": r.PPPFWDLatency, "floor": r.FloorLatency} {
			if l == nil || l.Probes != probes || l.Rounds != 1 || l.P50Us <= 0 {
				t.Errorf("round %d %s latency %+v", i, name, l)
			}
		}
	}
	// The workers' figures over the probes: only pppfwd's side has them,
	// each probe woke a worker (at least one wakeup per arrived probe
	// but a few: the last sleep of a series is counted when it ends).
	if k.Workers != nil || p.Workers == nil || p.Workers.Wakeups+4 < uint64(p.Probes-p.Lost) {
		t.Errorf("probe workers: kernel %+v, pppfwd %+v (%d probes)", k.Workers, p.Workers, p.Probes)
	} else {
		t.Logf("pppfwd workers while probing: %+v", *p.Workers)
	}
	if res.LatencyP50DeltaUs != p.P50Us-k.P50Us || res.LatencyP99DeltaUs != p.P99Us-k.P99Us {
		t.Errorf("deltas %v %v for pppfwd %+v, kernel %+v", res.LatencyP50DeltaUs, res.LatencyP99DeltaUs, p, k)
	}
	if res.FloorLatencyP50DeltaUs != f.P50Us-k.P50Us || res.FloorLatencyP99DeltaUs != f.P99Us-k.P99Us {
		t.Errorf("floor deltas %v %v for floor %+v, kernel %+v", res.FloorLatencyP50DeltaUs, res.FloorLatencyP99DeltaUs, f, k)
	}
	var csv bytes.Buffer
	if err := res.WriteLatencyCSV(&csv); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSuffix(csv.String(), "\n"), "\n")
	if len(rows) != 1+3*2*probes {
		t.Fatalf("csv: %d rows, want %d", len(rows), 1+3*2*probes)
	}
	lost := 0
	for _, row := range rows[1:] {
		if strings.HasSuffix(row, ",") {
			lost++
		}
	}
	if lost != k.Lost+p.Lost+f.Lost {
		t.Errorf("csv: %d lost probes, the sides say %d", lost, k.Lost+p.Lost+f.Lost)
	}
}
