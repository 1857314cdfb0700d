package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// TestSessionHooks: a session coming up rewrites the resolv file and runs
// the up script with the session in its environment; going down runs the
// down script with the same session; a session without DNS leaves the
// file alone; Close waits for what is queued.
func TestSessionHooks(t *testing.T) {
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	log := filepath.Join(dir, "events")
	script := filepath.Join(dir, "hook")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nenv | grep '^PPPFWD_' | sort | tr '\\n' ' ' >> "+log+"\necho >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(strings.NewReader("lan.interface a\nwan.interface wan0\nlan.address 10.0.0.1/24\npppoe.user u\n" +
		"pppoe.resolv " + resolv + "\npppoe.up_script " + script + "\npppoe.down_script " + script + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	r, err := Open(cfg, Ports{LAN: memport.New("lan", 1, 64), WAN: memport.New("wan", 1, 64)},
		func(f string, a ...any) { logged = append(logged, f) })
	if err != nil {
		t.Fatal(err)
	}
	s := &hdr.Session{ID: 0x1234, LocalAddr: 0x64400007, PeerAddr: 0x64400001, DNS: [2]uint32{0x08080808, 0x01010101}, MTU: 1492}
	r.publish(s)
	r.publish(nil)
	r.publish(&hdr.Session{ID: 0x1235, LocalAddr: 0x64400008, PeerAddr: 0x64400001, MTU: 1500}) // no DNS
	r.Close()
	r.publish(nil) // after Close: ignored, no panic
	got, err := os.ReadFile(resolv)
	if err != nil || string(got) != "# written by pppfwd from the PPPoE session (IPCP)\nnameserver 8.8.8.8\nnameserver 1.1.1.1\n" {
		t.Fatalf("resolv file %q, %v", got, err)
	}
	ev, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ev)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d script runs, want 3 (up, down, up): %q", len(lines), ev)
	}
	for i, want := range []string{
		"PPPFWD_DNS1=8.8.8.8 PPPFWD_DNS2=1.1.1.1 PPPFWD_EVENT=up PPPFWD_LOCAL=100.64.0.7 PPPFWD_MTU=1492 PPPFWD_PEER=100.64.0.1 PPPFWD_SESSION_ID=4660 PPPFWD_WAN_INTERFACE=wan0",
		"PPPFWD_DNS1=8.8.8.8 PPPFWD_DNS2=1.1.1.1 PPPFWD_EVENT=down PPPFWD_LOCAL=100.64.0.7 PPPFWD_MTU=1492 PPPFWD_PEER=100.64.0.1 PPPFWD_SESSION_ID=4660 PPPFWD_WAN_INTERFACE=wan0",
		"PPPFWD_DNS1= PPPFWD_DNS2= PPPFWD_EVENT=up PPPFWD_LOCAL=100.64.0.8 PPPFWD_MTU=1500 PPPFWD_PEER=100.64.0.1 PPPFWD_SESSION_ID=4661 PPPFWD_WAN_INTERFACE=wan0",
	} {
		if strings.TrimSpace(lines[i]) != want {
			t.Errorf("run %d:\n got %s\nwant %s", i, strings.TrimSpace(lines[i]), want)
		}
	}
	// A failing script is logged, not fatal.
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho nope >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	h := newHooks(&Config{UpScript: bad}, func(f string, a ...any) { msgs = append(msgs, fmt.Sprintf(f, a...)) })
	h.publish(s)
	h.close()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "exit status 3: nope") {
		t.Fatalf("a failing script was logged as %q", msgs)
	}
}

// TestHookPairing: an up runs once per session (a re-publish of the same
// session is not a new up), a down only after its up was queued, and a
// dropped event does not unpair them.
func TestHookPairing(t *testing.T) {
	h := &hooks{cfg: &Config{}, logf: func(string, ...any) {}, events: make(chan hookEvent, 2), done: make(chan struct{})}
	s1 := &hdr.Session{ID: 1, LocalAddr: 10, MTU: 1500}
	h.publish(nil) // down without an up: nothing
	h.publish(s1)
	h.publish(&hdr.Session{ID: 1, LocalAddr: 10, MTU: 1492}) // the same session, new MTU
	h.publish(nil)
	if len(h.events) != 2 {
		t.Fatalf("%d events queued, want up and down", len(h.events))
	}
	up, down := <-h.events, <-h.events
	if !up.up || up.s.ID != 1 || down.up || down.s.ID != 1 || down.s.MTU != 1492 {
		t.Fatalf("events %+v, %+v", up, down)
	}
	// A full queue drops the up: its down must not run either.
	h.events <- hookEvent{}
	h.events <- hookEvent{}
	h.publish(&hdr.Session{ID: 2})
	<-h.events
	<-h.events
	h.publish(nil)
	if len(h.events) != 0 {
		t.Fatalf("a down ran for an up that was dropped")
	}
	// A dropped down keeps the session: the next down for it still runs.
	h.publish(&hdr.Session{ID: 3})
	h.events <- hookEvent{}
	h.publish(nil) // dropped
	<-h.events
	<-h.events
	h.publish(nil)
	if ev := <-h.events; ev.up || ev.s.ID != 3 {
		t.Fatalf("after a dropped down: %+v", ev)
	}
}

// TestHookScriptTimeout: a script that outlives its time is killed with
// everything it started, and one that leaves a child in the background
// does not hold the hooks up.
func TestHookScriptTimeout(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	slow := filepath.Join(dir, "slow")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nsleep 60 &\necho $! > "+pidFile+"\nwait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bg := filepath.Join(dir, "bg")
	if err := os.WriteFile(bg, []byte("#!/bin/sh\nsleep 60 &\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		script string
		failed bool
	}{{slow, true}, {bg, false}} {
		var msgs []string
		h := newHooks(&Config{UpScript: c.script}, func(f string, a ...any) { msgs = append(msgs, fmt.Sprintf(f, a...)) })
		h.timeout = 300 * time.Millisecond
		t0 := time.Now()
		h.publish(&hdr.Session{ID: 1})
		h.close()
		if d := time.Since(t0); d > 4*time.Second {
			t.Fatalf("%s: hooks took %v", filepath.Base(c.script), d)
		}
		if (len(msgs) > 0) != c.failed {
			t.Fatalf("%s: logged %q", filepath.Base(c.script), msgs)
		}
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	time.Sleep(100 * time.Millisecond)
	if pid <= 0 || syscall.Kill(pid, 0) == nil {
		t.Fatalf("the timed-out script's child %d is still alive", pid)
	}
}

// TestWriteStats: the stats file is JSON with the session state, the
// counters, the drops by reason and the shaper rates, replaced whole
// (through a missing directory, made); a symlink there is refused.
func TestWriteStats(t *testing.T) {
	cfg, err := ParseConfig(strings.NewReader("lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\nshaper.up bandwidth 40mbit\n"))
	if err != nil {
		t.Fatal(err)
	}
	lan := memport.New("lan", 1, 64)
	r, err := Open(cfg, Ports{LAN: lan, WAN: memport.New("wan", 1, 64), LANMAC: [6]byte{2, 0, 0, 0, 0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Engine().Start()
	defer r.Engine().Stop()
	lan.Inject(0, make([]byte, 60)) // to another MAC: dropped, counted
	file := filepath.Join(t.TempDir(), "run", "stats.json")
	var st map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := r.WriteStats(file); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("stats file is not JSON: %v\n%s", err, b)
		}
		if d, _ := st["drops"].(map[string]any); d["not_our_mac"] == 1.0 || time.Now().After(deadline) {
			break
		}
	}
	c, _ := st["counters"].(map[string]any)
	// No session: no session figures (not the last session's).
	for _, k := range []string{"local", "peer", "mtu", "up_since", "session_id", "lcp_echo_rtt_ms"} {
		if _, ok := st[k]; ok {
			t.Errorf("stats without a session carry %s: %v", k, st[k])
		}
	}
	// A dangling symlink is refused: the link stays, nothing is made
	// where it points.
	link := filepath.Join(t.TempDir(), "link.json")
	target := filepath.Join(filepath.Dir(link), "sub", "target.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteStats(link); !errors.Is(err, errSymlink) {
		t.Fatalf("stats file through a dangling symlink: %v, want refused", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", fi, err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the symlink's target was written: %v", err)
	}
	if st["state"] == nil || st["shaper_up_bps"] != 40e6 || st["shaper_down_bps"] != 0.0 || c["rx_lan"] != 1.0 || c["drops"] != 1.0 ||
		st["drops"].(map[string]any)["not_our_mac"] != 1.0 || st["control"] == nil {
		t.Fatalf("stats %v", st)
	}
}

// TestIPv6Hook: lan.ipv6_script runs ipv6-up when the LAN gets a prefix,
// ipv6-down then ipv6-up when it changes, nothing when nothing a script
// sees changed, ipv6-down when it goes.
func TestIPv6Hook(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "events")
	script := filepath.Join(dir, "hook6")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$1 $2 | $(env | grep '^PPPFWD_' | sort | tr '\\n' ' ')\" >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHooks(&Config{IPv6Script: script, LANInterface: "lan0"}, t.Logf)
	a := &lan6Event{prefix: "2001:db8:1::/64", router: "2001:db8:1::1", delegated: "2001:db8:1::/56", dns: []string{"2001:db8::53"}}
	b := &lan6Event{prefix: "2001:db8:2::/64", router: "2001:db8:2::1", delegated: "2001:db8:2::/56"}
	h.publish6(a)
	h.publish6(&lan6Event{prefix: a.prefix, router: a.router, delegated: a.delegated, dns: []string{"2001:db8::53"}}) // the same
	h.publish6(b)
	h.publish6(nil)
	h.publish6(nil) // nothing up: nothing to run
	h.close()
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ipv6-up 2001:db8:1::/64 | PPPFWD_DELEGATED=2001:db8:1::/56 PPPFWD_DNS6=2001:db8::53 PPPFWD_EVENT=ipv6-up PPPFWD_LAN6_ADDRESS=2001:db8:1::1 PPPFWD_LAN6_PREFIX=2001:db8:1::/64 PPPFWD_LAN_INTERFACE=lan0",
		"ipv6-down 2001:db8:1::/64 | PPPFWD_DELEGATED=2001:db8:1::/56 PPPFWD_DNS6=2001:db8::53 PPPFWD_EVENT=ipv6-down PPPFWD_LAN6_ADDRESS=2001:db8:1::1 PPPFWD_LAN6_PREFIX=2001:db8:1::/64 PPPFWD_LAN_INTERFACE=lan0",
		"ipv6-up 2001:db8:2::/64 | PPPFWD_DELEGATED=2001:db8:2::/56 PPPFWD_DNS6= PPPFWD_EVENT=ipv6-up PPPFWD_LAN6_ADDRESS=2001:db8:2::1 PPPFWD_LAN6_PREFIX=2001:db8:2::/64 PPPFWD_LAN_INTERFACE=lan0",
		"ipv6-down 2001:db8:2::/64 | PPPFWD_DELEGATED=2001:db8:2::/56 PPPFWD_DNS6= PPPFWD_EVENT=ipv6-down PPPFWD_LAN6_ADDRESS=2001:db8:2::1 PPPFWD_LAN6_PREFIX=2001:db8:2::/64 PPPFWD_LAN_INTERFACE=lan0",
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d runs, want %d:\n%s", len(lines), len(want), got)
	}
	for i := range want {
		if strings.TrimSpace(lines[i]) != want[i] {
			t.Errorf("run %d:\n got %s\nwant %s", i, strings.TrimSpace(lines[i]), want[i])
		}
	}
}
