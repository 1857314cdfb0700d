// Package idle is `pppfwd bench idle`: the namespace lab's router with its
// PPPoE session up and no traffic, measured for what it costs the box:
// CPU share, wakeups (context switches) and system calls per second.
//
// Linux only.
//
// It may import the router, pppoe, the control plane, the dataplane,
// shaper, hdr, internal and nic, and other bench packages (the lab); only
// cmd imports it.
package idle
