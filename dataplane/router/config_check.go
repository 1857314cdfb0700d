package router

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
)

// CheckInterfaces checks what "pppfwd run -check" checks beyond the
// file: lan.interface and wan.interface exist and differ, host.tap is
// neither, and the kernel holds no addresses on the two ports other than
// link-local ones (fe80::/10, 169.254/16): pppfwd takes their traffic,
// so a kernel address there would answer nothing, and a kernel that
// thinks it owns a LAN or WAN address sends ARP, RAs or DHCP on a port
// that is not its own. With the netmap host rings (HostRings) the LAN
// interface is the box's own stack's port: it must hold lan.address (its
// services answer there; its traffic beyond the LAN must come from that
// address), and may hold others. The error names each key at fault, its
// line, and what to do.
func (c *Config) CheckInterfaces() error {
	return c.checkInterfaces(kernelAddrs)
}

// kernelAddrs returns the addresses the kernel holds on interface name.
func kernelAddrs(name string) ([]netip.Prefix, error) {
	ifi, err := net.InterfaceByName(name)
	if oe, ok := err.(*net.OpError); ok {
		return nil, oe.Err // "no such network interface", without "route ip+net"
	}
	if err != nil {
		return nil, err
	}
	as, err := ifi.Addrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			ip, _ := netip.AddrFromSlice(n.IP)
			bits, _ := n.Mask.Size()
			out = append(out, netip.PrefixFrom(ip.Unmap(), bits))
		}
	}
	return out, nil
}

func (c *Config) checkInterfaces(addrs func(string) ([]netip.Prefix, error)) error {
	var errs []error
	if c.LANInterface == c.WANInterface {
		errs = append(errs, fmt.Errorf("%s: lan.interface and wan.interface (%s) are both %s: allowed: two different interfaces",
			c.at("wan.interface", 0), c.at("lan.interface", 0), c.LANInterface))
	}
	if c.HostTap != "" && (c.HostTap == c.LANInterface || c.HostTap == c.WANInterface) {
		errs = append(errs, fmt.Errorf("%s: host.tap %s is a port of pppfwd's: allowed: a TAP of its own (pppfwd creates it, e.g. pppfwd0)",
			c.at("host.tap", 0), c.HostTap))
	}
	for _, p := range []struct{ key, name string }{{"lan.interface", c.LANInterface}, {"wan.interface", c.WANInterface}} {
		if p.key == "wan.interface" && p.name == c.LANInterface {
			continue
		}
		as, err := addrs(p.name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s %s: %v: allowed: an existing interface (ip link; ifconfig -l)", c.at(p.key, 0), p.key, p.name, err))
			continue
		}
		if p.key == "lan.interface" && c.HostRings() {
			if !slices.Contains(as, c.LANAddr) {
				fix := fmt.Sprintf("ip addr add %s dev %s", c.LANAddr, p.name)
				if runtime.GOOS == "freebsd" {
					fix = fmt.Sprintf("ifconfig %s inet %s alias; on OPNsense, the LAN interface's address", p.name, c.LANAddr)
				}
				errs = append(errs, fmt.Errorf("%s: lan.interface %s lacks lan.address %s (%s): with netmap's host rings (host.netmap on) the box's own stack keeps the LAN interface and answers for the router: give it the address (%s), or set host.netmap off",
					c.at(p.key, 0), p.name, c.LANAddr, c.at("lan.address", 0), fix))
			}
			continue
		}
		for _, a := range as {
			if a.Addr().IsLinkLocalUnicast() {
				continue
			}
			fix := fmt.Sprintf("ip addr del %s dev %s", a, p.name)
			if runtime.GOOS == "freebsd" {
				fix = fmt.Sprintf("ifconfig %s %s -alias", p.name, map[bool]string{true: "inet", false: "inet6"}[a.Addr().Is4()]+" "+a.Addr().String())
			}
			hint := ""
			if p.key == "lan.interface" {
				hint = "; for the router's own services give it to host.tap instead (or, with backend netmap, keep it there with host.netmap on)"
			}
			errs = append(errs, fmt.Errorf("%s: %s %s has the kernel address %s: pppfwd owns this port: remove it (%s)%s; allowed: none but link-local",
				c.at(p.key, 0), p.key, p.name, a, fix, hint))
		}
	}
	return errors.Join(errs...)
}
