package netmap

import (
	"fmt"

	"github.com/pppfwd/pppfwd/nic/ethtool"
)

// DisableHostOffloads switches off tx-checksumming, TSO, GSO, GRO and LRO
// on interface name (see offload.go). Features the driver lacks are
// ignored; one it cannot switch off is reported.
func DisableHostOffloads(name string) error {
	name = portName(name)
	if err := ethtool.DisableCoalescing(name); err != nil {
		return fmt.Errorf("netmap: %w", err)
	}
	if err := ethtool.Set(name, ethtool.TxCsum, false); err != nil {
		if on, gerr := ethtool.Get(name, ethtool.TxCsum); gerr != nil || on {
			return fmt.Errorf("netmap: %s: cannot switch tx-checksumming off: %w", name, err)
		}
	}
	return nil
}
