package shaper

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Linux fq_codel defaults.
const (
	DefaultFlows     = 1024
	DefaultQuantum   = 1514
	DefaultTarget    = 5_000_000   // 5 ms
	DefaultInterval  = 100_000_000 // 100 ms
	DefaultLimit     = 10240
	DefaultMemLimit  = 32 << 20
	DefaultDropBatch = 64
)

// MinRateQuantum is the least quantum RateQuantum gives (CAKE's).
const MinRateQuantum = 300

// RateQuantum is the DRR quantum, in bytes, of a shaper whose Config leaves
// Quantum 0, at rateBits bits per second: CAKE's choice, the bytes of
// 1/4096 s of rate clamped to [MinRateQuantum, DefaultQuantum];
// DefaultQuantum when unlimited (rateBits 0).
//
// A backlogged flow is served once per DRR round, which lasts (backlogged
// flows) x quantum / rate, and CoDel acts on a flow only when it is
// served: a packet waits for its flow's next turn whatever CoDel does, and
// each flow holds what arrives between two turns. With a fixed 1514-byte
// quantum the round, and so every bulk packet's wait and the backlog,
// grows as the rate falls; scaled with the rate, a quantum is 1/4096 s of
// rate, so a round lasts (backlogged flows)/4096 s wherever the clamp
// does not apply.
func RateQuantum(rateBits uint64) int {
	if rateBits == 0 {
		return DefaultQuantum
	}
	return int(min(max(rateBits/8>>12, MinRateQuantum), DefaultQuantum))
}

// RateTarget is the CoDel target of a shaper whose Config leaves Target 0,
// at rateBits bits per second with full-size packets of mtuWire bytes on
// the wire: CAKE's choice, DefaultTarget or one and a half packets'
// transmission time, whichever is longer; DefaultTarget when unlimited.
// Below about 3.6 Mbit/s one and a half full-size packets take longer
// than 5 ms to send (one alone below about 2.4 Mbit/s), so a packet
// queued behind one or two others would always be above a 5 ms target
// and CoDel would keep dropping from a link it cannot fill.
func RateTarget(rateBits uint64, mtuWire int) int64 {
	if rateBits == 0 {
		return DefaultTarget
	}
	frame := float64(mtuWire) * 8e9 / float64(rateBits)
	return max(DefaultTarget, int64(math.Min(frame*3/2, math.MaxInt64/4)))
}

// RateInterval is the CoDel interval that goes with a rate's target
// (RateTarget) where Config leaves both Target and Interval 0: CAKE's,
// DefaultInterval grown by what the target grew beyond DefaultTarget, and
// at least twice the target. A configured target keeps the configured or
// default interval.
func RateInterval(rateBits uint64, target int64) int64 {
	if rateBits == 0 {
		return DefaultInterval
	}
	return max(DefaultInterval+target-DefaultTarget, 2*target)
}

// Bounds Validate enforces.
const (
	MaxFlows   = 65536
	MinQuantum = 64
	MaxQuantum = 1 << 20
	MaxLimit   = 1 << 22
)

// Config configures one FQ-CoDel instance. Zero fields take Linux
// fq_codel's defaults, but for Quantum, Target and Interval under a rate
// (RateQuantum, RateTarget, RateInterval: CAKE's).
type Config struct {
	Flows    int   // flow queues (1024)
	Quantum  int   // DRR quantum in bytes (0: RateQuantum of the rate, see New)
	Target   int64 // CoDel target, ns (0: 5 ms, or under a rate RateTarget of it)
	Interval int64 // CoDel interval, ns (0: 100 ms, or under a rate RateInterval)
	NoECN    bool  // ECN marking is on unless set
	Limit    int   // packet limit (10240)
	MemLimit int   // byte limit (32 MiB), counted as the sum of Ops.Len
	HostFair bool  // per-host fairness first, then per-flow

	// DropBatch is how many packets one overlimit event drops at most
	// from the fattest queue (64, Linux drop_batch).
	DropBatch int
	// Overhead is the link overhead compensation; the zero value counts
	// Ops.Len bytes as they are (CAKE "raw").
	Overhead Overhead
}

// WithDefaults returns c with every zero field set to its default. The
// Quantum, Target and Interval it sets are an unlimited shaper's: New
// gives a rate-limited one whose Config leaves them 0 RateQuantum,
// RateTarget and RateInterval of the rate.
func (c Config) WithDefaults() Config {
	if c.Flows == 0 {
		c.Flows = DefaultFlows
	}
	if c.Quantum == 0 {
		c.Quantum = DefaultQuantum
	}
	if c.Target == 0 {
		c.Target = DefaultTarget
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Limit == 0 {
		c.Limit = DefaultLimit
	}
	if c.MemLimit == 0 {
		c.MemLimit = DefaultMemLimit
	}
	if c.DropBatch == 0 {
		c.DropBatch = DefaultDropBatch
	}
	return c
}

// Validate checks a configuration after defaults are applied.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Flows < 1 || c.Flows > MaxFlows:
		return fmt.Errorf("shaper: flows %d outside [1, %d]", c.Flows, MaxFlows)
	case c.Quantum < MinQuantum || c.Quantum > MaxQuantum:
		return fmt.Errorf("shaper: quantum %d outside [%d, %d]", c.Quantum, MinQuantum, MaxQuantum)
	case c.Target < 0 || c.Interval < 0:
		return fmt.Errorf("shaper: negative target/interval")
	case c.Limit < 1 || c.Limit > MaxLimit:
		return fmt.Errorf("shaper: limit %d outside [1, %d]", c.Limit, MaxLimit)
	case c.MemLimit < 0:
		return fmt.Errorf("shaper: negative memory_limit")
	case c.DropBatch < 1:
		return fmt.Errorf("shaper: drop_batch %d < 1", c.DropBatch)
	}
	return c.Overhead.Validate()
}

// Spec is one direction's shaper as an operator writes it: a rate and a
// Config. ParseSpec reads it from tc-cake / tc-fq_codel style keywords.
type Spec struct {
	Rate   uint64 // bits per second, 0 = unlimited
	Config Config
}

// String returns the spec in keywords ParseSpec reads back to the same Spec.
func (s Spec) String() string {
	c := s.Config
	var b strings.Builder
	if s.Rate == 0 {
		b.WriteString("unlimited")
	} else {
		fmt.Fprintf(&b, "bandwidth %dbit", s.Rate)
	}
	if c.Flows != 0 {
		fmt.Fprintf(&b, " flows %d", c.Flows)
	}
	if c.Quantum != 0 {
		fmt.Fprintf(&b, " quantum %d", c.Quantum)
	}
	if c.Target != 0 {
		fmt.Fprintf(&b, " target %dns", c.Target)
	}
	if c.Interval != 0 {
		fmt.Fprintf(&b, " interval %dns", c.Interval)
	}
	if c.Limit != 0 {
		fmt.Fprintf(&b, " limit %d", c.Limit)
	}
	if c.MemLimit != 0 {
		fmt.Fprintf(&b, " memory_limit %db", c.MemLimit)
	}
	if c.DropBatch != 0 {
		fmt.Fprintf(&b, " drop_batch %d", c.DropBatch)
	}
	if c.NoECN {
		b.WriteString(" noecn")
	} else {
		b.WriteString(" ecn")
	}
	if c.HostFair {
		b.WriteString(" dual-host")
	} else {
		b.WriteString(" flows")
	}
	b.WriteByte(' ')
	b.WriteString(c.Overhead.String())
	return b.String()
}

// ParseSpec reads a direction's shaper from keywords, e.g.
// "bandwidth 900mbit pppoe-ptm ether-vlan dual-dsthost nat".
//
// Keywords: bandwidth RATE | unlimited; flows N; quantum N; target TIME;
// interval TIME; limit N (packets); memory_limit SIZE; drop_batch N;
// ecn | noecn; dual-srchost | dual-dsthost | dual-host | triple-isolate |
// hosts | srchost | dsthost (per-host fairness, then per-flow) | flows | flowblind (no host fairness); nat | nonat
// (accepted: pppfwd always knows the LAN host); besteffort (accepted); and
// every overhead keyword of ParseOverhead. RATE takes bit, kbit, mbit,
// gbit, tbit, bps (bytes/s), kbps, mbps, gbps or kibit, mibit, gibit; a
// bare number is bit/s. TIME takes ns, us, ms, s; a bare number is us (as
// tc). SIZE takes b, k/kb, m/mb, g/gb (bytes); a bare number is bytes.
func ParseSpec(s string) (Spec, error) {
	var sp Spec
	c := &sp.Config
	words := strings.Fields(strings.ToLower(s))
	for i := 0; i < len(words); {
		w := words[i]
		n, err := applyOverheadWord(&c.Overhead, words[i:])
		if err != nil {
			return Spec{}, err
		}
		if n > 0 {
			i += n
			continue
		}
		arg := ""
		if i+1 < len(words) {
			arg = words[i+1]
		}
		i++
		switch w {
		case "unlimited":
			sp.Rate = 0
		case "ecn":
			c.NoECN = false
		case "noecn":
			c.NoECN = true
		case "dual-srchost", "dual-dsthost", "dual-host", "triple-isolate", "hosts", "srchost", "dsthost":
			c.HostFair = true
		case "flowblind":
			c.HostFair = false
		case "nat", "nonat", "besteffort":
		case "flows":
			if v, err := strconv.Atoi(arg); err == nil {
				c.Flows = v
				i++
			} else {
				c.HostFair = false // CAKE's "flows" isolation mode
			}
		case "bandwidth", "rate":
			v, err := parseRate(arg)
			if err != nil {
				return Spec{}, err
			}
			sp.Rate = v
			i++
		case "target", "interval":
			v, err := parseTime(arg)
			if err != nil {
				return Spec{}, err
			}
			if v == 0 {
				return Spec{}, fmt.Errorf("shaper: %s must be > 0", w)
			}
			if w == "target" {
				c.Target = v
			} else {
				c.Interval = v
			}
			i++
		case "memory_limit":
			v, err := parseSize(arg)
			if err != nil {
				return Spec{}, err
			}
			if v == 0 || v > math.MaxInt32 {
				return Spec{}, fmt.Errorf("shaper: memory_limit %d outside [1, %d]", v, math.MaxInt32)
			}
			c.MemLimit = int(v)
			i++
		case "quantum", "limit", "drop_batch":
			v, err := strconv.Atoi(arg)
			if err != nil || v <= 0 {
				return Spec{}, fmt.Errorf("shaper: %s %q: want a positive number", w, arg)
			}
			switch w {
			case "quantum":
				c.Quantum = v
			case "limit":
				c.Limit = v
			default:
				c.DropBatch = v
			}
			i++
		default:
			return Spec{}, fmt.Errorf("shaper: unknown keyword %q", w)
		}
	}
	if c.Flows < 0 {
		return Spec{}, fmt.Errorf("shaper: flows %d < 0", c.Flows)
	}
	if err := c.Validate(); err != nil {
		return Spec{}, err
	}
	return sp, nil
}

// splitUnit splits "900mbit" into 900 and "mbit".
func splitUnit(s string) (float64, string, error) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, "", fmt.Errorf("shaper: %q: want a number", s)
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, "", fmt.Errorf("shaper: %q: bad number", s)
	}
	return v, s[i:], nil
}

func scaled(s string, v, mul, max float64) (uint64, error) {
	r := math.Round(v * mul)
	if r > max {
		return 0, fmt.Errorf("shaper: %q too large", s)
	}
	return uint64(r), nil
}

func parseRate(s string) (uint64, error) {
	v, u, err := splitUnit(s)
	if err != nil {
		return 0, err
	}
	mul, ok := map[string]float64{
		"": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
		"kibit": 1 << 10, "mibit": 1 << 20, "gibit": 1 << 30,
		"bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9,
	}[u]
	if !ok {
		return 0, fmt.Errorf("shaper: rate %q: unknown unit", s)
	}
	return scaled(s, v, mul, 1e13)
}

func parseTime(s string) (int64, error) {
	v, u, err := splitUnit(s)
	if err != nil {
		return 0, err
	}
	mul, ok := map[string]float64{"": 1e3, "ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[u]
	if !ok {
		return 0, fmt.Errorf("shaper: time %q: unknown unit", s)
	}
	r, err := scaled(s, v, mul, 3600e9)
	return int64(r), err
}

func parseSize(s string) (uint64, error) {
	v, u, err := splitUnit(s)
	if err != nil {
		return 0, err
	}
	mul, ok := map[string]float64{
		"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
	}[u]
	if !ok {
		return 0, fmt.Errorf("shaper: size %q: unknown unit", s)
	}
	return scaled(s, v, mul, 1<<40)
}
