package lab

import (
	"fmt"

	"github.com/pppfwd/pppfwd/dataplane/router"
	"github.com/pppfwd/pppfwd/pppoe"
)

// AdaptConfig points a router configuration read from a user's file at
// the lab, so that the file can be tried before it runs on the router:
// the LAN and WAN interfaces become the lab's (LANInterface,
// WANInterface) and lan.address the lab LAN's (LANPrefix); what would
// write or run outside the lab is switched off (pppoe.resolv,
// pppoe.state, stats.file, metrics.textfile, metrics.listen and the
// scripts); the control socket becomes sock ("" for none). Everything
// else (VLAN, login, MTU, shaping, NAT, workers, IPv6) stays as the file
// says. It returns a line for each change, and the Options whose ISP
// side matches the file: the AC serves its VLAN, login and MTU and
// offers an authentication protocol the file accepts.
func AdaptConfig(c *router.Config, sock string) (Options, []string) {
	var notes []string
	set := func(key string, from, to string) {
		if from != to {
			if to == "" {
				to = "off"
			}
			notes = append(notes, fmt.Sprintf("%s %s -> %s", key, from, to))
		}
	}
	set("lan.interface", c.LANInterface, LANInterface)
	c.LANInterface = LANInterface
	set("wan.interface", c.WANInterface, WANInterface)
	c.WANInterface, c.PPPoE.Interface = WANInterface, WANInterface
	set("lan.address", c.LANAddr.String(), LANPrefix.String())
	c.LANAddr = LANPrefix
	for _, f := range []struct {
		key string
		v   *string
	}{
		{"pppoe.resolv", &c.ResolvFile}, {"pppoe.state", &c.PPPoE.StatePath}, {"stats.file", &c.StatsFile},
		{"metrics.textfile", &c.Obs.MetricsTextfile}, {"metrics.listen", &c.Obs.MetricsListen},
		{"pppoe.up_script", &c.UpScript}, {"pppoe.down_script", &c.DownScript}, {"lan.ipv6_script", &c.IPv6Script},
	} {
		if *f.v != "" {
			set(f.key, *f.v, "")
			*f.v = ""
		}
	}
	set("control.socket", c.Obs.Socket, sock)
	c.Obs.Socket = sock
	o := Options{Router: c, VLAN: c.PPPoE.VLAN, MTU: c.PPPoE.MTU, User: c.PPPoE.Username, Password: c.PPPoE.Password}
	switch a := c.PPPoE.Auth; {
	case a == 0 || a&pppoe.AuthCHAPMD5 != 0:
	case a&pppoe.AuthMSCHAPv2 != 0:
		o.Auth = "mschapv2"
	default:
		o.Auth = "pap"
	}
	return o, notes
}
