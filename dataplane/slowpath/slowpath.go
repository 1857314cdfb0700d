// Package slowpath runs the router's slow-path work (exception frames for
// the host, ICMP errors the router itself sends, control requests) on a
// bounded pool of goroutines from github.com/panjf2000/ants/v2, so that a
// flood aimed at the router cannot grow goroutines or memory without bound
// and the fast path never waits.
//
// Memory is fixed at New: Workers+Queue jobs, each with its own frame
// buffer, sit on a free list. Submit takes a free job, copies the frame
// into it and queues it, all without blocking or allocating; with no free
// job (every worker busy and the queue full) it drops and counts by
// reason. Workers are Workers long-lived goroutines of one ants pool; a
// handler that panics is recovered and counted, and the worker goes on.
package slowpath

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/ants/v2"

	"github.com/pppfwd/pppfwd/nic"
)

// Kind says what a job is; each kind has its own handler.
type Kind uint8

// Job kinds.
const (
	Exception Kind = iota // a frame for the host stack (ARP, to the router, DHCP)
	ICMPError             // a frame that needs an ICMP error from the router
	Control               // a control request (Do)
	NumKinds
)

func (k Kind) String() string {
	switch k {
	case Exception:
		return "exception"
	case ICMPError:
		return "icmp-error"
	case Control:
		return "control"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// DropReason says why Submit refused a job.
type DropReason uint8

// Drop reasons.
const (
	DropFull      DropReason = iota // every job in use: workers busy, queue full
	DropTooBig                      // frame longer than nic.MaxData
	DropClosed                      // submitted after Close
	DropNoHandler                   // no handler for the kind
	NumDropReasons
)

func (r DropReason) String() string {
	switch r {
	case DropFull:
		return "full"
	case DropTooBig:
		return "too-big"
	case DropClosed:
		return "closed"
	case DropNoHandler:
		return "no-handler"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Job is one unit of slow-path work. It belongs to the pool: a handler may
// use it only until it returns.
type Job struct {
	Kind  Kind
	Queue uint16 // RX queue the frame arrived on
	Arg   uint64 // caller's word (e.g. ICMP type and code)
	// Frame holds a copy of the submitted frame (Frame.Buf is the job's
	// own buffer; Frame.Off is nic.Headroom).
	Frame nic.Frame
	fn    func()
}

// Handler processes one job.
type Handler func(*Job)

// Config sizes a Pool.
type Config struct {
	// Workers is the number of goroutines (default 2).
	Workers int
	// Queue is how many jobs may wait while every worker is busy
	// (default 256).
	Queue int
	// Handlers[k] handles jobs of kind k; Control jobs submitted with Do
	// run their function instead.
	Handlers [NumKinds]Handler
}

// Stats are the pool's counters.
type Stats struct {
	Submitted [NumKinds]uint64
	Done      [NumKinds]uint64
	Drops     [NumDropReasons]uint64
	Panics    uint64
	Queued    int // jobs waiting now
}

// Pool is a bounded slow-path worker pool.
type Pool struct {
	cfg     Config
	ants    *ants.Pool
	free    chan *Job
	pending chan *Job
	closed  atomic.Bool
	wg      sync.WaitGroup

	submitted [NumKinds]atomic.Uint64
	done      [NumKinds]atomic.Uint64
	drops     [NumDropReasons]atomic.Uint64
	panics    atomic.Uint64
}

// New starts a pool.
func New(cfg Config) (*Pool, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 256
	}
	ap, err := ants.NewPool(cfg.Workers, ants.WithPreAlloc(true), ants.WithNonblocking(true), ants.WithDisablePurge(true))
	if err != nil {
		return nil, fmt.Errorf("slowpath: %w", err)
	}
	jobs := cfg.Workers + cfg.Queue
	p := &Pool{cfg: cfg, ants: ap, free: make(chan *Job, jobs), pending: make(chan *Job, jobs)}
	all := make([]Job, jobs)
	mem := nic.NewFrames(jobs)
	for i := range all {
		all[i].Frame = *mem[i]
		p.free <- &all[i]
	}
	for i := 0; i < cfg.Workers; i++ {
		p.wg.Add(1)
		if err := ap.Submit(p.work); err != nil {
			p.wg.Done()
			p.Close()
			return nil, fmt.Errorf("slowpath: start worker: %w", err)
		}
	}
	return p, nil
}

func (p *Pool) work() {
	defer p.wg.Done()
	for j := range p.pending {
		if j == nil {
			return
		}
		p.run(j)
		j.fn = nil
		p.free <- j
	}
}

func (p *Pool) run(j *Job) {
	defer func() {
		if r := recover(); r != nil {
			p.panics.Add(1)
		}
	}()
	if j.fn != nil {
		j.fn()
	} else {
		p.cfg.Handlers[j.Kind](j)
	}
	p.done[j.Kind].Add(1)
}

func (p *Pool) drop(r DropReason) bool {
	p.drops[r].Add(1)
	return false
}

// get takes a free job without blocking.
func (p *Pool) get(k Kind) *Job {
	if p.closed.Load() {
		p.drop(DropClosed)
		return nil
	}
	select {
	case j := <-p.free:
		return j
	default:
		p.drop(DropFull)
		return nil
	}
}

// Submit copies data into a free job of kind k and queues it. It never
// blocks; it returns false (and counts the reason) when the job is dropped.
func (p *Pool) Submit(k Kind, queue uint16, arg uint64, data []byte) bool {
	if k >= NumKinds || p.cfg.Handlers[k] == nil {
		return p.drop(DropNoHandler)
	}
	if len(data) > nic.MaxData {
		return p.drop(DropTooBig)
	}
	j := p.get(k)
	if j == nil {
		return false
	}
	j.Kind, j.Queue, j.Arg = k, queue, arg
	j.Frame.SetData(data)
	j.Frame.Queue = queue
	p.submitted[k].Add(1)
	p.pending <- j // never blocks: it holds every job
	return true
}

// SubmitFrame is Submit with the frame's data and queue.
func (p *Pool) SubmitFrame(k Kind, f *nic.Frame, arg uint64) bool {
	return p.Submit(k, f.Queue, arg, f.Data())
}

// Do queues fn as a Control job under the same bound. Building fn may
// allocate: Do is for control requests, not for per-packet work.
func (p *Pool) Do(fn func()) bool {
	if fn == nil {
		return p.drop(DropNoHandler)
	}
	j := p.get(Control)
	if j == nil {
		return false
	}
	j.Kind, j.Queue, j.Arg, j.fn = Control, 0, 0, fn
	j.Frame.Reset()
	p.submitted[Control].Add(1)
	p.pending <- j
	return true
}

// Stats returns the counters.
func (p *Pool) Stats() Stats {
	var s Stats
	for k := range s.Submitted {
		s.Submitted[k] = p.submitted[k].Load()
		s.Done[k] = p.done[k].Load()
	}
	for r := range s.Drops {
		s.Drops[r] = p.drops[r].Load()
	}
	s.Panics = p.panics.Load()
	s.Queued = len(p.pending)
	return s
}

// Running returns the number of worker goroutines.
func (p *Pool) Running() int { return p.ants.Running() }

// ErrTimeout is returned by Close when workers did not finish in time.
var ErrTimeout = errors.New("slowpath: workers did not stop in time")

// Close stops accepting jobs, lets the workers finish the jobs already
// queued, and stops them. It waits up to 10 s.
func (p *Pool) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	done := make(chan struct{})
	go func() {
		for i := 0; i < p.cfg.Workers; i++ {
			p.pending <- nil
		}
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return ErrTimeout
	}
	return p.ants.ReleaseTimeout(10 * time.Second)
}
