package router

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/pppoe"
)

// TestIntegrationAFXDPQueueCap: with backend afxdp, more workers than the
// interfaces have queues (single-queue veth) start with as many workers
// as there are queues and a log line saying so, instead of failing to
// bind a socket to a queue that does not exist.
func TestIntegrationAFXDPQueueCap(t *testing.T) {
	lab := nettest.NewLab(t)
	ns, err := lab.NewNS("xq")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("lan0", ns, "wan0", ns, 1); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Backend: "afxdp", Workers: 2, LANInterface: "lan0", WANInterface: "wan0",
		LANAddr: netip.MustParsePrefix("192.168.1.1/24"), PortLo: 1024, PortHi: 65535,
		PPPoE: pppoe.ClientConfig{Username: "u", Password: "p"}}
	var mu sync.Mutex
	var logs []string
	logf := func(f string, a ...any) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); mu.Unlock() }
	var r *Router
	if err := ns.Do(func() (err error) { r, err = Open(cfg, Ports{}, logf); return }); err != nil {
		if strings.Contains(err.Error(), "queue") {
			t.Fatalf("Open: %v: the workers were not capped to the queues", err)
		}
		t.Skipf("AF_XDP unavailable here: %v", err)
	}
	defer r.Close()
	if n := len(r.Engine().Workers()); n != 1 {
		t.Fatalf("%d workers on single-queue interfaces, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logs {
		if strings.Contains(l, "1 worker(s) instead of 2") {
			return
		}
	}
	t.Fatalf("no log line about the cap in %q", logs)
}
