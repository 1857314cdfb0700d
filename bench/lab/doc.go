// Package lab is pppfwd's network-namespace lab, all in namespaces it
// creates (Linux, root):
//
//	lan host --veth-- pppfwd router --veth-- ISP --veth-- Internet host
//
// The ISP runs pppfwd's own access concentrator on a raw socket and
// forwards the session's data to an upstream TAP device, so the ISP
// namespace's kernel routes it to the Internet host (203.0.113.7), which
// answers ping and runs a UDP echo service (port 7). Tests and
// `pppfwd lab` share it. The router is configured by Options or, as
// `pppfwd run` is, by a configuration file's text (Options.Config);
// the ISP's side follows Options (VLAN, MTU, the login, or no AC).
//
// It may import the router, pppoe, the control plane, the dataplane,
// shaper, hdr, internal and nic, and other bench packages (the lab); only
// cmd imports it.
package lab
