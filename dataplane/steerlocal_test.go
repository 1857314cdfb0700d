package dataplane

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// inSteerModes runs test once per steering mode the rig's hand-stepped
// workers can run (SteerThread needs its own thread's poll, which
// Worker.step does not do), with the rigs it makes in that mode.
func inSteerModes(t *testing.T, test func(*testing.T)) {
	for _, m := range []SteerMode{SteerInline, SteerLocal} {
		t.Run(m.String(), func(t *testing.T) {
			defer func(old SteerMode) { rigSteer = old }(rigSteer)
			rigSteer = m
			test(t)
		})
	}
}

// TestSteeringHardeningInEveryMode: the steering guarantees hold whether
// one stage steers for every worker (SteerInline) or each worker steers
// what arrives on its own queues (SteerLocal): a slow worker costs only
// its own traffic, a control storm cannot crowd out the session's
// control, later fragments follow their first through a flood, and the
// frames of every flow reach their owner.
func TestSteeringHardeningInEveryMode(t *testing.T) {
	for name, test := range map[string]func(*testing.T){
		"SlowWorker":      TestSlowWorkerCostsOnlyItsOwnTraffic,
		"ControlStorm":    TestControlStormKeepsSessionControl,
		"FragmentFlood":   TestFragmentFloodKeepsDatagrams,
		"FragmentsNAT":    TestFragmentsCrossTheNAT,
		"TwoWorkers":      TestTwoWorkersSteering,
		"SmallRing":       TestSmallRingSteersWAN,
		"ControlBacklog":  TestControlBacklogDoesNotStallData,
		"PortGone":        TestPortGoneEndsEngine,
		"WorkerStepAlloc": TestWorkerStepZeroAlloc,
	} {
		t.Run(name, func(t *testing.T) { inSteerModes(t, test) })
	}
}

// TestLocalSteering: with SteerLocal, a WAN frame that arrives on its
// owner's queue is handled there without a ring (nothing redirected,
// nothing on any steering ring); one that arrives on another worker's
// queue is handed to its owner once, counted as that worker's
// SteerRedirected, and reaches the LAN on the owner's queue.
func TestLocalSteering(t *testing.T) {
	r := newRig(t, 2, func(c *Config) { c.Steer = SteerLocal })
	var ext [2]uint16
	for sport := uint16(7000); ext[0] == 0 || ext[1] == 0; sport++ {
		p := pkt{src: hostIP, dst: remoteIP, sport: sport, dport: 53, proto: layers.IPProtocolUDP, payload: 20}
		r.lan.Inject(int(sport%2), lanFrame(t, p))
		r.step()
		out := r.drainWAN()
		if len(out) != 1 {
			t.Fatalf("%d uplink frames; drops %v", len(out), r.e.Totals().DropMap())
		}
		e := be16(pppoePayload(t, out[0])[20:])
		if k := r.e.Owner()[e]; ext[k] == 0 {
			ext[k] = e
		}
	}
	reply := func(k int) []byte {
		return wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext[k], proto: layers.IPProtocolUDP, payload: 30})
	}
	redirected := func() [2]uint64 {
		var n [2]uint64
		for k, w := range r.e.workers {
			n[k] = w.c.SteerRedirected
		}
		return n
	}
	lanRedirects := r.e.Totals().Redirected
	// Each reply on its owner's queue: handled where it arrived.
	for k := 0; k < 2; k++ {
		before := r.e.workers[k].c.RxWAN
		r.wan.Inject(k, reply(k))
		r.e.workers[k].step() // only the owner runs: no other thread is needed
		if got := r.e.workers[k].c.RxWAN - before; got != 1 {
			t.Errorf("worker %d took %d of its own WAN frames, want 1", k, got)
		}
		var back int
		r.lan.Drain(k, func([]byte) { back++ })
		if back != 1 {
			t.Errorf("worker %d: %d frames on its LAN queue, want 1 (drops %v)", k, back, r.e.Totals().DropMap())
		}
	}
	if n := redirected(); n != [2]uint64{} {
		t.Errorf("redirected %v for frames on their owner's queues, want none", n)
	}
	for _, ls := range r.e.steerLinks {
		for _, l := range ls {
			if l != nil && (l.Data.Len() != 0 || l.Data.tail.Load() != 0) {
				t.Errorf("a steering ring carried frames that arrived on their owner's queue")
			}
		}
	}
	// Each reply on the other worker's queue: handed over once.
	for k := 0; k < 2; k++ {
		r.wan.Inject(1-k, reply(k))
		r.step()
		var back int
		r.lan.Drain(k, func([]byte) { back++ })
		if back != 1 {
			t.Errorf("reply for worker %d via worker %d: %d frames on its LAN queue, want 1 (drops %v)", k, 1-k, back, r.e.Totals().DropMap())
		}
	}
	if n := redirected(); n != [2]uint64{1, 1} {
		t.Errorf("redirected %v, want one per worker", n)
	}
	if c := r.e.Totals(); c.Redirected != lanRedirects {
		t.Errorf("steering hand-overs counted as NAT/LAN redirects: %d", c.Redirected-lanRedirects)
	}
}

// TestLocalSteeringOneWorker: one worker with SteerLocal has no steering
// ring at all: its WAN frames never leave its thread.
func TestLocalSteeringOneWorker(t *testing.T) {
	r := newRig(t, 1, func(c *Config) { c.Steer = SteerLocal })
	if len(r.e.steerLinks) != 1 || r.e.steerLinks[0][0] != nil || len(r.e.workers[0].links.steerIn) != 0 {
		t.Fatalf("one worker has steering rings: %v", r.e.steerLinks)
	}
	ext := r.outbound(t, pkt{src: hostIP, dst: remoteIP, sport: 5000, dport: 53, proto: layers.IPProtocolUDP, payload: 20})
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 40}))
	r.step()
	if got := len(r.drainLAN()); got != 1 {
		t.Fatalf("%d frames reached the LAN, want 1 (drops %v)", got, r.e.Totals().DropMap())
	}
}

// TestSteerAuto: the default is SteerLocal when the WAN port has one RX
// queue per worker, SteerInline when it has more.
func TestSteerAuto(t *testing.T) {
	r := newRig(t, 2, nil)
	if r.e.cfg.Steer != SteerLocal || len(r.e.steers) != 2 {
		t.Errorf("2 workers, 2 WAN queues: steering %v with %d stages, want local with 2", r.e.cfg.Steer, len(r.e.steers))
	}
	lan, wan := r.lan, newRig(t, 4, nil).wan
	e, err := New(Config{Workers: 2, LAN: lan, WAN: wan})
	if err != nil {
		t.Fatal(err)
	}
	if e.cfg.Steer != SteerInline || len(e.steers) != 1 {
		t.Errorf("2 workers, 4 WAN queues: steering %v with %d stages, want inline with 1", e.cfg.Steer, len(e.steers))
	}
	for _, s := range []string{"auto", "inline", "thread", "local"} {
		if m, err := ParseSteerMode(s); err != nil || m.String() != s {
			t.Errorf("ParseSteerMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseSteerMode("kernel"); err == nil {
		t.Error("ParseSteerMode accepted kernel")
	}
}

// TestLocalSteeringControlEveryQueue: with SteerLocal, control frames
// that arrive on any worker's queue reach the control plane, our
// session's on the priority path; a storm of other control on one
// worker's queue is rate-limited there and does not hold back the
// session's control arriving on another.
func TestLocalSteeringControlEveryQueue(t *testing.T) {
	r := newRig(t, 2, func(c *Config) { c.Steer = SteerLocal })
	padi := make([]byte, 60)
	copy(padi, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 9, 9, 9, 9, 9, 0x88, 0x63, 0x11, 0x09})
	echo := lcpEcho(t)
	lcp := 0
	for round := 0; round < 20; round++ {
		for i := 0; i < 300; i++ {
			r.wan.Inject(0, padi)
		}
		r.wan.Inject(round%2, echo)
		for i := 0; i < 8; i++ {
			r.step()
		}
		lcp += countControl(r.e)[FromWANSession]
	}
	if lcp != 20 {
		t.Errorf("%d of 20 LCP echoes reached the control plane (drops %v)", lcp, r.e.Totals().DropMap())
	}
	if d := r.e.Totals().Drops[DropControlLimit]; d == 0 {
		t.Errorf("the PADI storm was not rate-limited (drops %v)", r.e.Totals().DropMap())
	}
}

// TestLocalSteeringFragmentsAcrossQueues: with SteerLocal, a datagram's
// first fragment arriving on its owner's queue and its later fragments on
// another worker's queue still meet: the later ones follow the owner's
// published datagrams (fragSeen).
func TestLocalSteeringFragmentsAcrossQueues(t *testing.T) {
	r := newRig(t, 2, func(c *Config) { c.Steer = SteerLocal })
	var ext uint16
	for sport := uint16(6000); ; sport++ {
		p := pkt{src: hostIP, dst: remoteIP, sport: sport, dport: 5060, proto: layers.IPProtocolUDP, payload: 20}
		r.lan.Inject(int(sport%2), lanFrame(t, p))
		r.step()
		out := r.drainWAN()
		if len(out) != 1 {
			t.Fatalf("%d uplink frames; drops %v", len(out), r.e.Totals().DropMap())
		}
		if ext = be16(pppoePayload(t, out[0])[20:]); r.e.Owner()[ext] == 1 {
			break
		}
	}
	data := bytes.Repeat([]byte{0x5a}, 4000)
	frags := fragmentIPv4(t, bigUDP(t, remoteIP, pubIP, 5060, ext, 0x4444, data), 1472)
	r.wan.Inject(1, wanIPFrame(t, frags[0]))
	r.e.workers[1].step()
	for _, f := range frags[1:] {
		r.wan.Inject(0, wanIPFrame(t, f))
	}
	r.step()
	r.step()
	if got := len(r.drainLAN()); got != len(frags) {
		t.Fatalf("%d of the datagram's %d fragments reached the host (drops %v)", got, len(frags), r.e.Totals().DropMap())
	}
}

// TestLocalSteeringZeroAlloc: a worker step with SteerLocal, its own WAN
// frames and hand-overs both ways, allocates nothing.
func TestLocalSteeringZeroAlloc(t *testing.T) {
	r := newRig(t, 2, func(c *Config) { c.Steer = SteerLocal })
	lanPkts, wanPkts := buildTraffic(t, r, 256, 64)
	for q := 0; q < 2; q++ {
		r.lan.Replay(q, lanPkts[q])
		// Every reply on both queues: half arrive at their owner, half
		// are handed over.
		r.wan.Replay(q, wanPkts)
		r.lan.Sink(q, nil)
		r.wan.Sink(q, nil)
	}
	r.step()
	if a := testing.AllocsPerRun(200, r.step); a != 0 {
		t.Fatalf("worker step allocates %.1f times per batch", a)
	}
	c := r.e.Totals()
	if c.TxLAN == 0 || c.SteerRedirected == 0 {
		t.Fatalf("nothing forwarded or handed over: %+v %v", c, c.DropMap())
	}
}

// TestLocalSteeringDoesNotWaitForFullRing: a worker steering its own WAN
// queue (SteerLocal) does not hold back that queue's receive for another
// worker whose ring is full, whatever SteerWait: the other worker's frames
// are dropped and counted at once while its own keep flowing. With
// SteerWait < 0 (never drop) it holds back instead, and drops nothing.
func TestLocalSteeringDoesNotWaitForFullRing(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
		drop bool // the full ring's frames are dropped, its own taken
	}{
		{"wait", time.Hour, true},
		{"default", 0, true},
		{"never drop", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 2, func(c *Config) { c.Steer = SteerLocal; c.SteerWait = tc.wait })
			var port [2]uint16
			for p := 1024; p < 65536 && (port[0] == 0 || port[1] == 0); p++ {
				if w := r.e.Owner()[p]; port[w] == 0 {
					port[w] = uint16(p)
				}
			}
			w0 := r.e.workers[0]
			// Worker 1 is not scheduled: its ring from worker 0 fills
			// after RingSize frames; then worker 0 sends 32 more rounds.
			rounds := r.e.cfg.RingSize/32 + 32
			for i := 0; i < rounds; i++ {
				for j := 0; j < 31; j++ {
					r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: port[1], proto: layers.IPProtocolUDP, payload: 10}))
				}
				r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: port[0], proto: layers.IPProtocolUDP, payload: 10}))
				w0.step()
			}
			// Worker 0's own frames reached it (dropped there as nat: no
			// mapping; what matters is that they were not held back).
			own, full := w0.c.RxWAN, r.e.RingFullDrops()
			if tc.drop {
				if own != uint64(rounds) {
					t.Errorf("worker 0 took %d of its %d WAN frames while worker 1's ring was full", own, rounds)
				}
				if full[1] == 0 || full[0] != 0 {
					t.Errorf("ring-full drops per worker %v, want only worker 1's", full)
				}
				return
			}
			if own >= uint64(rounds) || full[0]+full[1] != 0 {
				t.Errorf("never drop: worker 0 took %d of %d frames, ring-full drops %v; want receive held back, nothing dropped", own, rounds, full)
			}
		})
	}
}
