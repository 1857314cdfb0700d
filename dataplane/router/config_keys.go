package router

import (
	"fmt"
	"net/netip"
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

// keyDef describes one configuration key. keyTable holds them all, and
// drives ParseConfig (which keys exist, which may repeat, each value's
// parser), the errors (what is allowed, "did you mean"), Router.Reload's
// diff (ChangedKeys: the keys whose canonical text differs, and
// KeyReloadable: which of them SIGHUP applies), "pppfwd run -check -v"
// (Config.Describe) and pppfwd.conf.example (ExampleConfig;
// TestExampleConfigFromTable fails when the file differs from it).
type keyDef struct {
	Name    string
	Repeat  bool   // may be given more than once (each adds an entry)
	Reload  bool   // SIGHUP applies a change; Router.Reload holds the code that does
	Secret  bool   // masked in Describe, never in an error
	Allowed string // the values allowed, for errors and the example
	Default string // what an absent key means ("" = nothing), shown by Describe and the example
	Example string // the example's value; "" shows the key commented out with Sample
	Sample  string // the commented-out example's value ("" = Default)
	Help    string // the example's comment on the key's line
	More    []string
	// Section, when set, is a comment block the example prints before the
	// key (a heading and its notes).
	Section []string
	v       value
}

// value parses a key's values into a Config and writes them back.
// text returns the canonical values ParseConfig reads back to the same
// Config (one per line for a repeatable key; nil when the key is
// absent), so two configurations differ in a key exactly when its text
// differs. show, when the value implements shower, is Describe's
// rendering (rates in bit/s).
type value interface {
	set(c *Config, s string) error
	text(c *Config) []string
}

type shower interface{ show(c *Config) []string }

// keyTable is every configuration key, in the example's order.
//
// To add a key: add the Config field it sets, and one entry here (a
// value of the kinds below: strVal, intVal, durVal, onOff, enumVal, or
// funcVal for anything else); then rewrite the example from the table
// with "go test ./dataplane/router -run TestExampleConfigFromTable
// -update". Nothing else lists keys. A key marked Reload also needs the
// code in Router.Reload that applies its new value while running (the
// reload tests fail for a reloadable key Reload does not handle).
var keyTable = []keyDef{
	{Name: "backend", Allowed: "afpacket | afxdp | netmap", Default: "afpacket", Example: "afpacket",
		Help: "afpacket | afxdp (Linux) | netmap (FreeBSD, Linux with netmap)",
		v:    enumVal[string]{func(c *Config) *string { return &c.Backend }, []string{"afpacket", "afxdp", "netmap"}, []string{"afpacket", "afxdp", "netmap"}}},
	{Name: "afxdp.busy_poll", Allowed: "on | off", Default: "off",
		Help: "with backend afxdp on a NIC whose driver runs XDP natively: NAPI busy polling (SO_PREFER_BUSY_POLL,",
		More: []string{"Linux 5.11+): a worker whose receive ring is empty runs the driver's receive poll itself;",
			"pays with the driver's napi_defer_hard_irqs and gro_flush_timeout set (sysfs), else a system call",
			"per empty poll for nothing. No effect in generic XDP mode (drivers without native XDP)"},
		v: onOff{func(c *Config) *bool { return &c.BusyPoll }, false}},
	{Name: "workers", Allowed: "1..64 or auto", Default: "auto", Example: "auto",
		Help: "pinned workers; auto: one per CPU, but CPUs - 1 on boxes of 2 to 4 CPUs (room for the box's own services)",
		v: funcVal{setWorkers, func(c *Config) []string {
			if c.WorkersAuto {
				return nil
			}
			return []string{strconv.Itoa(c.Workers)}
		}}},
	{Name: "workers.poll", Allowed: "adaptive | busy | block", Default: "adaptive", Example: "adaptive",
		Help: "idle policy: adaptive spins while frames keep coming, then sleeps until one arrives",
		More: []string{"busy never sleeps (lowest latency, a whole core per worker whatever the load);",
			"block sleeps at once (fewest cycles, a wakeup per burst of frames)"},
		v: enumVal[dataplane.PollMode]{func(c *Config) *dataplane.PollMode { return &c.Poll }, []string{"adaptive", "busy", "block"},
			[]dataplane.PollMode{dataplane.PollAdaptive, dataplane.PollBusy, dataplane.PollBlock}}},
	{Name: "workers.cpus", Allowed: "CPU numbers and ranges (e.g. 1-3 or 0,2)", Sample: "1-3",
		Help: "pin worker k to the k-th CPU of this list (default: the CPUs the process may use, in order)",
		v: funcVal{setCPUs, func(c *Config) []string {
			if len(c.CPUs) == 0 {
				return nil
			}
			parts := make([]string, len(c.CPUs))
			for i, n := range c.CPUs {
				parts[i] = strconv.Itoa(n)
			}
			return []string{strings.Join(parts, ",")}
		}}},

	{Name: "workers.slice", Allowed: "a duration of 100us..100ms, or off", Default: "500us", Example: "500us",
		Help: "scheduling slice the workers ask of Linux (6.12 and later): a frame that wakes one",
		More: []string{"preempts another task on its core at once instead of after that task's slice;",
			"the workers' share of the CPU is unchanged. off: the kernel's default slice"},
		v: funcVal{setSlice, func(c *Config) []string {
			switch {
			case c.Slice == 0:
				return nil
			case c.Slice < 0:
				return []string{"off"}
			}
			return []string{c.Slice.String()}
		}}},

	{Name: "workers.rtprio", Allowed: "a realtime priority of 1..99, or off", Default: "1", Example: "1",
		Help: "SCHED_FIFO priority a worker wakes with while its load is light (Linux; CAP_SYS_NICE):",
		More: []string{"a frame that wakes it preempts any ordinary task on its core, as the kernel's own",
			"receive work would; a worker busy for 250us without a pause, or woken 20 times in 10ms,",
			"is an ordinary task for 10ms, so a loaded router shares its cores as before.",
			"off: workers stay ordinary tasks"},
		v: funcVal{setRTPrio, func(c *Config) []string {
			switch {
			case c.RTPrio == 0:
				return nil
			case c.RTPrio < 0:
				return []string{"off"}
			}
			return []string{strconv.Itoa(c.RTPrio)}
		}}},

	{Name: "lan.interface", Allowed: "an interface name", Example: "eth1", Help: "the LAN port (required)",
		Section: []string{"", "# The LAN and WAN ports belong to pppfwd: give them no IP addresses in the kernel",
			"# (pppfwd run -check says so when they have any other than link-local); with the netmap",
			"# host rings (host.netmap), the LAN interface keeps lan.address for the box's own services."},
		v: strVal(func(c *Config) *string { return &c.LANInterface })},
	{Name: "lan.address", Allowed: "an IPv4 address with its /8../30 prefix (e.g. 192.168.1.1/24)", Example: "192.168.1.1/24",
		Help: "the router's LAN address and prefix (required)", v: funcVal{setLANAddr, func(c *Config) []string {
			if !c.LANAddr.IsValid() {
				return nil
			}
			return []string{c.LANAddr.String()}
		}}},

	{Name: "pppoe.dhcpv6_pd", Allowed: "on | off | the prefix length to ask for (32..64, e.g. 56)", Default: "off",
		Help: "ask the ISP for a prefix (DHCPv6-PD over the session)",
		Section: []string{"", "# IPv6, routed (no NAT). pppoe.dhcpv6_pd or lan.ipv6_prefix turns IPv6CP on; without either,",
			"# pppfwd is IPv4 only. pppfwd advertises the LAN /64 (SLAAC, RDNSS; default router only while",
			"# the session carries IPv6) and answers neighbour discovery; a stateful firewall lets in only",
			"# what LAN hosts started, ICMPv6 errors about it, echo requests and ipv6.allow."},
		v: funcVal{setPD, func(c *Config) []string {
			switch {
			case c.PDHint != 0:
				return []string{strconv.Itoa(c.PDHint)}
			case c.PD:
				return []string{"on"}
			}
			return nil
		}}},
	{Name: "lan.ipv6_subnet", Allowed: "0..65535 (and within the delegated prefix)", Default: "0",
		Help: "which /64 of the delegated prefix the LAN takes", v: intVal{func(c *Config) *int { return &c.LAN6Subnet }, 0, 65535, true}},
	{Name: "lan.ipv6_prefix", Allowed: "a global unicast IPv6 /64", Example: "", Default: "",
		Sample: "2001:db8:1:2::/64", Help: "or a static LAN /64 the ISP routes to the session", v: funcVal{setLAN6Prefix, func(c *Config) []string {
			if !c.LAN6Prefix.IsValid() {
				return nil
			}
			return []string{c.LAN6Prefix.String()}
		}}},
	{Name: "lan.ipv6_dns", Allowed: "IPv6 addresses separated by commas or blanks",
		Sample: "2001:db8::53", Help: "DNS servers to advertise besides those DHCPv6 brings", v: funcVal{setLAN6DNS, func(c *Config) []string {
			if len(c.LAN6DNS) == 0 {
				return nil
			}
			s := make([]string, len(c.LAN6DNS))
			for i, a := range c.LAN6DNS {
				s[i] = a.String()
			}
			return []string{strings.Join(s, ", ")}
		}}},
	{Name: "lan.ipv6_script", Allowed: "a program's path",
		Sample: "/etc/pppfwd/ipv6", Help: "run with ipv6-up / ipv6-down and the LAN prefix when it comes or goes",
		More: []string{"(PPPFWD_LAN6_PREFIX, PPPFWD_LAN6_ADDRESS, PPPFWD_DELEGATED, PPPFWD_DNS6)"},
		v:    strVal(func(c *Config) *string { return &c.IPv6Script })},
	{Name: "ipv6.firewall", Allowed: "on | off", Default: "on", Help: "off: forward everything to the LAN prefix",
		v: onOff{func(c *Config) *bool { return &c.NoFirewall6 }, true}},
	{Name: "ipv6.allow", Repeat: true, Allowed: "tcp|udp PORT HOST, or any HOST; HOST an IPv6 address, an interface id (::X:X:X:X) or any",
		Sample: "tcp 443 ::1:2:3:4", Help: "open a port (::1:2:3:4: an interface id, in whatever the prefix is); repeat for more",
		v: funcVal{setAllow6, allow6Text}},
	{Name: "ipv6.ipsec", Allowed: "on | off", Default: "on", Help: "let in ESP, AH and IKE (UDP 500) to LAN hosts, as RFC 6092 asks",
		v: onOff{func(c *Config) *bool { return &c.NoIPsec6 }, true}},

	{Name: "wan.interface", Allowed: "an interface name", Example: "eth0", Help: "the WAN port (required)",
		Section: []string{""}, v: strVal(func(c *Config) *string { return &c.WANInterface })},
	{Name: "wan.vlan", Allowed: "0..4094", Default: "0", Help: "802.1Q id on the WAN (Deutsche Telekom: 7); 0 = untagged",
		v: funcVal{func(c *Config, s string) error {
			v, err := atoiRange(s, 0, 4094)
			c.PPPoE.VLAN = uint16(v)
			return err
		}, func(c *Config) []string { return nonZero(int(c.PPPoE.VLAN)) }}},
	{Name: "wan.vlan_prio", Allowed: "0..7", Default: "0", Help: "802.1p priority of tagged frames",
		v: funcVal{func(c *Config, s string) error {
			v, err := atoiRange(s, 0, 7)
			c.PPPoE.VLANPrio = uint8(v)
			return err
		}, func(c *Config) []string { return nonZero(int(c.PPPoE.VLANPrio)) }}},

	{Name: "pppoe.user", Allowed: "the login name (quote it if it has blanks)", Example: "user@isp.example",
		Help:    "required; Telekom: 002...#0001@t-online.de (the # stays)",
		Section: []string{"", `# Values with blanks, quotes or a '#' after a blank may be quoted: "..." with \" and \\.`},
		v:       strVal(func(c *Config) *string { return &c.PPPoE.Username })},
	{Name: "pppoe.password", Secret: true, Allowed: `any text ("..." with \" and \\ for any password)`, Example: "secret",
		Help: "or pppoe.password_file", v: funcVal{func(c *Config, s string) error { c.PPPoE.Password = s; return nil },
			func(c *Config) []string {
				if c.PasswordFile != "" || c.PPPoE.Password == "" {
					return nil // it comes from the file
				}
				return []string{c.PPPoE.Password}
			}}},
	{Name: "pppoe.password_file", Allowed: "a file only its owner can read (mode 600), holding the password on one line",
		Sample: "/etc/pppfwd/password", Help: "instead of pppoe.password",
		v: strVal(func(c *Config) *string { return &c.PasswordFile })},
	{Name: "pppoe.auth", Allowed: "any | pap | chap | mschapv2", Default: "any", Help: "the protocols the AC may choose",
		v: enumVal[pppoe.AuthProto]{func(c *Config) *pppoe.AuthProto { return &c.PPPoE.Auth }, []string{"any", "pap", "chap", "mschapv2"},
			[]pppoe.AuthProto{pppoe.AuthAny, pppoe.AuthPAP, pppoe.AuthCHAPMD5, pppoe.AuthMSCHAPv2}}},
	{Name: "pppoe.service", Allowed: "a Service-Name", Help: "Service-Name to ask for (absent: any)",
		v: strVal(func(c *Config) *string { return &c.PPPoE.ServiceName })},
	{Name: "pppoe.ac_name", Allowed: "an AC-Name", Help: "accept only this access concentrator",
		v: strVal(func(c *Config) *string { return &c.PPPoE.ACName })},
	{Name: "pppoe.mtu", Allowed: "576..1500", Default: "1492", Help: "1500 asks for RFC 4638 baby jumbo frames: pppfwd raises wan.interface's MTU to 1508 (1512 with wan.vlan); falls back to 1492",
		v: intVal{func(c *Config) *int { return &c.PPPoE.MTU }, 576, 1500, true}},
	{Name: "pppoe.state", Allowed: "a file's path", Sample: "/var/lib/pppfwd/session", Help: "remembers the session to PADT it after a crash",
		v: strVal(func(c *Config) *string { return &c.PPPoE.StatePath })},
	{Name: "pppoe.echo_interval", Allowed: "a duration (10s, 1m; negative: off)", Default: "10s", Help: "LCP echo keepalive",
		v: durVal(func(c *Config) *time.Duration { return &c.PPPoE.EchoInterval })},
	{Name: "pppoe.echo_failures", Allowed: "1..100", Default: "3", Help: "unanswered echoes that end the session",
		v: intVal{func(c *Config) *int { return &c.PPPoE.EchoFailures }, 1, 100, true}},
	{Name: "pppoe.resolv", Allowed: "a file's path",
		Sample: "/run/pppfwd/resolv.conf", Help: "the DNS servers a session brings (rewritten each time; point dnsmasq here)",
		v: strVal(func(c *Config) *string { return &c.ResolvFile })},
	{Name: "pppoe.up_script", Allowed: "a program's path",
		Sample: "/etc/pppfwd/up", Help: "run when the session is up, as pppd's ip-up (its arguments, IPLOCAL..., PPPFWD_*)",
		v: strVal(func(c *Config) *string { return &c.UpScript })},
	{Name: "pppoe.down_script", Allowed: "a program's path", Sample: "/etc/pppfwd/down", Help: "run when it goes down",
		v: strVal(func(c *Config) *string { return &c.DownScript })},

	{Name: "shaper.up", Reload: true, Allowed: "tc-cake words: bandwidth RATE (kbit, mbit, gbit: bits per second) [overhead N] [pppoe-ptm] [dual-srchost] ...",
		Default: "unlimited", Example: "bandwidth 450mbit pppoe-ptm dual-srchost", Help: "uplink",
		Section: []string{"", "# FQ-CoDel per direction in tc-cake words; omit a line to leave it unshaped. Rates are in",
			"# bits per second (mbit = 10^6 bit/s; tc's mbps would be bytes). A new bandwidth takes",
			"# effect on SIGHUP without dropping the session."},
		v: specVal(func(c *Config) *shaper.Spec { return &c.Up })},
	{Name: "shaper.down", Reload: true, Allowed: "tc-cake words: bandwidth RATE (kbit, mbit, gbit: bits per second) [overhead N] [pppoe-ptm] [dual-dsthost] ...",
		Default: "unlimited", Example: "bandwidth 900mbit pppoe-ptm dual-dsthost", Help: "downlink",
		v: specVal(func(c *Config) *shaper.Spec { return &c.Down })},

	{Name: "nat.ports", Allowed: "LO-HI within 1..65535, at least 2 ports per worker", Default: "1024-65535",
		Help: "external ports, split among the workers", Section: []string{""}, v: funcVal{setPorts, func(c *Config) []string {
			return []string{fmt.Sprintf("%d-%d", c.PortLo, c.PortHi)}
		}}},
	{Name: "nat.capacity", Allowed: "64..67108864", Default: "65536", Help: "conntrack slots per worker",
		v: intVal{func(c *Config) *int { return &c.NAT.Capacity }, 64, 1 << 26, true}},
	{Name: "nat.max_per_host", Allowed: "0..67108864 (0: no limit)", Default: "nat.capacity/8", Sample: "8192",
		Help: "flows per LAN host in each worker's table; 8192 with the default capacity",
		More: []string{"(a host at it holds at most a quarter of the table); 0 = no limit"},
		v:    intVal{func(c *Config) *int { return &c.NAT.MaxPerHost }, 0, 1 << 26, false}},
	{Name: "nat.filtering", Allowed: "eif | adf", Default: "eif", Help: "eif (endpoint-independent) | adf (address-dependent)",
		v: enumVal[nat.Filtering]{func(c *Config) *nat.Filtering { return &c.NAT.Filtering },
			[]string{"eif", "adf", "endpoint-independent", "address-dependent"},
			[]nat.Filtering{nat.EndpointIndependent, nat.AddressDependent, nat.EndpointIndependent, nat.AddressDependent}}},
	{Name: "nat.forward", Repeat: true,
		Allowed: "tcp|udp EXTPORT LANADDR:PORT, LANADDR in lan.address's prefix, or tcp|udp EXTPORT host[:PORT] (the router itself, with host.tap or host.netmap)",
		Sample:  "tcp 443 192.168.1.100:443", Help: "repeat for more forwards",
		More: []string{"udp 51820 host: to a service of the router's own (WireGuard on its host stack)"},
		v:    funcVal{setForward, forwardText}},

	{Name: "host.tap", Allowed: "a TAP device's name",
		Sample: "pppfwd0", Help: "TAP (Linux) for the router's own traffic (DHCP, DNS, SSH on the LAN; its own Internet access):",
		More: []string{"pppfwd gives it the LAN port's MAC; give it the LAN address yourself, and for the",
			"box's own traffic a default route: ip route add default via 169.254.0.1 dev pppfwd0 onlink",
			"(any address beyond the LAN: pppfwd answers ARP for it), ip -6 route add default dev pppfwd0;",
			"that traffic goes through the NAT (from the public address) as a LAN host's"},
		Section: []string{""}, v: strVal(func(c *Config) *string { return &c.HostTap })},
	{Name: "host.netmap", Allowed: "on | off", Default: "on",
		Help: "with backend netmap (FreeBSD, OPNsense): the router's own traffic uses the LAN interface's host rings:",
		More: []string{"the box's stack keeps the LAN interface and lan.address (its GUI, DNS, DHCP server, SSH);",
			"pppfwd switches the interface's checksum, TSO and LRO offloads off (netmap drops such frames);",
			"for the box's own Internet access a default route via an address beyond the LAN, e.g.",
			"route add -host 169.254.0.1 -interface igb1; route add default 169.254.0.1 (pppfwd answers ARP for it).",
			"off: the host rings stay closed and pppfwd answers ARP and ping for lan.address itself"},
		v: onOff{func(c *Config) *bool { return &c.NoHostNetmap }, true}},
	{Name: "stats.interval", Allowed: "a duration (10s, 1m; 0: never)", Default: "0", Sample: "10s", Help: "log the counters this often (0: never)",
		v: durVal(func(c *Config) *time.Duration { return &c.StatsInterval })},
	{Name: "stats.file", Allowed: "a file's path",
		Sample: "/run/pppfwd/stats.json", Help: "and write them there as JSON (every stats.interval, 10s by default)",
		v: strVal(func(c *Config) *string { return &c.StatsFile })},
	{Name: "metrics.listen", Allowed: "HOST:PORT, or off", Default: "off", Sample: "127.0.0.1:9121",
		Help: "serve Prometheus metrics on http://HOST:PORT/metrics", v: obsVal("metrics.listen"),
		Section: []string{"", "# Status and control: pppfwd status|reconnect|reload talk to the control socket (owner only)."}},
	{Name: "metrics.textfile", Allowed: "a file's path", Sample: "/var/lib/prometheus/node-exporter/pppfwd.prom",
		Help: "write the metrics there each stats tick, in node_exporter's textfile format", v: obsVal("metrics.textfile")},
	{Name: "control.socket", Allowed: "an absolute path, or off", Default: DefaultSocket,
		Help: "the control socket (mode 0600; only its owner and root may use it)", v: obsVal("control.socket")},
	{Name: "log.level", Allowed: "error, warn, info or debug", Default: "info",
		Help: "debug adds a protocol trace (discovery, LCP, auth, IPCP, IPv6CP, DHCPv6)", v: obsVal("log.level")},
	{Name: "log.format", Allowed: "text or json", Default: "text", Help: "log lines as logfmt text or JSON objects", v: obsVal("log.format")},
	{Name: "pppoe.reconnect_at", Allowed: "a local time of day HH:MM, or off", Default: "off", Sample: "04:30",
		Help: "reconnect every day at that time (before an ISP's forced 24 h disconnect)", v: obsVal("pppoe.reconnect_at")},
}

// keyIndex maps a key's name to its keyTable entry.
var keyIndex = func() map[string]*keyDef {
	m := make(map[string]*keyDef, len(keyTable))
	for i := range keyTable {
		m[keyTable[i].Name] = &keyTable[i]
	}
	return m
}()

// KeyReloadable reports whether SIGHUP applies a new value of key while
// running (false for unknown keys).
func KeyReloadable(key string) bool {
	k := keyIndex[key]
	return k != nil && k.Reload
}

// ChangedKeys returns, in the table's order, the keys whose values
// differ between a and b.
func ChangedKeys(a, b *Config) []string {
	var out []string
	for i := range keyTable {
		k := &keyTable[i]
		if !slices.Equal(k.v.text(a), k.v.text(b)) {
			out = append(out, k.Name)
		}
	}
	return out
}

// Text returns c as configuration lines ParseConfig reads back to the
// same configuration (secrets included: for tests and tools, not logs).
func (c *Config) Text() string {
	var b strings.Builder
	for i := range keyTable {
		k := &keyTable[i]
		for _, v := range k.v.text(c) {
			b.WriteString(k.Name + " " + quote(v) + "\n")
		}
	}
	return b.String()
}

// Describe returns the effective configuration, one "key value" line
// per key (the default for absent keys, marked so), secrets shown as
// ******, rates in bit/s: what "pppfwd run -check -v" prints. A key
// with a default that the file does not give is marked "(default)"
// whether its value stays unset or ParseConfig filled it in (nat.ports,
// backend) or derived it from another key (nat.max_per_host); a value
// the file gives is not, even the default's. A Config built in code
// (not by ParseConfig) has no file: its values are not marked.
func (c *Config) Describe() []string {
	var out []string
	w := 0
	for i := range keyTable {
		w = max(w, len(keyTable[i].Name))
	}
	for i := range keyTable {
		k := &keyTable[i]
		vals := k.v.text(c)
		if sh, ok := k.v.(shower); ok && vals != nil {
			vals = sh.show(c)
		}
		given := c.lines == nil || len(c.lines[k.Name]) > 0
		switch {
		case len(vals) == 0 && k.Default != "":
			vals = []string{k.Default + " (default)"}
		case len(vals) == 0:
			vals = []string{"(not set)"}
		case k.Secret:
			vals = []string{"******"}
		case !given && k.Default != "":
			marked := make([]string, len(vals))
			for i, v := range vals {
				marked[i] = v + " (default)"
			}
			vals = marked
		}
		if k.Name == "pppoe.password" && c.PasswordFile != "" {
			vals = []string{"****** (from pppoe.password_file)"}
		}
		for _, v := range vals {
			out = append(out, fmt.Sprintf("%-*s %s", w, k.Name, v))
		}
	}
	return out
}

// exampleHeader starts pppfwd.conf.example.
const exampleHeader = `# pppfwd.conf — every key pppfwd understands, with its default or an example.
# "key value" per line ("key = value" works too). A '#' at the start of a line or after a
# blank starts a comment; elsewhere it belongs to the value. A value may be double-quoted,
# with \" for a quote and \\ for a backslash, so any password can be written.
# Check a file with: pppfwd run -c FILE -check (-v prints the effective configuration).
# It holds the PPPoE password and names the scripts pppfwd runs: keep it mode 600 and
# owned by the user running pppfwd (pppfwd and -check warn otherwise), or put the
# password in pppoe.password_file.

`

// ExampleConfig returns pppfwd.conf.example as the key table writes it:
// each key once, with its example value or commented out with its
// default, its help and the values allowed.
func ExampleConfig() string {
	var b strings.Builder
	b.WriteString(exampleHeader)
	for i := range keyTable {
		k := &keyTable[i]
		for _, l := range k.Section {
			b.WriteString(l + "\n")
		}
		line := k.Name
		val := k.Example
		if val == "" {
			line = "# " + line
			val = k.Sample
			if val == "" {
				val = k.Default
			}
		}
		if val != "" {
			line = fmt.Sprintf("%-18s %s", line, val)
		}
		line = fmt.Sprintf("%-42s # %s", line, k.Help)
		b.WriteString(strings.TrimRight(line, " ") + "\n")
		for _, m := range k.More {
			fmt.Fprintf(&b, "%-42s # %s\n", "#", m)
		}
		fmt.Fprintf(&b, "%-42s # allowed: %s\n", "#", k.Allowed)
	}
	return b.String()
}

// The kinds of value.

// strVal is a string taken as it is; absent or "" is unset.
type strVal func(c *Config) *string

func (f strVal) set(c *Config, s string) error { *f(c) = s; return nil }
func (f strVal) text(c *Config) []string {
	if v := *f(c); v != "" {
		return []string{v}
	}
	return nil
}

// intVal is a decimal in lo..hi; with zeroUnset, 0 is the unset value
// (when lo > 0 it cannot be written).
type intVal struct {
	f         func(c *Config) *int
	lo, hi    int
	zeroUnset bool
}

func (v intVal) set(c *Config, s string) (err error) {
	*v.f(c), err = atoiRange(s, v.lo, v.hi)
	return err
}
func (v intVal) text(c *Config) []string {
	if n := *v.f(c); n != 0 || !v.zeroUnset {
		return []string{strconv.Itoa(n)}
	}
	return nil
}

func nonZero(n int) []string {
	if n == 0 {
		return nil
	}
	return []string{strconv.Itoa(n)}
}

// durVal is a Go duration (time.ParseDuration); 0 is unset.
type durVal func(c *Config) *time.Duration

func (f durVal) set(c *Config, s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration", s)
	}
	*f(c) = d
	return nil
}
func (f durVal) text(c *Config) []string {
	if d := *f(c); d != 0 {
		return []string{d.String()}
	}
	return nil
}

// onOff is on/yes or off/no into a bool that, with inverted, is true
// for off (Config's NoX fields); the field's zero value is unset.
type onOff struct {
	f        func(c *Config) *bool
	inverted bool
}

func (v onOff) set(c *Config, s string) error {
	switch s {
	case "on", "yes":
		*v.f(c) = !v.inverted
	case "off", "no":
		*v.f(c) = v.inverted
	default:
		return fmt.Errorf("unknown value %q", s)
	}
	return nil
}
func (v onOff) text(c *Config) []string {
	if !*v.f(c) {
		return nil
	}
	if v.inverted {
		return []string{"off"}
	}
	return []string{"on"}
}

// enumVal is one of names, setting the value of the same index; the
// first name of a value is its canonical text; the field's zero value is
// unset (the default, which Default names).
type enumVal[T comparable] struct {
	f     func(c *Config) *T
	names []string
	vals  []T
}

func (v enumVal[T]) set(c *Config, s string) error {
	if i := slices.Index(v.names, s); i >= 0 {
		*v.f(c) = v.vals[i]
		return nil
	}
	return fmt.Errorf("unknown value %q", s)
}
func (v enumVal[T]) text(c *Config) []string {
	var zero T
	if i := slices.Index(v.vals, *v.f(c)); i >= 0 && *v.f(c) != zero {
		return []string{v.names[i]}
	}
	return nil
}

// specVal is a shaper spec; unshaped is unset. Describe shows its rate
// in bit/s.
type specVal func(c *Config) *shaper.Spec

func (f specVal) set(c *Config, s string) (err error) {
	*f(c), err = shaper.ParseSpec(s)
	return err
}
func (f specVal) text(c *Config) []string {
	if sp := *f(c); sp != (shaper.Spec{}) {
		return []string{sp.String()}
	}
	return nil
}
func (f specVal) show(c *Config) []string {
	sp := *f(c)
	head, rate := "unlimited", "unlimited"
	if sp.Rate != 0 {
		head = fmt.Sprintf("bandwidth %dbit", sp.Rate) // as Spec.String starts
		rate = fmt.Sprintf("%d bit/s (%s)", sp.Rate, humanRate(sp.Rate))
	}
	if rest := strings.TrimSpace(strings.TrimPrefix(sp.String(), head)); rest != "" {
		rate += ", " + rest
	}
	return []string{rate}
}

// humanRate writes bits per second in the largest unit that keeps it
// exact to three decimals: 40 Mbit/s, 1.5 Gbit/s, 640 kbit/s.
func humanRate(bps uint64) string {
	for _, u := range []struct {
		div  uint64
		name string
	}{{1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if bps >= u.div {
			return strconv.FormatFloat(float64(bps)/float64(u.div), 'f', -1, 64) + " " + u.name
		}
	}
	return strconv.FormatUint(bps, 10) + " bit/s"
}

// funcVal is a value with its own parser and text.
type funcVal struct {
	setf  func(c *Config, s string) error
	textf func(c *Config) []string
}

func (v funcVal) set(c *Config, s string) error { return v.setf(c, s) }
func (v funcVal) text(c *Config) []string       { return v.textf(c) }

func setLANAddr(c *Config, val string) (err error) {
	c.LANAddr, err = netip.ParsePrefix(val)
	if err != nil || !c.LANAddr.Addr().Is4() || c.LANAddr.Bits() < 8 || c.LANAddr.Bits() > 30 {
		c.LANAddr = netip.Prefix{}
		return fmt.Errorf("%q is not an IPv4 address with a /8../30 prefix", val)
	}
	return nil
}

func setLAN6Prefix(c *Config, val string) error {
	p, err := netip.ParsePrefix(val)
	if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Bits() != 64 {
		return fmt.Errorf("%q: want an IPv6 /64 (hosts number themselves in it by SLAAC)", val)
	}
	p = p.Masked()
	if a := p.Addr(); !a.IsGlobalUnicast() || a.IsLinkLocalUnicast() {
		return fmt.Errorf("%q: want a global unicast prefix", val)
	}
	c.LAN6Prefix = p
	return nil
}

func setLAN6DNS(c *Config, val string) error {
	for _, f := range strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		a, err := netip.ParseAddr(f)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return fmt.Errorf("%q: want IPv6 addresses", f)
		}
		c.LAN6DNS = append(c.LAN6DNS, a)
	}
	return nil
}

func setPD(c *Config, val string) (err error) {
	switch val {
	case "off", "no":
		c.PD, c.PDHint = false, 0
	case "on", "yes":
		c.PD, c.PDHint = true, 0
	default:
		c.PD = true
		c.PDHint, err = atoiRange(strings.TrimPrefix(val, "/"), 32, 64)
		if err != nil {
			err = fmt.Errorf("%q: want on, off or the prefix length to ask for (e.g. 56)", val)
		}
	}
	return err
}

func setAllow6(c *Config, val string) error {
	a, err := parseAllow6(val)
	if err == nil {
		c.Allow6 = append(c.Allow6, a)
	}
	return err
}

func allow6Text(c *Config) []string {
	var out []string
	for _, a := range c.Allow6 {
		host := "any"
		if a.Host != ([16]byte{}) {
			host = netip.AddrFrom16(a.Host).String()
		}
		switch a.Proto {
		case hdr.ProtoTCP, hdr.ProtoUDP:
			out = append(out, fmt.Sprintf("%s %d %s", map[uint8]string{hdr.ProtoTCP: "tcp", hdr.ProtoUDP: "udp"}[a.Proto], a.Port, host))
		default:
			out = append(out, "any "+host)
		}
	}
	return out
}

func setPorts(c *Config, val string) error {
	lo, hi, ok := strings.Cut(val, "-")
	if !ok {
		return fmt.Errorf("%q is not LO-HI", val)
	}
	l, err := atoiRange(lo, 1, 65534)
	if err != nil {
		return err
	}
	h, err := atoiRange(hi, l+1, 65535)
	if err != nil {
		return err
	}
	c.PortLo, c.PortHi = uint16(l), uint16(h)
	return nil
}

func setForward(c *Config, val string) error {
	f, err := parseForward(val)
	if err == nil {
		c.NAT.Forwards = append(c.NAT.Forwards, f)
	}
	return err
}

func forwardText(c *Config) []string {
	var out []string
	router := uint32(hostForward)
	if c.LANAddr.IsValid() && c.LANAddr.Addr().Is4() {
		router = c.RouterAddr()
	}
	for _, f := range c.NAT.Forwards {
		p := "tcp"
		if f.Proto == hdr.ProtoUDP {
			p = "udp"
		}
		toHost := f.LANAddr == router || f.LANAddr == hostForward
		switch {
		case toHost && f.LANPort == f.ExtPort:
			out = append(out, fmt.Sprintf("%s %d host", p, f.ExtPort))
		case toHost:
			out = append(out, fmt.Sprintf("%s %d host:%d", p, f.ExtPort, f.LANPort))
		default:
			out = append(out, fmt.Sprintf("%s %d %s:%d", p, f.ExtPort, addrString(f.LANAddr), f.LANPort))
		}
	}
	return out
}

func setWorkers(c *Config, val string) error {
	if val == "auto" {
		c.Workers, c.WorkersAuto = DefaultWorkers(len(pin.Allowed())), true
		return nil
	}
	n, err := atoiRange(val, 1, 64)
	if err != nil {
		return err
	}
	c.Workers, c.WorkersAuto = n, false
	return nil
}

func setSlice(c *Config, val string) error {
	if val == "off" {
		c.Slice = -1
		return nil
	}
	d, err := time.ParseDuration(val)
	if err != nil || d < pin.MinSlice || d > pin.MaxSlice {
		return fmt.Errorf("%q is not a duration of 100us..100ms or off", val)
	}
	c.Slice = d
	return nil
}

func setRTPrio(c *Config, val string) error {
	n, err := dataplane.ParseRTPrio(val)
	if err != nil {
		return fmt.Errorf("%q is not a realtime priority of %d..%d or off", val, pin.MinRTPrio, pin.MaxRTPrio)
	}
	c.RTPrio = n
	return nil
}

// WorkerRTPrio is the dataplane's RTPrio for c.RTPrio.
func (c *Config) WorkerRTPrio() int { return dataplane.RTPrioSetting(c.RTPrio) }

// WorkerSlice is the dataplane's Slice for c.Slice.
func (c *Config) WorkerSlice() time.Duration { return dataplane.SliceSetting(c.Slice) }

// DefaultWorkers is `workers auto` on a box with cpus CPUs: one per CPU,
// but one fewer on boxes of 2 to 4, where the box's own services (DNS,
// DHCP, a GUI, a VPN) would otherwise wait for a pinned worker.
func DefaultWorkers(cpus int) int {
	switch {
	case cpus <= 1:
		return 1
	case cpus <= 4:
		return cpus - 1
	}
	return min(cpus, 64)
}

func setCPUs(c *Config, val string) error {
	c.CPUs = nil
	for _, part := range strings.Split(val, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > 4095 {
			c.CPUs = nil
			return fmt.Errorf("%q is not a CPU number or range", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > 4095 {
				c.CPUs = nil
				return fmt.Errorf("%q is not a CPU range (low-high)", part)
			}
		}
		for n := a; n <= b; n++ {
			if slices.Contains(c.CPUs, n) {
				c.CPUs = nil
				return fmt.Errorf("CPU %d listed twice", n)
			}
			c.CPUs = append(c.CPUs, n)
		}
	}
	return nil
}
