// Package pipeline is the synthetic benchmark of pppfwd's whole dataplane
// (steering, PPPoE decap/encap, NAT, MSS clamp, shaper, both directions)
// over in-memory ports replaying pre-built traffic.
//
// It may import the router, pppoe, the control plane, the dataplane,
// shaper, hdr, internal and nic, and other bench packages (the lab); only
// cmd imports it.
package pipeline
