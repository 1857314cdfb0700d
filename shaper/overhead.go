package shaper

import (
	"fmt"
	"strconv"
	"strings"
)

// Framing is the link layer's cell framing, as CAKE names it.
type Framing uint8

const (
	// FramingNone: bytes go on the wire as they are ("noatm").
	FramingNone Framing = iota
	// FramingATM: AAL5 cells, 48 payload bytes in each 53-byte cell ("atm").
	FramingATM
	// FramingPTM: VDSL2 PTM 64/65 encoding, one byte per 64 or part ("ptm").
	FramingPTM
)

// Ranges CAKE accepts for overhead and mpu.
const (
	MinOverhead = -64
	MaxOverhead = 256
	MaxMPU      = 256
)

// Overhead is per-packet link overhead compensation in CAKE's terms, so the
// shaped rate is the line's rate rather than the IP payload's. The zero value
// is CAKE's "raw": packets are counted as Ops.Len reports them (the IP packet).
type Overhead struct {
	Bytes   int     // added to every packet (overhead N); may be negative
	MPU     int     // minimum packet unit after Bytes is added (mpu N)
	Framing Framing // atm, ptm or none
}

// WireLen returns the bytes a packet of n IP bytes occupies on the line.
func (o Overhead) WireLen(n int) int {
	n += o.Bytes
	if n < o.MPU {
		n = o.MPU
	}
	if n < 1 {
		n = 1
	}
	switch o.Framing {
	case FramingATM:
		n = (n + 47) / 48 * 53
	case FramingPTM:
		n += (n + 63) / 64
	}
	return n
}

// String returns the overhead in keywords ParseOverhead reads back.
func (o Overhead) String() string {
	f := "noatm"
	switch o.Framing {
	case FramingATM:
		f = "atm"
	case FramingPTM:
		f = "ptm"
	}
	return fmt.Sprintf("overhead %d mpu %d %s", o.Bytes, o.MPU, f)
}

// Validate reports whether the overhead is inside CAKE's ranges.
func (o Overhead) Validate() error {
	if o.Bytes < MinOverhead || o.Bytes > MaxOverhead {
		return fmt.Errorf("shaper: overhead %d outside [%d, %d]", o.Bytes, MinOverhead, MaxOverhead)
	}
	if o.MPU < 0 || o.MPU > MaxMPU {
		return fmt.Errorf("shaper: mpu %d outside [0, %d]", o.MPU, MaxMPU)
	}
	if o.Framing > FramingPTM {
		return fmt.Errorf("shaper: unknown framing %d", o.Framing)
	}
	return nil
}

// overheadPreset is one of CAKE's link keywords.
type overheadPreset struct {
	bytes   int
	mpu     int // -1: leave unchanged
	framing Framing
}

// overheadPresets follows tc-cake(8): each keyword sets the overhead and
// framing (and, for some, the mpu); ether-vlan is handled apart (it adds 4).
var overheadPresets = map[string]overheadPreset{
	"raw":             {0, 0, FramingNone},
	"conservative":    {48, -1, FramingATM},
	"ethernet":        {38, 84, FramingNone},
	"docsis":          {18, 64, FramingNone},
	"ipoa-vcmux":      {8, -1, FramingATM},
	"ipoa-llcsnap":    {16, -1, FramingATM},
	"bridged-vcmux":   {24, -1, FramingATM},
	"bridged-llcsnap": {32, -1, FramingATM},
	"pppoa-vcmux":     {10, -1, FramingATM},
	"pppoa-llc":       {14, -1, FramingATM},
	"pppoe-vcmux":     {32, -1, FramingATM},
	"pppoe-llcsnap":   {40, -1, FramingATM},
	"pppoe-ptm":       {30, -1, FramingPTM},
	"bridged-ptm":     {22, -1, FramingPTM},
}

// applyOverheadWord consumes the overhead keyword at words[0] (and its
// argument, if any). It returns how many words it used, 0 if words[0] is
// not an overhead keyword.
func applyOverheadWord(o *Overhead, words []string) (int, error) {
	w := words[0]
	if p, ok := overheadPresets[w]; ok {
		o.Bytes, o.Framing = p.bytes, p.framing
		if p.mpu >= 0 {
			o.MPU = p.mpu
		}
		return 1, nil
	}
	switch w {
	case "ether-vlan":
		o.Bytes += 4
		return 1, nil
	case "via-ethernet": // obsolete in CAKE, accepted and ignored
		return 1, nil
	case "atm":
		o.Framing = FramingATM
		return 1, nil
	case "ptm":
		o.Framing = FramingPTM
		return 1, nil
	case "noatm":
		o.Framing = FramingNone
		return 1, nil
	case "overhead", "mpu":
		if len(words) < 2 {
			return 0, fmt.Errorf("shaper: %q needs a number", w)
		}
		v, err := strconv.Atoi(words[1])
		if err != nil {
			return 0, fmt.Errorf("shaper: %s %q: not a number", w, words[1])
		}
		if w == "overhead" {
			if v < MinOverhead || v > MaxOverhead {
				return 0, fmt.Errorf("shaper: overhead %d outside [%d, %d]", v, MinOverhead, MaxOverhead)
			}
			o.Bytes = v
		} else {
			if v < 0 || v > MaxMPU {
				return 0, fmt.Errorf("shaper: mpu %d outside [0, %d]", v, MaxMPU)
			}
			o.MPU = v
		}
		return 2, nil
	}
	return 0, nil
}

// ParseOverhead reads CAKE overhead keywords, left to right, later ones
// overriding earlier ones: "overhead N", "mpu N", "atm", "ptm", "noatm",
// "raw", "conservative", "ethernet", "ether-vlan" (adds 4), "docsis",
// "ipoa-vcmux", "ipoa-llcsnap", "bridged-vcmux", "bridged-llcsnap",
// "pppoa-vcmux", "pppoa-llc", "pppoe-vcmux", "pppoe-llcsnap", "pppoe-ptm",
// "bridged-ptm". An empty string is "raw".
func ParseOverhead(s string) (Overhead, error) {
	var o Overhead
	words := strings.Fields(s)
	for i := 0; i < len(words); {
		n, err := applyOverheadWord(&o, words[i:])
		if err != nil {
			return Overhead{}, err
		}
		if n == 0 {
			return Overhead{}, fmt.Errorf("shaper: unknown overhead keyword %q", words[i])
		}
		i += n
	}
	if err := o.Validate(); err != nil {
		return Overhead{}, err
	}
	return o, nil
}
