package abvm

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// fakeHost is a host for kernelPPPoE: the paths that exist, the
// commands on PATH, the modules modprobe loads (creating their paths)
// and the files glob finds.
type fakeHost struct {
	paths, cmds, globs map[string]bool
	modules            map[string]string // module -> the path it creates
	probed             []string
}

func (h *fakeHost) probes() pppoeProbes {
	return pppoeProbes{
		exists: func(p string) bool { return h.paths[p] },
		lookPath: func(n string) error {
			if h.cmds[n] {
				return nil
			}
			return errors.New("executable file not found in $PATH")
		},
		modprobe: func(m string) error {
			h.probed = append(h.probed, m)
			p, ok := h.modules[m]
			if !ok {
				return errors.New("exit status 1: modprobe: FATAL: Module " + m + " not found")
			}
			h.paths[p] = true
			return nil
		},
		glob: func(g string) []string {
			if h.globs[g] {
				return []string{g}
			}
			return nil
		},
	}
}

func TestKernelPPPoE(t *testing.T) {
	// A kernel without PPP, no pppd, no nft: each is named, with what
	// modprobe said, and the way out.
	h := &fakeHost{paths: map[string]bool{}, cmds: map[string]bool{}, globs: map[string]bool{}}
	err := kernelPPPoE(h.probes())
	if err == nil {
		t.Fatal("no error without PPP")
	}
	for _, s := range []string{"missing: PPP: no /dev/ppp (modprobe ppp_generic: exit status 1: modprobe: FATAL: Module ppp_generic not found)",
		"; PPP over Ethernet: no /proc/net/pppoe (modprobe pppoe: exit status 1:", "pppd (apt-get install ppp)", "nft (apt-get install nftables)",
		"--paths pppfwd runs the pppfwd path alone"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q:\n%v", s, err)
		}
	}
	if strings.Contains(err.Error(), "rp-pppoe.so") {
		t.Errorf("names the plugin of a pppd that is missing: %v", err)
	}
	if !slices.Equal(h.probed, []string{"ppp_generic", "pppoe"}) {
		t.Errorf("modprobe %v, want ppp_generic and pppoe", h.probed)
	}

	// pppd without its plugin; the modules load on demand.
	h = &fakeHost{paths: map[string]bool{}, cmds: map[string]bool{"pppd": true, "nft": true}, globs: map[string]bool{},
		modules: map[string]string{"ppp_generic": "/dev/ppp", "pppoe": "/proc/net/pppoe"}}
	err = kernelPPPoE(h.probes())
	if err == nil || !strings.Contains(err.Error(), "missing: pppd's PPPoE plugin rp-pppoe.so") || strings.Contains(err.Error(), "modprobe") {
		t.Errorf("pppd without rp-pppoe.so: %v", err)
	}

	// All there, the modules loaded already: nothing to load.
	h = &fakeHost{paths: map[string]bool{"/dev/ppp": true, "/proc/net/pppoe": true}, cmds: map[string]bool{"pppd": true, "nft": true},
		globs: map[string]bool{pppoePlugins[0]: true}}
	if err := kernelPPPoE(h.probes()); err != nil || len(h.probed) != 0 {
		t.Errorf("all there: %v, modprobe %v", err, h.probed)
	}

	// A module that loads without its path is still missing.
	h = &fakeHost{paths: map[string]bool{"/dev/ppp": true}, cmds: map[string]bool{"pppd": true, "nft": true},
		globs: map[string]bool{pppoePlugins[2]: true}, modules: map[string]string{"pppoe": "/elsewhere"}}
	if err := kernelPPPoE(h.probes()); err == nil || !strings.Contains(err.Error(), "loaded, but there is no /proc/net/pppoe") {
		t.Errorf("pppoe loaded without /proc/net/pppoe: %v", err)
	}
}

func TestCPUMaskAndList(t *testing.T) {
	for _, c := range []struct {
		cpus       []int
		mask, list string
	}{
		{[]int{0}, "1", "0"},
		{[]int{0, 1}, "3", "0,1"},
		{[]int{3, 1}, "a", "3,1"},
		{[]int{31}, "80000000", "31"},
		{[]int{32, 0}, "1,00000001", "32,0"},
		{[]int{65, 4}, "2,00000000,00000010", "65,4"},
	} {
		if m := cpuMask(c.cpus); m != c.mask {
			t.Errorf("cpuMask(%v) = %q, want %q", c.cpus, m, c.mask)
		}
		if l := cpuList(c.cpus); l != c.list {
			t.Errorf("cpuList(%v) = %q, want %q", c.cpus, l, c.list)
		}
	}
}

func TestOptionsPaths(t *testing.T) {
	for _, c := range []struct {
		where string
		in    []string
		want  []string
	}{
		{"", nil, []string{"kernel", "pppfwd"}},
		{"host", []string{"pppfwd"}, []string{"pppfwd"}},
		{"vm", []string{"pppfwd", "kernel"}, []string{"kernel", "pppfwd"}},
	} {
		o := Options{Where: c.where, Paths: c.in, Binary: "/bin/true"}
		if err := o.defaults(); err != nil || !slices.Equal(o.Paths, c.want) || (c.where == "" && o.Where != "vm") {
			t.Errorf("where %q paths %q: %v, %q, where %q", c.where, c.in, err, o.Paths, o.Where)
		}
	}
	for _, o := range []Options{
		{Where: "cloud"},
		{Paths: []string{"kernel", "kernel"}},
		{Paths: []string{"bsd"}},
	} {
		o.Binary = "/bin/true"
		if err := o.defaults(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
