package ethtool

import "fmt"

// Feature is an offload that can be read and switched with the legacy
// per-feature ethtool commands.
type Feature int

// Features understood by Get and Set.
const (
	TSO Feature = iota // tcp-segmentation-offload (all TSO variants)
	GSO                // generic-segmentation-offload
	GRO                // generic-receive-offload (also clears rx-gro-hw)
	LRO                // large-receive-offload
	UFO                // udp-fragmentation-offload (gone from modern kernels)
	// TxCsum is tx-checksumming. When on, a veth peer hands up frames
	// whose L4 checksum is only the pseudo-header sum (CHECKSUM_PARTIAL);
	// a packet socket forwarding them sends them on unfinished.
	TxCsum
	numFeatures
)

// Coalescing lists the features that make the kernel hand up or accept
// frames larger than the MTU. DisableCoalescing turns all of them off.
var Coalescing = []Feature{GRO, LRO, TSO, GSO}

var names = [numFeatures]string{"tso", "gso", "gro", "lro", "ufo", "tx"}

func (f Feature) String() string {
	if f >= 0 && f < numFeatures {
		return names[f]
	}
	return fmt.Sprintf("feature(%d)", int(f))
}

// ParseFeature maps the short ethtool names (tso, gso, gro, lro, ufo, tx) to a Feature.
func ParseFeature(s string) (Feature, error) {
	for i, n := range names {
		if n == s {
			return Feature(i), nil
		}
	}
	return 0, fmt.Errorf("ethtool: unknown feature %q", s)
}

// DisableCoalescing switches off GRO, LRO, TSO and GSO on ifname. Features the
// driver does not have (EOPNOTSUPP) or cannot change while already off are
// ignored; any feature left on is reported in the error.
func DisableCoalescing(ifname string) error {
	for _, f := range Coalescing {
		if err := Set(ifname, f, false); err != nil {
			on, gerr := Get(ifname, f)
			if gerr == nil && !on {
				continue
			}
			return fmt.Errorf("ethtool: %s: cannot switch %s off: %w", ifname, f, err)
		}
	}
	return nil
}
