package router

import (
	"testing"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// TestWANPortSpec: with more than one worker the WAN port is asked for
// owner delivery with the engine's forwards, and the WAN program's port
// function is the engine's owner table, port for port (so that every
// frame the program places lands where the engine's steering would hand
// it); with one worker nothing is asked.
func TestWANPortSpec(t *testing.T) {
	c := &Config{Workers: 3, LANInterface: "lan0", WANInterface: "wan0", Backend: "afpacket"}
	c.NAT.Forwards = []nat.Forward{{Proto: 6, ExtPort: 443, LANAddr: 0xc0a80105, LANPort: 443}, {Proto: 17, ExtPort: 51820, LANAddr: 0xc0a80107, LANPort: 51820}}
	s := c.portSpec("wan0", nil)
	if !s.WAN || s.LAN || len(s.Forwards) != 2 {
		t.Fatalf("WAN spec %+v", s)
	}
	if l := c.portSpec("lan0", nil); !l.LAN || l.WAN {
		t.Fatalf("LAN spec %+v", l)
	}
	e, err := dataplane.New(dataplane.Config{Workers: 3, LAN: memport.New("lan", 3, 8), WAN: memport.New("wan", 3, 8), NAT: c.NAT})
	if err != nil {
		t.Fatal(err)
	}
	ws := wanSpec(3, s.Forwards)
	for p := 0; p < 65536; p++ {
		want := int(e.Owner()[p])
		got := (p >> 1) % 3
		for _, wp := range ws.Ports {
			if int(wp.Port) == p {
				got = wp.Queue
			}
		}
		if got != want {
			t.Fatalf("port %d: WAN program's owner %d, the engine's %d", p, got, want)
		}
	}
	c.Workers = 1
	if s := c.portSpec("wan0", nil); s.WAN || s.LAN {
		t.Fatalf("one worker: spec %+v asks for owner delivery", s)
	}
}

// TestIntegrationOpenWANPortOwner: an afpacket WAN port of two queues
// opens with the WAN fanout program steering (PortInfo.Owner
// "fanout-ebpf"), which is what makes the router run local steering.
func TestIntegrationOpenWANPortOwner(t *testing.T) {
	nettest.RequireRoot(t)
	ln := nettest.MustLine(t, nettest.LineConfig{})
	var info PortInfo
	err := ln.A.Do(func() error {
		p, i, err := OpenPort(PortSpec{Backend: "afpacket", Interface: ln.AIf, Queues: 2, WAN: true})
		if err == nil {
			p.Close()
			i.Undo()
		}
		info = i
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if info.Owner != "fanout-ebpf" || info.OwnerErr != nil {
		t.Fatalf("WAN port owner %q, %v; want fanout-ebpf", info.Owner, info.OwnerErr)
	}
}
