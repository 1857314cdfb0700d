package router

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/pppoe"
	"github.com/pppfwd/pppfwd/shaper"
)

// Config is a router's configuration (see pppfwd.conf.example).
//
// keyTable (config_keys.go) maps the configuration keys to its fields;
// each field's key tag names them for the reader.
type Config struct {
	Backend string `key:"backend"` // afpacket, afxdp or netmap
	// BusyPoll asks afxdp ports for NAPI busy polling (afxdp.Options.
	// BusyPoll).
	BusyPoll bool `key:"afxdp.busy_poll"`
	Workers  int  `key:"workers"`
	// WorkersAuto: Workers came from `workers auto` (DefaultWorkers).
	WorkersAuto bool               `key:"workers"`
	Poll        dataplane.PollMode `key:"workers.poll"`
	CPUs        []int              `key:"workers.cpus"` // worker k pins to CPUs[k]; nil: the allowed CPUs in order
	// Slice is the scheduling slice the workers ask for (dataplane.Config.
	// Slice): 0 is dataplane.DefaultSlice, negative the kernel's default.
	Slice time.Duration `key:"workers.slice"`
	// RTPrio is the workers' realtime priority while lightly loaded
	// (dataplane.Config.RTPrio): 0 is dataplane.DefaultRTPrio, negative
	// none.
	RTPrio int `key:"workers.rtprio"`

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

	PPPoE pppoe.ClientConfig `key:"pppoe.* wan.vlan wan.vlan_prio"` // user, password, service, AC, VLAN, MTU, state, echo

	Up   shaper.Spec `key:"shaper.up"` // Rate 0: that direction is not shaped
	Down shaper.Spec `key:"shaper.down"`

	PortLo uint16     `key:"nat.ports"`
	PortHi uint16     `key:"nat.ports"`
	NAT    nat.Config `key:"nat.*"` // capacity, per-host limit (ParseConfig: DefaultMaxPerHost unless set), filtering, forwards

	HostTap string `key:"host.tap"` // TAP device for the router's own traffic ("" = built-in ARP/echo only)
	// NoHostNetmap keeps the LAN interface's netmap host rings closed
	// (HostRings).
	NoHostNetmap  bool          `key:"host.netmap"`
	StatsInterval time.Duration `key:"stats.interval"` // log counters this often (0 = never)
	StatsFile     string        `key:"stats.file"`     // also write them there as JSON, replaced each interval (10s if no interval)

	// Obs: the control socket, metrics, logs and the daily reconnect
	// (obs.go).
	Obs ObsConfig `key:"metrics.* control.socket log.* pppoe.reconnect_at"`

	// Session hooks, as pppd's usepeerdns and ip-up/ip-down: the DNS
	// servers the session brought, written as a resolv.conf; programs
	// run when the session comes up and when it goes down (see hooks.go).
	ResolvFile string `key:"pppoe.resolv"`
	UpScript   string `key:"pppoe.up_script"`
	DownScript string `key:"pppoe.down_script"`
	// IPv6Script runs when the LAN gets or loses its IPv6 prefix.
	IPv6Script string `key:"lan.ipv6_script"`

	// PasswordFile is where PPPoE.Password came from ("": the
	// configuration itself, pppoe.password).
	PasswordFile string `key:"pppoe.password_file"`

	// lines: where each key was given (a line per entry for a repeatable
	// key), for Validate's errors; nil for a Config built in code.
	lines map[string][]int
}

// ParseConfig reads a configuration: "key value" lines in the syntax
// config_syntax.go describes, with the keys of keyTable. Unknown keys
// (with the nearest known one suggested), repeated single keys, bad
// values and inconsistent keys (Validate) are errors that name the line,
// the key and what is allowed; they never quote a secret. The password
// of pppoe.password_file is read here (readPasswordFile).
func ParseConfig(r io.Reader) (*Config, error) {
	c := &Config{Backend: "afpacket", Workers: DefaultWorkers(len(pin.Allowed())), WorkersAuto: true, PortLo: 1024, PortHi: 65535, Obs: DefaultObsConfig(), lines: map[string][]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64*1024)
	line := 0
	for sc.Scan() {
		line++
		key, val, err := splitLine(sc.Text())
		if err != nil {
			if key == "" {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			return nil, fmt.Errorf("line %d: %s %v", line, key, err)
		}
		if key == "" {
			continue
		}
		k := keyIndex[key]
		if k == nil {
			if s := suggestKey(key); s != "" {
				return nil, fmt.Errorf("line %d: unknown key %q: did you mean %s? (pppfwd.conf.example lists every key)", line, key, s)
			}
			return nil, fmt.Errorf("line %d: unknown key %q (pppfwd.conf.example lists every key)", line, key)
		}
		if prev := c.lines[key]; len(prev) > 0 && !k.Repeat {
			return nil, fmt.Errorf("line %d: %s given twice (first on line %d): allowed once", line, key, prev[0])
		}
		c.lines[key] = append(c.lines[key], line)
		if err := k.v.set(c, val); err != nil {
			return nil, fmt.Errorf("line %d: %s: %v; allowed: %s", line, key, err, k.Allowed)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than 64 KiB", line+1)
		}
		return nil, err
	}
	if len(c.lines["pppoe.password"]) > 0 && len(c.lines["pppoe.password_file"]) > 0 {
		return nil, fmt.Errorf("%s: pppoe.password and pppoe.password_file: choose one", c.at("pppoe.password_file", 0))
	}
	if c.PasswordFile != "" {
		pw, err := readPasswordFile(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("%s: pppoe.password_file: %v; allowed: %s", c.at("pppoe.password_file", 0), err, keyIndex["pppoe.password_file"].Allowed)
		}
		c.PPPoE.Password = pw
	}
	c.PPPoE.Interface = c.WANInterface // for the client's log lines
	if len(c.lines["nat.max_per_host"]) == 0 {
		c.NAT.MaxPerHost = DefaultMaxPerHost(c.NAT.Capacity)
	}
	c.resolveHostForwards()
	return c, c.Validate()
}

// at returns "line N" for entry i of key as ParseConfig found it, or, for
// a key that was not given (or a Config built in code), that.
func (c *Config) at(key string, i int) string {
	if l := c.lines[key]; i < len(l) {
		return "line " + strconv.Itoa(l[i])
	}
	return "not in the file"
}

// readPasswordFile is ParseConfig's reader of pppoe.password_file: a
// variable so that the fuzz target does not read the machine's files.
var readPasswordFile = ReadPasswordFile

// ReadPasswordFile reads a password file as pppoe.password_file does: a
// regular file that group and others cannot read (as ssh insists for
// private keys), holding the password on its one line (at most 4096
// bytes; a final "\n" or "\r\n" is not part of it).
func ReadPasswordFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", name)
	}
	if m := fi.Mode().Perm(); m&0o044 != 0 {
		return "", fmt.Errorf("%s: mode %04o: group or others can read the password: chmod 600 %s", name, m, name)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", err
	}
	return passwordFromFile(name, b)
}

// passwordFromFile returns the password a password file's content b
// holds: its one line, without the final "\n" or "\r\n".
func passwordFromFile(name string, b []byte) (string, error) {
	if len(b) > 4096 {
		return "", fmt.Errorf("%s: longer than 4096 bytes", name)
	}
	s := strings.TrimSuffix(string(b), "\n")
	s = strings.TrimSuffix(s, "\r")
	switch {
	case s == "":
		return "", fmt.Errorf("%s is empty", name)
	case strings.ContainsAny(s, "\r\n"):
		return "", fmt.Errorf("%s holds more than one line", name)
	}
	return s, nil
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

// parseForward reads "tcp|udp EXTPORT LANADDR:PORT", where LANADDR may
// be host, the router's own address (its host stack: host.tap or the
// host rings), and host
// alone is host:EXTPORT. A forward to host has LANAddr hostForward until
// ParseConfig knows lan.address (resolveHostForwards).
func parseForward(s string) (nat.Forward, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return nat.Forward{}, fmt.Errorf("%q: want PROTO EXTPORT ADDR:PORT or PROTO EXTPORT host[:PORT]", s)
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
	if f[2] == "host" || strings.HasPrefix(f[2], "host:") {
		fw.LANAddr, fw.LANPort = hostForward, fw.ExtPort
		if port, ok := strings.CutPrefix(f[2], "host:"); ok {
			lp, err := atoiRange(port, 1, 65535)
			if err != nil {
				return nat.Forward{}, err
			}
			fw.LANPort = uint16(lp)
		}
		return fw, nil
	}
	ap, err := netip.ParseAddrPort(f[2])
	if err != nil || !ap.Addr().Is4() || ap.Port() == 0 {
		return nat.Forward{}, fmt.Errorf("%q: want IPv4ADDR:PORT or host[:PORT]", f[2])
	}
	a := ap.Addr().As4()
	fw.LANAddr = uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	fw.LANPort = ap.Port()
	return fw, nil
}

// hostForward is the LANAddr of a forward to host while lan.address is
// not known yet: no forward may go to 0.0.0.0.
const hostForward = 0

// resolveHostForwards gives forwards to host the router's own address.
func (c *Config) resolveHostForwards() {
	if !c.LANAddr.IsValid() || !c.LANAddr.Addr().Is4() {
		return
	}
	for i := range c.NAT.Forwards {
		if c.NAT.Forwards[i].LANAddr == hostForward {
			c.NAT.Forwards[i].LANAddr = c.RouterAddr()
		}
	}
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

// Validate checks that the required keys are present and that keys
// agree with each other. Its errors name the key, the line it is on (for
// a Config that ParseConfig made) and what is allowed.
func (c *Config) Validate() error {
	for _, req := range []struct {
		key, what string
		ok        bool
	}{
		{"lan.interface", "the LAN port's interface name (e.g. eth1)", c.LANInterface != ""},
		{"wan.interface", "the WAN port's interface name (e.g. eth0)", c.WANInterface != ""},
		{"lan.address", "the router's LAN address and prefix (e.g. 192.168.1.1/24)", c.LANAddr.IsValid()},
		{"pppoe.user", "the PPPoE login name", c.PPPoE.Username != ""},
	} {
		if !req.ok {
			return fmt.Errorf("%s is required (%s): give %s", req.key, c.at(req.key, 0), req.what)
		}
	}
	if allowed := pin.Allowed(); len(c.CPUs) > 0 && len(allowed) > 0 {
		for _, n := range c.CPUs {
			if !slices.Contains(allowed, n) {
				return fmt.Errorf("%s: workers.cpus lists CPU %d; allowed: the CPUs this process may use, %v", c.at("workers.cpus", 0), n, allowed)
			}
		}
	}
	if int(c.PortHi)-int(c.PortLo) < 2*c.Workers-1 {
		// Ports are dealt to workers in pairs (nat.PortOwner).
		key := "nat.ports"
		if len(c.lines[key]) == 0 {
			key = "workers"
		}
		return fmt.Errorf("%s: nat.ports %d-%d is too small for workers %d: allowed: a range of at least %d ports (2 per worker)",
			c.at(key, 0), c.PortLo, c.PortHi, c.Workers, 2*c.Workers)
	}
	if c.PD && c.LAN6Prefix.IsValid() {
		return fmt.Errorf("%s: lan.ipv6_prefix and pppoe.dhcpv6_pd (%s): choose one: a static LAN prefix or a delegated one",
			c.at("lan.ipv6_prefix", 0), c.at("pppoe.dhcpv6_pd", 0))
	}
	if c.LAN6Subnet != 0 && !c.PD {
		return fmt.Errorf("%s: lan.ipv6_subnet needs pppoe.dhcpv6_pd on (it numbers a /64 of the delegated prefix)", c.at("lan.ipv6_subnet", 0))
	}
	if !c.IPv6() {
		for _, key := range []string{"lan.ipv6_dns", "lan.ipv6_script", "ipv6.allow"} {
			if c.keySet(key) {
				return fmt.Errorf("%s: %s needs IPv6 on: set lan.ipv6_prefix or pppoe.dhcpv6_pd", c.at(key, 0), key)
			}
		}
	}
	if c.PDHint != 0 && c.LAN6Subnet >= 1<<(64-c.PDHint) {
		return fmt.Errorf("%s: lan.ipv6_subnet %d does not fit a /%d (pppoe.dhcpv6_pd): allowed: 0..%d",
			c.at("lan.ipv6_subnet", 0), c.LAN6Subnet, c.PDHint, 1<<(64-c.PDHint)-1)
	}
	if len(c.lines["host.netmap"]) > 0 && !c.NoHostNetmap {
		switch {
		case c.Backend != "netmap":
			return fmt.Errorf("%s: host.netmap on: the host rings are netmap's: allowed with backend netmap (for %s, host.tap)",
				c.at("host.netmap", 0), c.Backend)
		case c.HostTap != "":
			return fmt.Errorf("%s: host.netmap on and host.tap (%s): choose one host port: the LAN interface's host rings or a TAP",
				c.at("host.netmap", 0), c.at("host.tap", 0))
		}
	}
	for i, f := range c.NAT.Forwards {
		if f.LANAddr == c.RouterAddr() && !c.HasHost() {
			return fmt.Errorf("%s: nat.forward to the router's own address (host) needs host.tap or netmap's host rings (backend netmap, host.netmap on): the router's services run on its host stack; allowed: a LAN host's address, or host with a host port",
				c.at("nat.forward", i))
		}
		if !c.contains(f.LANAddr) {
			return fmt.Errorf("%s: nat.forward to %s: not in lan.address's prefix %s: allowed: a LAN host's address",
				c.at("nat.forward", i), addrString(f.LANAddr), c.LANAddr.Masked())
		}
	}
	for _, k := range []struct {
		key string
		sp  shaper.Spec
	}{{"shaper.up", c.Up}, {"shaper.down", c.Down}} {
		if err := k.sp.Config.Validate(); err != nil {
			return fmt.Errorf("%s: %s: %v; allowed: %s", c.at(k.key, 0), k.key, err, keyIndex[k.key].Allowed)
		}
	}
	return nil
}

// keySet reports whether key has a value (given in the file, or set in
// code).
func (c *Config) keySet(key string) bool {
	return len(c.lines[key]) > 0 || keyIndex[key].v.text(c) != nil
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

// HostRings reports whether the router's own host stack reaches it
// through the LAN interface's netmap host rings: backend netmap, no
// host.tap, host.netmap not off. The box's stack then keeps the LAN
// interface and lan.address; frames it sends on the interface come to
// pppfwd as a host TAP's would, and pppfwd hands it what the TAP would get.
func (c *Config) HostRings() bool {
	return c.Backend == "netmap" && c.HostTap == "" && !c.NoHostNetmap
}

// HasHost reports whether the router has a host port: host.tap or the
// host rings.
func (c *Config) HasHost() bool { return c.HostTap != "" || c.HostRings() }

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
