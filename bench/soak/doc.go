// Package soak runs the namespace lab (bench/lab) for a long time at a
// steady share of its capacity, with UDP flows and TCP connections
// opening and closing all the time, and samples the process's resources
// (RSS, goroutines, open fds) and the router's NAT entries, drops and
// delivery; a least-squares trend over the samples after warm-up says
// whether anything grows (Judge). `pppfwd bench soak` prints it.
//
// It imports bench/lab and the router below it; it needs root (Linux
// namespaces), as the lab does.
//
// It may import the router, pppoe, the control plane, the dataplane,
// shaper, hdr, internal and nic, and other bench packages (the lab); only
// cmd imports it.
package soak
