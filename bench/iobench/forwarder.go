package iobench

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/afpacket"
	"github.com/pppfwd/pppfwd/nic/afxdp"
	"github.com/pppfwd/pppfwd/shaper"
)

// FwdConfig configures pppfwd in R.
type FwdConfig struct {
	Backend string // "afpacket" or "afxdp"
	Workers int
	XDPMode afxdp.Mode
	// BusyPoll asks the afxdp ports for NAPI busy polling (in effect in
	// native mode: Forwarder.BusyPoll).
	BusyPoll bool
	// AFPacketTx is the afpacket ports' TX mode (afpacket only).
	AFPacketTx afpacket.TxMode
	// AFPacketRing is the afpacket ports' RX ring layout (afpacket only).
	AFPacketRing afpacket.RxRing
	Poll         dataplane.PollMode // the workers' idle policy
	Slice        time.Duration      // the workers' scheduling slice (0: the kernel's)
	RTPrio       int                // the workers' realtime priority while lightly loaded (0: none)
	Shape        shaper.Spec        // Rate 0: no shaper
	Flows        []Flow             // their hosts become the engine's LAN neighbours
	CPUs         []int              // worker k is pinned to CPUs[k%len]; nil: no pinning
	// RingSize is the engine's inter-core ring size (0: its default).
	// Tests on a busy machine raise it: a descheduled worker's redirect
	// ring (RingSize/4) is what overflows first.
	RingSize int
	// UserSteer opens the WAN port without its owner program (the
	// kernel's flow hash spreads PPPoE frames over the queues) and has
	// worker 0 steer every WAN frame (dataplane.SteerInline): the
	// router's fallback. Otherwise, with more than one worker, the WAN
	// port's fanout program delivers each frame to its owner's queue and
	// each worker steers its own (dataplane.SteerLocal).
	UserSteer bool
	// Steer is the engine's steering mode (StartForwarder sets it from
	// the WAN port it opened; SteerAuto for ports given to StartEngine).
	Steer dataplane.SteerMode
}

// Forwarder is a running pppfwd engine in R.
type Forwarder struct {
	Engine   *dataplane.Engine
	LAN, WAN nic.Port
	// XDPMode is the attach mode in use (afxdp only), TxMode the TX
	// mode (afpacket only).
	XDPMode, TxMode string
	// BusyPoll: both afxdp ports busy-poll.
	BusyPoll bool
	// Control counts frames the engine handed to the control/exception
	// path (nothing in these tests should go there).
	Control uint64
	// LANOwner is how the LAN port delivers frames to their owners
	// (router.PortInfo.Owner, with the reason of a hand-over).
	LANOwner string
	// WANOwner is how the WAN port delivers frames to their owners
	// ("fanout-ebpf", or "hand-over: <why>"; "" with one worker or
	// UserSteer).
	WANOwner string

	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	undo func() // NIC settings of the ports; nil for ports given to StartEngine
}

// ParseXDPMode maps "auto", "native" and "generic" to afxdp modes.
func ParseXDPMode(s string) (afxdp.Mode, error) {
	switch s {
	case "", "auto":
		return afxdp.ModeAuto, nil
	case "native":
		return afxdp.ModeNative, nil
	case "generic":
		return afxdp.ModeGeneric, nil
	}
	return 0, fmt.Errorf("xdp mode %q: want auto, native or generic", s)
}

// StartEngine starts an engine over lan and wan with the synthetic PPPoE
// session (pipeline.Session), the flows' hosts as LAN neighbours, and a
// control goroutine that drains (and counts) exception frames. Stop
// closes the ports too.
func StartEngine(lan, wan nic.Port, c FwdConfig) (*Forwarder, error) {
	if c.Workers <= 0 {
		c.Workers = 1
	}
	f := &Forwarder{LAN: lan, WAN: wan, stop: make(chan struct{})}
	cfg := dataplane.Config{
		Workers: c.Workers, LAN: f.LAN, WAN: f.WAN,
		RouterMAC: pipeline.RouterMAC, RouterAddr: pipeline.RouterAddr,
		LANNet: pipeline.LANNet, LANBits: pipeline.LANBits,
		Up: c.Shape, Down: c.Shape, RingSize: c.RingSize,
		ThreadCPU: pin.ThreadCPUNanos, Poll: c.Poll, Steer: c.Steer,
		Slice: c.Slice, RTPrio: c.RTPrio,
	}
	cfg.NAT.Capacity = 4*len(c.Flows) + 1024
	if len(c.CPUs) > 0 {
		cpus := c.CPUs
		cfg.Pin = func(k int) error { return pin.Pin(cpus[k%len(cpus)]) }
	}
	e, err := dataplane.New(cfg)
	if err != nil {
		return nil, err
	}
	f.Engine = e
	e.SetSession(pipeline.Session())
	neigh := map[uint32][6]byte{}
	for _, fl := range c.Flows {
		neigh[fl.Host] = fl.HostMAC
	}
	e.SetNeighbors(neigh)
	e.Start()
	f.wg.Add(1)
	// The control path is drained as the router's control plane drains
	// it: woken by the engine when a frame is handed to it, never on a
	// timer (a ticker here would wake the forwarder's idle CPUs, which
	// the kernel's path does not).
	go func() {
		defer f.wg.Done()
		for {
			n := e.PollControl(func(dataplane.Dir, []byte) {})
			if n > 0 {
				f.mu.Lock()
				f.Control += uint64(n)
				f.mu.Unlock()
				continue
			}
			wake := e.ControlIdle()
			if wake == nil {
				continue
			}
			select {
			case <-f.stop:
				e.ControlAwake()
				return
			case <-wake:
			}
			e.ControlAwake()
		}
	}()
	return f, nil
}

// ControlFrames returns how many frames went to the control path so far.
func (f *Forwarder) ControlFrames() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Control
}

// Stop stops the engine and the control goroutine and closes the ports.
func (f *Forwarder) Stop() error {
	err := f.Engine.Stop()
	close(f.stop)
	f.wg.Wait()
	err = errors.Join(err, f.LAN.Close(), f.WAN.Close())
	if f.undo != nil {
		f.undo()
	}
	return err
}
