package abvm

import (
	"fmt"
	"strconv"
	"strings"
)

// pppoeProbes are what kernelPPPoE asks of the host.
type pppoeProbes struct {
	exists   func(path string) bool
	lookPath func(name string) error
	modprobe func(module string) error
	glob     func(pattern string) []string
}

// pppoePlugins are where pppd's PPPoE plugin is on the distributions'
// pppd (its plugin directory is pppd's version under its library
// directory).
var pppoePlugins = []string{"/usr/lib/pppd/*/rp-pppoe.so", "/usr/lib64/pppd/*/rp-pppoe.so", "/usr/lib/*/pppd/*/rp-pppoe.so"}

// kernelPPPoE reports what the kernel path lacks on this host: PPP and
// PPP over Ethernet in the kernel (/dev/ppp, /proc/net/pppoe; each
// module loaded when missing), pppd with its rp-pppoe.so plugin, and
// nft. The error names every missing piece.
func kernelPPPoE(p pppoeProbes) error {
	var missing []string
	module := func(path, mod, what string) {
		if p.exists(path) {
			return
		}
		err := p.modprobe(mod)
		if err == nil && p.exists(path) {
			return
		}
		if err == nil {
			err = fmt.Errorf("loaded, but there is no %s", path)
		}
		missing = append(missing, fmt.Sprintf("%s: no %s (modprobe %s: %v)", what, path, mod, err))
	}
	module("/dev/ppp", "ppp_generic", "PPP")
	module("/proc/net/pppoe", "pppoe", "PPP over Ethernet")
	if err := p.lookPath("pppd"); err != nil {
		missing = append(missing, "pppd (apt-get install ppp)")
	} else {
		found := false
		for _, g := range pppoePlugins {
			found = found || len(p.glob(g)) > 0
		}
		if !found {
			missing = append(missing, "pppd's PPPoE plugin rp-pppoe.so (looked for "+strings.Join(pppoePlugins, ", ")+")")
		}
	}
	if err := p.lookPath("nft"); err != nil {
		missing = append(missing, "nft (apt-get install nftables)")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("abvm: the kernel path of --where host needs PPPoE in this host's kernel, pppd and nft; missing: %s. "+
		"--paths pppfwd runs the pppfwd path alone, which needs none of them", strings.Join(missing, "; "))
}

// cpuMask is cpus as a sysfs CPU mask (rps_cpus): hex, in 32-bit words
// separated by commas, the highest first.
func cpuMask(cpus []int) string {
	top := 0
	for _, c := range cpus {
		top = max(top, c)
	}
	words := make([]uint32, top/32+1)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	var b strings.Builder
	for i := len(words) - 1; i >= 0; i-- {
		if i == len(words)-1 {
			fmt.Fprintf(&b, "%x", words[i])
		} else {
			fmt.Fprintf(&b, ",%08x", words[i])
		}
	}
	return b.String()
}

// cpuList is cpus as taskset -c and the reports list them: 0,2,3.
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
