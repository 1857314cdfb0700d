package ab

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"strconv"
	"strings"

	"github.com/pppfwd/pppfwd/dataplane/router"
	"github.com/pppfwd/pppfwd/shaper"
)

// File is one generated file: its path relative to the A/B's directory
// (run-ab.sh finds the others beside itself), its mode and its content.
// A File of mode 0600 holds the PPPoE password; no other File does.
type File struct {
	Path string
	Mode fs.FileMode
	Body string
}

// Secret reports whether f holds the PPPoE password (mode 0600).
func (f File) Secret() bool { return f.Mode == secretMode }

const (
	secretMode fs.FileMode = 0o600
	textMode   fs.FileMode = 0o644
	scriptMode fs.FileMode = 0o755
)

// The errors Params.Validate, ParseShape and the generators return,
// wrapped with what was wrong and what is allowed. They never quote the
// password.
var (
	ErrInterface    = errors.New("ab: interface")
	ErrUser         = errors.New("ab: user")
	ErrPassword     = errors.New("ab: password")
	ErrService      = errors.New("ab: service")
	ErrMTU          = errors.New("ab: mtu")
	ErrLAN          = errors.New("ab: LAN")
	ErrShape        = errors.New("ab: shape")
	ErrWorkers      = errors.New("ab: workers")
	ErrCPUs         = errors.New("ab: cpus")
	ErrBackend      = errors.New("ab: backend")
	ErrDummynetRate = errors.New("ab: dummynet rate")
	ErrOS           = errors.New("ab: os")
)

// Bounds Validate enforces.
const (
	DefaultMTU = 1492
	MinMTU     = 576  // pppoe.mtu's lower bound
	MaxMTU     = 1500 // RFC 4638 baby jumbo frames
	// MinRate and MaxRate bound each shaped direction, in bit/s.
	MinRate = 64_000
	MaxRate = 10_000_000_000
	// MaxDummynetRate is the largest bw ipfw reads: it parses the
	// bandwidth into a C int of bit/s.
	MaxDummynetRate = 1<<31 - 1
	MaxWorkers      = 64 // workers' upper bound in pppfwd.conf
	MaxCPUs         = 4096
	maxText         = 255 // PAP's peer-id and password length fields are one byte
)

// Params are the settings both sides of the A/B share.
type Params struct {
	WAN string // the WAN port (PPPoE runs on it)
	LAN string // the LAN port

	Service  string // PPPoE Service-Name to ask for ("": any)
	User     string // PPPoE login
	Password string // PPPoE password: only in files of mode 0600

	// MTU is the PPP MTU and MRU of both sides, 576..1500 (0: 1492);
	// above 1492 both ask for RFC 4638 and the WAN port's MTU is set to
	// MTU+8.
	MTU int

	LANNet netip.Prefix // the LAN's IPv4 subnet, /8../30, e.g. 192.168.1.0/24
	Router netip.Addr   // the router's LAN address, a host address in LANNet

	Shape Shape

	Workers int // pppfwd's workers, 1..64 and at most CPUs (0: router.DefaultWorkers(CPUs))
	CPUs    int // the box's CPUs, 1..4096: net.isr.maxthreads on FreeBSD
}

// WithDefaults returns p with MTU and Workers set when zero.
func (p Params) WithDefaults() Params {
	if p.MTU == 0 {
		p.MTU = DefaultMTU
	}
	if p.Workers == 0 && p.CPUs > 0 {
		p.Workers = router.DefaultWorkers(p.CPUs)
	}
	return p
}

// Validate checks p after WithDefaults. Its errors wrap one of the Err*
// values and say what is allowed.
func (p Params) Validate() error {
	p = p.WithDefaults()
	for _, f := range []struct{ what, name string }{{"wan", p.WAN}, {"lan", p.LAN}} {
		if err := checkIfName(f.name); err != nil {
			return fmt.Errorf("%w %s: %v", ErrInterface, f.what, err)
		}
	}
	if p.WAN == p.LAN {
		return fmt.Errorf("%w: wan and lan are both %s: allowed: two different ports", ErrInterface, p.WAN)
	}
	if err := checkText(p.User, 1); err != nil {
		return fmt.Errorf("%w: %v", ErrUser, err)
	}
	if err := checkText(p.Password, 1); err != nil {
		return fmt.Errorf("%w: %v", ErrPassword, err)
	}
	if err := checkText(p.Service, 0); err != nil {
		return fmt.Errorf("%w: %v", ErrService, err)
	}
	if p.MTU < MinMTU || p.MTU > MaxMTU {
		return fmt.Errorf("%w %d: allowed: %d..%d (%d without RFC 4638)", ErrMTU, p.MTU, MinMTU, MaxMTU, DefaultMTU)
	}
	if err := p.checkLAN(); err != nil {
		return err
	}
	if err := p.Shape.Validate(); err != nil {
		return err
	}
	if p.CPUs < 1 || p.CPUs > MaxCPUs {
		return fmt.Errorf("%w %d: allowed: 1..%d, the A/B box's CPUs", ErrCPUs, p.CPUs, MaxCPUs)
	}
	if p.Workers < 1 || p.Workers > min(MaxWorkers, p.CPUs) {
		return fmt.Errorf("%w %d: allowed: 1..%d (one pinned thread per CPU, at most %d)", ErrWorkers, p.Workers, min(MaxWorkers, p.CPUs), MaxWorkers)
	}
	return nil
}

// checkIfName allows the names every generator writes unquoted or in
// double quotes (pf macros, nft strings, sh words) without escaping.
func checkIfName(s string) error {
	if s == "" || len(s) > 15 {
		return fmt.Errorf("%q: allowed: 1..15 characters (IFNAMSIZ)", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && (c == '_' || c == '.' || c == '-')) {
			return fmt.Errorf("%q: allowed: letters, digits and, after the first, _ . -", s)
		}
	}
	if s == ngIface || s == pppIface {
		return fmt.Errorf("%q is the kernel path's session interface: allowed: an Ethernet port", s)
	}
	return nil
}

// checkText: printable ASCII of minLen..255 bytes. Every generator
// writes such a string double-quoted with '"' and '\' escaped, which
// mpd5, pppd and pppfwd read back alike. Its errors never quote it.
func checkText(s string, minLen int) error {
	if len(s) < minLen || len(s) > maxText {
		return fmt.Errorf("%d bytes: allowed: %d..%d", len(s), minLen, maxText)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return fmt.Errorf("byte %d is 0x%02x: allowed: printable ASCII (0x20..0x7e)", i, s[i])
		}
	}
	return nil
}

func (p Params) checkLAN() error {
	n := p.LANNet
	switch {
	case !n.IsValid() || !n.Addr().Is4():
		return fmt.Errorf("%w: subnet %v: allowed: an IPv4 subnet such as 192.168.1.0/24", ErrLAN, n)
	case n.Bits() < 8 || n.Bits() > 30:
		return fmt.Errorf("%w: subnet %v: allowed: a /8../30 prefix", ErrLAN, n)
	case n != n.Masked():
		return fmt.Errorf("%w: subnet %v has host bits set: allowed: %v", ErrLAN, n, n.Masked())
	case !p.Router.Is4() || !n.Contains(p.Router):
		return fmt.Errorf("%w: router address %v: allowed: an address in %v", ErrLAN, p.Router, n)
	}
	a := p.Router.As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	host := uint32(1)<<(32-n.Bits()) - 1
	if v&host == 0 || v&host == host {
		return fmt.Errorf("%w: router address %v is %v's network or broadcast address: allowed: a host address", ErrLAN, p.Router, n)
	}
	return nil
}

// lanAddr is the router's address with the LAN's prefix length, as
// pppfwd's lan.address and ip/ifconfig take it.
func (p Params) lanAddr() string {
	return netip.PrefixFrom(p.Router, p.LANNet.Bits()).String()
}

// Shape is the shaping of both sides: the same rates, overhead and
// FQ-CoDel parameters on the kernel path and in pppfwd.
type Shape struct {
	Down uint64 // download (WAN to LAN) in bit/s; Down and Up both 0: off
	Up   uint64 // upload (LAN to WAN) in bit/s
	// Overhead is added to each IP packet's length, in CAKE's terms
	// (overhead N, mpu N, atm/ptm framing); the zero value counts the IP
	// packet as it is.
	Overhead shaper.Overhead
}

// On reports whether s shapes at all.
func (s Shape) On() bool { return s.Down != 0 || s.Up != 0 }

// String returns s in the words ParseShape reads back to s.
func (s Shape) String() string {
	if !s.On() && s.Overhead == (shaper.Overhead{}) {
		return "off"
	}
	return fmt.Sprintf("download %d upload %d %s", s.Down, s.Up, s.Overhead)
}

// Validate checks that either both rates are set and within
// MinRate..MaxRate, or neither and no overhead is.
func (s Shape) Validate() error {
	if !s.On() {
		if s.Overhead != (shaper.Overhead{}) {
			return fmt.Errorf("%w: an overhead without rates: allowed: off, or download RATE upload RATE [overhead ...]", ErrShape)
		}
		return nil
	}
	for _, d := range []struct {
		name string
		r    uint64
	}{{"download", s.Down}, {"upload", s.Up}} {
		if d.r < MinRate || d.r > MaxRate {
			return fmt.Errorf("%w: %s %d bit/s: allowed: %d..%d bit/s for both directions", ErrShape, d.name, d.r, MinRate, uint64(MaxRate))
		}
	}
	if err := s.Overhead.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrShape, err)
	}
	return nil
}

// ParseShape reads the shaping of the A/B: "off" (or nothing), or
// "download RATE upload RATE" followed by CAKE's overhead keywords as
// shaper.ParseOverhead reads them ("overhead 34", "mpu 64", "ptm",
// "pppoe-ptm", "ethernet", "ether-vlan", ...). RATE is a whole number of
// bit/s, or of kbit, mbit or gbit (10^3, 10^6, 10^9 bit/s); tc's bps,
// kbps, mbps and gbps (bytes per second) are refused, not converted.
func ParseShape(s string) (Shape, error) {
	words := strings.Fields(strings.ToLower(s))
	if len(words) == 0 || len(words) == 1 && words[0] == "off" {
		return Shape{}, nil
	}
	var sh Shape
	var rest []string
	seen := map[string]bool{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w != "download" && w != "upload" {
			rest = append(rest, w)
			continue
		}
		if seen[w] {
			return Shape{}, fmt.Errorf("%w: %s given twice", ErrShape, w)
		}
		seen[w] = true
		if i+1 == len(words) {
			return Shape{}, fmt.Errorf("%w: %s needs a rate in bit/s", ErrShape, w)
		}
		i++
		r, err := parseRate(words[i])
		if err != nil {
			return Shape{}, fmt.Errorf("%w: %s: %v", ErrShape, w, err)
		}
		if w == "download" {
			sh.Down = r
		} else {
			sh.Up = r
		}
	}
	if !seen["download"] || !seen["upload"] {
		return Shape{}, fmt.Errorf("%w: %q: allowed: off, or download RATE upload RATE [overhead N] [mpu N] [ptm|atm|noatm] [pppoe-ptm|ethernet|...]", ErrShape, s)
	}
	o, err := shaper.ParseOverhead(strings.Join(rest, " "))
	if err != nil {
		return Shape{}, fmt.Errorf("%w: %v", ErrShape, err)
	}
	sh.Overhead = o
	return sh, sh.Validate()
}

// parseRate reads a whole number of bit/s with an optional decimal unit.
func parseRate(s string) (uint64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	num, unit := s[:i], s[i:]
	mul, ok := map[string]uint64{"": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[unit]
	switch {
	case !ok && strings.HasSuffix(unit, "bps"):
		return 0, fmt.Errorf("%q: %s is bytes per second in tc: allowed: bit/s, or kbit, mbit, gbit", s, unit)
	case !ok || num == "":
		return 0, fmt.Errorf("%q: allowed: a whole number of bit/s, or of kbit, mbit, gbit (e.g. 300000000 or 300mbit)", s)
	case len(num) > 15:
		return 0, fmt.Errorf("%q: too large: allowed: up to %d bit/s", s, uint64(MaxRate))
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %v", s, err)
	}
	if v > MaxRate/mul {
		return 0, fmt.Errorf("%q: too large: allowed: up to %d bit/s", s, uint64(MaxRate))
	}
	return v * mul, nil
}

// The session interfaces of the kernel paths: mpd5's first ng_iface and
// pppd's unit 0.
const (
	ngIface  = "ng0"
	pppIface = "ppp0"
)

// LCP echo keepalive of both sides: every 10 s, the session ends after
// 3 unanswered (pppfwd's defaults, written out for the A/B).
const (
	echoInterval = 10
	echoFailures = 3
)

// Backends lists PppfwdConfig's backends.
var Backends = []string{"afpacket", "afxdp", "netmap"}

// PppfwdConfig returns the pppfwd.conf of the A/B's pppfwd side: the same
// ports, account, MTU, keepalive and shaping as the kernel path, on
// backend (afpacket, afxdp or netmap). router.ParseConfig accepts it;
// it holds the password (mode 0600).
func PppfwdConfig(p Params, backend string) (File, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return File{}, err
	}
	ok := false
	for _, b := range Backends {
		ok = ok || b == backend
	}
	if !ok {
		return File{}, fmt.Errorf("%w %q: allowed: %s", ErrBackend, backend, strings.Join(Backends, ", "))
	}
	var b strings.Builder
	header(&b, p, "pppfwd.conf: the pppfwd side (pppfwd run -c pppfwd.conf; run-ab.sh pppfwd does).")
	b.WriteString("# It holds the PPPoE password: keep it mode 600.\n")
	fmt.Fprintf(&b, "backend %s\n", backend)
	fmt.Fprintf(&b, "workers %d\n", p.Workers)
	b.WriteString("workers.poll adaptive\n\n")
	b.WriteString("# The ports belong to pppfwd: run-ab.sh removes the kernel path's LAN address first.\n")
	fmt.Fprintf(&b, "lan.interface %s\n", p.LAN)
	fmt.Fprintf(&b, "lan.address %s\n", p.lanAddr())
	fmt.Fprintf(&b, "wan.interface %s\n", p.WAN)
	if backend == "netmap" {
		b.WriteString("# The A/B measures forwarding: the box's own stack keeps no LAN address, no host rings.\n")
		b.WriteString("host.netmap off\n")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "pppoe.user %s\n", quote(p.User))
	fmt.Fprintf(&b, "pppoe.password %s\n", quote(p.Password))
	if p.Service != "" {
		fmt.Fprintf(&b, "pppoe.service %s\n", quote(p.Service))
	}
	fmt.Fprintf(&b, "pppoe.mtu %d\n", p.MTU)
	fmt.Fprintf(&b, "pppoe.echo_interval %ds\n", echoInterval)
	fmt.Fprintf(&b, "pppoe.echo_failures %d\n", echoFailures)
	if p.Shape.On() {
		b.WriteString("\n# The kernel path shapes the same rates with the same overhead, per-flow FQ-CoDel\n")
		b.WriteString("# (no per-host fairness: dummynet's fq_codel has none) and FQ-CoDel's defaults.\n")
		fmt.Fprintf(&b, "shaper.up %s\n", pppfwdSpec(p.Shape.Up, p.Shape.Overhead))
		fmt.Fprintf(&b, "shaper.down %s\n", pppfwdSpec(p.Shape.Down, p.Shape.Overhead))
	} else {
		b.WriteString("\n# Unshaped, as the kernel path.\n")
	}
	return File{Path: "pppfwd.conf", Mode: secretMode, Body: b.String()}, nil
}

// pppfwdSpec is a shaper.* value: the rate in bit/s, flow fairness and
// the overhead, in the words shaper.ParseSpec reads back.
func pppfwdSpec(rate uint64, o shaper.Overhead) string {
	return shaper.Spec{Rate: rate, Config: shaper.Config{Overhead: o}}.String()
}

// Files returns the files of an A/B on goos ("linux" or "freebsd"): the
// kernel path's and the pppfwd side's pppfwd.conf on backend.
func Files(goos string, p Params, backend string) ([]File, error) {
	var files []File
	var err error
	switch goos {
	case "linux":
		files, err = LinuxKernel(p)
	case "freebsd":
		files, err = FreeBSDKernel(p)
	default:
		return nil, fmt.Errorf("%w %q: allowed: linux, freebsd", ErrOS, goos)
	}
	if err != nil {
		return nil, err
	}
	f, err := PppfwdConfig(p, backend)
	if err != nil {
		return nil, err
	}
	return append(files, f), nil
}

// DefaultBackend is the pppfwd side's backend on goos: netmap on
// FreeBSD, afpacket on Linux.
func DefaultBackend(goos string) string {
	if goos == "freebsd" {
		return "netmap"
	}
	return "afpacket"
}

// Write writes files to w as `pppfwd bench ab --dry-run` prints them:
// each after a "==> PATH (MODE) <==" line, a blank line between.
func Write(w io.Writer, files []File) error {
	for i, f := range files {
		sep := ""
		if i > 0 {
			sep = "\n"
		}
		if _, err := fmt.Fprintf(w, "%s==> %s (%04o) <==\n%s", sep, f.Path, f.Mode.Perm(), f.Body); err != nil {
			return err
		}
	}
	return nil
}

// quote double-quotes s with '"' and '\' escaped: how mpd5, pppd and
// pppfwd all read a quoted string back (s is printable ASCII, checkText).
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// header starts every file with '#' comment lines naming the A/B, the
// ports and what the file is; p is valid.
func header(b *strings.Builder, p Params, what string) {
	fmt.Fprintf(b, "# pppfwd bench ab: WAN %s (PPPoE), LAN %s (%s, router %s).\n", p.WAN, p.LAN, p.LANNet, p.Router)
	fmt.Fprintf(b, "# %s\n", what)
	b.WriteString("# Generated by pppfwd bench ab --dry-run: regenerate it rather than edit it.\n")
}

// fqCodel are the FQ-CoDel parameters of every shaper of the A/B:
// pppfwd's defaults (Linux fq_codel's), written out for the kernel path.
// The quantum is pppfwd's at the direction's rate, shaper.RateQuantum
// (CAKE's choice, as a cake shaper makes it).
var fqCodel = struct {
	targetMs, intervalMs int64
	limit, flows         int
}{shaper.DefaultTarget / 1e6, shaper.DefaultInterval / 1e6, shaper.DefaultLimit, shaper.DefaultFlows}

// runABTail ends run-ab.sh on every OS: pppfwd_up, which stops the
// kernel path, brings the two ports up with linkUp (the OS's commands,
// one tab-indented line each, using $wan, $wan_up and $lan), checks
// pppfwd.conf and runs pppfwd in the script's place; then the dispatch
// on the script's argument (kernel, pppfwd, stop).
func runABTail(b *strings.Builder, linkUp string) {
	b.WriteString(`pppfwd_up() {
	[ "$(id -u)" = 0 ] || die "needs root"
	kernel_down
` + linkUp + `	"${PPPFWD:-pppfwd}" run -c "$here/pppfwd.conf" -check
	exec "${PPPFWD:-pppfwd}" run -c "$here/pppfwd.conf"
}

case "${1:-}" in
kernel) kernel_up ;;
pppfwd) pppfwd_up ;;
stop) kernel_down ;;
*)
	echo "usage: sh run-ab.sh kernel | pppfwd | stop" >&2
	exit 2
	;;
esac
`)
}
