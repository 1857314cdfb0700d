// Package control is the control plane beside the dataplane's fast path:
// it answers and learns ARP and Neighbor Discovery, sends Router
// Advertisements, holds frames for LAN hosts not resolved yet, carries the
// host stack's traffic (a TAP; netmap host rings) and the PPPoE client's
// control frames, all on its own goroutines, never per data packet on a
// worker.
//
// It may import the dataplane (the Engine's exported API), dataplane/ndp,
// hdr and nic; the dataplane never imports it.
package control
