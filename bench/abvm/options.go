package abvm

import (
	"fmt"
	"os"
	"time"
)

// Options configure Run.
type Options struct {
	// Where the router under test runs: "vm" (default: the lab VM) or
	// "host" (a network namespace of this host, on HostCPUs).
	Where string
	// Paths are the routers measured, of "kernel" and "pppfwd" (default
	// both); they run in that order.
	Paths []string
	// HostCPUs (Where "host") are the host CPUs the router under test
	// runs on: its commands are pinned to them, its ports' receive work
	// is steered to them (RPS), and its per-core figures are theirs. If
	// a CPU is left over, the generator is pinned to the first such and
	// the lab's ends' receive work steered to it. nil: every CPU, nothing
	// pinned.
	HostCPUs []int
	VCPUs    int // the VM's vCPUs (default 2; Where "host": len(HostCPUs))
	MemoryMB int // the VM's RAM (default 512)
	Runs     int // default 3
	Size     int // LAN frame size in bytes, 64..1500 (default 64)
	Flows    int // UDP flows (default 256)
	// Rates is the ladder of offered frames/s per direction; nil: from
	// 1000 doubling until the offer is twice the most delivered (each
	// path its own ladder, fixed in the first run).
	Rates []float64
	// StepDuration and Warmup of each step (defaults 2 s and 500 ms).
	StepDuration, Warmup time.Duration
	// Shape adds shaped steps at ShapeBps bit/s each way; ShapeBps 0
	// takes half of the kernel path's delivered peak of the first run.
	Shape    bool
	ShapeBps uint64
	// Direction is the load: "both" (default: uplink and downlink at the
	// offered rate each), "down" (WAN to LAN only: a download, which the
	// kernel path receives on one NIC queue) or "up".
	Direction string
	// TCP adds the TCP step after each ladder: iperf3 from a LAN host to
	// a server on the Internet side of the access concentrator, for
	// TCPDuration (whole seconds, default 10) after a second iperf3
	// omits, with each of TCPStreams parallel streams (default 1 and 4),
	// as the load's Direction says: uplink (the LAN host sends) unless
	// it is "down", downlink (iperf3 -R) unless it is "up".
	TCP         bool
	TCPDuration time.Duration
	TCPStreams  []int
	Workers     int    // pppfwd's workers in the VM (default: VCPUs)
	Binary      string // the pppfwd binary copied into the VM (default: this one)
	CacheDir    string // vmlab's image cache ("": its default)
	// Progress receives one line per step; Logf details (nil: discard).
	Progress func(string)
	Logf     func(string, ...any)
}

// maxTCPStreams is the most parallel streams of one iperf3 transfer.
const maxTCPStreams = 128

// tcpDirections are the TCP step's transfers for the load direction.
func tcpDirections(load string) []string {
	switch load {
	case "up":
		return []string{"up"}
	case "down":
		return []string{"down"}
	}
	return []string{"up", "down"}
}

// AllPaths are Options.Paths' values, in the order they run.
var AllPaths = []string{"kernel", "pppfwd"}

func (o *Options) defaults() error {
	switch o.Where {
	case "":
		o.Where = "vm"
	case "vm", "host":
	default:
		return fmt.Errorf("abvm: where %q: allowed vm, host", o.Where)
	}
	if len(o.Paths) == 0 {
		o.Paths = AllPaths
	}
	var paths []string
	for _, p := range AllPaths {
		n := 0
		for _, q := range o.Paths {
			if q == p {
				n++
			}
		}
		if n > 1 {
			return fmt.Errorf("abvm: path %s given twice", p)
		}
		if n == 1 {
			paths = append(paths, p)
		}
	}
	if len(paths) != len(o.Paths) {
		return fmt.Errorf("abvm: paths %q: allowed kernel, pppfwd", o.Paths)
	}
	o.Paths = paths
	if o.VCPUs <= 0 {
		o.VCPUs = 2
	}
	if o.MemoryMB <= 0 {
		o.MemoryMB = 512
	}
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Size == 0 {
		o.Size = 64
	}
	if o.Size < 64 || o.Size > 1500 {
		return fmt.Errorf("abvm: frame size %d: allowed 64..1500", o.Size)
	}
	if o.Flows <= 0 {
		o.Flows = 256
	}
	if o.StepDuration <= 0 {
		o.StepDuration = 2 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = 500 * time.Millisecond
	}
	switch o.Direction {
	case "":
		o.Direction = "both"
	case "both", "down", "up":
	default:
		return fmt.Errorf("abvm: direction %q: allowed both, down, up", o.Direction)
	}
	if o.TCPDuration <= 0 {
		o.TCPDuration = 10 * time.Second
	}
	// iperf3 takes whole seconds.
	o.TCPDuration = max(o.TCPDuration.Round(time.Second), time.Second)
	if len(o.TCPStreams) == 0 {
		o.TCPStreams = []int{1, 4}
	}
	for _, n := range o.TCPStreams {
		if n < 1 || n > maxTCPStreams {
			return fmt.Errorf("abvm: %d TCP streams: allowed 1..%d", n, maxTCPStreams)
		}
	}
	if o.Workers <= 0 {
		o.Workers = o.VCPUs
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("abvm: the pppfwd binary: %w", err)
		}
		o.Binary = exe
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return nil
}
