package scale

import (
	"math"

	"github.com/pppfwd/pppfwd/dataplane"
)

// Costs are the per-packet costs the model is built from, on one core
// of one clock.
type Costs struct {
	// WorkNs is c_work: CPU ns of everything but steering, per forwarded
	// packet (both directions).
	WorkNs float64 `json:"work_ns"`
	// SteerNs is c_steer: ns of steering per steered (WAN->LAN) packet.
	SteerNs float64 `json:"steer_ns"`
	// Share is s: the share of forwarded packets that steering handles
	// (the WAN->LAN share; 0.5 for symmetric traffic).
	Share float64 `json:"steered_share"`
	// Hop is h, local steering only (dataplane.SteerLocal): the share of
	// steered frames that arrive on a queue other than their owner's and
	// are handed to the owner over a ring. 0 when the receive path places
	// every frame on its owner's queue; HopHashed for arrival hashed
	// uniformly over the queues, h = (n-1)/n at n workers.
	Hop float64 `json:"hop_share,omitempty"`
	// HopNs is c_hop, local steering only: the ns one hand-over adds, the
	// steerer's push and the owner's taking the frame from the ring (its
	// cache lines moving between the cores).
	HopNs float64 `json:"hop_ns,omitempty"`
}

// HopHashed as Costs.Hop: WAN frames arrive hashed uniformly over the n
// workers' queues, so a share (n-1)/n of them is handed over.
const HopHashed = -1

// hop returns h at the given number of workers: Hop, or (n-1)/n for
// HopHashed; 0 below 2 workers, where every frame is its steerer's own.
func (c Costs) hop(workers int) float64 {
	switch {
	case workers < 2:
		return 0
	case c.Hop == HopHashed:
		return float64(workers-1) / float64(workers)
	case c.Hop > 0:
		return math.Min(c.Hop, 1)
	}
	return 0
}

// AtClock returns the costs moved from a core of fromGHz to one of toGHz.
// The approximation: same microarchitecture, and a packet's cost in ns
// inversely proportional to the clock (so in cycles unchanged). Share and
// Hop are properties of the traffic and the receive path and stay. A clock <= 0 leaves the costs as
// they are.
func (c Costs) AtClock(fromGHz, toGHz float64) Costs {
	if fromGHz <= 0 || toGHz <= 0 {
		return c
	}
	k := fromGHz / toGHz
	return Costs{WorkNs: c.WorkNs * k, SteerNs: c.SteerNs * k, Share: c.Share, Hop: c.Hop, HopNs: c.HopNs * k}
}

// steerPerPkt is s*c_steer: the steering ns one forwarded packet costs
// the steering core.
func (c Costs) steerPerPkt() float64 { return c.Share * c.SteerNs }

// Rate returns the model's packet rate (packets/s, both directions) of
// the given number of workers.
//
// Inline steering (dataplane.SteerInline): worker 0 steers every WAN frame
// and does its 1/n share of the work, the others only their share, so
// worker 0 is the slowest and the rate is the one it sustains:
//
//	R(n) = min(n/c_work, 1/(s*c_steer + c_work/n))
//
// where the second term is the minimum whenever s*c_steer > 0.
//
// A steering thread (dataplane.SteerThread) on a core of its own:
//
//	R(n) = min(n/c_work, 1/(s*c_steer))
//
// with n workers on n further cores.
//
// Local steering (dataplane.SteerLocal): every worker steers the WAN
// frames that arrive on its own queue (1/n of them) and does its 1/n of
// the work, and hands the share h(n) of its steered frames that are not
// its own to their owners:
//
//	R(n) = n / (c_work + s*c_steer + s*h(n)*c_hop)
//
// No core steers for the others, so there is no steering ceiling: the
// rate grows with the workers as the work per core allows.
//
// Any other mode is taken as inline steering. Rate is 0 for workers < 1
// or WorkNs <= 0.
func Rate(c Costs, mode dataplane.SteerMode, workers int) float64 {
	if workers < 1 || c.WorkNs <= 0 {
		return 0
	}
	n := float64(workers)
	ss := c.steerPerPkt()
	if mode == dataplane.SteerLocal {
		per := c.WorkNs + math.Max(0, ss) + c.Share*c.hop(workers)*math.Max(0, c.HopNs)
		return n / per * 1e9
	}
	work := n / c.WorkNs // packets per ns the workers' work allows
	if ss <= 0 {
		return work * 1e9
	}
	var steer float64
	if mode == dataplane.SteerThread {
		steer = 1 / ss
	} else {
		steer = 1 / (ss + c.WorkNs/n)
	}
	return math.Min(work, steer) * 1e9
}

// Ceiling is the rate no number of workers exceeds with one steering
// core (inline steering, a steering thread), 1/(s*c_steer) (packets/s):
// the steering core doing nothing but steer. +Inf when nothing is
// steered or steering costs nothing. Local steering has no such core and
// no ceiling (HasCeiling).
func Ceiling(c Costs) float64 {
	ss := c.steerPerPkt()
	if ss <= 0 {
		return math.Inf(1)
	}
	return 1e9 / ss
}

// HasCeiling reports whether one core steers every WAN frame in mode,
// so that Ceiling and Ridge apply: inline steering and a steering
// thread, not local steering.
func HasCeiling(mode dataplane.SteerMode) bool { return mode != dataplane.SteerLocal }

// Ridge is the worker count c_work/(s*c_steer) at which linear scaling
// (n/c_work) meets the steering ceiling. With a steering thread the rate
// is the ceiling from there on; with inline steering the rate there is
// half the ceiling (R(n) = ceiling * n/(n+ridge)), worker 0 spends half
// its time steering, and 90 % of the ceiling takes 9 ridges. +Inf when
// nothing is steered. Like Ceiling, it does not apply to local steering.
func Ridge(c Costs) float64 {
	ss := c.steerPerPkt()
	if ss <= 0 {
		return math.Inf(1)
	}
	return c.WorkNs / ss
}

// SaturationCores is the smallest core count at which the steering core
// saturates: inline, the first worker count at or past the ridge (worker
// 0 steers at least half its time, and every further core adds less than
// half a core's worth); with a steering thread, the workers at or past
// the ridge plus the steering core. 0 when it never does: nothing
// steered, or local steering, where no core steers for the others and
// the rate is set by the work per core at every count.
func SaturationCores(c Costs, mode dataplane.SteerMode) int {
	if !HasCeiling(mode) {
		return 0
	}
	r := Ridge(c)
	if math.IsInf(r, 1) || math.IsNaN(r) {
		return 0
	}
	n := max(1, int(math.Ceil(r-1e-9)))
	return CoresFor(mode, n)
}

// CoresFor returns the cores a run of the given workers occupies: one
// per worker, and one more for a steering thread (inline and local
// steering run on the workers).
func CoresFor(mode dataplane.SteerMode, workers int) int {
	if mode == dataplane.SteerThread {
		return workers + 1
	}
	return workers
}

// CoresToReach returns the cores (CoresFor) in use at the smallest worker
// count, of at most maxCores cores, whose Rate reaches pps; 0 if none
// does.
func CoresToReach(c Costs, mode dataplane.SteerMode, pps float64, maxCores int) int {
	for n := 1; CoresFor(mode, n) <= maxCores; n++ {
		if Rate(c, mode, n) >= pps {
			return CoresFor(mode, n)
		}
	}
	return 0
}

// RelError is (predicted-measured)/measured; NaN when measured is not
// positive.
func RelError(predicted, measured float64) float64 {
	if !(measured > 0) {
		return math.NaN()
	}
	return (predicted - measured) / measured
}

// Ethernet's per-frame overhead on the wire besides the frame itself:
// the FCS, and preamble, start delimiter and inter-frame gap.
const (
	fcsBytes      = 4
	preambleIFGBy = 20
	// pppoeBytes is what the PPPoE session header and the PPP protocol
	// add to a WAN frame over the LAN frame carrying the same packet.
	pppoeBytes = 8
)

// LineRate is the frames per second a link of bitsPerSec carries in one
// direction, for frames of frameBytes (Ethernet header to payload end,
// without FCS, as the pipeline counts them): bitsPerSec / 8 / (frame + 4
// FCS + 20 preamble and gap). For a mix, pass the mean frame length.
func LineRate(bitsPerSec, frameBytes float64) float64 {
	if bitsPerSec <= 0 || frameBytes <= 0 {
		return 0
	}
	return bitsPerSec / 8 / (frameBytes + fcsBytes + preambleIFGBy)
}

// LinkTotal is the packet rate (both directions) a full-duplex link
// carries when a share s of the packets goes one way and 1-s the other:
// the busier direction runs at line rate, perDirection / max(s, 1-s).
func LinkTotal(perDirection, share float64) float64 {
	m := math.Max(share, 1-share)
	if !(m > 0) || m > 1 {
		return 0
	}
	return perDirection / m
}
