package router

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/hdr"

	"github.com/pppfwd/pppfwd/internal/ifmtu"
	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/internal/rawsock"
	"github.com/pppfwd/pppfwd/pppoe"
)

// TestIntegrationWANMTU: on real interfaces in a namespace, Open raises a
// veth at 1500 to 1512 for pppoe.mtu 1500 with wan.vlan 7 (1508
// untagged) before the ports open and logs one line; a larger MTU stays;
// and where the kernel refuses (a macvlan above its lower device's MTU;
// a thread without CAP_NET_ADMIN) the line names the command and the
// MTU stays.
func TestIntegrationWANMTU(t *testing.T) {
	lab := nettest.NewLab(t)
	ns, err := lab.NewNS("mtu")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("lan0", ns, "wan0", ns, 1); err != nil {
		t.Fatal(err)
	}
	mtuOf := func(ifn string) int {
		t.Helper()
		var m int
		if err := ns.Do(func() (err error) { m, err = ifmtu.Get(ifn); return }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cfg := func(wan string, mtu int, vlan uint16) *Config {
		return &Config{Backend: "afpacket", Workers: 1, LANInterface: "lan0", WANInterface: wan,
			LANAddr: netip.MustParsePrefix("192.168.1.1/24"), PortLo: 1024, PortHi: 65535,
			PPPoE: pppoe.ClientConfig{Username: "u", Password: "p", MTU: mtu, VLAN: vlan}}
	}
	// Open: the router raises the WAN port's MTU and opens its ports.
	for _, c := range []struct {
		vlan uint16
		want int
		line string
	}{
		{7, 1512, "pppfwd: wan.interface wan0: MTU 1500 -> 1512 for pppoe.mtu 1500 with wan.vlan 7 (RFC 4638)"},
		{0, 1508, "pppfwd: wan.interface wan0: MTU 1500 -> 1508 for pppoe.mtu 1500 (RFC 4638)"},
	} {
		if err := ns.SetMTU("wan0", 1500); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var logs []string
		logf := func(f string, a ...any) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); mu.Unlock() }
		var r *Router
		if err := ns.Do(func() (err error) { r, err = Open(cfg("wan0", 1500, c.vlan), Ports{}, logf); return }); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if got := mtuOf("wan0"); got != c.want {
			t.Errorf("vlan %d: wan0 MTU %d after Open, want %d", c.vlan, got, c.want)
		}
		mu.Lock()
		n := 0
		for _, l := range logs {
			if strings.Contains(l, "MTU") {
				n++
				if l != c.line {
					t.Errorf("vlan %d: line %q, want %q", c.vlan, l, c.line)
				}
			}
		}
		mu.Unlock()
		if n != 1 {
			t.Errorf("vlan %d: %d MTU lines in %q, want 1", c.vlan, n, logs)
		}
	}
	// The function Open calls, on the system: a larger MTU is kept.
	if err := ns.SetMTU("wan0", 9000); err != nil {
		t.Fatal(err)
	}
	var msg string
	var ok bool
	raise := func(c *Config) {
		t.Helper()
		if err := ns.Do(func() error { msg, ok = c.raiseWANMTU(sysMTU); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	raise(cfg("wan0", 1500, 7))
	if msg != "" || !ok || mtuOf("wan0") != 9000 {
		t.Fatalf("MTU 9000: %q %v, MTU now %d; want it kept, no line", msg, ok, mtuOf("wan0"))
	}
	// A macvlan cannot be larger than its lower device: the kernel
	// refuses 1508 above lan0's 1500 (EINVAL), as a driver does.
	if _, err := ns.Exec("ip", "link", "add", "link", "lan0", "name", "mv0", "type", "macvlan"); err != nil {
		t.Skipf("no macvlan here: %v", err)
	}
	raise(cfg("mv0", 1500, 0))
	if ok || mtuOf("mv0") != 1500 {
		t.Fatalf("macvlan: ok %v, MTU %d", ok, mtuOf("mv0"))
	}
	for _, w := range []string{"wan.interface mv0: cannot raise the MTU 1500 -> 1508 for pppoe.mtu 1500 (RFC 4638): ",
		"invalid argument (the driver refused it)", "running at pppoe.mtu 1492: for 1500, set it with `ip link set dev mv0 mtu 1508`"} {
		if !strings.Contains(msg, w) {
			t.Errorf("macvlan: line %q lacks %q", msg, w)
		}
	}
	// A router whose WAN port cannot take the MTU (its driver's maximum
	// 1500, stood in for: no kernel driver here has one that small, and
	// a macvlan cannot be a port with its offloads fixed on) runs at
	// 1492: its PADIs ask for no PPP-Max-Payload, so no AC sends it
	// frames the port drops. Where the MTU was raised, they ask for 1500.
	if err := lab.Veth("x0", ns, "y0", ns, 1); err != nil {
		t.Fatal(err)
	}
	sysMTU.max = func(string) (int, error) { return 1500, nil }
	line, tag := padiMaxPayload(t, ns, cfg("x0", 1500, 0), "y0")
	sysMTU.max = ifmtu.Max
	if tag != "" || !strings.Contains(line, "cannot raise the MTU 1500 -> 1508") || mtuOf("x0") != 1500 {
		t.Fatalf("driver maximum 1500: PADI PPP-Max-Payload %q (want none), line %q, MTU %d", tag, line, mtuOf("x0"))
	}
	if line, tag = padiMaxPayload(t, ns, cfg("x0", 1500, 0), "y0"); tag != "05dc" || !strings.Contains(line, "MTU 1500 -> 1508") {
		t.Fatalf("PADI PPP-Max-Payload %q (want 05dc: 1500), line %q", tag, line)
	}
	// Without CAP_NET_ADMIN (dropped from this thread's effective set
	// only): EPERM, and the line says what to run.
	if err := ns.SetMTU("wan0", 1500); err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error {
		restore, err := dropNetAdmin()
		if err != nil {
			return err
		}
		msg, ok = cfg("wan0", 1500, 7).raiseWANMTU(sysMTU)
		return restore()
	}); err != nil {
		t.Fatal(err)
	}
	if ok || mtuOf("wan0") != 1500 {
		t.Fatalf("without CAP_NET_ADMIN: ok %v, MTU %d", ok, mtuOf("wan0"))
	}
	for _, w := range []string{"operation not permitted (pppfwd needs CAP_NET_ADMIN", "`ip link set dev wan0 mtu 1512`"} {
		if !strings.Contains(msg, w) {
			t.Errorf("without CAP_NET_ADMIN: line %q lacks %q", msg, w)
		}
	}
}

// dropNetAdmin clears CAP_NET_ADMIN from the calling thread's effective
// capabilities (the caller has locked its goroutine to the thread);
// restore puts it back from the permitted set.
func dropNetAdmin() (restore func() error, err error) {
	runtime.LockOSThread() // nested in Do's lock: the thread stays this goroutine's
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	saved := data
	data[unix.CAP_NET_ADMIN/32].Effective &^= 1 << (unix.CAP_NET_ADMIN % 32)
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return func() error {
		defer runtime.UnlockOSThread()
		return unix.Capset(&hdr, &saved[0])
	}, nil
}

// padiMaxPayload opens and runs a router with cfg in ns until its first
// PADI shows on sniff (the WAN port's peer), and returns its MTU log
// line and the PADI's PPP-Max-Payload tag in hex ("" without one).
func padiMaxPayload(t *testing.T, ns *nettest.NS, cfg *Config, sniff string) (line, tag string) {
	t.Helper()
	var sc *rawsock.Conn
	if err := ns.Do(func() (err error) { sc, err = rawsock.Open(sniff, hdr.EtherTypePPPoEDisc); return }); err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var mu sync.Mutex
	logf := func(f string, a ...any) {
		if s := fmt.Sprintf(f, a...); strings.Contains(s, "MTU") {
			mu.Lock()
			line = s
			mu.Unlock()
		}
	}
	var r *Router
	if err := ns.Do(func() (err error) { r, err = Open(cfg, Ports{}, logf); return }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	buf := make([]byte, 2048)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		n, err := sc.ReadFrame(buf, time.Second)
		if err != nil {
			continue
		}
		f, err := pppoe.ParseFrame(buf[:n])
		if err != nil {
			continue
		}
		d, err := pppoe.ParseDiscovery(f.PPPoE)
		if err != nil || d.Code != pppoe.CodePADI {
			continue
		}
		mu.Lock()
		defer mu.Unlock()
		if v, ok := d.Tag(pppoe.TagPPPMaxPayload); ok {
			return line, hex.EncodeToString(v)
		}
		return line, ""
	}
	t.Fatalf("no PADI on %s", sniff)
	return "", ""
}
