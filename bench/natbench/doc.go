// Package natbench measures one worker's NAT table (dataplane/nat): the
// cost of creating, looking up, translating (both ways) and expiring
// flows at a given size, and the memory per entry. `pppfwd bench nat --entries N --json` prints Run's
// Result.
//
// The table gets Capacity = entries slots and the whole port range
// 1024-65535 (one worker: the fixed per-port arrays are counted in full).
// It is filled to about 90 % with UDP flows: LAN sockets spread over 256
// hosts, each talking to 16 remotes (a slot per flow plus one per socket
// mapping and one per host).
//
// It may import the router, pppoe, the control plane, the dataplane,
// shaper, hdr, internal and nic, and other bench packages (the lab); only
// cmd imports it.
package natbench
