package router

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime"

	"github.com/pppfwd/pppfwd/internal/ifmtu"
)

// PPPoE's and 802.1Q's sizes, as the WAN interface's MTU counts them.
const (
	pppoeOverhead = 8    // PPPoE header (6) and PPP protocol (2)
	vlanTag       = 4    // the 802.1Q tag pppfwd pushes into its frames
	pppoeStdMTU   = 1492 // what an Ethernet MTU of 1500 carries
	etherStdMTU   = 1500
)

// WANMTU returns the MTU the WAN interface needs for pppoe.mtu mtu (0:
// the default 1492) with wan.vlan vlan (0: untagged), or 0 when the
// standard 1500 carries it. Up to 1492 it does: the PPPoE frame fits,
// and the tag of a tagged one lies within the 4 bytes every Ethernet
// driver and the kernel's packet sockets allow a tagged frame beyond the
// MTU. Above (RFC 4638 baby jumbo frames), the interface's MTU must take
// the PPP payload, the PPPoE and PPP headers (8 bytes) and, with a VLAN,
// the tag as well: pppfwd pushes it within the frame itself (no VLAN
// interface takes it off the parent's MTU), and the drivers' allowance
// for it does not reach past the standard size everywhere. So pppoe.mtu
// 1500 needs 1508, or 1512 with wan.vlan.
func WANMTU(mtu int, vlan uint16) int {
	if mtu <= pppoeStdMTU {
		return 0
	}
	need := mtu + pppoeOverhead
	if vlan != 0 {
		need += vlanTag
	}
	return need
}

// mtuOps reads and sets interface MTUs (the system's: ifmtu; tests may
// stand in).
type mtuOps struct {
	get func(name string) (int, error)
	max func(name string) (int, error) // 0: unknown
	set func(name string, mtu int) error
}

var sysMTU = mtuOps{get: ifmtu.Get, max: ifmtu.Max, set: ifmtu.Set}

// mtuCommand is the command that sets interface name's MTU on this GOOS.
func mtuCommand(name string, mtu int) string {
	if runtime.GOOS == "freebsd" {
		return fmt.Sprintf("ifconfig %s mtu %d", name, mtu)
	}
	return fmt.Sprintf("ip link set dev %s mtu %d", name, mtu)
}

// mtuFor names what the WAN interface's MTU is for: "pppoe.mtu 1500
// with wan.vlan 7 (RFC 4638)".
func (c *Config) mtuFor() string {
	s := fmt.Sprintf("pppoe.mtu %d", c.PPPoE.MTU)
	if c.PPPoE.VLAN != 0 {
		s += fmt.Sprintf(" with wan.vlan %d", c.PPPoE.VLAN)
	}
	return s + " (RFC 4638)"
}

// raiseWANMTU raises wan.interface's MTU to WANMTU when it is lower,
// never lowering one that is larger. It returns the line to log ("" when
// nothing had to change) and whether the interface now carries
// pppoe.mtu; when it does not, the line says why and what to run, and
// the PPPoE client must ask for no more than 1492 (pppoeStdMTU): an AC
// told a larger MRU would send frames the interface drops.
//
// The router calls it before it opens its ports: some drivers reset
// their rings on an MTU change, which would take the queues from under
// an AF_XDP socket or a netmap port.
func (c *Config) raiseWANMTU(ops mtuOps) (msg string, ok bool) {
	need := WANMTU(c.PPPoE.MTU, c.PPPoE.VLAN)
	if need == 0 {
		return "", true
	}
	ifn := c.WANInterface
	have, err := ops.get(ifn)
	if err != nil {
		// Opening the port reports a missing interface.
		return fmt.Sprintf("wan.interface %s: reading the MTU for %s: %v; running at pppoe.mtu %d", ifn, c.mtuFor(), err, pppoeStdMTU), false
	}
	if have >= need {
		return "", true
	}
	fail := func(why string) (string, bool) {
		return fmt.Sprintf("wan.interface %s: cannot raise the MTU %d -> %d for %s: %s; running at pppoe.mtu %d: for %d, set it with `%s` and restart pppfwd",
			ifn, have, need, c.mtuFor(), why, pppoeStdMTU, c.PPPoE.MTU, mtuCommand(ifn, need)), false
	}
	if limit, _ := ops.max(ifn); limit > 0 && limit < need {
		return fail(fmt.Sprintf("its driver allows at most %d (pppoe.mtu %d needs a NIC that takes %d)", limit, c.PPPoE.MTU, need))
	}
	if err := ops.set(ifn, need); err != nil {
		why := err.Error()
		switch {
		case errors.Is(err, fs.ErrPermission):
			why += " (pppfwd needs CAP_NET_ADMIN, or root, to change it)"
		default:
			why += " (the driver refused it)"
		}
		return fail(why)
	}
	return fmt.Sprintf("wan.interface %s: MTU %d -> %d for %s", ifn, have, need, c.mtuFor()), true
}

// CheckWANMTU says what "pppfwd run -check" tells about the WAN
// interface's MTU for pppoe.mtu above 1492 (WANMTU): "" when it carries
// it, else what pppfwd does at start, and whether that cannot work (the
// driver's largest MTU is too small). It changes nothing.
func (c *Config) CheckWANMTU() (msg string, bad bool) {
	return c.checkWANMTU(sysMTU)
}

func (c *Config) checkWANMTU(ops mtuOps) (string, bool) {
	need := WANMTU(c.PPPoE.MTU, c.PPPoE.VLAN)
	if need == 0 {
		return "", false
	}
	ifn := c.WANInterface
	have, err := ops.get(ifn)
	if err != nil || have >= need {
		return "", false // a missing interface is CheckInterfaces' to report
	}
	if limit, _ := ops.max(ifn); limit > 0 && limit < need {
		return fmt.Sprintf("%s: wan.interface %s: MTU %d, %s needs %d, and its driver allows at most %d: pppfwd will run at pppoe.mtu %d (a NIC that takes %d is needed; or set pppoe.mtu %d)",
			c.at("pppoe.mtu", 0), ifn, have, c.mtuFor(), need, limit, pppoeStdMTU, need, pppoeStdMTU), true
	}
	return fmt.Sprintf("%s: wan.interface %s: MTU %d, %s needs %d: pppfwd raises it at start (or: %s)",
		c.at("pppoe.mtu", 0), ifn, have, c.mtuFor(), need, mtuCommand(ifn, need)), false
}
