//go:build linux

package ethtool_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic/ethtool"
)

// TestSteerPortsVeth: veth has no ntuple filters, and SteerPorts says so
// with EOPNOTSUPP (the router's cue to fall back to the hand-over) and
// leaves nothing behind.
func TestSteerPortsVeth(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	rules, err := ethtool.PortPairRules(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = ln.R.Do(func() error {
		s, err := ethtool.SteerPorts(ln.RA, rules)
		if err == nil {
			s.Remove()
		}
		return err
	})
	if err == nil || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("SteerPorts on veth: %v, want EOPNOTSUPP", err)
	}
}
