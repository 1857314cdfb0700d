package router

import (
	"slices"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/nic/memport"
)

// TestReload: new shaper rates are applied to the running engine; other
// changes are named as needing a restart and left alone; shaping cannot
// be switched on or off.
func TestReload(t *testing.T) {
	base := "lan.interface a\nwan.interface b\nlan.address 10.0.0.1/24\npppoe.user u\n"
	parse := func(extra string) *Config {
		t.Helper()
		c, err := ParseConfig(strings.NewReader(base + extra))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cfg := parse("shaper.up bandwidth 40mbit\nshaper.down bandwidth 200mbit\n")
	r, err := Open(cfg, Ports{LAN: memport.New("lan", 1, 64), WAN: memport.New("wan", 1, 64),
		LANMAC: [6]byte{2, 0, 0, 0, 0, 1}, WANMAC: [6]byte{2, 0, 0, 0, 0, 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if up, down := r.Engine().Rates(); up != 40e6 || down != 200e6 {
		t.Fatalf("rates at start %d/%d", up, down)
	}
	applied, restart, err := r.Reload(parse("shaper.up bandwidth 35mbit\nshaper.down bandwidth 180mbit\nworkers 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if up, down := r.Engine().Rates(); up != 35e6 || down != 180e6 || len(applied) != 2 {
		t.Fatalf("after reload: rates %d/%d, applied %v", up, down, applied)
	}
	if !slices.Equal(restart, []string{"workers"}) {
		t.Fatalf("restart %v, want [workers]", restart)
	}
	_, restart, err = r.Reload(parse("shaper.up bandwidth 35mbit\nshaper.down bandwidth 180mbit\nnat.ports 2000-3000\npppoe.mtu 1500\nstats.interval 5s\n"))
	if err != nil || !slices.Equal(restart, []string{"pppoe.mtu", "nat.ports", "stats.interval"}) {
		t.Fatalf("restart %v (%v)", restart, err)
	}
	applied, restart, err = r.Reload(parse("shaper.up bandwidth 35mbit overhead 34\nshaper.down bandwidth 180mbit\n"))
	if err != nil || len(applied) != 0 || !slices.Equal(restart, []string{"shaper.up (other than bandwidth)"}) {
		t.Fatalf("overhead change: applied %v restart %v err %v", applied, restart, err)
	}
	if _, _, err := r.Reload(parse("shaper.down bandwidth 180mbit\n")); err == nil {
		t.Fatal("switching the uplink shaper off while running: no error")
	}
	if up, _ := r.Engine().Rates(); up != 35e6 {
		t.Fatalf("a refused reload changed the uplink rate to %d", up)
	}
	if applied, restart, err := r.Reload(parse("shaper.up bandwidth 35mbit\nshaper.down bandwidth 180mbit\n")); err != nil || len(applied)+len(restart) != 0 {
		t.Fatalf("same config: applied %v restart %v err %v", applied, restart, err)
	}
}

// TestReloadableKeys: the keys the table marks reloadable are the ones
// Router.Reload applies (TestReload checks how). A key marked Reload
// without code in Reload that applies it fails here.
func TestReloadableKeys(t *testing.T) {
	var got []string
	for _, k := range keyTable {
		if KeyReloadable(k.Name) {
			got = append(got, k.Name)
		}
	}
	if handled := []string{"shaper.up", "shaper.down"}; !slices.Equal(got, handled) {
		t.Fatalf("reloadable keys %v; Router.Reload applies %v", got, handled)
	}
	if KeyReloadable("workers") || KeyReloadable("no.such.key") {
		t.Fatal("workers or an unknown key reloadable")
	}
}
