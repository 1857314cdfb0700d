// Package router assembles a running pppfwd router from a configuration
// file: ports on the chosen backend, the dataplane engine, the control
// plane and the PPPoE client. cmd/pppfwd's "run" command is a thin shell
// around it, and the namespace lab uses it as is.
package router

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/pppoe"
	"github.com/pppfwd/pppfwd/shaper"
)

// Config is a router's configuration (see pppfwd.conf.example).
//
// Each field's key tag names the configuration keys it comes from (Reload
// reports changes by them).
type Config struct {
	Backend string `key:"backend"` // afpacket, afxdp or netmap
	Workers int    `key:"workers"`

	LANInterface string       `key:"lan.interface"`
	LANAddr      netip.Prefix `key:"lan.address"` // the router's LAN address and prefix
	WANInterface string       `key:"wan.interface"`

	// IPv6 (routed, no NAT): a static LAN /64, or a prefix the ISP
	// delegates over the session (DHCPv6-PD) of which the LAN takes /64
	// number LAN6Subnet. Either turns IPv6CP on. LAN6DNS is advertised
	// (RDNSS) besides the DNS servers DHCPv6 brings.
	LAN6Prefix netip.Prefix `key:"lan.ipv6_prefix"`
	LAN6Subnet int          `key:"lan.ipv6_subnet"`
	LAN6DNS    []netip.Addr `key:"lan.ipv6_dns"`
	PD         bool         `key:"pppoe.dhcpv6_pd"`
	PDHint     int          `key:"pppoe.dhcpv6_pd"` // prefix length asked for (0: none)
	// The IPv6 firewall (RFC 6092 simple security) is on unless
	// NoFirewall6; Allow6 opens inbound ports to LAN hosts.
	NoFirewall6 bool               `key:"ipv6.firewall"`
	Allow6      []dataplane.Allow6 `key:"ipv6.allow"`
	// NoIPsec6 closes what the firewall lets in by default for IPsec
	// (RFC 6092 REC-22..24: ESP, AH and IKE on UDP 500 to LAN hosts).
	NoIPsec6 bool `key:"ipv6.ipsec"`

	PPPoE pppoe.ClientConfig `key:"pppoe.* or wan.vlan*"` // user, password, service, AC, VLAN, MTU, state, echo

	Up   shaper.Spec `key:"shaper.up"` // Rate 0: that direction is not shaped
	Down shaper.Spec `key:"shaper.down"`

	PortLo uint16     `key:"nat.ports"`
	PortHi uint16     `key:"nat.ports"`
	NAT    nat.Config `key:"nat.*"` // capacity, per-host limit (ParseConfig: DefaultMaxPerHost unless set), filtering, forwards

	HostTap       string        `key:"host.tap"`       // TAP device for the router's own traffic ("" = built-in ARP/echo only)
	StatsInterval time.Duration `key:"stats.interval"` // log counters this often (0 = never)
	StatsFile     string        `key:"stats.file"`     // also write them there as JSON, replaced each interval (10s if no interval)

	// Session hooks, as pppd's usepeerdns and ip-up/ip-down: the DNS
	// servers the session brought, written as a resolv.conf; programs
	// run when the session comes up and when it goes down (see hooks.go).
	ResolvFile string `key:"pppoe.resolv"`
	UpScript   string `key:"pppoe.up_script"`
	DownScript string `key:"pppoe.down_script"`
	// IPv6Script runs when the LAN gets or loses its IPv6 prefix.
	IPv6Script string `key:"lan.ipv6_script"`
}

// ParseConfig reads "key value" lines; '#' starts a comment. Unknown
// keys, repeated single keys and bad values are errors naming the line.
func ParseConfig(r io.Reader) (*Config, error) {
	c := &Config{Backend: "afpacket", Workers: 1, PortLo: 1024, PortHi: 65535}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		i := strings.IndexAny(text, " \t=")
		if i < 0 {
			return nil, fmt.Errorf("line %d: %q has no value", line, text)
		}
		key, val := text[:i], strings.TrimSpace(text[i:])
		val = strings.TrimSpace(strings.TrimPrefix(val, "="))
		key = strings.TrimSpace(key)
		val = strings.TrimSpace(val)
		if key != "nat.forward" && key != "ipv6.allow" {
			if seen[key] {
				return nil, fmt.Errorf("line %d: %s given twice", line, key)
			}
			seen[key] = true
		}
		if err := c.set(key, val); err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", line, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seen["nat.max_per_host"] {
		c.NAT.MaxPerHost = DefaultMaxPerHost(c.NAT.Capacity)
	}
	return c, c.Validate()
}

// DefaultMaxPerHost is nat.max_per_host when a configuration file does
// not set it: an eighth of a worker table's capacity (nat.capacity, 0 for
// nat.Config's default of 65536 slots) in flows per LAN host, in each
// worker's table. A flow holds at most two slots besides its host's
// counter (itself and, for the first flow of a LAN socket, its mapping;
// three with ADF's permission), so a host at its limit holds at most a
// quarter of a table (three eighths with ADF) and the other hosts keep
// the rest, as pf's max-src-states keeps one source from filling the
// state table. "nat.max_per_host 0" sets no limit.
func DefaultMaxPerHost(capacity int) int {
	if capacity == 0 {
		capacity = 1 << 16 // nat.Config.Capacity's default
	}
	return max(capacity/8, 1)
}

func (c *Config) set(key, val string) error {
	var err error
	switch key {
	case "backend":
		switch val {
		case "afpacket", "afxdp", "netmap":
			c.Backend = val
		default:
			return fmt.Errorf("%q: want afpacket, afxdp or netmap", val)
		}
	case "workers":
		c.Workers, err = atoiRange(val, 1, 64)
	case "lan.interface":
		c.LANInterface = val
	case "lan.address":
		c.LANAddr, err = netip.ParsePrefix(val)
		if err == nil && (!c.LANAddr.Addr().Is4() || c.LANAddr.Bits() < 8 || c.LANAddr.Bits() > 30) {
			err = fmt.Errorf("%q: want an IPv4 address with a /8../30 prefix", val)
		}
	case "wan.interface":
		c.WANInterface = val
	case "lan.ipv6_prefix":
		c.LAN6Prefix, err = netip.ParsePrefix(val)
		if err == nil && (!c.LAN6Prefix.Addr().Is6() || c.LAN6Prefix.Addr().Is4In6() || c.LAN6Prefix.Bits() != 64) {
			err = fmt.Errorf("%q: want an IPv6 /64 (hosts number themselves in it by SLAAC)", val)
		}
		c.LAN6Prefix = c.LAN6Prefix.Masked()
		if a := c.LAN6Prefix.Addr(); err == nil && (!a.IsGlobalUnicast() || a.IsLinkLocalUnicast()) {
			err = fmt.Errorf("%q: want a global unicast prefix", val)
		}
	case "lan.ipv6_subnet":
		c.LAN6Subnet, err = atoiRange(val, 0, 65535)
	case "lan.ipv6_dns":
		for _, f := range strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ' ' }) {
			a, perr := netip.ParseAddr(f)
			if perr != nil || !a.Is6() || a.Is4In6() {
				return fmt.Errorf("%q: want IPv6 addresses", f)
			}
			c.LAN6DNS = append(c.LAN6DNS, a)
		}
	case "ipv6.firewall":
		switch val {
		case "on", "yes":
			c.NoFirewall6 = false
		case "off", "no":
			c.NoFirewall6 = true
		default:
			return fmt.Errorf("%q: want on or off", val)
		}
	case "ipv6.ipsec":
		switch val {
		case "on", "yes":
			c.NoIPsec6 = false
		case "off", "no":
			c.NoIPsec6 = true
		default:
			return fmt.Errorf("%q: want on or off", val)
		}
	case "ipv6.allow":
		var a dataplane.Allow6
		a, err = parseAllow6(val)
		c.Allow6 = append(c.Allow6, a)
	case "pppoe.dhcpv6_pd":
		switch val {
		case "off", "no":
			c.PD = false
		case "on", "yes":
			c.PD = true
		default:
			c.PD = true
			c.PDHint, err = atoiRange(strings.TrimPrefix(val, "/"), 32, 64)
			if err != nil {
				err = fmt.Errorf("%q: want on, off or the prefix length to ask for (e.g. 56)", val)
			}
		}
	case "wan.vlan":
		var v int
		v, err = atoiRange(val, 0, 4094)
		c.PPPoE.VLAN = uint16(v)
	case "wan.vlan_prio":
		var v int
		v, err = atoiRange(val, 0, 7)
		c.PPPoE.VLANPrio = uint8(v)
	case "pppoe.user":
		c.PPPoE.Username = val
	case "pppoe.password":
		c.PPPoE.Password = val
	case "pppoe.service":
		c.PPPoE.ServiceName = val
	case "pppoe.ac_name":
		c.PPPoE.ACName = val
	case "pppoe.mtu":
		c.PPPoE.MTU, err = atoiRange(val, 576, 1500)
	case "pppoe.state":
		c.PPPoE.StatePath = val
	case "pppoe.resolv":
		c.ResolvFile = val
	case "pppoe.up_script":
		c.UpScript = val
	case "pppoe.down_script":
		c.DownScript = val
	case "lan.ipv6_script":
		c.IPv6Script = val
	case "pppoe.echo_interval":
		c.PPPoE.EchoInterval, err = time.ParseDuration(val)
	case "pppoe.echo_failures":
		c.PPPoE.EchoFailures, err = atoiRange(val, 1, 100)
	case "pppoe.auth":
		switch val {
		case "any":
			c.PPPoE.Auth = pppoe.AuthAny
		case "pap":
			c.PPPoE.Auth = pppoe.AuthPAP
		case "chap":
			c.PPPoE.Auth = pppoe.AuthCHAPMD5
		case "mschapv2":
			c.PPPoE.Auth = pppoe.AuthMSCHAPv2
		default:
			return fmt.Errorf("%q: want any, pap, chap or mschapv2", val)
		}
	case "shaper.up":
		c.Up, err = shaper.ParseSpec(val)
	case "shaper.down":
		c.Down, err = shaper.ParseSpec(val)
	case "nat.ports":
		lo, hi, ok := strings.Cut(val, "-")
		var l, h int
		if l, err = atoiRange(lo, 1, 65535); err == nil && ok {
			h, err = atoiRange(hi, l+1, 65535)
		} else if !ok {
			err = fmt.Errorf("%q: want LO-HI", val)
		}
		c.PortLo, c.PortHi = uint16(l), uint16(h)
	case "nat.capacity":
		c.NAT.Capacity, err = atoiRange(val, 64, 1<<26)
	case "nat.max_per_host":
		c.NAT.MaxPerHost, err = atoiRange(val, 0, 1<<26)
	case "nat.filtering":
		switch val {
		case "eif", "endpoint-independent":
			c.NAT.Filtering = nat.EndpointIndependent
		case "adf", "address-dependent":
			c.NAT.Filtering = nat.AddressDependent
		default:
			return fmt.Errorf("%q: want eif or adf", val)
		}
	case "nat.forward":
		var f nat.Forward
		f, err = parseForward(val)
		c.NAT.Forwards = append(c.NAT.Forwards, f)
	case "host.tap":
		c.HostTap = val
	case "stats.interval":
		c.StatsInterval, err = time.ParseDuration(val)
	case "stats.file":
		c.StatsFile = val
	default:
		return fmt.Errorf("unknown key")
	}
	return err
}

// parseAllow6 reads "tcp|udp PORT HOST" or "any HOST"; HOST is an IPv6
// address, an interface id (::1:2:3:4, in whatever the LAN prefix is) or
// "any".
func parseAllow6(s string) (dataplane.Allow6, error) {
	f := strings.Fields(s)
	var a dataplane.Allow6
	host := ""
	switch {
	case len(f) == 3 && (f[0] == "tcp" || f[0] == "udp"):
		a.Proto = map[string]uint8{"tcp": hdr.ProtoTCP, "udp": hdr.ProtoUDP}[f[0]]
		p, err := atoiRange(f[1], 1, 65535)
		if err != nil {
			return a, err
		}
		a.Port, host = uint16(p), f[2]
	case len(f) == 2 && f[0] == "any":
		host = f[1]
	default:
		return a, fmt.Errorf("%q: want tcp|udp PORT HOST, or any HOST", s)
	}
	if host != "any" {
		h, err := netip.ParseAddr(host)
		if err != nil || !h.Is6() || h.Is4In6() {
			return a, fmt.Errorf("%q: want an IPv6 address, an interface id (::X:X:X:X) or any", host)
		}
		a.Host = h.As16()
	}
	return a, nil
}

// parseForward reads "tcp|udp EXTPORT LANADDR:PORT".
func parseForward(s string) (nat.Forward, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return nat.Forward{}, fmt.Errorf("%q: want PROTO EXTPORT ADDR:PORT", s)
	}
	var fw nat.Forward
	switch f[0] {
	case "tcp":
		fw.Proto = hdr.ProtoTCP
	case "udp":
		fw.Proto = hdr.ProtoUDP
	default:
		return nat.Forward{}, fmt.Errorf("%q: protocol tcp or udp", f[0])
	}
	p, err := atoiRange(f[1], 1, 65535)
	if err != nil {
		return nat.Forward{}, err
	}
	fw.ExtPort = uint16(p)
	ap, err := netip.ParseAddrPort(f[2])
	if err != nil || !ap.Addr().Is4() || ap.Port() == 0 {
		return nat.Forward{}, fmt.Errorf("%q: want IPv4ADDR:PORT", f[2])
	}
	a := ap.Addr().As4()
	fw.LANAddr = uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	fw.LANPort = ap.Port()
	return fw, nil
}

func atoiRange(s string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%d out of range %d..%d", v, lo, hi)
	}
	return v, nil
}

// Validate checks that the required keys are present and consistent.
func (c *Config) Validate() error {
	switch {
	case c.LANInterface == "":
		return fmt.Errorf("lan.interface is required")
	case c.WANInterface == "":
		return fmt.Errorf("wan.interface is required")
	case !c.LANAddr.IsValid():
		return fmt.Errorf("lan.address is required")
	case c.PPPoE.Username == "":
		return fmt.Errorf("pppoe.user is required")
	case int(c.PortHi)-int(c.PortLo) < 2*c.Workers-1:
		// Ports are dealt to workers in pairs (nat.PortOwner).
		return fmt.Errorf("nat.ports: %d workers need a range of at least %d ports", c.Workers, 2*c.Workers)
	}
	if c.PD && c.LAN6Prefix.IsValid() {
		return fmt.Errorf("lan.ipv6_prefix and pppoe.dhcpv6_pd: choose one")
	}
	if c.LAN6Subnet != 0 && !c.PD {
		return fmt.Errorf("lan.ipv6_subnet needs pppoe.dhcpv6_pd")
	}
	if !c.IPv6() && (len(c.LAN6DNS) > 0 || len(c.Allow6) > 0 || c.IPv6Script != "") {
		return fmt.Errorf("lan.ipv6_dns, lan.ipv6_script and ipv6.allow need IPv6 on (lan.ipv6_prefix or pppoe.dhcpv6_pd)")
	}
	if c.PDHint != 0 && c.LAN6Subnet >= 1<<(64-c.PDHint) {
		return fmt.Errorf("lan.ipv6_subnet %d does not fit a /%d", c.LAN6Subnet, c.PDHint)
	}
	for _, f := range c.NAT.Forwards {
		if !c.contains(f.LANAddr) {
			return fmt.Errorf("nat.forward to %s: not in lan.address's prefix", addrString(f.LANAddr))
		}
	}
	for _, sp := range []shaper.Spec{c.Up, c.Down} {
		if err := sp.Config.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// CheckConfigFile returns an error naming what is wrong with the
// permissions of the configuration file name (fi: its Stat), as ssh does
// for private keys, or nil: the file holds the PPPoE password, so group
// and others must have no access to it (mode & 0o077 == 0), and its owner
// can choose the scripts pppfwd runs (pppoe.up_script, ...) as its own
// user, so it must be owned by the user running pppfwd. pppfwd warns and
// goes on; the fix is chmod 600 and chown.
func CheckConfigFile(name string, fi fs.FileInfo) error {
	return checkConfigFile(name, fi, os.Geteuid())
}

func checkConfigFile(name string, fi fs.FileInfo, euid int) error {
	var p []string
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		var who []string
		if m&0o044 != 0 {
			who = append(who, "read it (the PPPoE password)")
		}
		if m&0o022 != 0 {
			who = append(who, "change it (and so the scripts pppfwd runs)")
		}
		if len(who) == 0 {
			who = append(who, "access it")
		}
		p = append(p, fmt.Sprintf("mode %04o: group or others can %s: chmod 600 %s", m, strings.Join(who, " and "), name))
	}
	if uid, ok := fileOwner(fi); ok && euid >= 0 && uid != euid {
		p = append(p, fmt.Sprintf("owned by uid %d, not by uid %d running pppfwd: its owner can change the scripts pppfwd runs: chown %d %s", uid, euid, euid, name))
	}
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", name, strings.Join(p, "; "))
}

// ipsecAllow6 is what RFC 6092 REC-22..24 say a gateway's default must
// not block: ESP, AH and IKE.
var ipsecAllow6 = []dataplane.Allow6{{Proto: 50}, {Proto: 51}, {Proto: hdr.ProtoUDP, Port: 500}}

// Firewall6Allow returns the inbound IPv6 openings: ipv6.allow, and
// IPsec's unless ipv6.ipsec is off.
func (c *Config) Firewall6Allow() []dataplane.Allow6 {
	out := append([]dataplane.Allow6(nil), c.Allow6...)
	if !c.NoIPsec6 {
		out = append(out, ipsecAllow6...)
	}
	return out
}

// IPv6 reports whether IPv6 is on (a static prefix or DHCPv6-PD).
func (c *Config) IPv6() bool { return c.PD || c.LAN6Prefix.IsValid() }

// RouterAddr returns the LAN address as a uint32.
func (c *Config) RouterAddr() uint32 {
	a := c.LANAddr.Addr().As4()
	return uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
}

// LANNet returns the LAN network as a uint32.
func (c *Config) LANNet() uint32 {
	return c.RouterAddr() & (^uint32(0) << (32 - c.LANAddr.Bits()))
}

func (c *Config) contains(a uint32) bool {
	m := ^uint32(0) << (32 - c.LANAddr.Bits())
	return a&m == c.LANNet()
}

func addrString(a uint32) string {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}).String()
}
