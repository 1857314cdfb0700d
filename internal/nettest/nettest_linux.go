//go:build linux

package nettest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/nic/ethtool"
)

var labSeq atomic.Uint32

// Lab owns namespaces, links and processes it created and removes them on
// Close (in reverse order of creation).
type Lab struct {
	mu     sync.Mutex
	prefix string
	seq    int
	undo   []func() error
	closed bool
}

var staleOnce sync.Once

// New returns an empty Lab. Callers must Close it; tests use NewLab.
//
// The first New of a process deletes the namespaces that labs of processes
// no longer running left behind (a test binary killed before its Close
// ran): see removeStale.
func New() *Lab {
	staleOnce.Do(func() { removeStale(netnsDir, true) })
	return &Lab{prefix: labPrefix(os.Getpid(), labSeq.Add(1))}
}

// netnsDir is where `ip netns add` mounts named namespaces.
const netnsDir = "/var/run/netns"

// labPrefix is the namespace name prefix of a lab: "pf", the creating
// process's pid and the lab's sequence number, both in base 36, with an
// "x" between them. parseLabPrefix undoes it.
func labPrefix(pid int, seq uint32) string {
	return "pf" + strconv.FormatInt(int64(pid), 36) + "x" + strconv.FormatUint(uint64(seq), 36)
}

// parseLabPrefix returns the pids a namespace name made by a lab may have
// been created by, or none if the name is not a lab's. "x" is itself a
// base-36 digit, so a name can be read more than one way: every reading
// whose pid and sequence number are well formed is returned.
func parseLabPrefix(name string) []int {
	tag, _, ok := strings.Cut(name, "-")
	if !ok {
		return nil
	}
	tag, ok = strings.CutPrefix(tag, "pf")
	if !ok {
		return nil
	}
	for _, c := range tag {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return nil
		}
	}
	if tag == "" || tag[0] == '0' { // FormatInt writes no leading zeros
		return nil
	}
	var pids []int
	for i := 1; i < len(tag)-1; i++ {
		if tag[i] != 'x' || (tag[i+1] == '0' && i+2 < len(tag)) {
			continue
		}
		pid, err1 := strconv.ParseInt(tag[:i], 36, 32)
		_, err2 := strconv.ParseUint(tag[i+1:], 36, 32)
		if err1 == nil && err2 == nil && pid > 0 {
			pids = append(pids, int(pid))
		}
	}
	return pids
}

// removeStale deletes the namespaces in dir that staleNames picks, and
// returns their names.
func removeStale(dir string, ownIsStale bool) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	var removed []string
	for _, n := range staleNames(names, os.Getpid(), ownIsStale, pidRunning) {
		if _, err := run(nil, "ip", "netns", "del", n); err == nil {
			removed = append(removed, n)
		}
	}
	return removed
}

// pidRunning reports whether a process with that pid exists (zombies
// included); when in doubt, it does.
func pidRunning(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return !errors.Is(err, os.ErrNotExist)
}

// staleNames returns the names that are a lab's and whose creating process
// is gone. A name that can be read as more than one pid is kept while any
// of them runs. ownIsStale counts this process's own pid (own) as gone:
// true only before this process created any namespace, when one with its
// pid can only be left over from an earlier process that had the same pid.
//
// It assumes that the processes sharing /var/run/netns share a pid
// namespace, as the test binaries on one host or CI runner do.
func staleNames(names []string, own int, ownIsStale bool, running func(pid int) bool) []string {
	var stale []string
	for _, n := range names {
		pids := parseLabPrefix(n)
		if len(pids) == 0 {
			continue
		}
		live := false
		for _, pid := range pids {
			if pid == own {
				live = live || !ownIsStale
			} else if running(pid) {
				live = true
			}
		}
		if !live {
			stale = append(stale, n)
		}
	}
	return stale
}

// Prefix is the lab's unique name prefix.
func (l *Lab) Prefix() string { return l.prefix }

func (l *Lab) onClose(f func() error) {
	l.mu.Lock()
	l.undo = append(l.undo, f)
	l.mu.Unlock()
}

// Close removes everything the lab created. It returns the joined errors.
func (l *Lab) Close() error {
	l.mu.Lock()
	undo := l.undo
	l.undo = nil
	l.closed = true
	l.mu.Unlock()
	var errs []error
	for i := len(undo) - 1; i >= 0; i-- {
		if err := undo[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NS is a network namespace. The zero Name is the namespace the process
// started in (the root namespace of a lab).
type NS struct {
	Name string
	lab  *Lab
}

// Root returns a handle for the process's own namespace.
func (l *Lab) Root() *NS { return &NS{lab: l} }

// NewNS creates a namespace named prefix-name with loopback up.
func (l *Lab) NewNS(name string) (*NS, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errorf("lab closed")
	}
	l.seq++
	full := l.prefix + "-" + name
	l.mu.Unlock()
	if _, err := run(nil, "ip", "netns", "add", full); err != nil {
		return nil, err
	}
	ns := &NS{Name: full, lab: l}
	l.onClose(func() error {
		_, err := run(nil, "ip", "netns", "del", full)
		return err
	})
	if err := ns.SetUp("lo"); err != nil {
		return nil, err
	}
	return ns, nil
}

func run(stdin []byte, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// ip runs `ip -n NS args...` (or plain `ip args...` in the root namespace).
func (ns *NS) ip(args ...string) (string, error) {
	if ns.Name != "" {
		args = append([]string{"-n", ns.Name}, args...)
	}
	return run(nil, "ip", args...)
}

// Do runs fn on an OS thread that has entered the namespace. Sockets fn
// opens stay in the namespace after Do returns. The calling goroutine's
// namespace is never changed: fn runs on a helper goroutine locked to its
// thread, and if the thread cannot be switched back it is discarded.
func (ns *NS) Do(fn func() error) error {
	if ns.Name == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- errorf("open own netns: %v", err)
			return
		}
		defer orig.Close()
		target, err := os.Open(netnsDir + "/" + ns.Name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- errorf("open netns %s: %v", ns.Name, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- errorf("setns %s: %v (needs CAP_SYS_ADMIN)", ns.Name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it exits with this goroutine.
			errc <- errors.Join(ferr, errorf("restore netns: %v", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Exec runs a command inside the namespace and returns its combined output.
func (ns *NS) Exec(name string, args ...string) (string, error) {
	return ns.ExecInput(nil, name, args...)
}

// ExecInput is Exec with stdin.
func (ns *NS) ExecInput(stdin []byte, name string, args ...string) (string, error) {
	if ns.Name == "" {
		return run(stdin, name, args...)
	}
	return run(stdin, "ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// command is an unstarted command that runs name inside the namespace.
func (ns *NS) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if ns == nil || ns.Name == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	// `ip netns exec` enters the namespace and execs name: the process
	// started is name itself (same pid), so signals reach it directly.
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Command returns an unstarted command that runs name inside the namespace
// (a nil or root NS: in the caller's namespace), for programs the caller
// starts, signals and waits for itself (qemu, tcpdump). The lab does not
// track it. The child is killed (SIGKILL) when the OS thread that started
// it exits, so a test binary that dies leaves none behind; do not start it
// from a goroutine that locked its thread and ends without unlocking.
func (ns *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := ns.command(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Start starts a long-running command inside the namespace. The lab kills
// and reaps it on Close if it is still running.
func (ns *NS) Start(name string, args ...string) (*exec.Cmd, error) {
	cmd := ns.command(context.Background(), name, args...)
	if err := cmd.Start(); err != nil {
		return nil, errorf("start %s: %v", name, err)
	}
	var once sync.Once
	ns.lab.onClose(func() error {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		return nil
	})
	return cmd, nil
}

// Veth creates a veth pair: end a in namespace nsA, end b in nsB, both up.
// queues > 1 gives each end that many RX and TX queues.
func (l *Lab) Veth(a string, nsA *NS, b string, nsB *NS, queues int) error {
	for _, n := range []string{a, b} {
		if err := checkIfName(n); err != nil {
			return err
		}
	}
	if queues < 1 {
		queues = 1
	}
	q := strconv.Itoa(queues)
	args := []string{"link", "add", "name", a, "numtxqueues", q, "numrxqueues", q}
	if nsA.Name != "" {
		args = append(args, "netns", nsA.Name)
	}
	args = append(args, "type", "veth", "peer", "name", b, "numtxqueues", q, "numrxqueues", q)
	if nsB.Name != "" {
		args = append(args, "netns", nsB.Name)
	}
	if _, err := run(nil, "ip", args...); err != nil {
		return err
	}
	l.onClose(func() error {
		// Deleting one end removes both; gone already is fine (its
		// namespace may have been deleted first by the caller).
		if _, err := nsA.ip("link", "show", a); err != nil {
			return nil
		}
		return nsA.DelLink(a)
	})
	if err := nsA.SetUp(a); err != nil {
		return err
	}
	if err := nsB.SetUp(b); err != nil {
		return err
	}
	// The end set up first had no carrier then: its queue discipline
	// is attached when the kernel's link watcher sees the carrier come,
	// which it may put off for up to a second, and until then it drops
	// what is sent on it. Return once both ends can send.
	for _, e := range []struct {
		ns  *NS
		ifn string
	}{{nsA, a}, {nsB, b}} {
		if err := e.ns.waitSending(e.ifn, 5*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// waitSending waits until ifname is up with its carrier and its queue
// discipline attached (`ip link` no longer shows noop), so that frames
// sent on it are not dropped.
func (ns *NS) waitSending(ifname string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		out, err := ns.ip("-o", "link", "show", "dev", ifname)
		if err != nil {
			return err
		}
		if linkSending(out) {
			return nil
		}
		if time.Now().After(deadline) {
			return errorf("%s: not ready to send after %v: %s", ifname, timeout, strings.TrimSpace(out))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// linkSending reports whether one line of `ip -o link show` describes a
// link that is up with its carrier (LOWER_UP) and a queue discipline
// other than noop attached.
func linkSending(line string) bool {
	_, rest, ok := strings.Cut(line, "<")
	flags, _, ok2 := strings.Cut(rest, ">")
	if !ok || !ok2 {
		return false
	}
	fs := strings.Split(flags, ",")
	return slices.Contains(fs, "UP") && slices.Contains(fs, "LOWER_UP") && !strings.Contains(line, " qdisc noop ")
}

func checkIfName(n string) error {
	if len(n) == 0 || len(n) >= unix.IFNAMSIZ {
		return errorf("bad interface name %q (1..15 bytes)", n)
	}
	return nil
}

// AddTap creates a tap device in the namespace and brings it up. Nothing
// holds it open: a program (qemu, nic/tap) attaches to it by name. The lab
// deletes it on Close unless it is gone already.
func (ns *NS) AddTap(name string) error {
	if err := checkIfName(name); err != nil {
		return err
	}
	if _, err := ns.ip("tuntap", "add", "dev", name, "mode", "tap"); err != nil {
		return err
	}
	ns.lab.onClose(func() error {
		if _, err := ns.ip("link", "show", "dev", name); err != nil {
			return nil
		}
		return ns.DelLink(name)
	})
	return ns.SetUp(name)
}

// DelLink deletes an interface (a veth end takes its peer with it).
func (ns *NS) DelLink(ifname string) error {
	_, err := ns.ip("link", "del", "dev", ifname)
	return err
}

// SetUp brings an interface up.
func (ns *NS) SetUp(ifname string) error {
	_, err := ns.ip("link", "set", "dev", ifname, "up")
	return err
}

// SetMTU sets an interface's MTU.
func (ns *NS) SetMTU(ifname string, mtu int) error {
	_, err := ns.ip("link", "set", "dev", ifname, "mtu", strconv.Itoa(mtu))
	return err
}

// SetMAC sets an interface's MAC address.
func (ns *NS) SetMAC(ifname, mac string) error {
	_, err := ns.ip("link", "set", "dev", ifname, "address", mac)
	return err
}

// AddAddr adds an address (CIDR notation) to an interface.
func (ns *NS) AddAddr(ifname string, p netip.Prefix) error {
	_, err := ns.ip("addr", "add", p.String(), "dev", ifname)
	return err
}

// AddRoute adds a route; dst is a prefix or "default".
func (ns *NS) AddRoute(dst string, via netip.Addr) error {
	_, err := ns.ip("route", "add", dst, "via", via.String())
	return err
}

// AddNeigh adds a permanent neighbour entry (no ARP needed for ip).
func (ns *NS) AddNeigh(ifname string, ip netip.Addr, mac string) error {
	_, err := ns.ip("neigh", "replace", ip.String(), "lladdr", mac, "dev", ifname, "nud", "permanent")
	return err
}

// Interface returns the interface as seen inside the namespace.
func (ns *NS) Interface(ifname string) (*net.Interface, error) {
	var ifi *net.Interface
	err := ns.Do(func() error {
		var err error
		ifi, err = net.InterfaceByName(ifname)
		return err
	})
	return ifi, err
}

// MAC returns an interface's hardware address in the usual colon notation.
func (ns *NS) MAC(ifname string) (string, error) {
	ifi, err := ns.Interface(ifname)
	if err != nil {
		return "", err
	}
	return ifi.HardwareAddr.String(), nil
}

// SetFeature switches one offload (tso, gso, gro, lro, tx) of an interface.
func (ns *NS) SetFeature(ifname, feature string, on bool) error {
	f, err := ethtool.ParseFeature(feature)
	if err != nil {
		return err
	}
	return ns.Do(func() error { return ethtool.Set(ifname, f, on) })
}

// Feature reports whether an offload (tso, gso, gro, lro) is on.
func (ns *NS) Feature(ifname, feature string) (bool, error) {
	f, err := ethtool.ParseFeature(feature)
	if err != nil {
		return false, err
	}
	var on bool
	err = ns.Do(func() error {
		var err error
		on, err = ethtool.Get(ifname, f)
		return err
	})
	return on, err
}

// DisableOffloads switches GRO, LRO, TSO and GSO off on an interface.
func (ns *NS) DisableOffloads(ifname string) error {
	return ns.Do(func() error { return ethtool.DisableCoalescing(ifname) })
}

// Sysctl writes a value under /proc/sys (key in dotted or slash form) as
// seen from inside the namespace.
func (ns *NS) Sysctl(key, value string) error {
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	return ns.Do(func() error {
		if err := os.WriteFile(path, []byte(value), 0); err != nil {
			return errorf("sysctl %s=%s in %s: %v", key, value, ns.Name, err)
		}
		return nil
	})
}

// ReadSysctl reads a value under /proc/sys as seen from inside the namespace.
func (ns *NS) ReadSysctl(key string) (string, error) {
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	var v string
	err := ns.Do(func() error {
		b, err := os.ReadFile(path)
		v = strings.TrimSpace(string(b))
		return err
	})
	return v, err
}

// DisableIPv6 switches IPv6 off on every interface of the namespace, present
// and future, so that its links carry no ND, MLD or router solicitations:
// only what a test sends.
func (ns *NS) DisableIPv6() error {
	if ns.Name == "" {
		return errorf("refusing to disable IPv6 in the root namespace")
	}
	for _, k := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
		if err := ns.Sysctl(k, "1"); err != nil {
			return err
		}
	}
	return nil
}

// EnableForwarding turns on IPv4 forwarding in the namespace.
func (ns *NS) EnableForwarding() error {
	if ns.Name == "" {
		return errorf("refusing to enable forwarding in the root namespace")
	}
	return ns.Sysctl("net.ipv4.ip_forward", "1")
}

// LoadNft loads an nftables ruleset (nft -f syntax) into the namespace. The
// ruleset goes away with the namespace; the root namespace is refused so
// that tests never touch the host's firewall.
func (ns *NS) LoadNft(ruleset string) error {
	if ns.Name == "" {
		return errorf("refusing to load nftables rules into the root namespace")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return errorf("nft not installed: %v", err)
	}
	_, err := ns.ExecInput([]byte(ruleset), "nft", "-f", "-")
	return err
}

// NewLine builds the A - R - B topology described by Line.
func (l *Lab) NewLine(cfg LineConfig) (*Line, error) {
	cfg.defaults()
	ln := &Line{AIf: "a0", RA: "ra", RB: "rb", BIf: "b0", cfg: cfg}
	var err error
	if ln.A, err = l.NewNS("a"); err != nil {
		return nil, err
	}
	if ln.R, err = l.NewNS("r"); err != nil {
		return nil, err
	}
	if ln.B, err = l.NewNS("b"); err != nil {
		return nil, err
	}
	if !cfg.IPv6 {
		for _, ns := range []*NS{ln.A, ln.R, ln.B} {
			if err := ns.DisableIPv6(); err != nil {
				return nil, err
			}
		}
	}
	if err := l.Veth(ln.AIf, ln.A, ln.RA, ln.R, cfg.Queues); err != nil {
		return nil, err
	}
	if err := l.Veth(ln.RB, ln.R, ln.BIf, ln.B, cfg.Queues); err != nil {
		return nil, err
	}
	ends := []struct {
		ns  *NS
		ifn string
		mac *string
	}{{ln.A, ln.AIf, &ln.AMAC}, {ln.R, ln.RA, &ln.RAMAC}, {ln.R, ln.RB, &ln.RBMAC}, {ln.B, ln.BIf, &ln.BMAC}}
	for _, e := range ends {
		if err := e.ns.SetMTU(e.ifn, cfg.MTU); err != nil {
			return nil, err
		}
		if !cfg.KeepOffloads {
			if err := e.ns.DisableOffloads(e.ifn); err != nil {
				return nil, err
			}
			if err := e.ns.SetFeature(e.ifn, "tx", false); err != nil {
				return nil, err
			}
		}
		if *e.mac, err = e.ns.MAC(e.ifn); err != nil {
			return nil, err
		}
	}
	if cfg.Routed {
		ln.AAddr = netip.MustParsePrefix("10.77.1.2/24")
		ln.RAAddr = netip.MustParsePrefix("10.77.1.1/24")
		ln.RBAddr = netip.MustParsePrefix("10.77.2.1/24")
		ln.BAddr = netip.MustParsePrefix("10.77.2.2/24")
	} else {
		ln.AAddr = netip.MustParsePrefix("10.77.0.1/24")
		ln.BAddr = netip.MustParsePrefix("10.77.0.2/24")
	}
	if err := ln.A.AddAddr(ln.AIf, ln.AAddr); err != nil {
		return nil, err
	}
	if err := ln.B.AddAddr(ln.BIf, ln.BAddr); err != nil {
		return nil, err
	}
	if cfg.Routed {
		if err := ln.R.AddAddr(ln.RA, ln.RAAddr); err != nil {
			return nil, err
		}
		if err := ln.R.AddAddr(ln.RB, ln.RBAddr); err != nil {
			return nil, err
		}
		if err := ln.R.EnableForwarding(); err != nil {
			return nil, err
		}
		if err := ln.A.AddRoute("default", ln.RAAddr.Addr()); err != nil {
			return nil, err
		}
		if err := ln.B.AddRoute("default", ln.RBAddr.Addr()); err != nil {
			return nil, err
		}
	}
	return ln, nil
}

// Masquerade loads the in-kernel baseline into R: IPv4 forwarding (Routed
// lines) plus an nftables masquerade of everything leaving RB.
func (ln *Line) Masquerade() error {
	if !ln.cfg.Routed {
		return errorf("Masquerade needs a Routed line")
	}
	return ln.R.LoadNft(fmt.Sprintf(`table ip pppfwd_nat {
	chain post {
		type nat hook postrouting priority srcnat; policy accept;
		oifname %q masquerade
	}
}
`, ln.RB))
}
